"""Accelerator design-space sweeps from Python (loom.dse.sweep); the compiled half is
loom._loom.dse, built with the DSE library."""
from ._loom import dse as _dse

globals().update({k: getattr(_dse, k) for k in dir(_dse) if not k.startswith("_")})
__all__ = [k for k in dir(_dse) if not k.startswith("_")]
