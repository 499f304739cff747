"""Activations (Keras's ``keras.ops.nn``): relu, sigmoid, gelu, the ELU family, softmax,
log_softmax, sparsemax and the rest of Keras 3's activation functions.

Formulas follow Keras 3's backends (``keras/src/backend/*/nn.py``); where a naive formula
overflows (softplus, log_sigmoid, sigmoid) the equivalent overflow-free form is used. Every
elementwise activation is one `Function` with a hand-written derivative, computed in the input's
dtype (float32 stays float32: constants are Python scalars, which NumPy keeps weak).
"""

import math

import numpy as np

from kerasrs.autodiff import Function, convert_to_tensor
from kerasrs.ops import core, layout, reduction, searching
from kerasrs.ops import math as ops_math
from kerasrs.ops.core import constant, sorted_axes
from kerasrs.ops.dispatch import op

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


# -- elementwise activations -------------------------------------------------------------------
Activation = ops_math.Unary  # an elementwise op from f(xp, x) and df(xp, x, y)
_activation = ops_math._unary


class ReLU(Function):
    def forward(self, x):
        self.y = self.backend.relu(x)
        return self.y

    def backward(self, gy):
        return (self.backend.relu_grad(self.y, gy),)  # relu'(0) = 0, as PyTorch


@op
def relu(x):
    """Rectified linear unit ``max(x, 0)``; the gradient at 0 is 0 (PyTorch's convention)."""
    return ReLU().apply(x)


class Sigmoid(Function):
    def forward(self, x):
        self.y = self.backend.sigmoid(x)
        return self.y

    def backward(self, gy):
        return (gy * self.y * (1 - self.y),)


@op
def sigmoid(x):
    """Logistic function ``1 / (1 + exp(-x))``, computed without overflow for large ``|x|``."""
    return Sigmoid().apply(x)


def _softplus(xp, x):
    return xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x)))


def _sigmoid(xp, x):
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


relu6 = _activation(
    "relu6", lambda xp, x: xp.minimum(xp.maximum(x, 0), 6),
    lambda xp, x, y: (x > 0) & (x < 6),
    "``min(max(x, 0), 6)``. Gradient 1 on (0, 6), 0 elsewhere (ends included).")
softplus = _activation(
    "softplus", _softplus, lambda xp, x, y: _sigmoid(xp, x),
    "``log(1 + exp(x))`` as ``max(x, 0) + log1p(exp(-|x|))``: finite and exact for any ``x``.")
softsign = _activation(
    "softsign", lambda xp, x: x / (1 + xp.abs(x)), lambda xp, x, y: 1 / (1 + xp.abs(x)) ** 2,
    "``x / (1 + |x|)``.")
def _silu_grad(xp, x, y):
    s = _sigmoid(xp, x)
    return s * (1 + x * (1 - s))


silu = _activation(
    "silu", lambda xp, x: x * _sigmoid(xp, x), _silu_grad,
    "Sigmoid-weighted linear unit ``x * sigmoid(x)`` (also called swish).")
swish = silu
log_sigmoid = _activation(
    "log_sigmoid", lambda xp, x: xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x))),
    lambda xp, x, y: _sigmoid(xp, -x),
    "``log(sigmoid(x)) = -softplus(-x)``, finite for any ``x``.")
hard_sigmoid = _activation(
    "hard_sigmoid", lambda xp, x: xp.minimum(xp.maximum(x + 3, 0), 6) / 6,
    lambda xp, x, y: ((x > -3) & (x < 3)).astype(x.dtype) / 6,
    "``relu6(x + 3) / 6`` (Keras 3's definition): 0 below -3, 1 above 3.")
hard_silu = _activation(
    "hard_silu", lambda xp, x: x * (xp.minimum(xp.maximum(x + 3, 0), 6) / 6),
    lambda xp, x, y: xp.where(x <= -3, 0, xp.where(x >= 3, 1, (2 * x + 3) / 6)),
    "``x * hard_sigmoid(x)`` (also called hard_swish).")
