"""The rest of Keras's ``keras.ops.numpy`` catalog, built from kerasrs's differentiable
primitives (indexing, concatenate, reshape, einsum, where, sort, cumsum ...), so gradients come
from those (tinygrad's rule: few primitives, composites on top). Ops whose result is an index, a
count or a boolean return Tensors without gradient.
"""

import builtins

import numpy as np

from kerasrs.autodiff import Function, Tensor, convert_to_tensor
from kerasrs.ops import core, creation, layout, math, reduction
from kerasrs.ops.core import constant, getitem


def _t(x):
    return convert_to_tensor(x)


def _float(x):
    x = _t(x)
    return math.cast(x, "float32") if x.dtype.kind in "iub" else x


def _ax(axis, ndim, op="ops"):
    """``axis`` in ``[0, ndim)``, or a ValueError naming ``op`` (IndexError or a silent wrong
    answer otherwise)."""
    if not -ndim <= axis < ndim:
        raise ValueError(f"{op}: axis {axis} is out of range for a tensor of rank {ndim}.")
    return int(axis) % ndim


def _plain(x, fn):
    """A no-gradient Tensor from ``fn(xp, array)``."""
    x = _t(x)
    return constant(fn(x.backend.xp, x.data), x.backend)


# -- creation ------------------------------------------------------------------------------------
def array(x, dtype=None):
    """``x`` as a Tensor (a copy), optionally cast to ``dtype``."""
    x = _t(x)
    return math.cast(x, dtype) if dtype is not None else copy(x)


def copy(x):
    """A Tensor equal to ``x`` (the gradient flows through)."""
    return core.multiply(_t(x), 1)


def identity(n, dtype=None):
    """The ``n x n`` identity matrix."""
    return creation.eye(n, dtype=dtype)


def empty(shape, dtype=None):
    """A Tensor of ``shape`` (zeros: kerasrs never hands out uninitialized memory)."""
    return creation.zeros(shape, dtype=dtype)


def empty_like(x, dtype=None):
    """A Tensor shaped like ``x`` (zeros)."""
    return creation.zeros_like(x, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):  # noqa: N803  (Keras's argument names)
    """Ones at and below diagonal ``k`` of an N x M matrix."""
    from kerasrs import backend
    be = backend.get()
    return constant(be.xp.tri(N, M, k, dtype=backend.standardize_dtype(dtype)), be)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """``num`` evenly spaced values from ``start`` to ``stop``."""
    from kerasrs import backend
    be = backend.get()
    out = np.linspace(start, stop, num, endpoint=endpoint, retstep=retstep, axis=axis)
    values, step = out if retstep else (out, None)
    t = constant(be.asarray(np.asarray(values, dtype=backend.standardize_dtype(dtype))), be)
    return (t, step) if retstep else t


