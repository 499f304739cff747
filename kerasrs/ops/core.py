"""Arithmetic, matmul and indexing: the primitives behind Python's operators on Tensors.

Each op is a `Function` pair (forward on arrays, backward returning one gradient per input)
plus the public function with Keras's name. Broadcast gradients are reduced by the engine.
"""

import operator

import numpy as np

from kerasrs import context
from kerasrs.autodiff import Function, Tensor, convert_to_tensor
from kerasrs.autodiff import raw  # noqa: F401  (ops.core.raw: the ops' name for it)
from kerasrs.backend import numpy_dtype
from kerasrs.backend.dtypes import INDEX, result_dtype
from kerasrs.ops.contraction import EINSUM_LETTERS, Einsum, int8_products
from kerasrs.ops.dispatch import op
from kerasrs.ops.promotion import (
    bools_as_int32, promote, promote_float, promote_numeric)

EPSILON = 1e-7  # Keras's backend.epsilon(): probabilities are clipped to [EPSILON, 1 - EPSILON]


_tracers_var = context.tracers


def constant(data, backend):
    """A Tensor that no tape records: the result of a non-differentiable op. While
    `kerasrs.graph` traces, its array is declared a constant of the graph (made from shapes
    and Python values, as creation ops make it); values computed from traced tensors must come
    from registered ops instead."""
    t = Tensor(data, backend=backend)
    tracers = _tracers_var.get()
    if tracers:
        for tracer in tracers:
            tracer.declare_constant(t.data)
    return t


def indices(array, backend):
    """A Tensor of indices or counts (argmax, argsort, nonzero...): int32, as in Keras
    (`kerasrs.backend.dtypes.INDEX`), whatever integer NumPy returned. Computed on the host:
    a constant of a traced graph (ops that trace register a `no_gradient_op` instead)."""
    return constant(array.astype(INDEX, copy=False), backend)


def no_gradient(x, fn):
    """The Tensor ``fn(xp, array)`` of ``x``'s values, with no gradient (an index, a count...).
    Computed on the raw array: while `kerasrs.graph` traces, this is a host read of ``x``."""
    x = convert_to_tensor(x)
    x._report_host_read("a computation without a graph op")
    return constant(fn(x.backend.xp, x.data), x.backend)


# -- ops without a gradient ----------------------------------------------------------------------
NO_GRADIENT_OPS = {}  # name -> compute(xp, *arrays, **params): comparisons, argmax, rounding...


class NoGradient(Function):
    """A non-differentiable op: ``NO_GRADIENT_OPS[name](xp, *arrays, **params)``, whose backward
    gives no gradient to any input. A Function (not a constant) so that graphs record it
    (`kerasrs.graph` registers every entry of `NO_GRADIENT_OPS` under its name)."""

    def __init__(self, name, **params):
        self.name, self.params = name, params

    def forward(self, *arrays):
        self.n_inputs = len(arrays)
        return NO_GRADIENT_OPS[self.name](self.xp, *arrays, **self.params)

    def backward(self, gy):
        return (None,) * self.n_inputs


def no_gradient_op(name, compute):
    """Register ``compute(xp, *arrays, **params)`` as the op ``name`` without a gradient;
    returns ``apply(*inputs, **params) -> Tensor``."""
    NO_GRADIENT_OPS[name] = compute
    return lambda *inputs, **params: NoGradient(name, **params).apply(*inputs)


# the dtype is a param (not floatx() read at run time), so a replayed graph casts as the trace did
_to_float = no_gradient_op("to_float", lambda xp, a, dtype: a.astype(numpy_dtype(dtype)))


def to_float(x):
    """``x`` as a Tensor, integers and bools cast to ``floatx()`` (as Keras's float-valued ops
    do: `kerasrs.backend.dtypes.float_type`)."""
    x = convert_to_tensor(x)
    if x.dtype.kind not in "iub":
        return x
    return _to_float(x, dtype=result_dtype(x.dtype, float).name)


