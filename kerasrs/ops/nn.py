"""Neural-network ops (Keras's ``keras.ops.nn``): activations, softmax and cross-entropies."""

import numpy as np

from kerasrs.autodiff import Function, Tensor, convert_to_tensor
from kerasrs.ops import core, shape
from kerasrs.ops import math as ops_math

EPSILON = 1e-7  # Keras's backend.epsilon(): probabilities are clipped to [EPSILON, 1 - EPSILON]


# -- activations -------------------------------------------------------------------------------
class ReLU(Function):
    def forward(self, x):
        self.y = self.xp.maximum(x, 0)
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


class Softmax(Function):
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
    def __init__(self, axis):
        self.axis = axis

    def forward(self, x):
        shifted = x - x.max(axis=self.axis, keepdims=True)
        self.y = shifted - self.xp.log(self.xp.exp(shifted).sum(axis=self.axis, keepdims=True))
        return self.y

    def backward(self, gy):
        return (gy - self.xp.exp(self.y) * gy.sum(axis=self.axis, keepdims=True),)


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along ``axis`` (the max is subtracted first, so no overflow)."""
    return Softmax(axis).apply(x)


def log_softmax(x, axis=-1):
    """``x - logsumexp(x)`` along ``axis``; finite for logits of any size."""
    return LogSoftmax(axis).apply(x)


# -- cross-entropies ---------------------------------------------------------------------------
class SigmoidCrossEntropy(Function):
    """Elementwise binary cross-entropy of logits: ``max(x, 0) - x t + log1p(exp(-|x|))``."""

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
        output: probabilities (``from_logits=False``, clipped to ``[1e-7, 1 - 1e-7]`` as Keras
            does, so exact 0 and 1 give finite values) or logits (``from_logits=True``, computed
            in the overflow-free form).

    Returns:
        Tensor of the broadcast shape, in nats.

    Raises:
        ValueError: if the shapes differ.
    """
    _same_shape("binary_crossentropy", target, output)
    if from_logits:
        return SigmoidCrossEntropy().apply(target, output)
    p = ops_math.clip(output, EPSILON, 1 - EPSILON)
    return -(target * ops_math.log(p) + (1 - target) * ops_math.log(1 - p))


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Cross-entropy between one-hot (or soft) targets and predictions, reduced over ``axis``.

    Args:
        target: Tensor, same shape as ``output``, each row a distribution.
        output: probabilities (rescaled to sum to 1 and clipped to ``[1e-7, 1 - 1e-7]``, as Keras
            does) or logits with ``from_logits=True`` (uses ``log_softmax``: finite for any size).
        axis: the class axis. Defaults to -1.

    Returns:
        Tensor with ``axis`` removed, in nats.

    Raises:
        ValueError: if the shapes differ.
    """
    _same_shape("categorical_crossentropy", target, output)
    if from_logits:
        log_p = log_softmax(output, axis=axis)
    else:
        output = output / ops_math.sum(output, axis=axis, keepdims=True)
        log_p = ops_math.log(ops_math.clip(output, EPSILON, 1 - EPSILON))
    return -ops_math.sum(target * log_p, axis=axis)


class SparseSoftmaxCrossEntropy(Function):
    """``logsumexp(x) - x[label]`` over the last axis, fused with its gradient ``softmax - onehot``."""

    def __init__(self, labels):
        self.labels = labels

    def forward(self, x):
        xp = self.xp
        shifted = x - x.max(axis=-1, keepdims=True)
        self.log_p = shifted - xp.log(xp.exp(shifted).sum(axis=-1, keepdims=True))
        return -xp.take_along_axis(self.log_p, self.labels[..., None], axis=-1)[..., 0]

    def backward(self, gy):
        gx = self.xp.exp(self.log_p)
        flat = gx.reshape(-1, gx.shape[-1])
        flat[self.xp.arange(flat.shape[0]), self.labels.reshape(-1)] -= 1
        return (gx * gy[..., None],)


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Cross-entropy with integer class targets, reduced over the class ``axis``.

    Args:
        target: integer Tensor of class ids, shape ``output.shape`` without ``axis``.
        output: probabilities (rescaled and clipped as in `categorical_crossentropy`) or logits.
        axis: the class axis; only -1 (the last) is supported.

    Returns:
        Tensor of ``target``'s shape, in nats.

    Raises:
        ValueError: if the shapes do not fit or a label is outside ``[0, classes)``.
    """
    target = convert_to_tensor(target)
    out_shape = np.shape(output.data if isinstance(output, Tensor) else output)
    if axis not in (-1, len(out_shape) - 1):
        raise ValueError(f"sparse_categorical_crossentropy: only axis=-1 is supported. "
                         f"Received: axis={axis}")
    if target.shape != tuple(out_shape[:-1]):
        raise ValueError("sparse_categorical_crossentropy: target must have the output's shape "
                         f"without the class axis. Received: target shape {target.shape}, "
                         f"output shape {tuple(out_shape)}")
    labels = target.data.astype("int64", copy=False)
    if labels.size and (int(labels.min()) < 0 or int(labels.max()) >= out_shape[-1]):
        raise ValueError(f"sparse_categorical_crossentropy: labels must be in [0, "
                         f"{out_shape[-1]}). Received: labels from {int(labels.min())} to "
                         f"{int(labels.max())}")
    if from_logits:
        return SparseSoftmaxCrossEntropy(labels).apply(output)
    output = output / ops_math.sum(output, axis=-1, keepdims=True)
    log_p = ops_math.log(ops_math.clip(output, EPSILON, 1 - EPSILON))
    flat = labels.reshape(-1)
    rows = log_p.backend.xp.arange(flat.size)
    picked = core.getitem(shape.reshape(log_p, (-1, out_shape[-1])), (rows, flat))
    return -shape.reshape(picked, target.shape)


def _same_shape(op, a, b):
    sa = np.shape(a.data if isinstance(a, Tensor) else a)
    sb = np.shape(b.data if isinstance(b, Tensor) else b)
    if sa != sb:
        raise ValueError(f"{op}: target and output must have the same shape. Received: target "
                         f"shape {tuple(sa)}, output shape {tuple(sb)}")


__all__ = ["relu", "sigmoid", "softmax", "log_softmax", "binary_crossentropy", "categorical_crossentropy", "sparse_categorical_crossentropy"]
