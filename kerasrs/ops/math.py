"""Elementwise math and reductions, with Keras ``keras.ops`` names and signatures."""

import builtins

import numpy as np

from kerasrs.autodiff import Function, Tensor, convert_to_tensor
from kerasrs.backend import is_float_dtype, standardize_dtype
from kerasrs.backend.dtypes import INDEX
from kerasrs.ops.core import indices, no_gradient, no_gradient_op, to_float
from kerasrs.ops.dispatch import op
from kerasrs.ops.promotion import bound_promotion, promote, sum_dtype


# -- unary elementwise -------------------------------------------------------------------------
class Unary(Function):
    """An elementwise op given by ``f(xp, x)`` and its derivative ``df(xp, x, y)`` (y = f(x)).

    Shared by the math functions here and the activations in `kerasrs.ops.nn`."""

    def __init__(self, name, f, df):
        self.name, self.f, self.df = name, f, df

    def forward(self, x):
        self.x = x
        self.y = self.f(self.xp, x)
        return self.y

    def backward(self, gy):
        return (gy * self.df(self.xp, self.x, self.y),)


def _unary(name, f, df, doc, float_valued=False):
    """The public op ``name``: `Unary` of ``f`` and its derivative ``df``. A ``float_valued``
    op (``exp``, ``sin``...) takes integers and bools as ``floatx()`` (Keras's `float_type`)."""
    def fn(x):
        return Unary(name, f, df).apply(to_float(x) if float_valued else x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return op(fn)


def _quiet(fn):
    """``fn`` with NumPy's divide-by-zero warnings off: ``1/0 = inf`` is the IEEE answer here."""
    def wrapped(xp, x, y):
        with np.errstate(divide="ignore", invalid="ignore"):
            return fn(xp, x, y)

    return wrapped


exp = _unary("exp", lambda xp, x: xp.exp(x), lambda xp, x, y: y, "Elementwise ``e**x``.",
             float_valued=True)
log = _unary("log", lambda xp, x: xp.log(x), _quiet(lambda xp, x, y: 1 / x),
             "Elementwise natural logarithm.", float_valued=True)
log1p = _unary("log1p", lambda xp, x: xp.log1p(x), lambda xp, x, y: 1 / (1 + x),
               "Elementwise ``log(1 + x)``, accurate for small ``x``.", float_valued=True)
expm1 = _unary("expm1", lambda xp, x: xp.expm1(x), lambda xp, x, y: y + 1,
               "Elementwise ``exp(x) - 1``, accurate for small ``x``.", float_valued=True)
sqrt = _unary("sqrt", lambda xp, x: xp.sqrt(x), _quiet(lambda xp, x, y: 0.5 / y),
              "Elementwise square root. The gradient at 0 is ``+inf`` (IEEE ``0.5 / 0``, no "
              "warning), as in PyTorch and TensorFlow.", float_valued=True)
rsqrt = _unary("rsqrt", lambda xp, x: 1 / xp.sqrt(x), _quiet(lambda xp, x, y: -0.5 * y * y * y),
               "Elementwise ``1 / sqrt(x)``; ``inf`` at 0.", float_valued=True)
square = _unary("square", lambda xp, x: x * x if x.dtype.kind != "b" else x.astype(np.int32),
                lambda xp, x, y: 2 * x, "Elementwise ``x * x`` (bools give int32, as Keras).")
absolute = _unary("absolute", lambda xp, x: xp.abs(x), lambda xp, x, y: xp.sign(x),
                  "Elementwise ``|x|``. Gradient 0 at 0 (PyTorch's convention).")
abs = absolute  # noqa: A001  (Keras exposes both names)
tanh = _unary("tanh", lambda xp, x: xp.tanh(x), lambda xp, x, y: 1 - y * y,
              "Elementwise hyperbolic tangent.", float_valued=True)
sin = _unary("sin", lambda xp, x: xp.sin(x), lambda xp, x, y: xp.cos(x), "Elementwise sine.",
             float_valued=True)
cos = _unary("cos", lambda xp, x: xp.cos(x), lambda xp, x, y: -xp.sin(x), "Elementwise cosine.",
             float_valued=True)
reciprocal = _unary("reciprocal", lambda xp, x: 1 / x, _quiet(lambda xp, x, y: -y * y),
                    "Elementwise ``1 / x``.", float_valued=True)


class Erf(Function):
    def forward(self, x):
        self.x = x
        return self.backend.erf(x)  # a named backend kernel: series/continued fraction on NumPy

    def backward(self, gy):
        x = self.x
        return (gy * (_TWO_OVER_SQRT_PI * self.xp.exp(-x * x)).astype(gy.dtype, copy=False),)


_TWO_OVER_SQRT_PI = 1.1283791670955126


@op
def erf(x):
    """The error function ``2/sqrt(pi) * integral_0^x exp(-t**2) dt``, elementwise.

    float64-accurate (max abs error below 1e-12; see ``kerasrs.backend.base.Backend.erf`` for the
    algorithm). Float inputs keep their dtype; integers give float32. Derivative
    ``2/sqrt(pi) exp(-x**2)``.
    """
    return Erf().apply(x)


@op
def isnan(x):
    """Elementwise ``x != x``: a bool Tensor. No gradient flows."""
    return _isnan(convert_to_tensor(x))


_isnan = no_gradient_op("isnan", lambda xp, a: xp.isnan(a))


@op
def isfinite(x):
    """Elementwise "neither inf nor NaN": a bool Tensor. No gradient flows."""
    return _isfinite(convert_to_tensor(x))


_isfinite = no_gradient_op("isfinite", lambda xp, a: xp.isfinite(a))


@op
def isinf(x):
    """Elementwise ``|x| == inf``: a bool Tensor. No gradient flows."""
    return _isinf(convert_to_tensor(x))


_isinf = no_gradient_op("isinf", lambda xp, a: xp.isinf(a))


@op
def sign(x):
    """Elementwise sign (-1, 0 or 1). Piecewise constant: no gradient flows."""
    return _sign(convert_to_tensor(x))


_sign = no_gradient_op("sign", lambda xp, a: xp.sign(a))


@op
def cast(x, dtype):
    """``x`` converted to ``dtype`` (a name such as "float16" or "bfloat16", or a dtype).

    Between float dtypes the gradient flows back, cast to the input's dtype. A cast to or from
    an integer/bool dtype stops it (as TensorFlow and Keras do).
    """
    return Cast(standardize_dtype(dtype)).apply(x)


class Cast(Function):
    def __init__(self, dtype):
        self.dtype = dtype

    def forward(self, x):
        self.in_dtype = x.dtype
        return x.astype(self.dtype, copy=False)

    def backward(self, gy):
        if is_float_dtype(self.in_dtype) and is_float_dtype(self.dtype):
            return (gy.astype(self.in_dtype, copy=False),)
        return (None,)


# -- binary elementwise with a choice ------------------------------------------------------------
class Where(Function):
    def forward(self, cond, a, b):
        self.cond = cond
        a, b = promote(a, b)
        return self.xp.where(cond, a, b)

    def backward(self, gy):
        zero = self.xp.zeros((), gy.dtype)
        return None, self.xp.where(self.cond, gy, zero), self.xp.where(self.cond, zero, gy)


@op
def where(condition, x1=None, x2=None):
    """Elementwise ``x1 if condition else x2``, broadcasting all three. With only
    ``condition``, returns the indices where it is true (as NumPy's ``nonzero``)."""
    if x1 is None and x2 is None:
        c = convert_to_tensor(condition)
        c._report_host_read("where(condition) (indices: a shape that depends on the values)")
        return tuple(indices(i, c.backend) for i in c.backend.xp.nonzero(c.data))
    c = condition.data if isinstance(condition, Tensor) else condition
    return Where().apply(np.asarray(c) if isinstance(c, list) else c, x1, x2)


@op
def maximum(x1, x2):
    """Elementwise maximum. At ties the gradient is split evenly between the two inputs."""
    return _MaxMin(True).apply(x1, x2)


@op
def minimum(x1, x2):
    """Elementwise minimum. At ties the gradient is split evenly between the two inputs."""
    return _MaxMin(False).apply(x1, x2)


class _MaxMin(Function):
    def __init__(self, is_max):
        self.is_max = is_max

    def forward(self, a, b):
        self.a, self.b = a, b = promote(a, b)
        return self.xp.maximum(a, b) if self.is_max else self.xp.minimum(a, b)

    def backward(self, gy):
        a, b = self.a, self.b
        wins = (a > b) if self.is_max else (a < b)
        share = wins + 0.5 * (a == b)  # ties split the gradient
        return gy * share.astype(gy.dtype), gy * (1 - share).astype(gy.dtype)


class Clip(Function):
    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def forward(self, x):
        self.x = x = bound_promotion(x, self.lo, self.hi)
        y = self.xp.clip(x, self.lo, self.hi)
        return y if y.dtype == x.dtype else y.astype(x.dtype)  # NumPy widens bfloat16 bounds

    def backward(self, gy):  # 1 inside [lo, hi], ends included (PyTorch's convention)
        return (gy * ((self.x >= self.lo) & (self.x <= self.hi)),)


@op
def clip(x, x_min, x_max):
    """Elementwise clamp to ``[x_min, x_max]``. Gradient 1 inside (ends included), 0 outside."""
    return Clip(x_min, x_max).apply(x)


# -- reductions --------------------------------------------------------------------------------
def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(sorted(a % ndim for a in axes)) if ndim else ()


def _check_axis(op, x, axis):
    nd = np.ndim(x.data if isinstance(x, Tensor) else x)
    for a in (() if axis is None else (axis,) if isinstance(axis, int) else axis):
        if not -builtins.max(nd, 1) <= a < builtins.max(nd, 1):
            raise ValueError(f"{op}: axis {a} is out of bounds for a tensor of rank {nd}. "
                             f"Received: shape {np.shape(getattr(x, 'data', x))}")


def _check_not_empty(op, x, axis):
    """Refuse a max/min/argmax/argmin over no values (NumPy's errors name its internals).

    Raises:
        ValueError: naming ``op``, the shape and the axis.
    """
    shape = np.shape(x.data if isinstance(x, Tensor) else x)
    axes = _axes(axis, len(shape))
    if any(shape[a] == 0 for a in axes):
        raise ValueError(f"{op}: the input is empty along the reduced axes, so there is no "
                         f"value to take the {op} of. Received: shape {tuple(shape)}, "
                         f"axis={axis!r}")


def _expand_like(g, shape, axes):
    """Re-insert reduced axes so ``g`` broadcasts against the input of shape ``shape``."""
    return g.reshape([1 if i in axes else n for i, n in enumerate(shape)])


class Sum(Function):
    half_in_float32 = "always"

    def __init__(self, axis, keepdims):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, x):
        self.shape = x.shape
        self.axes = _axes(self.axis, x.ndim)
        return x.sum(axis=self.axes, keepdims=self.keepdims, dtype=sum_dtype(x.dtype))

    def backward(self, gy):
        return (self.xp.broadcast_to(_expand_like(gy, self.shape, self.axes), self.shape),)