def sorted_axes(op, x, axis):
    """``axis`` (int or tuple) as a sorted tuple of non-negative axes of ``x``."""
    nd = len(np.shape(x.data if isinstance(x, Tensor) else x))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    outside = [a for a in axes if not -nd <= a < nd]
    if outside:
        raise ValueError(f"{op}: axis {outside[0]} is out of bounds for a rank-{nd} tensor. "
                         f"Received: axis={axis!r}, shape {np.shape(getattr(x, 'data', x))}")
    if not axes or len({a % nd for a in axes}) < len(axes):
        raise ValueError(f"{op}: `axis` must name distinct axes of a rank-{nd} tensor. "
                         f"Received: axis={axis!r}, shape {np.shape(getattr(x, 'data', x))}")
    return tuple(sorted(a % nd for a in axes))


def axis_index(axis, ndim, op="ops"):
    """``axis`` in ``[0, ndim)``, or a ValueError naming ``op`` (IndexError or a silent wrong
    answer otherwise)."""
    if not -ndim <= axis < ndim:
        raise ValueError(f"{op}: axis {axis} is out of bounds for a tensor of rank {ndim}.")
    return int(axis) % ndim


# -- binary arithmetic -------------------------------------------------------------------------
def _into(ufunc, a, b, out):
    """``ufunc(a, b)``, written into ``out`` when given and of the result's shape and dtype
    (`Function.writes_out`)."""
    if out is not None and getattr(a, "dtype", None) == getattr(b, "dtype", None) == out.dtype \
            and np.broadcast_shapes(a.shape, b.shape) == out.shape:
        return ufunc(a, b, out=out)
    return ufunc(a, b)


class Add(Function):
    writes_out = True

    def forward(self, a, b):
        a, b = promote(a, b)
        return _into(self.xp.add, a, b, self.out)

    def backward(self, gy):
        return gy, gy


class Subtract(Function):
    writes_out = True

    def forward(self, a, b):
        a, b = promote(a, b)
        return _into(self.xp.subtract, a, b, self.out)

    def backward(self, gy):
        return gy, -gy


class Multiply(Function):
    writes_out = True
    writes_grad_out = (0, 1)

    def forward(self, a, b):
        self.a, self.b = a, b = promote(a, b)
        return _into(self.xp.multiply, a, b, self.out)

    def backward(self, gy):
        ga, gb = self.grad_out or (None, None)
        xp = self.xp
        return (_into(xp.multiply, gy, self.b, ga) if self.needs_grad[0] else None,
                _into(xp.multiply, gy, self.a, gb) if self.needs_grad[1] else None)


class Divide(Function):
    def forward(self, a, b):
        a, b = promote_float(a, b)
        self.b = b
        self.y = a / b
        return self.y

    def backward(self, gy):
        ga = gy / self.b
        return ga, (-ga * self.y if self.needs_grad[1] else None)


class Power(Function):
    def forward(self, a, b):
        self.a, self.b = a, b = promote_numeric(a, b)
        self.y = self.xp.power(a, b)
        return self.y

    def backward(self, gy):
        xp = self.xp
        ga = gy * self.b * xp.power(self.a, self.b - 1) if self.needs_grad[0] else None
        gb = None
        if self.needs_grad[1]:  # d a**b / db = a**b log a, taken as 0 where a == 0
            safe = xp.where(self.a > 0, self.a, 1)
            gb = gy * self.y * xp.log(safe)
        return ga, gb


class Negative(Function):
    def forward(self, x):
        return -x

    def backward(self, gy):
        return (-gy,)


@op
def add(x1, x2):
    """Elementwise ``x1 + x2`` with NumPy broadcasting."""
    return Add().apply(x1, x2)


@op
def subtract(x1, x2):
    """Elementwise ``x1 - x2`` with NumPy broadcasting."""
    return Subtract().apply(x1, x2)


@op
def multiply(x1, x2):
    """Elementwise ``x1 * x2`` with NumPy broadcasting."""
    return Multiply().apply(x1, x2)


@op
def divide(x1, x2):
    """Elementwise true division ``x1 / x2`` with NumPy broadcasting."""
    return Divide().apply(x1, x2)


true_divide = divide