def logspace(start, stop, num=50, endpoint=True, base=10, dtype=None, axis=0):
    """``base ** linspace(start, stop, num)``."""
    return _host(np.logspace(start, stop, num, endpoint=endpoint, base=base, axis=axis), dtype)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``num`` values evenly spaced on a log scale from ``start`` to ``stop``."""
    return _host(np.geomspace(start, stop, num, endpoint=endpoint, axis=axis), dtype)


def _host(values, dtype):
    from kerasrs import backend
    be = backend.get()
    return constant(be.asarray(np.asarray(values).astype(backend.standardize_dtype(dtype))), be)


def _window(fn):
    def op(x, *args):
        return _host(fn(int(x), *args), None)

    op.__name__ = op.__qualname__ = fn.__name__
    op.__doc__ = f"NumPy's ``{fn.__name__}`` window of length ``x`` (float32)."
    return op


bartlett, blackman, hamming, hanning = (_window(f) for f in (np.bartlett, np.blackman,
                                                              np.hamming, np.hanning))


def kaiser(x, beta):
    """The Kaiser window of length ``x`` and shape ``beta``."""
    return _host(np.kaiser(int(x), beta), None)


def meshgrid(*x, indexing="xy"):
    """Coordinate grids from 1-D coordinate vectors (differentiable: broadcasts)."""
    xs = [_t(v) for v in x]
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


def vander(x, N=None, increasing=False):  # noqa: N803
    """Vandermonde matrix: columns are powers of ``x``."""
    x = _float(x)
    n = x.shape[0] if N is None else N
    powers = np.arange(n) if increasing else np.arange(n)[::-1]
    return core.power(layout.expand_dims(x, -1), constant(x.backend.asarray(
        powers.astype(x.dtype)), x.backend))


# -- shape and arrangement -------------------------------------------------------------------------
def flip(x, axis=None):
    """``x`` reversed along ``axis`` (all axes when None)."""
    x = _t(x)
    axes = range(x.ndim) if axis is None else [axis] if isinstance(axis, int) else axis
    key = [slice(None)] * x.ndim
    for a in axes:
        key[_ax(a, x.ndim, "flip")] = slice(None, None, -1)
    return getitem(x, tuple(key))


def fliplr(x):
    """``x`` reversed along axis 1."""
    return flip(x, 1)


def flipud(x):
    """``x`` reversed along axis 0."""
    return flip(x, 0)


def rot90(array, k=1, axes=(0, 1)):
    """``array`` rotated by ``k * 90`` degrees in the plane of ``axes``."""
    x = _t(array)
    k %= 4
    a, b = axes
    if k == 0:
        return x
    if k == 2:
        return flip(flip(x, a), b)
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return layout.transpose(flip(x, b), perm) if k == 1 else flip(layout.transpose(x, perm), b)


def roll(x, shift, axis=None):
    """``x`` with elements shifted by ``shift`` along ``axis`` (flattened when None), wrapping."""
    x = _t(x)
    if axis is None:
        return layout.reshape(roll(layout.reshape(x, (-1,)), shift, 0), x.shape)
    ax = _ax(axis, x.ndim, "roll")
    n = x.shape[ax]
    idx = (np.arange(n) - shift) % n if n else np.arange(0)
    return layout.take(x, idx, axis=ax)


def moveaxis(x, source, destination):
    """``x`` with axes moved from ``source`` to ``destination`` (ints or sequences)."""
    x = _t(x)
    return layout.transpose(x, _moved(x.ndim, source, destination))


def _moved(ndim, source, destination):
    src = [_ax(s, ndim, "moveaxis") for s in np.atleast_1d(source)]
    dst = [_ax(d, ndim, "moveaxis") for d in np.atleast_1d(destination)]
    order = [a for a in range(ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return order


def swapaxes(x, axis1, axis2):
    """``x`` with two axes exchanged."""
    x = _t(x)
    perm = list(range(x.ndim))
    a = layout._axis("swapaxes", axis1, x.ndim, x.shape)
    b = layout._axis("swapaxes", axis2, x.ndim, x.shape)
    perm[a], perm[b] = perm[b], perm[a]
    return layout.transpose(x, perm)


def ravel(x):
    """``x`` flattened to 1-D."""
    return layout.reshape(x, (-1,))


def _atleast(x, n):
    x = _t(x)
    while x.ndim < n:
        x = layout.expand_dims(x, 0 if x.ndim == 0 or n == 2 else -1) if n != 3 or x.ndim != 2 \
            else layout.expand_dims(x, -1)
    return x


def hstack(xs):
    """Join along axis 1 (axis 0 for 1-D inputs)."""
    xs = [_t(x) for x in xs]
    return layout.concatenate(xs, axis=0 if xs[0].ndim == 1 else 1)


def vstack(xs):
    """Join 1-D or 2-D arrays as rows (axis 0)."""
    return layout.concatenate([_atleast(x, 2) for x in xs], axis=0)


def dstack(xs):
    """Join along the third axis."""
    out = []
    for x in xs:
        x = _t(x)
        if x.ndim == 1:
            x = layout.reshape(x, (1, -1, 1))
        elif x.ndim == 2:
            x = layout.expand_dims(x, -1)
        out.append(x)
    return layout.concatenate(out, axis=2)


def array_split(x, indices_or_sections, axis=0):
    """Split into ``indices_or_sections`` parts that may differ in size by one."""
    x = _t(x)
    if isinstance(indices_or_sections, int):
        n = x.shape[_ax(axis, x.ndim)]
        q, r = divmod(n, indices_or_sections)
        sizes = [q + 1] * r + [q] * (indices_or_sections - r)
        indices_or_sections = list(np.cumsum(sizes)[:-1])
    return layout.split(x, indices_or_sections, axis=axis)


def hsplit(x, indices_or_sections):
    """`layout.split` along axis 1 (0 for 1-D)."""
    x = _t(x)
    return layout.split(x, indices_or_sections, axis=0 if x.ndim == 1 else 1)


def vsplit(x, indices_or_sections):
    return layout.split(x, indices_or_sections, axis=0)


def dsplit(x, indices_or_sections):
    return layout.split(x, indices_or_sections, axis=2)


def unstack(x, num=None, axis=0):
    """The slices of ``x`` along ``axis``, as a list."""
    x = _t(x)
    ax = _ax(axis, x.ndim)
    key = [slice(None)] * x.ndim
    out = []
    for i in range(x.shape[ax]):
        key[ax] = i
        out.append(getitem(x, tuple(key)))
    return out


def append(x1, x2, axis=None):
    """``x2`` appended to ``x1`` (both flattened when ``axis`` is None)."""
    if axis is None:
        return layout.concatenate([ravel(x1), ravel(x2)], axis=0)
    return layout.concatenate([_t(x1), _t(x2)], axis=axis)


def get_item(x, key):
    """``x[key]`` (see `kerasrs.ops.getitem`)."""
    return getitem(x, key)


def view(x, dtype=None):
    """The bytes of ``x`` reinterpreted as ``dtype``. No gradient flows."""
    from kerasrs import backend
    return _plain(x, lambda xp, a: a.view(backend.standardize_dtype(dtype)))


def saturate_cast(x, dtype):
    """``x`` cast to ``dtype`` with values first clipped to that dtype's range."""
    from kerasrs import backend
    dt = np.dtype(backend.standardize_dtype(dtype))
    x = _t(x)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        x = math.clip(x, float(info.min), float(info.max))
    return math.cast(x, dt)


