"""Hinge losses for maximum-margin classification (labels -1/1; 0/1 labels are converted)."""

from kerasrs import ops
from kerasrs.losses import base


def _plus_minus_one(y_true):
    """Keras's rule: if every label is 0 or 1, map them to -1 and 1; otherwise leave them."""
    t = y_true.data
    xp = y_true.backend.xp
    if bool(xp.all((t == 0) | (t == 1))):
        return base.to_tensor_like(2 * t - 1, y_true)
    return y_true


def hinge(y_true, y_pred):
    """``mean(max(1 - t * y_pred, 0), axis=-1)`` with ``t`` in {-1, 1}.

    Args:
        y_true: labels in {-1, 1} (or {0, 1}, converted), shape of ``y_pred``.
        y_pred: scores (not probabilities), shape ``(batch, ..., d)``.

    Returns:
        Tensor of shape ``(batch, ...)``.
    """
    y_true, y_pred = base.prepare(y_true, y_pred)
    return ops.mean(ops.maximum(1.0 - _plus_minus_one(y_true) * y_pred, 0.0), axis=-1)


def squared_hinge(y_true, y_pred):
    """``mean(max(1 - t * y_pred, 0)**2, axis=-1)`` with ``t`` in {-1, 1} (0/1 converted)."""
    y_true, y_pred = base.prepare(y_true, y_pred)
    margin = ops.maximum(1.0 - _plus_minus_one(y_true) * y_pred, 0.0)
    return ops.mean(ops.square(margin), axis=-1)


def categorical_hinge(y_true, y_pred):
    """Crammer & Singer (2001) multiclass hinge: ``max(neg - pos + 1, 0)`` with
    ``pos = sum(t * y_pred)`` and ``neg = max((1 - t) * y_pred)`` over the last axis.

    Args:
        y_true: one-hot targets, shape ``(batch, classes)``.
        y_pred: scores, same shape.

    Returns:
        Tensor of shape ``(batch,)``.
    """
    y_true, y_pred = base.prepare(y_true, y_pred)
    pos = ops.sum(y_true * y_pred, axis=-1)
    neg = ops.max((1.0 - y_true) * y_pred, axis=-1)
    return ops.maximum(neg - pos + 1.0, 0.0)


class Hinge(base.LossFunctionWrapper):
    """`hinge` as a `Loss`."""

    def __init__(self, reduction="sum_over_batch_size", name="hinge", dtype=None):
        super().__init__(hinge, reduction=reduction, name=name, dtype=dtype)


class SquaredHinge(base.LossFunctionWrapper):
    """`squared_hinge` as a `Loss`."""

    def __init__(self, reduction="sum_over_batch_size", name="squared_hinge", dtype=None):
        super().__init__(squared_hinge, reduction=reduction, name=name, dtype=dtype)


class CategoricalHinge(base.LossFunctionWrapper):
    """`categorical_hinge` as a `Loss`."""

    def __init__(self, reduction="sum_over_batch_size", name="categorical_hinge", dtype=None):
        super().__init__(categorical_hinge, reduction=reduction, name=name, dtype=dtype)
