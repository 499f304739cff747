"""Tensor creation and static shape queries: zeros, ones, full, arange, eye, one_hot, shape.

None of these has a gradient: they make constants (``*_like`` ignore the values of ``x``).
Float results default to ``floatx()`` (float32), as in Keras.
"""

import numpy as np

from kerasrs import backend as backend_module
from kerasrs.autodiff import Tensor, convert_to_tensor
from kerasrs.ops.core import constant


def _dtype(dtype, default=None):
    return backend_module.standardize_dtype(dtype if dtype is not None else default)


def _shape_arg(op, shape):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if any(not isinstance(n, (int, np.integer)) or n < 0 for n in shape):
        raise ValueError(f"{op}: shape must be non-negative ints. Received: shape={shape!r}")
    return tuple(int(n) for n in shape)


def zeros(shape, dtype=None):
    """A Tensor of zeros of ``shape`` (int or tuple) and ``dtype`` (default floatx)."""
    be = backend_module.get()
    return constant(be.xp.zeros(_shape_arg("zeros", shape), _dtype(dtype)), be)


def ones(shape, dtype=None):
    """A Tensor of ones of ``shape`` and ``dtype`` (default floatx)."""
    be = backend_module.get()
    return constant(be.xp.ones(_shape_arg("ones", shape), _dtype(dtype)), be)


def full(shape, fill_value, dtype=None):
    """A Tensor of ``shape`` filled with ``fill_value``; ``dtype`` defaults to floatx for a
    Python float, the value's dtype for an array, int64/bool for Python ints/bools."""
    be = backend_module.get()
    value = getattr(fill_value, "data", fill_value)
    if dtype is None:
        dtype = value.dtype if hasattr(value, "dtype") else None if isinstance(value, float) \
            else np.asarray(value).dtype
    shape = _shape_arg("full", shape)
    return constant(be.xp.full(shape, be.asarray(value), dtype=_dtype(dtype)), be)


def _like(x, dtype, make):
    x = convert_to_tensor(x)
    return constant(make(x.backend.xp, x.shape, _dtype(dtype, x.dtype)), x.backend)


def zeros_like(x, dtype=None):
    """Zeros with the shape of ``x`` and its dtype (or ``dtype``)."""
    return _like(x, dtype, lambda xp, s, d: xp.zeros(s, d))


def ones_like(x, dtype=None):
    """Ones with the shape of ``x`` and its dtype (or ``dtype``)."""
    return _like(x, dtype, lambda xp, s, d: xp.ones(s, d))


def full_like(x, fill_value, dtype=None):
    """``fill_value`` with the shape of ``x`` and its dtype (or ``dtype``)."""
    value = getattr(fill_value, "data", fill_value)
    return _like(x, dtype, lambda xp, s, d: xp.full(s, xp.asarray(value), d))


def arange(start, stop=None, step=1, dtype=None):
    """Evenly spaced values in ``[start, stop)`` (``[0, start)`` with one argument).

    ``dtype`` defaults to int64 when all arguments are ints, else floatx.
    """
    if step == 0:
        raise ValueError("arange: step must not be 0. Received: step=0")
    if dtype is None:
        ints = all(isinstance(v, (int, np.integer)) for v in (start, stop, step) if v is not None)
        dtype = "int64" if ints else None
    be = backend_module.get()
    start, stop = (0, start) if stop is None else (start, stop)
    return constant(be.xp.arange(start, stop, step, dtype=_dtype(dtype)), be)


def eye(N, M=None, k=0, dtype=None):  # noqa: N803  (Keras's argument names)
    """A 2-D Tensor of shape ``(N, M or N)`` with ones on diagonal ``k`` and zeros elsewhere."""
    be = backend_module.get()
    return constant(be.xp.eye(int(N), None if M is None else int(M), int(k), _dtype(dtype)), be)


def one_hot(x, num_classes, axis=-1, dtype=None, sparse=False):
    """One-hot encoding of integer class ids, as Keras's ``ops.one_hot``.

    Args:
        x: Tensor of class ids, any shape; float ids are cast to int (truncated), as Keras.
        num_classes: int, the depth of the new axis.
        axis: where the new axis goes in the result. Defaults to -1 (last).
        dtype: result dtype, default floatx.
        sparse: must be False (kerasrs has no sparse tensors).

    Returns:
        Tensor of shape ``x.shape`` with a ``num_classes`` axis inserted at ``axis``; ids
        outside ``[0, num_classes)`` (e.g. -1 for padding) give an all-zero vector, as in
        TensorFlow and JAX. No gradient.

    Raises:
        ValueError: for ``num_classes < 1``, a bad axis or ``sparse=True``.
        TypeError: for ids that are not numbers.
    """
    x = convert_to_tensor(x)
    if x.dtype.kind == "f" or x.dtype.name == "bfloat16":  # Keras casts float ids to int
        x = Tensor(x.data.astype("int64"), backend=x.backend)
    if x.dtype.kind not in "iu":
        raise TypeError(f"one_hot: class ids must be numbers. Received: dtype {x.dtype}")
    if int(num_classes) < 1 or sparse or not -(x.ndim + 1) <= axis <= x.ndim:
        raise ValueError(f"one_hot: needs num_classes >= 1, an axis in [-{x.ndim + 1}, "
                         f"{x.ndim}] and sparse=False. Received: num_classes={num_classes}, "
                         f"axis={axis}, sparse={sparse}, shape {x.shape}")
    xp = x.backend.xp
    hot = (x.data[..., None] == xp.arange(int(num_classes))).astype(_dtype(dtype))
    return constant(xp.moveaxis(hot, -1, axis), x.backend)


def shape(x):
    """The static shape of ``x``: a tuple of Python ints."""
    return tuple(int(n) for n in np.shape(x.data if isinstance(x, Tensor) else x))


def ndim(x):
    """The rank of ``x``: a Python int."""
    return len(shape(x))


def size(x):
    """The number of elements of ``x``: a Python int."""
    return int(np.prod(shape(x), dtype="int64"))


__all__ = ["zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "arange", "eye",
           "one_hot", "shape", "ndim", "size"]
