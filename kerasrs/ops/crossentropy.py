"""Cross-entropies (Keras's ``keras.ops.nn``): binary, categorical and sparse categorical, from
probabilities or logits. The logit forms are one fused `Function` each (the backend's
``softmax_cross_entropy`` kernel pair for the softmax ones), finite for logits of any size; the
probability forms clip as Keras does."""

import math

import numpy as np

from kerasrs import backend as backend_module
from kerasrs.autodiff import Function, Tensor, convert_to_tensor
from kerasrs.ops import core
from kerasrs.ops import layout as shape
from kerasrs.ops import math as ops_math
from kerasrs.ops.activations import log_softmax
from kerasrs.ops.core import EPSILON, sorted_axes
from kerasrs.ops.dispatch import op


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


@op
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
    """Keras's probability path: rescale to sum 1, clip to [1e-7, 1 - 1e-7]. A row summing to
    exactly 0 is divided by 1e-7 so it gives the clip value instead of 0/0 (behaviour case C08);
    every other row by its own sum, as Keras (also a negative sum, when no softmax ran)."""
    total = ops_math.sum(output, axis=axis, keepdims=True)
    output = output / ops_math.where(total == 0, EPSILON, total)
    return ops_math.clip(output, EPSILON, 1 - EPSILON)


@op
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
    axis = sorted_axes("categorical_crossentropy", output, axis)[0]
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


@op
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
    axis = sorted_axes(op, output, axis)[0]
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
    _check_label_range(op, labels, classes)  # host labels: before the copy, no device read
    labels = output.backend.asarray(labels)  # on output's device
    if labels.dtype != np.int64 and target.backend is output.backend:
        labels = ops_math.cast(target, "int64").data  # an op: a traced step casts every batch
    labels = labels.astype("int64", copy=False)
    if from_logits:
        return SparseSoftmaxCrossEntropy(labels).apply(output)
    log_p = ops_math.log(_probabilities(output, -1))
    flat = labels.reshape(-1)
    rows = log_p.backend.xp.arange(flat.size)
    picked = core.getitem(shape.reshape(log_p, (-1, classes)), (rows, flat))
    return -shape.reshape(picked, target.shape)


def _check_label_range(op, labels, classes):
    """Raise ValueError unless every label is finite and in ``[0, classes)``. On a device
    this is one read for both bounds (a device sync on a GPU)."""
    if not labels.size:
        return
    backend = backend_module.backend_of(labels)
    low, high = (float(v) for v in backend.to_numpy(
        backend.xp.stack([labels.min(), labels.max()])))  # a NaN propagates into both
    if not (math.isfinite(low) and math.isfinite(high)):
        bad = "NaN" if math.isnan(low) or math.isnan(high) else "infinity"
        raise ValueError(f"{op}: labels contain {bad}; class ids must be finite integers in "
                         f"[0, {classes}). Received: labels from {low} to {high}")
    if int(low) < 0 or int(high) >= classes:
        raise ValueError(f"{op}: labels must be in [0, {classes}). Received: labels from "
                         f"{int(low)} to {int(high)}")


def _same_shape(op, a, b):
    sa = np.shape(a.data if isinstance(a, Tensor) else a)
    sb = np.shape(b.data if isinstance(b, Tensor) else b)
    if sa != sb:
        raise ValueError(f"{op}: target and output must have the same shape. Received: target "
                         f"shape {tuple(sa)}, output shape {tuple(sb)}")
