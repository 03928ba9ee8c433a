"""Tensor expressions with TVM's names (placeholder, compute, reduce_axis, sum, ...): the compiled
half is loom._loom.te; loom.create_schedule, loom.lower and loom.build take what these make."""
from ._loom import te as _te

globals().update({k: getattr(_te, k) for k in dir(_te) if not k.startswith("_")})
__all__ = [k for k in dir(_te) if not k.startswith("_")]
