"""Loom from Python: compile models, load compiled ones, run them on numpy arrays.

    import loom
    m = loom.compile("resnet18", image=64)     # or an ONNX file
    (logits,) = m.run(x)                        # x: numpy float32 of m.inputs[0]['shape']
    m.save("resnet18.loom"); loom.load("resnet18.loom")

Errors are loom.Error and its kinds (loom.ModelError, loom.ShapeError, ...), with the messages of
Loom's C++ core. docs/python.md has the whole API.
"""
from ._loom import (  # noqa: F401
    CodegenError,
    ConfigError,
    DeviceError,
    Error,
    InternalError,
    IsaError,
    LoweringError,
    Model,
    ModelError,
    RuntimeError,
    ScheduleError,
    ShapeError,
    TypeError,
    compile,
    load,
)

__all__ = [
    "Error", "CodegenError", "ConfigError", "DeviceError", "InternalError", "IsaError", "LoweringError",
    "ModelError", "RuntimeError", "ScheduleError", "ShapeError", "TypeError", "Model", "compile", "load",
]