hard_swish = hard_silu
tanh_shrink = _activation(
    "tanh_shrink", lambda xp, x: x - xp.tanh(x), lambda xp, x, y: xp.tanh(x) ** 2,
    "``x - tanh(x)``.")
hard_tanh = _activation(
    "hard_tanh", lambda xp, x: xp.minimum(xp.maximum(x, -1), 1),
    lambda xp, x, y: (x > -1) & (x < 1),
    "``clip(x, -1, 1)``. Gradient 1 on (-1, 1), 0 elsewhere.")
sparse_sigmoid = _activation(
    "sparse_sigmoid", lambda xp, x: xp.minimum(xp.maximum(0.5 * (x + 1), 0), 1),
    lambda xp, x, y: ((x > -1) & (x < 1)).astype(x.dtype) * 0.5,
    "``clip((x + 1) / 2, 0, 1)``: 0 below -1, 1 above 1.")
sparse_plus = _activation(
    "sparse_plus",
    lambda xp, x: xp.where(x <= -1, 0, xp.where(x < 1, 0.25 * (x + 1) ** 2, x)),
    lambda xp, x, y: xp.where(x <= -1, 0, xp.where(x < 1, 0.5 * (x + 1), 1)),
    "0 below -1, ``(x + 1)**2 / 4`` on (-1, 1), ``x`` above 1.")


# The elementwise activations with parameters: name -> maker(**params) -> (f, df). Each op is
# a `Unary` that keeps its ``params``, so a traced graph records them and remakes the op
# (`kerasrs.graph.builtin_ops` registers every name of this table).
def _leaky_relu(negative_slope):
    return (lambda xp, x: xp.where(x > 0, x, x * negative_slope),
            lambda xp, x, y: xp.where(x > 0, 1, negative_slope + 0 * x))


def _elu_family(alpha, scale):
    return (lambda xp, x: scale * xp.where(x >= 0, x, alpha * xp.expm1(xp.minimum(x, 0))),
            lambda xp, x, y: scale * xp.where(x > 0, 1, alpha * xp.exp(xp.minimum(x, 0))))


def _celu(alpha):
    return (lambda xp, x: xp.maximum(x, 0) + alpha * xp.expm1(xp.minimum(x, 0) / alpha),
            lambda xp, x, y: xp.where(x > 0, 1, xp.exp(xp.minimum(x, 0) / alpha)))


def _soft_shrink(threshold):
    t = threshold
    return (lambda xp, x: xp.where(x > t, x - t, xp.where(x < -t, x + t, 0 * x)),
            lambda xp, x, y: (x > t) | (x < -t))


def _hard_shrink(threshold):
    return (lambda xp, x: xp.where(xp.abs(x) > threshold, x, 0),
            lambda xp, x, y: xp.abs(x) > threshold)


def _threshold(threshold, default_value):
    return (lambda xp, x: xp.where(x > threshold, x, default_value),
            lambda xp, x, y: x > threshold)


def _squareplus(b):
    return (lambda xp, x: (x + xp.sqrt(x * x + b)) / 2,
            lambda xp, x, y: (1 + x / xp.sqrt(x * x + b)) / 2)


PARAMETRIZED = {
    "leaky_relu": _leaky_relu, "elu": lambda alpha: _elu_family(alpha, 1.0),
    "selu": lambda: _elu_family(SELU_ALPHA, SELU_SCALE), "celu": _celu,
    "soft_shrink": _soft_shrink, "hard_shrink": _hard_shrink, "threshold": _threshold,
    "squareplus": _squareplus,
}


def parametrized(name, **params):
    """The `Unary` op of the activation ``name`` of `PARAMETRIZED` with ``params`` (floats),
    which it keeps as ``.params``."""
    fn = Activation(name, *PARAMETRIZED[name](**params))
    fn.params = params
    return fn


