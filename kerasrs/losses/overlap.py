"""Overlap losses for segmentation: Dice (Milletari et al. 2016) and Tversky (Salehi et al.
2017), as Keras 3 computes them (keras/src/losses/losses.py); each returns per-sample values like
the other losses (a scalar when ``axis`` is None)."""

from kerasrs import ops
from kerasrs.losses import base

EPSILON = 1e-7  # Keras's backend.epsilon()


def dice(y_true, y_pred, axis=None):
    """Dice loss ``1 - 2 sum(y_true y_pred) / (sum(y_true) + sum(y_pred) + eps)`` over ``axis``
    (all axes, a scalar, when None; Milletari et al. 2016)."""
    y_true, y_pred = base.prepare(y_true, y_pred)
    inter = ops.sum(y_true * y_pred, axis=axis)
    return 1 - 2.0 * inter / (ops.sum(y_true, axis=axis) + ops.sum(y_pred, axis=axis) + EPSILON)


def tversky(y_true, y_pred, alpha=0.5, beta=0.5, axis=None):
    """Tversky loss (Salehi et al. 2017): ``1 - TP / (TP + alpha FP + beta FN + eps)``, with
    Keras's roles (``FP = sum((1 - y_pred) y_true)``, ``FN = sum(y_pred (1 - y_true))``)."""
    y_true, y_pred = base.prepare(y_true, y_pred)
    tp = ops.sum(y_true * y_pred, axis=axis)
    fp = ops.sum((1 - y_pred) * y_true, axis=axis)
    fn = ops.sum(y_pred * (1 - y_true), axis=axis)
    return 1 - tp / (tp + fp * alpha + fn * beta + EPSILON)


Dice = base.loss_class("Dice", dice, "dice", {"axis": None}, "`dice` as a `Loss`.", __name__)
Tversky = base.loss_class("Tversky", tversky, "tversky", {"alpha": 0.5, "beta": 0.5, "axis": None},
                          "`tversky` as a `Loss`.", __name__)
