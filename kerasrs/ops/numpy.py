"""``keras.ops.numpy``: the NumPy-named ops of `kerasrs.ops`, the same function objects."""

from kerasrs import ops as _ops

_NAMES = sorted(n for n in _ops.__all__ if n not in _ops.nn.__all__ or n in {
    "abs", "max", "min", "sum", "mean"})
globals().update({n: getattr(_ops, n) for n in _NAMES})
__all__ = list(_NAMES)