class Mean(Sum):
    def forward(self, x):
        y = super().forward(x)
        count = int(np.prod([x.shape[a] for a in self.axes]))
        self.count = builtins.max(count, 1)  # the gradient of an empty input is empty anyway
        y = y / self.count
        return y * np.nan if count == 0 else y  # the mean of nothing is nan, as in NumPy

    def backward(self, gy):
        return (super().backward(gy / self.count)[0],)


class MaxMinReduce(Function):
    """max/min over axes. Ties share the gradient evenly (a documented choice; PyTorch's
    ``amax`` does the same)."""

    def __init__(self, axis, keepdims, is_max):
        self.axis, self.keepdims, self.is_max = axis, keepdims, is_max

    def forward(self, x):
        self.x = x
        self.axes = _axes(self.axis, x.ndim)
        f = x.max if self.is_max else x.min
        self.y_keep = f(axis=self.axes, keepdims=True)
        return self.y_keep if self.keepdims else self.y_keep.reshape(
            [n for i, n in enumerate(x.shape) if i not in self.axes])

    def backward(self, gy):
        hit = (self.x == self.y_keep)
        count = hit.sum(axis=self.axes, keepdims=True)
        gy = _expand_like(gy, self.x.shape, self.axes)
        return (hit * (gy / count).astype(gy.dtype),)