@op
def leaky_relu(x, negative_slope=0.2):
    """``x`` where ``x > 0``, else ``negative_slope * x``. The gradient at 0 is the slope.

    Raises:
        ValueError: if ``negative_slope`` is not a finite number.
    """
    slope = _number("leaky_relu", "negative_slope", negative_slope)
    return parametrized("leaky_relu", negative_slope=slope).apply(x)


@op
def elu(x, alpha=1.0):
    """Exponential linear unit: ``x`` for ``x >= 0``, ``alpha * (exp(x) - 1)`` below.

    Raises:
        ValueError: if ``alpha`` is not a finite number.
    """
    return parametrized("elu", alpha=_number("elu", "alpha", alpha)).apply(x)


@op
def selu(x):
    """Scaled ELU ``scale * elu(x, alpha)`` with Klambauer et al.'s (2017) constants
    ``alpha = 1.67326...``, ``scale = 1.05070...``."""
    return parametrized("selu").apply(x)


@op
def celu(x, alpha=1.0):
    """Continuously differentiable ELU ``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``.

    Raises:
        ValueError: if ``alpha`` is not a positive finite number.
    """
    alpha = _number("celu", "alpha", alpha)
    if alpha <= 0:
        raise ValueError(f"celu: `alpha` must be positive. Received: alpha={alpha!r}")
    return parametrized("celu", alpha=alpha).apply(x)


@op
def soft_shrink(x, threshold=0.5):
    """``x - threshold`` above ``threshold``, ``x + threshold`` below ``-threshold``, else 0."""
    t = _number("soft_shrink", "threshold", threshold)
    return parametrized("soft_shrink", threshold=t).apply(x)


@op
def hard_shrink(x, threshold=0.5):
    """``x`` where ``|x| > threshold``, else 0."""
    t = _number("hard_shrink", "threshold", threshold)
    return parametrized("hard_shrink", threshold=t).apply(x)


@op
def threshold(x, threshold, default_value):
    """``x`` where ``x > threshold``, else ``default_value`` (Keras's op; gradient 0 there)."""
    return parametrized("threshold", threshold=_number("threshold", "threshold", threshold),
                        default_value=_number("threshold", "default_value",
                                              default_value)).apply(x)


@op
def squareplus(x, b=4):
    """``(x + sqrt(x**2 + b)) / 2``, a smooth relu (So & Le, 2021).

    Raises:
        ValueError: if ``b`` is negative.
    """
    b = _number("squareplus", "b", b)
    if b < 0:
        raise ValueError(f"squareplus: `b` must be >= 0. Received: b={b!r}")
    return parametrized("squareplus", b=b).apply(x)


class GELU(Function):
    """``x * Phi(x)``: exact with erf, or Hendrycks & Gimpel's (2016) tanh approximation."""

    C = math.sqrt(2 / math.pi)

    def __init__(self, approximate):
        self.approximate = approximate

    def forward(self, x):
        xp = self.xp
        self.x = x
        if self.approximate:
            self.t = xp.tanh(self.C * (x + 0.044715 * x * x * x))
            return 0.5 * x * (1 + self.t)
        self.cdf = 0.5 * (1 + self.backend.erf(x * (1 / math.sqrt(2))))
        return x * self.cdf

    def backward(self, gy):
        xp, x = self.xp, self.x
        if self.approximate:
            t = self.t
            d = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * self.C * (1 + 3 * 0.044715 * x * x)
        else:
            d = self.cdf + x * xp.exp(-0.5 * x * x) * (1 / math.sqrt(2 * math.pi))
        return (gy * d,)


@op
def gelu(x, approximate=True):
    """Gaussian error linear unit ``x * P(N(0, 1) <= x)``.

    Args:
        x: float Tensor.
        approximate: True (Keras's default) for ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715
            x**3)))``; False for the exact ``0.5 x (1 + erf(x / sqrt(2)))``.

    Returns:
        Tensor of ``x``'s shape and dtype.
    """
    return GELU(bool(approximate)).apply(x)