@op
def power(x1, x2):
    """Elementwise ``x1 ** x2``. The gradient with respect to ``x2`` uses ``log(x1)``, 0 where
    ``x1 <= 0``."""
    return Power().apply(x1, x2)


@op
def negative(x):
    """Elementwise ``-x``."""
    return Negative().apply(x)


@op
def floor_divide(x1, x2):
    """Elementwise ``x1 // x2``. Piecewise constant, so no gradient flows."""
    return _floor_divide(*_pair(x1, x2))


_floor_divide = no_gradient_op("floor_divide", lambda xp, a, b: operator.floordiv(
    *bools_as_int32(*promoted_pair(xp, a, b))))


class Mod(Function):
    def forward(self, a, b):
        self.a, self.b = a, b = promote_numeric(a, b)
        return a % b

    def backward(self, gy):  # a % b = a - floor(a / b) * b, differentiated where floor is flat
        gb = -gy * self.xp.floor_divide(self.a, self.b) if self.needs_grad[1] else None
        return gy, gb


@op
def mod(x1, x2):
    """Elementwise ``x1 % x2`` with the sign of the divisor, as NumPy and Keras.

    Differentiable almost everywhere: ``d/dx1 = 1`` and ``d/dx2 = -floor(x1 / x2)`` (the jumps,
    where ``x1 / x2`` is an integer, are ignored, as in TensorFlow and PyTorch).
    """
    return Mod().apply(x1, x2)


def _pair(x1, x2):
    """``x1`` and ``x2`` as the inputs of a two-input op that promotes them in its forward
    (`promoted_pair`, so a replayed graph promotes as eager code did): Tensors as they are,
    Python scalars left weak (``int_tensor < 2.5`` compares in float32), anything else a
    constant on the backend of the one that is a Tensor."""
    if isinstance(x1, Tensor) and isinstance(x2, Tensor):
        return x1, x2  # the common case
    t = x1 if isinstance(x1, Tensor) else x2 if isinstance(x2, Tensor) else None
    return _operand(x1, t), _operand(x2, t)


def _operand(x, ref):
    """A Tensor or Python scalar (weak) as it is, anything else a constant Tensor (on ``ref``'s
    backend when ``ref`` is a Tensor)."""
    if isinstance(x, Tensor) or type(x) in (bool, int, float):
        return x
    t = convert_to_tensor(x)
    return constant(t.data, t.backend if ref is None else ref.backend)


def promoted_pair(xp, a, b):
    """Inside an op's forward: arrays ``a`` and ``b`` (or Python scalars) cast to their promoted
    dtype (`promote`); a Python scalar left then becomes an array of the other's dtype."""
    if getattr(a, "dtype", None) is getattr(b, "dtype", False):
        return a, b  # the common case: two arrays of one dtype
    a, b = promote(a, b)
    if not hasattr(a, "dtype"):
        a = xp.asarray(a, dtype=b.dtype)
    if not hasattr(b, "dtype"):
        b = xp.asarray(b, dtype=a.dtype)
    return a, b


def _compare(name, compare):
    apply = no_gradient_op(name, lambda xp, a, b: compare(*promoted_pair(xp, a, b)))

    def fn(x1, x2):
        return apply(*_pair(x1, x2))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise comparison ``{name}``: a bool Tensor. No gradient flows."
    return op(fn)


equal = _compare("equal", lambda a, b: a == b)
not_equal = _compare("not_equal", lambda a, b: a != b)
less = _compare("less", lambda a, b: a < b)
less_equal = _compare("less_equal", lambda a, b: a <= b)
greater = _compare("greater", lambda a, b: a > b)
greater_equal = _compare("greater_equal", lambda a, b: a >= b)
logical_and = _compare("logical_and", lambda a, b: a.astype(bool) & b.astype(bool))
logical_or = _compare("logical_or", lambda a, b: a.astype(bool) | b.astype(bool))


@op
def logical_not(x):
    """Elementwise boolean not. No gradient flows."""
    return _logical_not(convert_to_tensor(x))


_logical_not = no_gradient_op("logical_not", lambda xp, a: ~a.astype(bool))


