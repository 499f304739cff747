"""Sorting, searching and counting: `sort` (differentiable: the gradient follows each element
back), and indices, tests and counts with NumPy's names (``argsort``, ``nonzero``, ``isclose``,
``isin``, ``searchsorted``, ``bincount``, ``unique``, ``top_k``, ``select``...). Indices,
booleans and counts carry no gradient; ``top_k``'s values and ``select``'s choices do."""

import builtins

import numpy as np

from kerasrs.autodiff import Function, convert_to_tensor
from kerasrs.backend.dtypes import INDEX, sum_type
from kerasrs.ops import layout, math
from kerasrs.ops.core import constant, indices, no_gradient
from kerasrs.ops.layout import _axis, _shape, reshape
from kerasrs.ops.dispatch import op


class Sort(Function):
    def __init__(self, axis):
        self.axis = axis

    def forward(self, x):
        xp = self.xp
        self.order = xp.argsort(x, axis=self.axis, kind="stable")
        return xp.take_along_axis(x, self.order, axis=self.axis)

    def backward(self, gy):  # a permutation: route each gradient back through its inverse
        inverse = self.xp.argsort(self.order, axis=self.axis)
        return (self.xp.take_along_axis(gy, inverse, axis=self.axis),)


@op
def sort(x, axis=-1):
    """``x`` sorted in ascending order along ``axis`` (flattened when None). Differentiable:
    the gradient follows each element to where it came from (ties keep their order)."""
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    shape = _shape(x)
    return Sort(_axis("sort", axis, len(shape), shape)).apply(x)


@op
def argsort(x, axis=-1):
    """Indices that sort ``x`` along ``axis`` (stable). An int32 Tensor, no gradient."""
    x = convert_to_tensor(x)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    ax = _axis("argsort", axis, x.ndim, x.shape)
    return indices(x.backend.xp.argsort(x.data, axis=ax, kind="stable"), x.backend)


@op
def nonzero(x):
    """Indices of the non-zero elements: a tuple of int32 Tensors, one per axis."""
    x = convert_to_tensor(x)
    return tuple(indices(i, x.backend) for i in x.backend.xp.nonzero(x.data))


@op
def isclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    a, b = convert_to_tensor(x1), convert_to_tensor(x2)
    return constant(a.backend.xp.isclose(a.data, b.data, rtol, atol, equal_nan), a.backend)


@op
def allclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    a, b = convert_to_tensor(x1), convert_to_tensor(x2)
    return constant(a.backend.xp.asarray(a.backend.xp.allclose(a.data, b.data, rtol, atol,
                                                               equal_nan)), a.backend)


@op
def isin(x1, x2, assume_unique=False, invert=False):
    a, b = convert_to_tensor(x1), convert_to_tensor(x2)
    return constant(a.backend.xp.isin(a.data, b.data, assume_unique=assume_unique,
                                      invert=invert), a.backend)


@op
def searchsorted(sorted_sequence, values, side="left"):
    a, v = convert_to_tensor(sorted_sequence), convert_to_tensor(values)
    return indices(a.backend.xp.searchsorted(a.data, v.data, side=side), a.backend)


@op
def digitize(x, bins):
    a, b = convert_to_tensor(x), convert_to_tensor(bins)
    return constant(a.backend.xp.digitize(a.data, b.data).astype("int32"), a.backend)


@op
def bincount(x, weights=None, minlength=0, sparse=False):
    """Counts of each non-negative int in ``x`` (weighted sums with ``weights``); a 2-D ``x``
    counts row by row."""
    x = convert_to_tensor(x)
    xp = x.backend.xp
    w = None if weights is None else convert_to_tensor(weights).data
    # Keras's dtype: int32 counts, or the weights' dtype (NumPy sums weights in float64)
    dtype = INDEX if w is None else sum_type(w.dtype) if w.dtype.kind == "b" else w.dtype
    if x.ndim == 2:
        length = builtins.max(int(x.data.max()) + 1 if x.data.size else 0, minlength)
        rows = [xp.bincount(r, None if w is None else w[i], length) for i, r in enumerate(x.data)]
        return constant(xp.stack(rows).astype(dtype), x.backend)
    return constant(xp.bincount(x.data, w, minlength).astype(dtype), x.backend)


