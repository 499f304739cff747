"""``keras.ops.numpy``: the NumPy-named ops of `kerasrs.ops`, the same function objects (the
neural-network, linear-algebra and Fourier ops live in ``ops.nn``, ``ops.linalg`` and ``ops``)."""

import importlib

from kerasrs import ops as _ops

_fft = importlib.import_module("kerasrs.ops.fft")  # ops.fft is the function of that name
_linalg = importlib.import_module("kerasrs.ops.linalg")

_OTHER = (set(_ops.nn.__all__) | set(_linalg.__all__) | set(_fft.__all__)) - {
    "abs", "max", "min", "sum", "mean", "slogdet"}
_NAMES = sorted(n for n in _ops.__all__ if n not in _OTHER)
globals().update({n: getattr(_ops, n) for n in _NAMES})
__all__ = list(_NAMES)
