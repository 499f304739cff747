"""Tensor creation and static queries: zeros, ones, full, arange, eye, ranges (``linspace``,
``logspace``...), one-hot encodings, grids, and ``shape``/``dtype``.

Most results are constants without gradient (``*_like`` ignore the values of ``x``); `copy`,
`array`, `meshgrid` and `vander` are differentiable composites. Float results default to
``floatx()`` (float32), as in Keras.
"""

import builtins

import numpy as np

from kerasrs import backend as backend_module
from kerasrs.autodiff import Function, Tensor, convert_to_tensor
from kerasrs.backend.dtypes import result_type
from kerasrs.ops import core, layout
from kerasrs.ops import math as ops_math
from kerasrs.ops.core import constant, to_float
from kerasrs.ops.dispatch import op


def _dtype(dtype, default=None):
    return backend_module.standardize_dtype(dtype if dtype is not None else default)


def from_numpy(values, dtype=None):
    """A constant Tensor on the default backend from host values (``dtype`` default floatx)."""
    be = backend_module.get()
    return constant(be.asarray(np.asarray(values).astype(_dtype(dtype))), be)


class DropoutMask(Function):
    """An inverted-dropout multiplier of ``shape``: 0 with probability ``rate``, else
    ``1 / (1 - rate)``, from the backend's counter-based Philox kernel (``dropout_mask``: the
    same bits on NumPy and CuPy). No gradient.

    With ``seed`` (an int) the key is the seed and the counter offset the one input (an int64
    0-d array: the number of masks drawn before, kept by the caller); without, there is no input
    and each mask takes a fresh key from `kerasrs.backend.dropout_seed` (the host stream that
    ``set_random_seed`` seeds). A Function, not a constant, so that a graph records it: a
    replayed step then draws masks exactly as the eager step would.
    """

    def __init__(self, shape, rate, dtype, seed=None):
        self.shape, self.rate = tuple(int(n) for n in shape), float(rate)
        self.dtype = backend_module.standardize_dtype(dtype).name
        self.seed = None if seed is None else int(seed) % 2 ** 64

    def forward(self, *offset):
        self.n_inputs = len(offset)
        if self.rate >= 1:
            return self.xp.zeros(self.shape, self.dtype)
        if self.seed is None:
            key, at = backend_module.dropout_seed(), 0
        else:
            key, at = self.seed, int(offset[0])
        return self.backend.dropout_mask(self.shape, self.rate, key, at, self.dtype)

    def backward(self, gy):
        return (None,) * self.n_inputs


class RandomDraw(Function):
    """Random numbers of ``shape``: ``kind`` "normal" (standard normal) or "uniform" ([0, 1)),
    cast to ``dtype``. No gradient.

    Drawn on the host from NumPy's PCG64 seeded with ``[seed, counter]``, the counter being the
    one input (an int64 0-d array: the number of draws before, kept by the caller), which is
    how `kerasrs.random.normal` draws with a `kerasrs.random.SeedGenerator`: the same numbers
    on NumPy and CuPy. A Function, not a constant, so that a graph records it: a replayed step
    reads the counter its update advanced and draws new numbers each time, as eagerly.
    """

    KINDS = ("normal", "uniform")

    def __init__(self, kind, shape, dtype, seed):
        if kind not in self.KINDS:
            raise ValueError(f"RandomDraw: `kind` must be one of {self.KINDS}. "
                             f"Received: kind={kind!r}")
        self.kind, self.shape = kind, tuple(int(n) for n in shape)
        self.dtype = backend_module.standardize_dtype(dtype).name
        self.seed = int(seed) % 2 ** 63

    def forward(self, counter):
        rng = np.random.default_rng([self.seed, int(counter)])
        values = rng.standard_normal(self.shape) if self.kind == "normal" else \
            rng.random(self.shape)
        return self.xp.asarray(values.astype(self.dtype))

    def backward(self, gy):
        return (None,)


def _shape_arg(who, shape):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if any(not isinstance(n, (int, np.integer)) or n < 0 for n in shape):
        raise ValueError(f"{who}: shape must be non-negative ints. Received: shape={shape!r}")
    return tuple(int(n) for n in shape)


@op
def zeros(shape, dtype=None):
    """A Tensor of zeros of ``shape`` (int or tuple) and ``dtype`` (default floatx)."""
    be = backend_module.get()
    return constant(be.xp.zeros(_shape_arg("zeros", shape), _dtype(dtype)), be)