@op
def sum(x, axis=None, keepdims=False):  # noqa: A001
    """Sum over ``axis`` (int, tuple or None for all axes); ``keepdims`` keeps size-1 axes."""
    _check_axis("sum", x, axis)
    return Sum(axis, keepdims).apply(x)


@op
def mean(x, axis=None, keepdims=False):
    """Arithmetic mean over ``axis`` (int, tuple or None); nan over no values, as NumPy."""
    _check_axis("mean", x, axis)
    return Mean(axis, keepdims).apply(to_float(x))


@op
def max(x, axis=None, keepdims=False, initial=None):  # noqa: A001
    """Maximum over ``axis``. Ties share the gradient evenly."""
    _check_axis("max", x, axis)
    _check_not_empty("max", x, axis)
    y = MaxMinReduce(axis, keepdims, True).apply(x)
    return y if initial is None else maximum(y, np.asarray(initial, y.dtype))  # x's dtype


@op
def min(x, axis=None, keepdims=False, initial=None):  # noqa: A001
    """Minimum over ``axis``. Ties share the gradient evenly."""
    _check_axis("min", x, axis)
    _check_not_empty("min", x, axis)
    y = MaxMinReduce(axis, keepdims, False).apply(x)
    return y if initial is None else minimum(y, np.asarray(initial, y.dtype))  # x's dtype


