"""The accelerator from Python: Config (read, modify, validate, save) and its area model; the
compiled half is loom._loom.accel. loom.compile(..., target='accel', config=Config) builds for it."""
from ._loom import accel as _accel

globals().update({k: getattr(_accel, k) for k in dir(_accel) if not k.startswith("_")})
__all__ = [k for k in dir(_accel) if not k.startswith("_")]
