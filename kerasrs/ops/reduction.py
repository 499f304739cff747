"""Reductions and statistics: prod, var, std, moments, cumsum, cumprod, diff, logsumexp, norm,
all/any.

Each differentiable one is a `Function` on arrays plus a public function with Keras's name.
Axis conventions are NumPy's: ``axis`` None (all axes), an int (negative counts from the end)
or a tuple; ``keepdims`` keeps reduced axes with size 1.
"""

import builtins

import numpy as np

from kerasrs.autodiff import Function, convert_to_tensor
from kerasrs.backend import floatx, is_float_dtype
from kerasrs.backend.dtypes import INDEX
from kerasrs.ops import math as ops_math
from kerasrs.ops.core import axis_index, constant, getitem, not_equal
from kerasrs.ops.dispatch import op
from kerasrs.ops.promotion import scan_dtype, sum_dtype
from kerasrs.ops.layout import expand_dims, ravel, reshape, squeeze, transpose
from kerasrs.ops.math import _axes, _check_axis, _expand_like


def _float(x):
    """``x`` as a Tensor with a float dtype (integers and bools become ``floatx()``)."""
    x = convert_to_tensor(x)
    return x if is_float_dtype(x.dtype) else ops_math.cast(x, floatx())


def _drop(y_keep, shape, axes, keepdims):
    return y_keep if keepdims else y_keep.reshape([n for i, n in enumerate(shape) if i not in axes])