# -- matmul ------------------------------------------------------------------------------------
class MatMul(Function):
    half_in_float32 = "cpu"

    def forward(self, a, b):
        self.a, self.b = a, b = promote(a, b)
        return a @ b

    def backward(self, gy):
        xp = self.xp
        a, b = self.a, self.b
        ga = gb = None
        if gy.ndim >= 2 and 0 in gy.strides:  # a broadcast seed (e.g. from sum): BLAS would
            gy = xp.ascontiguousarray(gy)     # copy it once per product; copy it once here
        if self.needs_grad[0]:
            ga = gy[..., None] * b if b.ndim == 1 else gy @ xp.swapaxes(b, -1, -2)
            if a.ndim == 1:
                ga = (xp.expand_dims(gy, -2) @ xp.swapaxes(b, -1, -2))[..., 0, :] if b.ndim > 1 \
                    else gy * b
        if self.needs_grad[1]:
            if a.ndim == 1:
                gb = xp.multiply.outer(a, gy) if b.ndim == 2 else \
                    a[:, None] * xp.expand_dims(gy, -2) if b.ndim > 2 else gy * a
            elif b.ndim == 1:
                gb = (gy[..., None] * a).reshape(-1, a.shape[-1]).sum(0)
            elif a.ndim == 2 and gy.ndim == 2:
                gb = a.T @ gy
            elif b.ndim == 2:  # (..., m, k) @ (k, n): fold the batch into one GEMM
                gb = a.reshape(-1, a.shape[-1]).T @ gy.reshape(-1, gy.shape[-1])
            else:
                gb = xp.swapaxes(a, -1, -2) @ gy
        return ga, gb


@op
def matmul(x1, x2):
    """Matrix product with NumPy's ``matmul`` rules: batched over leading axes, broadcasting.

    Args:
        x1: Tensor, shape ``(..., m, k)`` or ``(k,)``.
        x2: Tensor, shape ``(..., k, n)`` or ``(k,)``.

    Returns:
        Tensor of shape ``(..., m, n)`` (vector axes dropped as NumPy does).

    Raises:
        ValueError: if an input is 0-d or the contracted dimensions differ.
    """
    s1, s2 = np.shape(raw(x1)), np.shape(raw(x2))
    if len(s1) == 0 or len(s2) == 0:
        raise ValueError(f"matmul: inputs must be at least 1-D. Received: shapes {s1} and {s2}")
    k2 = s2[0] if len(s2) == 1 else s2[-2]
    if s1[-1] != k2:
        raise ValueError(f"matmul: the last axis of x1 ({s1[-1]}) must match the "
                         f"{'first' if len(s2) == 1 else 'second-to-last'} axis of x2 ({k2}). "
                         f"Received: shapes {s1} and {s2}")
    return MatMul().apply(*int8_products(x1, x2))


@op
def dot(x1, x2):
    """Dot product with NumPy's ``dot`` rules.

    * either input 0-d: elementwise ``x1 * x2``;
    * both at most 2-D: ``matmul`` (inner product of vectors, matrix-vector, matrix product);
    * otherwise: a sum product over the last axis of ``x1`` and the second-to-last axis of
      ``x2`` (the only axis of a 1-D ``x2``): shape ``x1.shape[:-1] + x2.shape[:-2] +
      x2.shape[-1:]``.

    Raises:
        ValueError: if the contracted axes differ in size.
    """
    s1, s2 = np.shape(raw(x1)), np.shape(raw(x2))
    if len(s1) == 0 or len(s2) == 0:
        return multiply(x1, x2)
    k2 = s2[0] if len(s2) == 1 else s2[-2]
    if s1[-1] != k2:
        raise ValueError(f"dot: the last axis of x1 ({s1[-1]}) must match the "
                         f"{'only' if len(s2) == 1 else 'second-to-last'} axis of x2 ({k2}). "
                         f"Received: shapes {s1} and {s2}")
    if len(s1) <= 2 and len(s2) <= 2:
        return matmul(x1, x2)
    a = EINSUM_LETTERS[:len(s1) - 1] + "Z"
    b = EINSUM_LETTERS[len(s1) - 1:len(s1) + len(s2) - 2]
    b = b[:-1] + "Z" + b[-1:] if len(s2) >= 2 else "Z"
    out = a[:-1] + b.replace("Z", "")
    return Einsum([a, b], out).apply(x1, x2)