@op
def ones(shape, dtype=None):
    """A Tensor of ones of ``shape`` and ``dtype`` (default floatx)."""
    be = backend_module.get()
    return constant(be.xp.ones(_shape_arg("ones", shape), _dtype(dtype)), be)


@op
def full(shape, fill_value, dtype=None):
    """A Tensor of ``shape`` filled with ``fill_value``; ``dtype`` defaults to floatx, whatever
    the value (as Keras: ``full((2,), 7)`` is float32)."""
    be = backend_module.get()
    value = core.raw(fill_value)
    shape = _shape_arg("full", shape)
    return constant(be.xp.full(shape, be.asarray(value), dtype=_dtype(dtype)), be)


def _like(x, dtype, make):
    x = convert_to_tensor(x)
    return constant(make(x.backend.xp, x.shape, _dtype(dtype, x.dtype)), x.backend)


@op
def zeros_like(x, dtype=None):
    """Zeros with the shape of ``x`` and its dtype (or ``dtype``)."""
    return _like(x, dtype, lambda xp, s, d: xp.zeros(s, d))


@op
def ones_like(x, dtype=None):
    """Ones with the shape of ``x`` and its dtype (or ``dtype``)."""
    return _like(x, dtype, lambda xp, s, d: xp.ones(s, d))


@op
def full_like(x, fill_value, dtype=None):
    """``fill_value`` with the shape of ``x`` and its dtype (or ``dtype``)."""
    value = core.raw(fill_value)
    return _like(x, dtype, lambda xp, s, d: xp.full(s, xp.asarray(value), d))


@op
def arange(start, stop=None, step=1, dtype=None):
    """Evenly spaced values in ``[start, stop)`` (``[0, start)`` with one argument).

    ``dtype`` defaults to the promotion of the arguments' dtypes (Python ints give int32,
    a Python float floatx, as Keras).
    """
    if step == 0:
        raise ValueError("arange: step must not be 0. Received: step=0")
    if dtype is None:
        dtype = result_type(*(v for v in (start, stop, step) if v is not None))
    be = backend_module.get()
    start, stop = (0, start) if stop is None else (start, stop)
    return constant(be.xp.arange(start, stop, step, dtype=_dtype(dtype)), be)


@op
def eye(N, M=None, k=0, dtype=None):  # noqa: N803  (Keras's argument names)
    """A 2-D Tensor of shape ``(N, M or N)`` with ones on diagonal ``k`` and zeros elsewhere."""
    be = backend_module.get()
    return constant(be.xp.eye(int(N), None if M is None else int(M), int(k), _dtype(dtype)), be)


@op
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
        x = ops_math.cast(x, "int64")
    if x.dtype.kind not in "iu":
        raise TypeError(f"one_hot: class ids must be numbers. Received: dtype {x.dtype}")
    if int(num_classes) < 1 or sparse or not -(x.ndim + 1) <= axis <= x.ndim:
        raise ValueError(f"one_hot: needs num_classes >= 1, an axis in [-{x.ndim + 1}, "
                         f"{x.ndim}] and sparse=False. Received: num_classes={num_classes}, "
                         f"axis={axis}, sparse={sparse}, shape {x.shape}")
    return _one_hot(x, num_classes=int(num_classes), axis=int(axis), dtype=_dtype(dtype).name)


_one_hot = core.no_gradient_op(
    "one_hot", lambda xp, x, num_classes, axis, dtype: xp.moveaxis(
        (x[..., None] == xp.arange(num_classes)).astype(dtype), -1, axis))


@op
def multi_hot(inputs, num_classes=None, axis=-1, dtype=None, sparse=False, **kwargs):
    """1 at each class id listed in the last axis of ``inputs`` (ids -> one row per example).
    No gradient flows."""
    num_classes = num_classes if num_classes is not None else kwargs.get("num_tokens")
    x = convert_to_tensor(inputs)
    ids = np.asarray(x.numpy(), dtype="int64")
    if ids.ndim == 1:
        ids = ids[None]
        squeeze = True
    else:
        squeeze = False
    out = np.zeros(ids.shape[:-1] + (num_classes,), dtype="float32")
    valid = (ids >= 0) & (ids < num_classes)
    rows = np.broadcast_to(np.arange(ids.shape[0]).reshape(-1, *([1] * (ids.ndim - 1))), ids.shape)
    out[rows[valid], ids[valid]] = 1
    if squeeze:
        out = out[0]
    if axis != -1:
        out = np.moveaxis(out, -1, axis)
    return constant(x.backend.asarray(out.astype(_dtype(dtype))), x.backend)