def diagonal(x, offset=0, axis1=0, axis2=1):
    """The diagonal of each 2-D slice in the plane ``(axis1, axis2)``, as the last axis."""
    x = _t(x)
    a1, a2 = _ax(axis1, x.ndim), _ax(axis2, x.ndim)
    rest = [a for a in range(x.ndim) if a not in (a1, a2)]
    y = layout.transpose(x, rest + [a1, a2])
    n, m = y.shape[-2], y.shape[-1]
    i = np.arange(builtins.max(0, -offset), builtins.min(n, m - offset))
    return getitem(y, (Ellipsis, i, i + offset))


def trace(x, offset=0, axis1=0, axis2=1):
    """Sum of the diagonal."""
    return math.sum(diagonal(x, offset, axis1, axis2), axis=-1)


def diag(x, k=0):
    """A 1-D ``x`` as the ``k``-th diagonal of a matrix, or a 2-D ``x``'s ``k``-th diagonal."""
    x = _t(x)
    if x.ndim == 2:
        return diagonal(x, k)
    if x.ndim != 1:
        raise ValueError(f"diag: `x` must be 1-D or 2-D. Received shape {x.shape}")
    n = x.shape[0] + builtins.abs(k)
    rows, cols = np.arange(x.shape[0]) + builtins.max(-k, 0), np.arange(x.shape[0]) + \
        builtins.max(k, 0)
    flat = rows * n + cols
    onehot = np.zeros((x.shape[0], n * n), dtype=x.dtype)
    onehot[np.arange(x.shape[0]), flat] = 1
    return layout.reshape(core.matmul(x, constant(x.backend.asarray(onehot), x.backend)), (n, n))


def diagflat(x, k=0):
    return diag(ravel(x), k)


def tril(x, k=0):
    """``x`` with the elements above diagonal ``k`` (of the last two axes) zeroed."""
    x = _t(x)
    mask = np.tri(x.shape[-2], x.shape[-1], k, dtype=bool)
    return math.where(constant(x.backend.asarray(mask), x.backend), x, 0)