# -- indexing ----------------------------------------------------------------------------------
class GetItem(Function):
    def __init__(self, key):
        self.key = key

    def forward(self, x):
        self.shape, self.dtype = x.shape, x.dtype
        return x[self.key]

    def backward(self, gy):
        gx = self.xp.zeros(self.shape, self.dtype)
        if _is_basic(self.key):
            gx[self.key] = gy
        else:  # integer arrays may repeat an index: scatter-add
            self.backend.scatter_add(gx, self.key, gy)
        return (gx,)


def _is_basic(key):
    keys = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, (int, slice, np.integer)) for k in keys)


def _is_mask(k):
    return getattr(k, "dtype", None) is not None and k.dtype.kind == "b" and k.ndim > 0


@op
def getitem(x, key):
    """``x[key]`` with NumPy's indexing rules: ints, slices, None, Ellipsis, integer arrays or
    bool masks (Tensors, arrays or lists). Differentiable with respect to ``x``: the gradient is
    scattered back, and summed where an integer array repeats an index.

    Raises:
        IndexError: for an index out of range or a key of the wrong rank, naming the shape.
    """
    if isinstance(key, Tensor):
        key = key.data
    elif isinstance(key, tuple):
        key = tuple(k.data if isinstance(k, Tensor) else k for k in key)
    elif isinstance(key, list):
        key = np.asarray(key)
    if not isinstance(x, Tensor):
        x = convert_to_tensor(x)
    if not _is_basic(key):
        xp = x.backend.xp
        keys = key if isinstance(key, tuple) else (key,)
        keys = tuple(xp.asarray(k) if isinstance(k, (np.ndarray, list)) else k for k in keys)
        if any(_is_mask(k) for k in keys):  # bool masks -> the integer indices they select
            keys = tuple(i for k in keys for i in (xp.nonzero(k) if _is_mask(k) else (k,)))
        key = keys if isinstance(key, tuple) or len(keys) > 1 else keys[0]
    return GetItem(key).apply(x)


@op
def get_item(x, key):
    """``x[key]`` (see `kerasrs.ops.getitem`)."""
    return getitem(x, key)


# -- Python operators on Tensor ------------------------------------------------------------------
def _install_operators():
    """Python's operators on Tensor, as the plain functions of the ops above (``__wrapped__``:
    ``self`` is never symbolic, and errors name the input, as ``Function.apply`` does)."""
    add_, subtract_, multiply_, divide_, power_, matmul_, floor_divide_, mod_ = (
        fn.__wrapped__ for fn in (add, subtract, multiply, divide, power, matmul, floor_divide,
                                  mod))

    def r(fn):
        return lambda self, other: fn(other, self)

    operators = {
        "__add__": add_, "__radd__": r(add_), "__sub__": subtract_, "__rsub__": r(subtract_),
        "__mul__": multiply_, "__rmul__": r(multiply_), "__truediv__": divide_,
        "__rtruediv__": r(divide_), "__pow__": power_, "__rpow__": r(power_),
        "__matmul__": matmul_, "__rmatmul__": r(matmul_), "__floordiv__": floor_divide_,
        "__rfloordiv__": r(floor_divide_), "__mod__": mod_, "__rmod__": r(mod_),
        "__neg__": negative.__wrapped__, "__pos__": lambda self: self,
        "__getitem__": getitem.__wrapped__, "__invert__": logical_not.__wrapped__,
        **{f"__{name}__": compare.__wrapped__ for name, compare in (
            ("eq", equal), ("ne", not_equal), ("lt", less), ("le", less_equal), ("gt", greater),
            ("ge", greater_equal), ("and", logical_and), ("or", logical_or))},
    }
    for name, fn in operators.items():
        setattr(Tensor, name, fn)


_install_operators()