@op
def histogram(x, bins=10, range=None):  # noqa: A002
    """``(counts, bin_edges)`` of the values of the 1-D ``x``, in ``bins`` equal bins over
    ``range`` (default: the values' min and max).

    Raises:
        ValueError: for ``x`` not 1-D, ``bins`` not a non-negative int, or ``range`` not a pair
            ``(low, high)`` with ``low < high``.
    """
    x = convert_to_tensor(x)
    if x.ndim != 1:
        raise ValueError(f"histogram: Input tensor must be 1-dimensional. Received: shape "
                         f"{x.shape}")
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 0:
        raise ValueError(f"histogram: Argument `bins` should be a non-negative integer. "
                         f"Received: bins={bins!r}")
    if range is not None:
        if not isinstance(range, (tuple, list)) or len(range) != 2:
            raise ValueError(f"histogram: Argument `range` must be a tuple of two elements. "
                             f"Received: range={range!r}")
        if range[1] < range[0]:
            raise ValueError(f"histogram: The second element of `range` must be greater than "
                             f"the first. Received: range={range!r}")
    counts, edges = np.histogram(x.numpy(), bins=bins, range=range)
    return constant(x.backend.asarray(counts), x.backend), constant(x.backend.asarray(edges),
                                                                    x.backend)


@op
def unique(x, sorted=True, return_inverse=False, return_counts=False, axis=None, size=None,
           fill_value=None):  # noqa: A002
    """The distinct values of ``x`` (sorted), optionally with inverse indices and counts."""
    x = convert_to_tensor(x)
    res = np.unique(x.numpy(), return_inverse=return_inverse, return_counts=return_counts,
                    axis=axis)
    res = res if isinstance(res, tuple) else (res,)
    out = [constant(x.backend.asarray(r), x.backend) for r in res]
    return out[0] if len(out) == 1 else tuple(out)


@op
def unravel_index(indices, shape):
    """Flat indices as a tuple of coordinate Tensors."""
    i = convert_to_tensor(indices)
    return tuple(constant(c.astype(i.dtype), i.backend)  # in the indices' dtype, as Keras
                 for c in i.backend.xp.unravel_index(i.data, shape))


@op
def argpartition(x, kth, axis=-1):
    """Indices that partition ``x`` around its ``kth`` element."""
    return no_gradient(x, lambda xp, a: xp.argpartition(a, kth, axis=axis).astype(INDEX))


@op
def top_k(x, k, sorted=True):  # noqa: A002
    """``(values, indices)`` of the ``k`` largest entries along the last axis; values carry the
    gradient. NaN counts as larger than any number (as `max` and `argmax` see it); ties keep
    index order.

    Raises:
        ValueError: if ``k`` is not an int in ``[0, x.shape[-1]]``.
    """
    x = convert_to_tensor(x)
    if x.ndim == 0 or not isinstance(k, (int, np.integer)) or not 0 <= k <= x.shape[-1]:
        raise ValueError(f"top_k: k must be an int in [0, {x.shape[-1] if x.ndim else 0}] (the "
                         f"size of the last axis). Received: k={k!r}, shape {x.shape}")
    values = x.numpy()
    order = np.argsort(-values, axis=-1, kind="stable")
    if values.dtype.kind == "f":  # NaN is the largest value, as for max and argmax
        nan_last = ~np.isnan(np.take_along_axis(values, order, axis=-1))
        order = np.take_along_axis(order, np.argsort(nan_last, axis=-1, kind="stable"), -1)
    order = order[..., :k]
    idx = indices(x.backend.asarray(order), x.backend)
    return layout.take_along_axis(x, order, axis=-1), idx


@op
def in_top_k(targets, predictions, k):
    """True where ``targets[i]`` is among the top ``k`` of ``predictions[i]`` (ties count in)."""
    predictions = convert_to_tensor(predictions)
    p = predictions.numpy()
    t = np.asarray(convert_to_tensor(targets).numpy(), dtype="int64")
    target_score = np.take_along_axis(p, t[:, None], axis=1)
    better = (p > target_score).sum(axis=1)
    return constant(predictions.backend.asarray(better < k), predictions.backend)


@op
def select(condlist, choicelist, default=0):
    """The first matching choice per element (NumPy's ``select``); differentiable in choices."""
    out = default
    for c, v in reversed(list(zip(condlist, choicelist))):
        out = math.where(c, v, out)
    return convert_to_tensor(out)