@op
def shape(x):
    """The static shape of ``x``: a tuple of Python ints."""
    return tuple(int(n) for n in np.shape(x.data if isinstance(x, Tensor) else x))


@op
def ndim(x):
    """The rank of ``x``: a Python int."""
    return len(shape(x))


@op
def size(x):
    """The number of elements of ``x``: a Python int."""
    return int(np.prod(shape(x), dtype="int64"))


@op
def array(x, dtype=None):
    """``x`` as a Tensor (a copy), optionally cast to ``dtype``."""
    x = convert_to_tensor(x)
    return ops_math.cast(x, dtype) if dtype is not None else copy(x)


@op
def copy(x):
    """A Tensor equal to ``x`` (the gradient flows through)."""
    x = convert_to_tensor(x)
    return core.multiply(x, x.dtype.type(1))  # a 1 of x's dtype: a bool copy stays bool


@op
def identity(n, dtype=None):
    """The ``n x n`` identity matrix."""
    return eye(n, dtype=dtype)


@op
def empty(shape, dtype=None):
    """A Tensor of ``shape`` (zeros: kerasrs never hands out uninitialized memory)."""
    return zeros(shape, dtype=dtype)


@op
def empty_like(x, dtype=None):
    """A Tensor shaped like ``x`` (zeros)."""
    return zeros_like(x, dtype=dtype)


@op
def tri(N, M=None, k=0, dtype=None):  # noqa: N803  (Keras's argument names)
    """Ones at and below diagonal ``k`` of an N x M matrix."""
    be = backend_module.get()
    return constant(be.xp.tri(N, M, k, dtype=_dtype(dtype)), be)


@op
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """``num`` evenly spaced values from ``start`` to ``stop``."""
    be = backend_module.get()
    if dtype is None:  # Keras: the float dtype of start and stop (floatx for Python numbers)
        dtype = result_type(start, stop, float)
    out = np.linspace(start, stop, num, endpoint=endpoint, retstep=retstep, axis=axis)
    values, step = out if retstep else (out, None)
    t = constant(be.asarray(np.asarray(values, dtype=_dtype(dtype))), be)
    return (t, step) if retstep else t


@op
def logspace(start, stop, num=50, endpoint=True, base=10, dtype=None, axis=0):
    """``base ** linspace(start, stop, num)``."""
    return from_numpy(np.logspace(start, stop, num, endpoint=endpoint, base=base, axis=axis),
                      dtype)


@op
def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``num`` values evenly spaced on a log scale from ``start`` to ``stop``."""
    return from_numpy(np.geomspace(start, stop, num, endpoint=endpoint, axis=axis), dtype)


@op
def meshgrid(*x, indexing="xy"):
    """Coordinate grids from 1-D coordinate vectors (differentiable: broadcasts)."""
    xs = [convert_to_tensor(v) for v in x]
    n = len(xs)
    shapes = []
    for i, v in enumerate(xs):
        shape = [1] * n
        shape[i] = v.shape[0]
        shapes.append(shape)
    if indexing == "xy" and n >= 2:
        for s in shapes:
            s[0], s[1] = s[1], s[0]
    full = tuple(builtins.max(s[j] for s in shapes) for j in range(n))
    return [layout.broadcast_to(layout.reshape(v, tuple(s)), full) for v, s in zip(xs, shapes)]


@op
def vander(x, N=None, increasing=False):  # noqa: N803
    """Vandermonde matrix: columns are powers of ``x``, in ``x``'s dtype (as Keras)."""
    x = convert_to_tensor(x)
    n = x.shape[0] if N is None else N
    powers = np.arange(n) if increasing else np.arange(n)[::-1]
    return core.power(layout.expand_dims(x, -1), constant(x.backend.asarray(
        powers.astype(x.dtype)), x.backend))


@op
def dtype(x):
    """The dtype name of ``x`` ("float32", ...)."""
    return str(convert_to_tensor(x).dtype)


@op
def is_tensor(x):
    """True for a kerasrs `Tensor`."""
    return isinstance(x, Tensor)
