"""Front ends: models from other frameworks as Loom graphs (loom.Graph), for loom.compile.

    g = loom.frontend.from_torch(torch_module.eval(), (x,))   # torch.fx, no ONNX in between
    g = loom.frontend.from_onnx("model.onnx")                 # ONNX, opsets up to 18
    m = loom.compile(g)
"""
from .._loom import from_onnx  # noqa: F401


def from_torch(module, example_inputs, *, name=None):
    """A PyTorch module (in eval mode) as a loom.Graph, traced by torch.fx.

    example_inputs: a tensor or a tuple of tensors; they fix the graph's input shapes and dtypes
    (Loom compiles static shapes). Each call of the traced graph becomes Loom operators; a call
    Loom has no mapping for is a loom.ModelError naming the module path and the call. Values that
    depend only on parameters and shapes are computed once by PyTorch and become constants.
    """
    from .torch_fx import from_torch as convert  # torch is imported only when asked for
    return convert(module, example_inputs, name=name)


__all__ = ["from_onnx", "from_torch"]