def triu(x, k=0):
    """``x`` with the elements below diagonal ``k`` zeroed."""
    x = _t(x)
    mask = ~np.tri(x.shape[-2], x.shape[-1], k - 1, dtype=bool)
    return math.where(constant(x.backend.asarray(mask), x.backend), x, 0)


# -- products ------------------------------------------------------------------------------------
def outer(x1, x2):
    """Outer product of the flattened inputs."""
    return core.multiply(layout.expand_dims(ravel(x1), 1), layout.expand_dims(ravel(x2), 0))


def inner(x1, x2):
    """Sum product over the last axes (scalar inputs multiply)."""
    a, b = _t(x1), _t(x2)
    if a.ndim == 0 or b.ndim == 0:
        return core.multiply(a, b)
    return tensordot(a, b, axes=([-1], [-1]))


def vdot(x1, x2):
    """Dot product of the flattened inputs."""
    return math.sum(core.multiply(ravel(x1), ravel(x2)))


def tensordot(x1, x2, axes=2):
    """Sum products over ``axes`` (an int: the last/first ``axes`` axes; or two lists)."""
    a, b = _t(x1), _t(x2)
    if isinstance(axes, int):
        ax_a, ax_b = list(range(a.ndim - axes, a.ndim)), list(range(axes))
    else:
        ax_a, ax_b = [np.atleast_1d(v).tolist() for v in axes]
    ax_a, ax_b = [_ax(v, a.ndim) for v in ax_a], [_ax(v, b.ndim) for v in ax_b]
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    sa = [next(letters) for _ in range(a.ndim)]
    sb = [next(letters) for _ in range(b.ndim)]
    for i, j in zip(ax_a, ax_b):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in ax_a] + \
        [c for j, c in enumerate(sb) if j not in ax_b]
    return core.einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b)


def kron(x1, x2):
    """Kronecker product of two arrays of the same rank."""
    a, b = _t(x1), _t(x2)
    nd = builtins.max(a.ndim, b.ndim)
    a = layout.reshape(a, (1,) * (nd - a.ndim) + a.shape)
    b = layout.reshape(b, (1,) * (nd - b.ndim) + b.shape)
    ea = layout.reshape(a, tuple(d for s in a.shape for d in (s, 1)))
    eb = layout.reshape(b, tuple(d for s in b.shape for d in (1, s)))
    return layout.reshape(core.multiply(ea, eb), tuple(p * q for p, q in zip(a.shape, b.shape)))