amax, amin = max, min


@op
def argmax(x, axis=None, keepdims=False):
    """Index of the maximum along ``axis`` (flattened when None). int32 result, no gradient."""
    x = convert_to_tensor(x)
    _check_axis("argmax", x, axis)
    _check_not_empty("argmax", x, axis)
    return _argmax(x, axis=axis, keepdims=bool(keepdims))


_argmax = no_gradient_op("argmax", lambda xp, a, axis, keepdims: xp.argmax(
    a, axis=axis, keepdims=keepdims).astype(INDEX))  # int32, as in Keras


@op
def argmin(x, axis=None, keepdims=False):
    """Index of the minimum along ``axis`` (flattened when None). int32 result, no gradient."""
    x = convert_to_tensor(x)
    _check_axis("argmin", x, axis)
    _check_not_empty("argmin", x, axis)
    return _argmin(x, axis=axis, keepdims=bool(keepdims))


_argmin = no_gradient_op("argmin", lambda xp, a, axis, keepdims: xp.argmin(
    a, axis=axis, keepdims=keepdims).astype(INDEX))  # int32, as in Keras


@op
def view(x, dtype=None):
    """The bytes of ``x`` reinterpreted as ``dtype``. No gradient flows."""
    return no_gradient(x, lambda xp, a: a.view(standardize_dtype(dtype)))


@op
def saturate_cast(x, dtype):
    """``x`` cast to ``dtype`` with values first clipped to that dtype's range."""
    dt = np.dtype(standardize_dtype(dtype))
    x = convert_to_tensor(x)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        x = clip(x, float(info.min), float(info.max))
    return cast(x, dt)


def _reduction_method(fn, cast_):
    """``Tensor.sum``/``mean``/``max``/``min``, with the ``dtype`` and ``out`` keywords that
    ``np.sum(t)`` and the like pass along (``out`` only as None: a Tensor is not written into)."""
    def method(self, axis=None, dtype=None, out=None, keepdims=False):
        if out is not None:
            raise TypeError(f"Tensor.{fn.__name__}: out= is not supported (a kerasrs Tensor is "
                            f"immutable); use np.{fn.__name__}(np.asarray(tensor), out=...). "
                            f"Received: out of type {type(out).__name__}")
        result = fn(self, axis, keepdims)
        return result if dtype is None else cast_(result, dtype)
    method.__name__ = fn.__name__
    return method


def _install_methods():
    """Tensor methods that NumPy users expect, delegating to the plain functions of the ops
    above (``__wrapped__``: a method's ``self`` is never symbolic)."""
    cast_, absolute_ = cast.__wrapped__, absolute.__wrapped__
    for fn in (sum, mean, max, min):
        setattr(Tensor, fn.__name__, _reduction_method(fn.__wrapped__, cast_))
    Tensor.astype = lambda self, dtype: cast_(self, dtype)
    Tensor.__abs__ = lambda self: absolute_(self)


_install_methods()
