"""Neural-network ops (Keras's ``keras.ops.nn``): activations, softmax, normalize and
cross-entropies. Convolution (`kerasrs.ops.conv`) and pooling (`kerasrs.ops.pooling`) are
re-exported here, as Keras has them in ``keras.ops.nn``.

Formulas follow Keras 3's backends (``keras/src/backend/*/nn.py``); where a naive formula
overflows (softplus, log_sigmoid, sigmoid) the equivalent overflow-free form is used. Every
elementwise activation is one `Function` with a hand-written derivative, computed in the input's
dtype (float32 stays float32: constants are Python scalars, which NumPy keeps weak).
"""

import math

import numpy as np

from kerasrs.autodiff import Function, Tensor, convert_to_tensor
from kerasrs.ops import core
from kerasrs.ops import layout as shape
from kerasrs.ops import math as ops_math
from kerasrs.ops.convolution import conv, conv_transpose, depthwise_conv, separable_conv
from kerasrs.ops.pooling import average_pool, max_pool

EPSILON = 1e-7  # Keras's backend.epsilon(): probabilities are clipped to [EPSILON, 1 - EPSILON]
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


def relu(x):
    """Rectified linear unit ``max(x, 0)``; the gradient at 0 is 0 (PyTorch's convention)."""
    return ReLU().apply(x)


class Sigmoid(Function):
    def forward(self, x):
        self.y = self.backend.sigmoid(x)
        return self.y

    def backward(self, gy):
        return (gy * self.y * (1 - self.y),)


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


def leaky_relu(x, negative_slope=0.2):
    """``x`` where ``x > 0``, else ``negative_slope * x``. The gradient at 0 is the slope.

    Raises:
        ValueError: if ``negative_slope`` is not a finite number.
    """
    slope = _number("leaky_relu", "negative_slope", negative_slope)
    return Activation("leaky_relu", lambda xp, x: xp.where(x > 0, x, x * slope),
                      lambda xp, x, y: xp.where(x > 0, 1, slope + 0 * x)).apply(x)


def elu(x, alpha=1.0):
    """Exponential linear unit: ``x`` for ``x >= 0``, ``alpha * (exp(x) - 1)`` below.

    Raises:
        ValueError: if ``alpha`` is not a finite number.
    """
    alpha = _number("elu", "alpha", alpha)
    return Activation("elu", lambda xp, x: _elu(xp, x, alpha, 1.0),
                      lambda xp, x, y: _elu_grad(xp, x, alpha, 1.0)).apply(x)


def selu(x):
    """Scaled ELU ``scale * elu(x, alpha)`` with Klambauer et al.'s (2017) constants
    ``alpha = 1.67326...``, ``scale = 1.05070...``."""
    return Activation("selu", lambda xp, x: _elu(xp, x, SELU_ALPHA, SELU_SCALE),
                      lambda xp, x, y: _elu_grad(xp, x, SELU_ALPHA, SELU_SCALE)).apply(x)


def celu(x, alpha=1.0):
    """Continuously differentiable ELU ``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``.

    Raises:
        ValueError: if ``alpha`` is not a positive finite number.
    """
    alpha = _number("celu", "alpha", alpha)
    if alpha <= 0:
        raise ValueError(f"celu: `alpha` must be positive. Received: alpha={alpha!r}")
    return Activation(
        "celu", lambda xp, x: xp.maximum(x, 0) + alpha * xp.expm1(xp.minimum(x, 0) / alpha),
        lambda xp, x, y: xp.where(x > 0, 1, xp.exp(xp.minimum(x, 0) / alpha))).apply(x)


def _elu(xp, x, alpha, scale):
    return scale * xp.where(x >= 0, x, alpha * xp.expm1(xp.minimum(x, 0)))


def _elu_grad(xp, x, alpha, scale):
    return scale * xp.where(x > 0, 1, alpha * xp.exp(xp.minimum(x, 0)))


