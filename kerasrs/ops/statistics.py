"""Order and descriptive statistics with NumPy's names: quantiles (``quantile``, ``percentile``,
``median`` and their NaN-skipping forms), ``ptp``, ``average``, ``corrcoef``, ``correlate`` and
``trapezoid``. Composites of ``sort``, gathers and reductions, so gradients flow to ``x``."""

import numpy as np

from kerasrs.autodiff import Tensor, convert_to_tensor
from kerasrs.backend.dtypes import float_type
from kerasrs.ops import core, layout, math, searching, stacking
from kerasrs.ops.core import axis_index, constant, getitem, to_float
from kerasrs.ops.layout import ravel
from kerasrs.ops.matrices import diagonal
from kerasrs.ops.reduction import diff
from kerasrs.ops.dispatch import op
from kerasrs.ops.dispatch import op


def _quantile_impl(x, q, axis, method, keepdims, nan):
    """Linear-interpolated quantiles through `sort` + `take` (differentiable in ``x``)."""
    x = to_float(x)
    qs = np.asarray(convert_to_tensor(q).numpy() if isinstance(q, Tensor) else q, dtype="float64")
    if axis is None:
        x, axis, keep_shape = ravel(x), 0, (1,) * x.ndim
    else:
        keep_shape = None
    axes = [axis_index(a, x.ndim) for a in np.atleast_1d(axis)]
    rest = [a for a in range(x.ndim) if a not in axes]
    y = layout.transpose(x, rest + axes)
    y = layout.reshape(y, tuple(x.shape[a] for a in rest) + (-1,))
    if nan:
        y = math.where(math.isnan(y), np.inf, y)
        count = math.sum(math.cast(core.logical_not(math.isinf(y)), "float64"), axis=-1)
        count = count.numpy()
    else:
        count = np.full(y.shape[:-1], y.shape[-1], dtype="float64")
    s = searching.sort(y, axis=-1)
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
    out = stacking.stack(outs, axis=0) if np.ndim(qs) else outs[0]
    if keepdims:
        shape = list(x.shape)
        for a in axes:
            shape[a] = 1
        if keep_shape is not None:
            shape = list(keep_shape)
        out = layout.reshape(out, ((len(outs),) if np.ndim(qs) else ()) + tuple(shape))
    return out


@op
def quantile(x, q, axis=None, method="linear", keepdims=False):
    """The ``q``-th quantiles (q in [0, 1]) along ``axis``; methods "linear", "lower", "higher",
    "midpoint", "nearest" as NumPy."""
    return _quantile_impl(x, q, axis, method, keepdims, nan=False)


@op
def percentile(x, q, axis=None, method="linear", keepdims=False):
    """`quantile` with ``q`` in percent."""
    return quantile(x, np.asarray(q, dtype="float64") / 100, axis, method, keepdims)


@op
def median(x, axis=None, keepdims=False):
    return quantile(x, 0.5, axis=axis, keepdims=keepdims)


@op
def nanquantile(x, q, axis=None, method="linear", keepdims=False):
    return _quantile_impl(x, q, axis, method, keepdims, nan=True)


@op
def nanpercentile(x, q, axis=None, method="linear", keepdims=False):
    return nanquantile(x, np.asarray(q, dtype="float64") / 100, axis, method, keepdims)


@op
def nanmedian(x, axis=None, keepdims=False):
    return nanquantile(x, 0.5, axis=axis, keepdims=keepdims)


@op
def ptp(x, axis=None, keepdims=False):
    """``max - min`` along ``axis``."""
    return math.max(x, axis=axis, keepdims=keepdims) - math.min(x, axis=axis, keepdims=keepdims)


@op
def average(x, axis=None, weights=None):
    """Weighted mean along ``axis`` (``weights`` 1-D along that axis, or x's shape)."""
    if weights is None:
        return math.mean(to_float(x), axis=axis)
    x, w = convert_to_tensor(x), convert_to_tensor(weights)
    dtype = float_type(x.dtype, w.dtype)  # Keras: x, weights and a Python float promoted
    x, w = math.cast(x, dtype), math.cast(w, dtype)
    if axis is not None and w.ndim == 1 and x.ndim > 1:
        shape = [1] * x.ndim
        shape[axis_index(axis, x.ndim)] = w.shape[0]
        w = layout.reshape(w, tuple(shape))
    w = layout.broadcast_to(w, x.shape)
    return core.divide(math.sum(x * w, axis=axis), math.sum(w, axis=axis))


@op
def corrcoef(x):
    """Pearson correlation matrix of the rows of ``x``."""
    x = to_float(x)
    xc = x - math.mean(x, axis=-1, keepdims=True)
    cov = core.matmul(xc, layout.transpose(xc))
    d = math.sqrt(diagonal(cov))
    return cov / core.multiply(layout.expand_dims(d, 1), layout.expand_dims(d, 0))


@op
def correlate(x1, x2, mode="valid"):
    """Cross-correlation of two 1-D sequences (``sum_n x1[n + k] * x2[n]``), as NumPy."""
    a, b = convert_to_tensor(x1), convert_to_tensor(x2)
    dtype = float_type(a.dtype, b.dtype)  # promoted together: float16 with uint8 stays float16
    a, b = math.cast(a, dtype), math.cast(b, dtype)
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


@op
def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral of ``y`` along ``axis`` by the trapezoid rule."""
    y = to_float(y)
    ax = axis_index(axis, y.ndim)
    n = y.shape[ax]
    lo = getitem(y, tuple(slice(0, n - 1) if i == ax else slice(None) for i in range(y.ndim)))
    hi = getitem(y, tuple(slice(1, n) if i == ax else slice(None) for i in range(y.ndim)))
    d = diff(x, axis=axis) if x is not None else dx
    return math.sum((lo + hi) * d / 2.0, axis=ax)