# -- prod --------------------------------------------------------------------------------------
class Prod(Function):
    """Product over axes. The gradient of each factor is the product of all the others, from
    exclusive cumulative products from the left and the right (no division, so it is exact
    with zeros in the input: one zero leaves a gradient only at the zero, two zeros none)."""
    half_in_float32 = "always"

    def __init__(self, axis, keepdims):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, x):
        self.x, self.axes = x, _axes(self.axis, x.ndim)
        return x.prod(axis=self.axes, keepdims=self.keepdims, dtype=sum_dtype(x.dtype))

    def backward(self, gy):
        xp, x, axes = self.xp, self.x, self.axes
        keep = [a for a in range(x.ndim) if a not in axes]
        moved = x.transpose(keep + list(axes))
        k = int(np.prod([x.shape[a] for a in axes]))
        if k == 0:
            return (xp.zeros_like(x),)
        flat = moved.reshape(moved.shape[:len(keep)] + (k,))
        ones = xp.ones(flat.shape[:-1] + (1,), x.dtype)
        left = xp.cumprod(xp.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
        right = xp.cumprod(xp.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
        g = (left * right).reshape(moved.shape).transpose(np.argsort(keep + list(axes)))
        return (g * _expand_like(gy, x.shape, axes),)


@op
def prod(x, axis=None, keepdims=False, dtype=None):
    """Product of the elements over ``axis``; ``dtype`` casts the input first.

    The gradient is exact also where inputs are 0 (see `Prod`).
    """
    _check_axis("prod", x, axis)
    if dtype is not None:
        x = ops_math.cast(x, dtype)
    return Prod(axis, keepdims).apply(x)


# -- variance and standard deviation -----------------------------------------------------------
class Var(Function):
    """Population variance (``ddof=0``, as Keras) or, with ``std=True``, its square root."""
    half_in_float32 = "always"

    def __init__(self, axis, keepdims, std=False):
        self.axis, self.keepdims, self.std = axis, keepdims, std

    def forward(self, x):
        xp, self.shape, self.axes = self.xp, x.shape, _axes(self.axis, x.ndim)
        self.count = builtins.max(int(np.prod([x.shape[a] for a in self.axes])), 1)
        self.centered = x - x.mean(axis=self.axes, keepdims=True)
        y = (self.centered * self.centered).mean(axis=self.axes, keepdims=True)
        if self.std:
            self.y = y = xp.sqrt(y)
        return _drop(y, self.shape, self.axes, self.keepdims)

    def backward(self, gy):
        gy = _expand_like(gy, self.shape, self.axes)
        if not self.std:  # d var / dx_i = 2 (x_i - mean) / n
            return (gy * self.centered * (2 / self.count),)
        with np.errstate(divide="ignore", invalid="ignore"):  # d std / dx = (x - mean)/(n std)
            scale = self.xp.where(self.y > 0, gy / (self.count * self.y), 0)
        return ((scale * self.centered).astype(gy.dtype, copy=False),)


@op
def var(x, axis=None, keepdims=False):
    """Population variance over ``axis`` (divides by ``n``, as Keras). Integers give floatx."""
    _check_axis("var", x, axis)
    return Var(axis, keepdims).apply(_float(x))


@op
def std(x, axis=None, keepdims=False):
    """Population standard deviation over ``axis``. Where it is 0 the gradient is 0 (a
    subgradient), not NaN."""
    _check_axis("std", x, axis)
    return Var(axis, keepdims, std=True).apply(_float(x))


@op
def moments(x, axes, keepdims=False, synchronized=False):
    """Mean and population variance of ``x`` over ``axes``, as Keras's ``ops.moments``.

    Args:
        x: Tensor.
        axes: int or tuple of ints.
        keepdims: keep the reduced axes with size 1.
        synchronized: accepted for Keras compatibility; kerasrs runs on one device, so it
            changes nothing.

    Returns:
        ``(mean, variance)``, both differentiable. float16/bfloat16 inputs are computed in
        float32 and cast back (as Keras does, to avoid overflow in the squares).
    """
    x = _float(x)
    _check_axis("moments", x, axes)
    low = x.dtype.itemsize < 4
    xc = ops_math.cast(x, "float32") if low else x
    m, v = ops_math.mean(xc, axes, keepdims), Var(axes, keepdims).apply(xc)
    return (ops_math.cast(m, x.dtype), ops_math.cast(v, x.dtype)) if low else (m, v)


# -- cumsum and logsumexp ----------------------------------------------------------------------
class CumSum(Function):
    half_in_float32 = "always"

    def __init__(self, axis):
        self.axis = axis

    def forward(self, x):
        return self.xp.cumsum(x, axis=self.axis, dtype=scan_dtype(x.dtype))

    def backward(self, gy):  # each input feeds every later output: a reversed cumulative sum
        xp = self.xp
        return (xp.flip(xp.cumsum(xp.flip(gy, self.axis), axis=self.axis), self.axis),)


@op
def cumsum(x, axis=None, dtype=None):
    """Cumulative sum along ``axis`` (of the flattened tensor when None)."""
    x = convert_to_tensor(x)
    _check_axis("cumsum", x, axis)
    if dtype is not None:
        x = ops_math.cast(x, dtype)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    return CumSum(axis).apply(x)


class LogSumExp(Function):
    half_in_float32 = "always"

    def __init__(self, axis, keepdims):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, x):
        xp, axes = self.xp, _axes(self.axis, x.ndim)
        self.shape, self.axes = x.shape, axes
        m = x.max(axis=axes, keepdims=True) if x.size else xp.zeros([1] * x.ndim, x.dtype)
        m = xp.where(xp.isfinite(m), m, 0)  # rows of -inf: shift by 0, result -inf
        e = xp.exp(x - m)
        s = e.sum(axis=axes, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            y = m + xp.log(s)
            self.w = xp.where(s > 0, e / s, 0).astype(x.dtype, copy=False)  # softmax weights
        return _drop(y, self.shape, axes, self.keepdims)

    def backward(self, gy):
        return (self.w * _expand_like(gy, self.shape, self.axes),)


@op
def logsumexp(x, axis=None, keepdims=False):
    """``log(sum(exp(x)))`` over ``axis``, computed stably: the max is taken out first, so
    large inputs do not overflow (``logsumexp([1000, 1000]) = 1000 + log 2``). The gradient is
    ``softmax(x)`` over the reduced axes."""
    _check_axis("logsumexp", x, axis)
    return LogSumExp(axis, keepdims).apply(_float(x))


# -- norms -------------------------------------------------------------------------------------
class VectorNorm(Function):
    """``(sum |x|^p)^(1/p)`` over ``axes`` for p in {2, 1, inf, -inf, 0, other > 0}.

    At the zero vector the gradient is 0 (a subgradient), never NaN.
    """
    half_in_float32 = "always"

    def __init__(self, p, axes, keepdims):
        self.p, self.axes, self.keepdims = p, axes, keepdims

    def forward(self, x):
        xp, p, axes = self.xp, self.p, self.axes
        self.x, a = x, self.xp.abs(x)
        if p == 2:
            y = xp.sqrt((x * x).sum(axis=axes, keepdims=True))
        elif p == 1:
            y = a.sum(axis=axes, keepdims=True)
        elif p in (np.inf, -np.inf):
            y = (a.max if p > 0 else a.min)(axis=axes, keepdims=True)
        elif p == 0:
            y = (x != 0).sum(axis=axes, keepdims=True).astype(x.dtype)
        else:
            y = (a ** p).sum(axis=axes, keepdims=True) ** (1 / p)
        self.y = y
        return _drop(y, x.shape, axes, self.keepdims)

    def backward(self, gy):
        xp, p, x, y = self.xp, self.p, self.x, self.y
        gy = _expand_like(gy, x.shape, self.axes)
        with np.errstate(divide="ignore", invalid="ignore"):
            if p == 2:
                g = xp.where(y > 0, x / y, 0)
            elif p == 1:
                g = xp.sign(x)
            elif p in (np.inf, -np.inf):  # ties at the max |x| share the gradient evenly
                hit = xp.abs(x) == y
                g = xp.sign(x) * hit / hit.sum(axis=self.axes, keepdims=True)
            elif p == 0:
                g = xp.zeros_like(x)
            else:
                g = xp.where(y > 0, xp.sign(x) * (xp.abs(x) / y) ** (p - 1), 0)
        return ((gy * g).astype(x.dtype, copy=False),)


class SvdNorm(Function):
    """Matrix norms from singular values over the last two axes: nuclear (sum), 2 (largest),
    -2 (smallest). Gradients ``U V^T``, ``u_1 v_1^T`` and ``u_n v_n^T`` (distinct singular
    values assumed, as in every framework)."""

    def __init__(self, ord):  # noqa: A002
        self.ord = ord

    def forward(self, x):
        self.u, s, self.vh = self.xp.linalg.svd(x, full_matrices=False)
        return s.sum(-1) if self.ord == "nuc" else s[..., 0] if self.ord == 2 else s[..., -1]

    def backward(self, gy):
        u, vh = self.u, self.vh
        if self.ord == 2:
            u, vh = u[..., :, :1], vh[..., :1, :]
        elif self.ord == -2:
            u, vh = u[..., :, -1:], vh[..., -1:, :]
        return (gy[..., None, None] * (u @ vh),)


@op
def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002  (Keras's argument name)
    """Vector or matrix norm, with NumPy's and Keras's rules for ``ord`` and ``axis``.

    Args:
        x: Tensor; integers are converted to floatx.
        ord: vector norms (one axis): None or 2 (Euclidean), 1, ``inf``, ``-inf``, 0 (count of
            non-zeros) or any other positive number p. Matrix norms (two axes): None or "fro"
            (Frobenius), "nuc" (nuclear), 1 / -1 (max / min column sum of ``|x|``), ``inf`` /
            ``-inf`` (max / min row sum), 2 / -2 (largest / smallest singular value).
        axis: None, an int or a pair of ints. None means: all axes flattened when ``ord`` is
            None; otherwise the single axis of a 1-D or the two axes of a 2-D input.
        keepdims: keep the reduced axes with size 1.

    Returns:
        Tensor. Gradient at the zero vector/matrix: 0, not NaN (behaviour case C11).

    Raises:
        ValueError: for a bad axis, an ``ord`` not valid for the number of axes, or ``axis``
            None with ``ord`` set on a tensor of rank other than 1 or 2.
    """
    x = _float(x)
    nd = x.ndim
    if axis is None:
        if ord is None:
            return VectorNorm(2, tuple(range(nd)), keepdims).apply(x)
        if nd not in (1, 2):
            raise ValueError("norm: with ord set and axis=None the input must be 1-D or 2-D. "
                             f"Received: shape {x.shape}, ord={ord!r}")
        axis = tuple(range(nd))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    _check_axis("norm", x, axes)
    axes = tuple(a % nd for a in axes)
    if len(axes) == 1 and ord in (None, 2, 1, np.inf, -np.inf, 0) or (
            len(axes) == 1 and isinstance(ord, (int, float)) and ord > 0):
        return VectorNorm(2 if ord is None else ord, axes, keepdims).apply(x)
    if len(axes) != 2 or axes[0] == axes[1]:
        raise ValueError(f"norm: axis must be one axis or two different axes, and ord must suit "
                         f"it. Received: axis={axis!r}, ord={ord!r}, shape {x.shape}")
    if ord in (None, "fro"):
        return VectorNorm(2, tuple(sorted(axes)), keepdims).apply(x)
    if ord in ("nuc", 2, -2):
        rest = [a for a in range(nd) if a not in axes]
        y = SvdNorm(ord).apply(transpose(x, rest + list(axes)))
        return expand_dims(y, tuple(sorted(axes))) if keepdims else y
    if ord in (1, -1, np.inf, -np.inf):
        row, col = axes if ord in (1, -1) else axes[::-1]
        sums = ops_math.sum(ops_math.absolute(x), axis=row, keepdims=True)
        pick = ops_math.max if ord in (1, np.inf) else ops_math.min
        y = pick(sums, axis=col, keepdims=True)
        return y if keepdims else squeeze(y, axis=axes)
    raise ValueError(f"norm: ord {ord!r} is not a matrix norm. Received: ord={ord!r}, "
                     f"axis={axis!r}")


# -- boolean reductions (no gradient) ----------------------------------------------------------
def _bool_reduce(reduce, name, doc):
    def fn(x, axis=None, keepdims=False):
        x = convert_to_tensor(x)
        _check_axis(name, x, axis)
        return constant(reduce(x.data.astype(bool, copy=False), axis=axis, keepdims=keepdims),
                        x.backend)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return op(fn)


all = _bool_reduce(lambda a, **kw: a.all(**kw), "all",  # noqa: A001
                   "True where every element over ``axis`` is non-zero: a bool Tensor, no "
                   "gradient.")
any = _bool_reduce(lambda a, **kw: a.any(**kw), "any",  # noqa: A001
                   "True where some element over ``axis`` is non-zero: a bool Tensor, no gradient.")


@op
def count_nonzero(x, axis=None):
    """Number of non-zero elements over ``axis``: an int32 Tensor (as Keras), no gradient."""
    x = convert_to_tensor(x)
    _check_axis("count_nonzero", x, axis)
    return constant(x.backend.xp.asarray((x.data != 0).sum(axis=axis), dtype=INDEX), x.backend)


# -- differences and cumulative products -------------------------------------------------------
@op
def diff(a, n=1, axis=-1):
    """The ``n``-th discrete difference along ``axis``."""
    x = convert_to_tensor(a)
    ax = axis_index(axis, x.ndim)
    for _ in range(n):
        hi = [slice(None)] * x.ndim
        lo = [slice(None)] * x.ndim
        hi[ax], lo[ax] = slice(1, None), slice(None, -1)
        after, before = getitem(x, tuple(hi)), getitem(x, tuple(lo))
        # bools differ where they change (Keras; NumPy has no bool subtraction)
        x = not_equal(after, before) if x.dtype.kind == "b" else after - before
    return x


class CumProd(Function):
    def __init__(self, axis):
        self.axis = axis

    def forward(self, x):
        self.x = x
        self.y = self.xp.cumprod(x, axis=self.axis, dtype=scan_dtype(x.dtype))
        return self.y

    def backward(self, gy):
        # d y_j / d x_i = y_j / x_i for j >= i: a reversed cumulative sum of gy * y, over x
        # (exact where x has no zeros; finite differences are used in the tests).
        xp, ax = self.xp, self.axis
        s = xp.flip(xp.cumsum(xp.flip(gy * self.y, ax), ax), ax)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (s / self.x,)


@op
def cumprod(x, axis=None, dtype=None):
    """Cumulative product along ``axis`` (flattened when None). The gradient assumes no zeros
    in ``x``."""
    x = convert_to_tensor(x) if dtype is None else ops_math.cast(x, dtype)
    if axis is None:
        x, axis = ravel(x), 0
    return CumProd(axis_index(axis, x.ndim)).apply(x)