@op
def glu(x, axis=-1):
    """Gated linear unit: splits ``x`` in halves ``a, b`` along ``axis``; ``a * sigmoid(b)``.

    Raises:
        ValueError: if the size of ``axis`` is odd.
    """
    x = convert_to_tensor(x)
    n = x.shape[axis]
    if n % 2:
        raise ValueError(f"glu: the size of `axis` must be even. Received: shape {x.shape}, "
                         f"axis={axis}")
    index = [slice(None)] * x.ndim
    index[axis] = slice(0, n // 2)
    a = core.getitem(x, tuple(index))
    index[axis] = slice(n // 2, n)
    return a * sigmoid(core.getitem(x, tuple(index)))


def _number(op, name, value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        value = float("nan")
    if not math.isfinite(value):
        raise ValueError(f"{op}: `{name}` must be a finite number. Received: {name}={value!r}")
    return value


# -- softmax ---------------------------------------------------------------------------------
class Softmax(Function):
    half_in_float32 = "always"

    def __init__(self, axis):
        self.axis = axis

    def forward(self, x):
        e = self.xp.exp(x - x.max(axis=self.axis, keepdims=True))
        self.y = e / e.sum(axis=self.axis, keepdims=True)
        return self.y

    def backward(self, gy):
        y = self.y
        return (y * (gy - (gy * y).sum(axis=self.axis, keepdims=True)),)


class LogSoftmax(Function):
    half_in_float32 = "always"

    def __init__(self, axis):
        self.axis = axis

    def forward(self, x):
        shifted = x - x.max(axis=self.axis, keepdims=True)
        self.y = shifted - self.xp.log(self.xp.exp(shifted).sum(axis=self.axis, keepdims=True))
        return self.y

    def backward(self, gy):
        return (gy - self.xp.exp(self.y) * gy.sum(axis=self.axis, keepdims=True),)


@op
def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along ``axis`` (an int or a tuple of axes, as Keras allows).

    The max is subtracted first, so large logits do not overflow; ``-inf`` entries (masked
    positions) get probability 0 and gradient 0. A slice that is all ``-inf`` gives NaN, as in
    Keras.

    Raises:
        ValueError: if ``axis`` is out of range.
    """
    return Softmax(sorted_axes("softmax", x, axis)).apply(x)


@op
def log_softmax(x, axis=-1):
    """``x - logsumexp(x)`` along ``axis`` (int or tuple); finite for logits of any size.

    Raises:
        ValueError: if ``axis`` is out of range.
    """
    return LogSoftmax(sorted_axes("log_softmax", x, axis)).apply(x)


@op
def sparsemax(x, axis=-1):
    """Sparsemax (Martins & Astudillo 2016, eq. 2 and Prop. 1): ``max(x - tau, 0)`` with the
    threshold ``tau`` that makes each slice along ``axis`` sum to 1. Differentiable almost
    everywhere (piecewise linear)."""
    x = convert_to_tensor(x)
    z = searching.sort(x, axis=axis)
    z = layout.take(z, np.arange(x.shape[axis])[::-1], axis=axis)  # descending
    k_shape = [1] * x.ndim
    k_shape[axis] = x.shape[axis]
    k = constant(x.backend.asarray(np.arange(1, x.shape[axis] + 1, dtype=x.dtype).reshape(
        k_shape)), x.backend)
    csum = reduction.cumsum(z, axis=axis)
    support = ops_math.cast(core.greater(1 + k * z, csum), x.dtype)
    k_z = ops_math.sum(support, axis=axis, keepdims=True)
    tau = (ops_math.sum(support * z, axis=axis, keepdims=True) - 1) / k_z
    return ops_math.maximum(x - tau, 0.0)
