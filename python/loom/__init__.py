"""Loom from Python: bring models in from PyTorch or ONNX, compile them for the CPU, the
accelerator or a GPU, run them on numpy arrays, and compare them with PyTorch layer by layer.

    import loom
    g = loom.frontend.from_torch(torch_module.eval(), (x,))   # or from_onnx("m.onnx")
    m = loom.compile(g)                          # target="accel", quantize="int8", ...
    (logits,) = m.run(x.numpy())
    m.save("m.loom"); loom.load("m.loom")
    print(loom.compare(torch_module, x, backends=["fsim"]))

    from loom import te                          # tensor expressions and schedules, TVM's names
    C = te.compute((n,), lambda i: A[i] + B[i]); s = loom.create_schedule(C)
    f = loom.build(s, [A, B, C]); f(a, b, c)

Errors are loom.Error and its kinds (loom.ModelError, loom.ShapeError, ...), with the messages of
Loom's C++ core. docs/python.md has the whole API.
"""
from ._loom import (  # noqa: F401
    CodegenError,
    ConfigError,
    CudaFunction,
    DeviceError,
    Error,
    Function,
    Graph,
    LoweredFunc,
    InternalError,
    IsaError,
    LoweringError,
    Model,
    ModelError,
    OnnxSession,
    RuntimeError,
    Schedule,
    ScheduleError,
    ShapeError,
    Stage,
    TypeError,
    build,
    compile,
    create_schedule,
    cuda_available,
    empty,
    from_dlpack,
    load,
    lower,
    operators,
)
from . import accel, frontend, te  # noqa: E402,F401
from . import _loom as _ext  # noqa: E402

if hasattr(_ext, "tune"):  # built with the tuner
    from . import tune  # noqa: E402,F401
if hasattr(_ext, "dse"):  # built with the DSE and regression libraries
    from . import dse, regress  # noqa: E402,F401
from .compare import Comparison, compare  # noqa: E402,F401

# loom.TypeError and loom.RuntimeError stay out of `from loom import *`: they would shadow Python's own.
__all__ = [
    "Error", "CodegenError", "ConfigError", "DeviceError", "InternalError", "IsaError", "LoweringError",
    "ModelError", "ScheduleError", "ShapeError", "Model", "OnnxSession", "Graph", "Comparison",
    "Function", "CudaFunction", "LoweredFunc", "Schedule", "Stage", "accel", "build", "compile", "compare",
    "create_schedule", "cuda_available", "empty",
    "from_dlpack", "frontend", "load", "lower", "operators", "te",
]