def soft_shrink(x, threshold=0.5):
    """``x - threshold`` above ``threshold``, ``x + threshold`` below ``-threshold``, else 0."""
    t = _number("soft_shrink", "threshold", threshold)
    return Activation("soft_shrink",
                      lambda xp, x: xp.where(x > t, x - t, xp.where(x < -t, x + t, 0 * x)),
                      lambda xp, x, y: (x > t) | (x < -t)).apply(x)


def hard_shrink(x, threshold=0.5):
    """``x`` where ``|x| > threshold``, else 0."""
    t = _number("hard_shrink", "threshold", threshold)
    return Activation("hard_shrink", lambda xp, x: xp.where(xp.abs(x) > t, x, 0),
                      lambda xp, x, y: xp.abs(x) > t).apply(x)


def threshold(x, threshold, default_value):
    """``x`` where ``x > threshold``, else ``default_value`` (Keras's op; gradient 0 there)."""
    t = _number("threshold", "threshold", threshold)
    v = _number("threshold", "default_value", default_value)
    return Activation("threshold", lambda xp, x: xp.where(x > t, x, v),
                      lambda xp, x, y: x > t).apply(x)


def squareplus(x, b=4):
    """``(x + sqrt(x**2 + b)) / 2``, a smooth relu (So & Le, 2021).

    Raises:
        ValueError: if ``b`` is negative.
    """
    b = _number("squareplus", "b", b)
    if b < 0:
        raise ValueError(f"squareplus: `b` must be >= 0. Received: b={b!r}")
    return Activation("squareplus", lambda xp, x: (x + xp.sqrt(x * x + b)) / 2,
                      lambda xp, x, y: (1 + x / xp.sqrt(x * x + b)) / 2).apply(x)


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


# -- softmax and normalize ---------------------------------------------------------------------
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