def cross(x1, x2, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross product of 3-vectors along the given axes."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(_t(x1), axisa, -1), moveaxis(_t(x2), axisb, -1)
    if a.shape[-1] != 3 or b.shape[-1] != 3:
        raise ValueError(f"cross: vectors must have 3 components. Received shapes "
                         f"{a.shape} and {b.shape}")
    a0, a1, a2 = (a[..., i] for i in range(3))
    b0, b1, b2 = (b[..., i] for i in range(3))
    c = layout.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return moveaxis(c, -1, axisc)


# -- differences, cumulative, nan-aware and order statistics --------------------------------------
def diff(a, n=1, axis=-1):
    """The ``n``-th discrete difference along ``axis``."""
    x = _t(a)
    ax = _ax(axis, x.ndim)
    for _ in range(n):
        hi = [slice(None)] * x.ndim
        lo = [slice(None)] * x.ndim
        hi[ax], lo[ax] = slice(1, None), slice(None, -1)
        x = getitem(x, tuple(hi)) - getitem(x, tuple(lo))
    return x


class CumProd(Function):
    def __init__(self, axis):
        self.axis = axis

    def forward(self, x):
        self.x = x
        self.y = self.xp.cumprod(x, axis=self.axis)
        return self.y

    def backward(self, gy):
        # d y_j / d x_i = y_j / x_i for j >= i: a reversed cumulative sum of gy * y, over x
        # (exact where x has no zeros; finite differences are used in the tests).
        xp, ax = self.xp, self.axis
        s = xp.flip(xp.cumsum(xp.flip(gy * self.y, ax), ax), ax)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (s / self.x,)


def cumprod(x, axis=None, dtype=None):
    """Cumulative product along ``axis`` (flattened when None). The gradient assumes no zeros
    in ``x``."""
    x = _t(x) if dtype is None else math.cast(x, dtype)
    if axis is None:
        x, axis = ravel(x), 0
    return CumProd(_ax(axis, x.ndim)).apply(x)


def _nan_fill(x, value):
    x = _t(x)
    return math.where(math.isnan(x), value, x), math.isnan(x)


def nansum(x, axis=None, keepdims=False):
    """Sum ignoring NaN."""
    return math.sum(_nan_fill(x, 0.0)[0], axis=axis, keepdims=keepdims)


def nanprod(x, axis=None, keepdims=False):
    return reduction.prod(_nan_fill(x, 1.0)[0], axis=axis, keepdims=keepdims)


def nanmean(x, axis=None, keepdims=False):
    filled, nan = _nan_fill(x, 0.0)
    count = math.sum(math.cast(core.logical_not(nan), filled.dtype), axis=axis, keepdims=keepdims)
    return core.divide(math.sum(filled, axis=axis, keepdims=keepdims), count)


def nanvar(x, axis=None, keepdims=False):
    filled, nan = _nan_fill(x, 0.0)
    mu = nanmean(x, axis=axis, keepdims=True)
    dev = math.where(nan, 0.0, filled - mu)
    count = math.sum(math.cast(core.logical_not(nan), filled.dtype), axis=axis, keepdims=keepdims)
    return core.divide(math.sum(dev * dev, axis=axis, keepdims=keepdims), count)


def nanstd(x, axis=None, keepdims=False):
    return math.sqrt(nanvar(x, axis=axis, keepdims=keepdims))


def nanmax(x, axis=None, keepdims=False):
    return math.max(_nan_fill(x, -np.inf)[0], axis=axis, keepdims=keepdims)


def nanmin(x, axis=None, keepdims=False):
    return math.min(_nan_fill(x, np.inf)[0], axis=axis, keepdims=keepdims)


def nancumsum(x, axis=None, dtype=None):
    return reduction.cumsum(_nan_fill(x, 0.0)[0], axis=axis, dtype=dtype)


def nancumprod(x, axis=None, dtype=None):
    return cumprod(_nan_fill(x, 1.0)[0], axis=axis, dtype=dtype)


def nanargmax(x, axis=None, keepdims=False):
    return _plain(x, lambda xp, a: xp.nanargmax(a, axis=axis, keepdims=keepdims))


def nanargmin(x, axis=None, keepdims=False):
    return _plain(x, lambda xp, a: xp.nanargmin(a, axis=axis, keepdims=keepdims))


def _quantile_impl(x, q, axis, method, keepdims, nan):
    """Linear-interpolated quantiles through `sort` + `take` (differentiable in ``x``)."""
    x = _float(x)
    qs = np.asarray(convert_to_tensor(q).numpy() if isinstance(q, Tensor) else q, dtype="float64")
    if axis is None:
        x, axis, keep_shape = ravel(x), 0, (1,) * x.ndim
    else:
        keep_shape = None
    axes = [_ax(a, x.ndim) for a in np.atleast_1d(axis)]
    rest = [a for a in range(x.ndim) if a not in axes]
    y = layout.transpose(x, rest + axes)
    y = layout.reshape(y, tuple(x.shape[a] for a in rest) + (-1,))
    if nan:
        y = math.where(math.isnan(y), np.inf, y)
        count = math.sum(math.cast(core.logical_not(math.isinf(y)), "float64"), axis=-1)
        count = count.numpy()
    else:
        count = np.full(y.shape[:-1], y.shape[-1], dtype="float64")
    s = layout.sort(y, axis=-1)
    outs = []
    for qv in np.atleast_1d(qs):
        pos = qv * (count - 1)
        lo = np.floor(pos).astype("int64") if method != "higher" else np.ceil(pos).astype("int64")
        hi = np.ceil(pos).astype("int64") if method not in ("lower",) else lo
        if method == "nearest":
            lo = hi = np.round(pos).astype("int64")
        if method == "midpoint":
            frac = np.where(hi > lo, 0.5, 0.0)
        elif method == "linear":
            frac = pos - np.floor(pos)
        else:
            frac = np.zeros_like(pos)
        vlo = layout.take_along_axis(s, np.expand_dims(lo, -1), axis=-1)[..., 0]
        vhi = layout.take_along_axis(s, np.expand_dims(hi, -1), axis=-1)[..., 0]
        f = constant(s.backend.asarray(frac.astype(s.dtype)), s.backend)
        outs.append(vlo + (vhi - vlo) * f)
    out = layout.stack(outs, axis=0) if np.ndim(qs) else outs[0]
    if keepdims:
        shape = list(x.shape)
        for a in axes:
            shape[a] = 1
        if keep_shape is not None:
            shape = list(keep_shape)
        out = layout.reshape(out, ((len(outs),) if np.ndim(qs) else ()) + tuple(shape))
    return out


def quantile(x, q, axis=None, method="linear", keepdims=False):
    """The ``q``-th quantiles (q in [0, 1]) along ``axis``; methods "linear", "lower", "higher",
    "midpoint", "nearest" as NumPy."""
    return _quantile_impl(x, q, axis, method, keepdims, nan=False)


def percentile(x, q, axis=None, method="linear", keepdims=False):
    """`quantile` with ``q`` in percent."""
    return quantile(x, np.asarray(q, dtype="float64") / 100, axis, method, keepdims)


def median(x, axis=None, keepdims=False):
    return quantile(x, 0.5, axis=axis, keepdims=keepdims)


def nanquantile(x, q, axis=None, method="linear", keepdims=False):
    return _quantile_impl(x, q, axis, method, keepdims, nan=True)


def nanpercentile(x, q, axis=None, method="linear", keepdims=False):
    return nanquantile(x, np.asarray(q, dtype="float64") / 100, axis, method, keepdims)


def nanmedian(x, axis=None, keepdims=False):
    return nanquantile(x, 0.5, axis=axis, keepdims=keepdims)


def ptp(x, axis=None, keepdims=False):
    """``max - min`` along ``axis``."""
    return math.max(x, axis=axis, keepdims=keepdims) - math.min(x, axis=axis, keepdims=keepdims)


def average(x, axis=None, weights=None):
    """Weighted mean along ``axis`` (``weights`` 1-D along that axis, or x's shape)."""
    x = _float(x)
    if weights is None:
        return math.mean(x, axis=axis)
    w = _float(weights)
    if axis is not None and w.ndim == 1 and x.ndim > 1:
        shape = [1] * x.ndim
        shape[_ax(axis, x.ndim)] = w.shape[0]
        w = layout.reshape(w, tuple(shape))
    w = layout.broadcast_to(w, x.shape)
    return core.divide(math.sum(x * w, axis=axis), math.sum(w, axis=axis))


def corrcoef(x):
    """Pearson correlation matrix of the rows of ``x``."""
    x = _float(x)
    xc = x - math.mean(x, axis=-1, keepdims=True)
    cov = core.matmul(xc, layout.transpose(xc))
    d = math.sqrt(diagonal(cov))
    return cov / core.multiply(layout.expand_dims(d, 1), layout.expand_dims(d, 0))


def correlate(x1, x2, mode="valid"):
    """Cross-correlation of two 1-D sequences (``sum_n x1[n + k] * x2[n]``), as NumPy."""
    a, b = _float(x1), _float(x2)
    n, m = a.shape[0], b.shape[0]
    pad = {"valid": 0, "same": m // 2, "full": m - 1}[mode]
    if mode == "same":
        pad_l, pad_r = m // 2, m - 1 - m // 2
    else:
        pad_l = pad_r = pad
    ap = layout.pad(a, [(pad_l, pad_r)])
    length = n + pad_l + pad_r - m + 1
    idx = np.arange(length)[:, None] + np.arange(m)[None, :]
    return core.matmul(layout.take(ap, idx, axis=0), b)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral of ``y`` along ``axis`` by the trapezoid rule."""
    y = _float(y)
    ax = _ax(axis, y.ndim)
    n = y.shape[ax]
    lo = getitem(y, tuple(slice(0, n - 1) if i == ax else slice(None) for i in range(y.ndim)))
    hi = getitem(y, tuple(slice(1, n) if i == ax else slice(None) for i in range(y.ndim)))
    d = diff(x, axis=axis) if x is not None else dx
    return math.sum((lo + hi) * d / 2.0, axis=ax)


# -- tests, searching and counting (no gradient) ---------------------------------------------------
def isclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    a, b = _t(x1), _t(x2)
    return constant(a.backend.xp.isclose(a.data, b.data, rtol, atol, equal_nan), a.backend)


def allclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    a, b = _t(x1), _t(x2)
    return constant(a.backend.xp.asarray(a.backend.xp.allclose(a.data, b.data, rtol, atol,
                                                               equal_nan)), a.backend)


def isin(x1, x2, assume_unique=False, invert=False):
    a, b = _t(x1), _t(x2)
    return constant(a.backend.xp.isin(a.data, b.data, assume_unique=assume_unique,
                                      invert=invert), a.backend)


def searchsorted(sorted_sequence, values, side="left"):
    a, v = _t(sorted_sequence), _t(values)
    return constant(a.backend.xp.searchsorted(a.data, v.data, side=side), a.backend)


def digitize(x, bins):
    a, b = _t(x), _t(bins)
    return constant(a.backend.xp.digitize(a.data, b.data).astype("int32"), a.backend)


def bincount(x, weights=None, minlength=0, sparse=False):
    """Counts of each non-negative int in ``x`` (weighted sums with ``weights``); a 2-D ``x``
    counts row by row."""
    x = _t(x)
    xp = x.backend.xp
    w = None if weights is None else _t(weights).data
    if x.ndim == 2:
        length = builtins.max(int(x.data.max()) + 1 if x.data.size else 0, minlength)
        rows = [xp.bincount(r, None if w is None else w[i], length) for i, r in enumerate(x.data)]
        return constant(xp.stack(rows), x.backend)
    return constant(xp.bincount(x.data, w, minlength), x.backend)


def histogram(x, bins=10, range=None):  # noqa: A002
    """``(counts, bin_edges)`` of ``x``'s values."""
    x = _t(x)
    counts, edges = np.histogram(x.numpy(), bins=bins, range=range)
    return constant(x.backend.asarray(counts), x.backend), constant(x.backend.asarray(edges),
                                                                    x.backend)


def unique(x, sorted=True, return_inverse=False, return_counts=False, axis=None, size=None,
           fill_value=None):  # noqa: A002
    """The distinct values of ``x`` (sorted), optionally with inverse indices and counts."""
    x = _t(x)
    res = np.unique(x.numpy(), return_inverse=return_inverse, return_counts=return_counts,
                    axis=axis)
    res = res if isinstance(res, tuple) else (res,)
    out = [constant(x.backend.asarray(r), x.backend) for r in res]
    return out[0] if len(out) == 1 else tuple(out)


def unravel_index(indices, shape):
    """Flat indices as a tuple of coordinate Tensors."""
    i = _t(indices)
    return tuple(constant(c, i.backend) for c in i.backend.xp.unravel_index(i.data, shape))


def argpartition(x, kth, axis=-1):
    """Indices that partition ``x`` around its ``kth`` element."""
    return _plain(x, lambda xp, a: xp.argpartition(a, kth, axis=axis))


def top_k(x, k, sorted=True):  # noqa: A002
    """``(values, indices)`` of the ``k`` largest entries along the last axis; values carry the
    gradient.

    Raises:
        ValueError: if ``k`` is not an int in ``[0, x.shape[-1]]``.
    """
    x = _t(x)
    if x.ndim == 0 or not isinstance(k, (int, np.integer)) or not 0 <= k <= x.shape[-1]:
        raise ValueError(f"top_k: k must be an int in [0, {x.shape[-1] if x.ndim else 0}] (the size "
                         f"of the last axis). Received: k={k!r}, shape {x.shape}")
    order = np.argsort(-x.numpy(), axis=-1, kind="stable")[..., :k]
    idx = constant(x.backend.asarray(order), x.backend)
    return layout.take_along_axis(x, order, axis=-1), idx


def in_top_k(targets, predictions, k):
    """True where ``targets[i]`` is among the top ``k`` of ``predictions[i]`` (ties count in)."""
    p = _t(predictions).numpy()
    t = np.asarray(_t(targets).numpy(), dtype="int64")
    target_score = np.take_along_axis(p, t[:, None], axis=1)
    better = (p > target_score).sum(axis=1)
    return constant(_t(predictions).backend.asarray(better < k), _t(predictions).backend)


def select(condlist, choicelist, default=0):
    """The first matching choice per element (NumPy's ``select``); differentiable in choices."""
    out = default
    for c, v in reversed(list(zip(condlist, choicelist))):
        out = math.where(c, v, out)
    return _t(out)


def dtype(x):
    """The dtype name of ``x`` ("float32", ...)."""
    return str(_t(x).dtype)


def is_tensor(x):
    """True for a kerasrs `Tensor`."""
    return isinstance(x, Tensor)


def real(x):
    return _plain(x, lambda xp, a: xp.real(a))


def imag(x):
    return _plain(x, lambda xp, a: xp.imag(a))


def conj(x):
    x = _t(x)
    return x if x.dtype.kind != "c" else _plain(x, lambda xp, a: xp.conj(a))


conjugate = conj


def angle(x):
    return _plain(x, lambda xp, a: xp.angle(a).astype("float32") if a.dtype.kind in "iub"
                  else xp.angle(a))


def view_as_complex(x):
    """A complex Tensor from a real one whose last axis (size 2) holds (real, imag). No
    gradient flows (kerasrs differentiates real tensors only)."""
    x = _t(x)
    return constant(x.data[..., 0] + 1j * x.data[..., 1], x.backend)


def view_as_real(x):
    """The (real, imag) parts of a complex Tensor along a new last axis. No gradient flows."""
    x = _t(x)
    return constant(x.backend.xp.stack([x.data.real, x.data.imag], axis=-1), x.backend)


def vectorize(pyfunc, *, excluded=None, signature=None):
    """``pyfunc`` mapped over the leading axis of its Tensor arguments (stacked results)."""
    def mapped(*args):
        ts = [_t(a) for a in args]
        n = ts[0].shape[0] if ts[0].ndim else None
        if n is None:
            return pyfunc(*ts)
        return layout.stack([_t(pyfunc(*[t[i] for t in ts])) for i in range(n)], axis=0)

    return mapped


__all__ = ["array", "copy", "identity", "empty", "empty_like", "tri", "linspace", "logspace",
           "geomspace", "bartlett", "blackman", "hamming", "hanning", "kaiser", "meshgrid",
           "vander", "flip", "fliplr", "flipud", "rot90", "roll", "moveaxis", "swapaxes", "ravel",
           "hstack", "vstack", "dstack", "array_split", "hsplit", "vsplit", "dsplit", "unstack",
           "append", "get_item", "view", "saturate_cast", "diagonal", "trace", "diag",
           "diagflat", "tril", "triu", "outer", "inner", "vdot", "tensordot", "kron", "cross",
           "diff", "cumprod", "nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax",
           "nanmin", "nancumsum", "nancumprod", "nanargmax", "nanargmin", "quantile",
           "percentile", "median", "nanquantile", "nanpercentile", "nanmedian", "ptp", "average",
           "corrcoef", "correlate", "trapezoid", "isclose", "allclose", "isin", "searchsorted",
           "digitize", "bincount", "histogram", "unique", "unravel_index", "argpartition",
           "top_k", "in_top_k", "select", "dtype", "is_tensor", "real", "imag", "conj",
           "conjugate", "angle", "vectorize", "view_as_complex", "view_as_real"]
