"""The auto-tuner from Python (loom.tune.tune over loom.tune.gemm / conv2d / accel_conv2d or a
model's kernels from loom.tune.model_templates, with a per-trial callback); the compiled half is
loom._loom.tune, built with the tuner."""
from ._loom import tune as _tune

globals().update({k: getattr(_tune, k) for k in dir(_tune) if not k.startswith("_")})
__all__ = [k for k in dir(_tune) if not k.startswith("_")]