def _axes(op, x, axis):
    """``axis`` (int or tuple) as a sorted tuple of non-negative axes of ``x``."""
    nd = len(np.shape(x.data if isinstance(x, Tensor) else x))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if not axes or any(not -nd <= a < nd for a in axes) or len({a % nd for a in axes}) < len(axes):
        raise ValueError(f"{op}: `axis` must name distinct axes of a rank-{nd} tensor. "
                         f"Received: axis={axis!r}, shape {np.shape(getattr(x, 'data', x))}")
    return tuple(sorted(a % nd for a in axes))


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along ``axis`` (an int or a tuple of axes, as Keras allows).

    The max is subtracted first, so large logits do not overflow; ``-inf`` entries (masked
    positions) get probability 0 and gradient 0. A slice that is all ``-inf`` gives NaN, as in
    Keras.

    Raises:
        ValueError: if ``axis`` is out of range.
    """
    return Softmax(_axes("softmax", x, axis)).apply(x)


def log_softmax(x, axis=-1):
    """``x - logsumexp(x)`` along ``axis`` (int or tuple); finite for logits of any size.

    Raises:
        ValueError: if ``axis`` is out of range.
    """
    return LogSoftmax(_axes("log_softmax", x, axis)).apply(x)


class Normalize(Function):
    """``x / max(norm_p(x), eps)``; for p = 2 as ``x * rsqrt(max(sum x^2, eps^2))``."""
    half_in_float32 = "always"

    def __init__(self, axis, order, epsilon):
        self.axis, self.order, self.epsilon = axis, order, epsilon

    def forward(self, x):
        xp, p, eps = self.xp, self.order, self.epsilon
        self.x = x
        if p == 2:
            s = (x * x).sum(axis=self.axis, keepdims=True)
            self.inside = s > eps * eps
            self.scale = 1 / xp.sqrt(xp.maximum(s, eps * eps))
        else:
            norm = ((xp.abs(x) ** p).sum(axis=self.axis, keepdims=True)) ** (1 / p)
            self.inside = norm > eps
            self.norm = norm
            self.scale = 1 / xp.maximum(norm, eps)
        return x * self.scale

    def backward(self, gy):
        xp, x, p, scale = self.xp, self.x, self.order, self.scale
        dot = (gy * x).sum(axis=self.axis, keepdims=True) * self.inside
        if p == 2:  # d/dx of x * s^-1/2 with s = sum x^2 (0 where the floor is active)
            return (gy * scale - x * (dot * scale ** 3),)
        safe = xp.where(self.inside, self.norm, 1)
        dnorm = xp.sign(x) * (xp.abs(x) / safe) ** (p - 1)
        return (gy * scale - dnorm * (dot * scale * scale),)


def normalize(x, axis=-1, order=2, epsilon=None):
    """``x / max(norm(x), epsilon)`` along ``axis``, Keras's ``ops.normalize``.

    For ``order=2`` computed as ``x * rsqrt(max(sum(x**2), epsilon**2))``: Keras's forward rule
    ``x * min(rsqrt(sum x**2), 1/epsilon)`` with the floor moved inside, so a zero vector gives
    0 and finite gradients (``1/epsilon`` times the upstream gradient) instead of NaN.

    Args:
        x: float Tensor; a 0-d input is treated as shape ``(1,)``, as Keras does.
        axis: int or tuple of ints. Defaults to -1.
        order: int >= 1, the norm's exponent. Defaults to 2.
        epsilon: lower bound for the norm; None means 1e-7 (Keras's ``epsilon()``).

    Returns:
        Tensor of ``x``'s shape (``(1,)`` for a 0-d input) and dtype.

    Raises:
        ValueError: if ``order`` is not an int >= 1, ``axis`` is out of range, or ``order`` is
            not 2 while ``axis`` names several axes (a matrix norm in Keras).
    """
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 1:
        raise ValueError(f"normalize: `order` must be an int >= 1. Received: order={order!r}")
    x = convert_to_tensor(x)
    if x.ndim == 0:
        x = shape.reshape(x, (1,))
    axes = _axes("normalize", x, axis)
    if order != 2 and len(axes) > 1:
        raise ValueError("normalize: an `order` other than 2 over several axes would be a matrix "
                         f"norm, which is not supported. Received: order={order}, axis={axis}")
    eps = EPSILON if epsilon is None else float(epsilon)
    return Normalize(axes, int(order), eps).apply(x)


# -- cross-entropies ---------------------------------------------------------------------------
class SigmoidCrossEntropy(Function):
    """Elementwise binary cross-entropy of logits: ``max(x, 0) - x t + log1p(exp(-|x|))``."""
    half_in_float32 = "always"

    def forward(self, t, x):
        xp = self.xp
        self.t, self.x = t, x
        return xp.maximum(x, 0) - x * t + xp.log1p(xp.exp(-xp.abs(x)))

    def backward(self, gy):
        p = self.backend.sigmoid(self.x)
        gx = gy * (p - self.t)
        gt = -gy * self.x if self.needs_grad[0] else None
        return gt, gx


def binary_crossentropy(target, output, from_logits=False):
    """Elementwise binary cross-entropy, as Keras's ``ops.binary_crossentropy`` (not reduced).

    Args:
        target: Tensor of targets in [0, 1], same shape as ``output``.
        output: probabilities (``from_logits=False``: clipped to ``[1e-7, 1 - 1e-7]`` as Keras
            does, so exact 0 and 1 give finite values, about 16.118 at worst, and finite
            gradients) or logits (``from_logits=True``: ``max(x, 0) - x t + log1p(exp(-|x|))``,
            finite for logits of any size).
        from_logits: whether ``output`` holds logits.

    Returns:
        Tensor of ``output``'s shape, in nats.

    Raises:
        ValueError: if the shapes differ.
    """
    _same_shape("binary_crossentropy", target, output)
    if from_logits:
        return SigmoidCrossEntropy().apply(target, output)
    p = ops_math.clip(output, EPSILON, 1 - EPSILON)
    return -(target * ops_math.log(p) + (1 - target) * ops_math.log(1 - p))


def _probabilities(output, axis):
    """Keras's probability path: rescale to sum 1, clip to [1e-7, 1 - 1e-7]. The sum is floored
    at 1e-7 so an all-zero row gives the clip value instead of 0/0 (behaviour case C08)."""
    total = ops_math.sum(output, axis=axis, keepdims=True)
    output = output / ops_math.maximum(total, EPSILON)
    return ops_math.clip(output, EPSILON, 1 - EPSILON)


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Cross-entropy between one-hot (or soft) targets and predictions, reduced over ``axis``.

    Args:
        target: Tensor, same shape as ``output``, each slice along ``axis`` a distribution.
        output: probabilities (rescaled to sum to 1 and clipped to ``[1e-7, 1 - 1e-7]``, as Keras
            does; an all-zero row gives ``-log(1e-7) = 16.118`` instead of Keras's NaN) or
            logits with ``from_logits=True`` (via ``log_softmax``: finite for any size).
        from_logits: whether ``output`` holds logits.
        axis: the class axis. Defaults to -1.

    Returns:
        Tensor with ``axis`` removed, in nats.

    Raises:
        ValueError: if the shapes differ or ``axis`` is out of range.
    """
    _same_shape("categorical_crossentropy", target, output)
    axis = _axes("categorical_crossentropy", output, axis)[0]
    if from_logits and output.ndim >= 1:
        if axis != output.ndim - 1:
            perm = [a for a in range(output.ndim) if a != axis] + [axis]
            target, output = shape.transpose(target, perm), shape.transpose(output, perm)
        return SoftmaxCrossEntropy().apply(target, output)
    if from_logits:
        log_p = log_softmax(output, axis=axis)
    else:
        log_p = ops_math.log(_probabilities(output, axis))
    return -ops_math.sum(target * log_p, axis=axis)


class SparseSoftmaxCrossEntropy(Function):
    """``logsumexp(x) - x[label]`` over the last axis, fused with its gradient ``softmax - onehot``
    (the backend's ``softmax_cross_entropy`` kernel pair, rows flattened to ``(n, classes)``)."""
    half_in_float32 = "always"

    def __init__(self, labels):
        self.labels = labels.reshape(-1)

    def forward(self, x):
        loss, self.probs = self.backend.softmax_cross_entropy(x.reshape(-1, x.shape[-1]),
                                                              self.labels)
        return loss.reshape(x.shape[:-1])

    def backward(self, gy):
        gx = self.backend.softmax_cross_entropy_grad(
            self.probs, self.labels, gy.reshape(-1).astype(self.probs.dtype, copy=False))
        return (gx.reshape(gy.shape + gx.shape[-1:]),)


class SoftmaxCrossEntropy(Function):
    """``-sum(t * log_softmax(x))`` over the last axis for dense targets ``t``, fused with the
    logits' gradient ``sum(t) * softmax - t``. The targets' gradient ``-log_softmax(x)`` is
    computed only when asked for."""
    half_in_float32 = "always"

    def forward(self, t, x):
        c = x.shape[-1]
        self.x, self.t = x, t.astype(x.dtype, copy=False).reshape(-1, c)
        loss, self.probs = self.backend.softmax_cross_entropy(x.reshape(-1, c), self.t)
        return loss.reshape(x.shape[:-1])

    def backward(self, gy):
        g = gy.reshape(-1).astype(self.probs.dtype, copy=False)
        gx = self.backend.softmax_cross_entropy_grad(self.probs, self.t, g).reshape(self.x.shape)
        gt = None
        if self.needs_grad[0]:
            xp, x = self.xp, self.x
            m = x.max(axis=-1, keepdims=True)
            log_p = x - m - xp.log(xp.exp(x - m).sum(axis=-1, keepdims=True))
            gt = -log_p * gy[..., None]
        return gt, gx


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Cross-entropy with integer class targets, reduced over the class ``axis``.

    Args:
        target: integer (or integral float) Tensor of class ids, shaped like ``output`` without
            ``axis``. A trailing size-1 axis (labels shaped ``(N, 1)`` for output ``(N, C)``) is
            squeezed first, as Keras's backends do.
        output: probabilities (rescaled and clipped as in `categorical_crossentropy`) or logits
            (``from_logits=True``; finite for logits of any size).
        from_logits: whether ``output`` holds logits.
        axis: the class axis of ``output``. Defaults to -1.

    Returns:
        Tensor of ``target``'s shape, in nats.

    Raises:
        ValueError: if ``output`` is 0-d, the shapes do not fit, or a label is outside
            ``[0, classes)`` or is NaN or infinite ("labels contain NaN").
    """
    op = "sparse_categorical_crossentropy"
    target = convert_to_tensor(target)
    output = convert_to_tensor(output)
    if output.ndim == 0:
        raise ValueError(f"{op}: `output` must be at least 1-D. Received: output shape ()")
    axis = _axes(op, output, axis)[0]
    if target.ndim == output.ndim and target.shape[axis] == 1:
        target = shape.squeeze(target, axis)
    expected = output.shape[:axis] + output.shape[axis + 1:]
    if target.shape != expected:
        raise ValueError(f"{op}: `target` must have the shape of `output` without the class "
                         f"axis {axis}, i.e. {expected}. Received: target shape {target.shape}, "
                         f"output shape {output.shape}")
    if axis != output.ndim - 1:
        perm = [a for a in range(output.ndim) if a != axis] + [axis]
        output = shape.transpose(output, perm)
    classes = output.shape[-1]
    labels = target.data if target.backend is output.backend else target.numpy()
    labels = output.backend.asarray(labels)  # on output's device
    if labels.size:
        xp = output.backend.xp  # one host read for both bounds (a device sync on a GPU)
        low, high = (float(v) for v in output.backend.to_numpy(
            xp.stack([labels.min(), labels.max()])))  # a NaN propagates into both
        if not (math.isfinite(low) and math.isfinite(high)):
            bad = "NaN" if math.isnan(low) or math.isnan(high) else "infinity"
            raise ValueError(f"{op}: labels contain {bad}; class ids must be finite integers in "
                             f"[0, {classes}). Received: labels from {low} to {high}")
        if int(low) < 0 or int(high) >= classes:
            raise ValueError(f"{op}: labels must be in [0, {classes}). Received: labels from "
                             f"{int(low)} to {int(high)}")
    labels = labels.astype("int64", copy=False)
    if from_logits:
        return SparseSoftmaxCrossEntropy(labels).apply(output)
    log_p = ops_math.log(_probabilities(output, -1))
    flat = labels.reshape(-1)
    rows = log_p.backend.xp.arange(flat.size)
    picked = core.getitem(shape.reshape(log_p, (-1, classes)), (rows, flat))
    return -shape.reshape(picked, target.shape)


def _same_shape(op, a, b):
    sa = np.shape(a.data if isinstance(a, Tensor) else a)
    sb = np.shape(b.data if isinstance(b, Tensor) else b)
    if sa != sb:
        raise ValueError(f"{op}: target and output must have the same shape. Received: target "
                         f"shape {tuple(sa)}, output shape {tuple(sb)}")


__all__ = [
    "average_pool",
    "binary_crossentropy",
    "categorical_crossentropy",
    "celu",
    "conv",
    "conv_transpose",
    "depthwise_conv",
    "elu",
    "gelu",
    "glu",
    "hard_shrink",
    "hard_sigmoid",
    "hard_silu",
    "hard_swish",
    "hard_tanh",
    "leaky_relu",
    "log_sigmoid",
    "log_softmax",
    "max_pool",
    "normalize",
    "relu",
    "relu6",
    "selu",
    "separable_conv",
    "sigmoid",
    "silu",
    "soft_shrink",
    "softmax",
    "softplus",
    "softsign",
    "sparse_categorical_crossentropy",
    "sparse_plus",
    "sparse_sigmoid",
    "squareplus",
    "swish",
    "tanh_shrink",
    "threshold",
]


# Keras's other ops.nn names (kept in nn_extra.py; ops.nn lists them too).
from kerasrs.ops.nn_extra import *  # noqa: F401,F403,E402
from kerasrs.ops.nn_extra import __all__ as _extra_all  # noqa: E402

__all__ = __all__ + [n for n in _extra_all if n not in __all__]
