"""Confusion-matrix metrics: `Precision`, `Recall` and `AUC` (ROC or PR), as Keras 3.

A prediction is positive at threshold ``t`` when ``y_pred > t`` (strictly); a label is positive
when it is non-zero. Counts are sample-weighted sums kept per threshold. Each batch is binned in
one pass (a sort-free ``searchsorted`` + weighted ``bincount``), so 200 thresholds cost about
as much as one.
"""

import numpy as np

from kerasrs import backend as backend_module
from kerasrs.metrics import base

EPSILON = 1e-7
NEG_INF = -1e10  # what Keras gives the predictions outside the top k


def confusion_counts(y_true, y_pred, thresholds, sample_weight=None, top_k=None,
                     class_id=None):
    """Weighted ``(tp, fp, tn, fn)`` NumPy float64 arrays, one entry per threshold.

    Args:
        y_true: labels, shape of ``y_pred`` (non-zero means positive).
        y_pred: scores, shape ``(batch, ...)``; with ``class_id`` the last axis is classes.
        thresholds: sequence of floats (any order).
        sample_weight: None or weights broadcastable to ``y_pred`` (leading axes).
        top_k: optional int: only each row's ``k`` highest scores may be positive.
        class_id: optional int: use only that column of the last axis.
    """
    y_true, y_pred = base.squeeze_or_expand(*base.inputs(y_true, y_pred))
    xp = base.xp_of(y_pred)
    weight = xp.ones(y_pred.shape, "float64") if sample_weight is None else \
        base.weights_like(sample_weight, y_pred)
    if top_k is not None:
        kth = xp.sort(y_pred, axis=-1)[..., -top_k][..., None]
        y_pred = xp.where(y_pred >= kth, y_pred, NEG_INF)
    if class_id is not None:
        y_true, y_pred, weight = y_true[..., class_id], y_pred[..., class_id], weight[..., class_id]
    positive = (y_true != 0).reshape(-1)
    weight = weight.reshape(-1)
    order = np.argsort(np.asarray(thresholds, "float64"), kind="stable")
    sorted_thresholds = xp.asarray(np.asarray(thresholds, "float64")[order])
    # bucket b = number of thresholds strictly below the prediction: positive at the first b
    bucket = xp.searchsorted(sorted_thresholds, y_pred.reshape(-1).astype("float64"), "left")
    n = len(order)
    pos_hist = xp.bincount(bucket, weights=weight * positive, minlength=n + 1)
    neg_hist = xp.bincount(bucket, weights=weight * ~positive, minlength=n + 1)
    tp_sorted = xp.cumsum(pos_hist[::-1])[::-1][1:]
    fp_sorted = xp.cumsum(neg_hist[::-1])[::-1][1:]
    tp, fp = np.empty(n), np.empty(n)
    tp[order] = backend_module.convert_to_numpy(tp_sorted)
    fp[order] = backend_module.convert_to_numpy(fp_sorted)
    total_pos, total_neg = float(pos_hist.sum()), float(neg_hist.sum())
    return tp, fp, total_neg - fp, total_pos - tp


def _divide_no_nan(a, b):
    b = np.asarray(b, "float64")
    return np.where(b > 0, a / np.where(b > 0, b, 1.0), 0.0)


class _ThresholdMetric(base.Metric):
    """Shared state for `Precision` and `Recall`: counts at one or more thresholds."""

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds, self.top_k, self.class_id = thresholds, top_k, class_id
        default = 0.5 if top_k is None else NEG_INF
        values = [default] if thresholds is None else np.atleast_1d(thresholds).tolist()
        if any(not 0.0 <= t <= 1.0 for t in values if t != NEG_INF):
            raise ValueError(f"{self.name}: thresholds must be in [0, 1]. Received: "
                             f"thresholds={thresholds!r}")
        self.thresholds = values
        self.true_positives = self.add_accumulator((len(values),), "true_positives")
        self.false_positives = self.add_accumulator((len(values),), "false_positives")
        self.false_negatives = self.add_accumulator((len(values),), "false_negatives")

    def update_state(self, y_true, y_pred, sample_weight=None):
        tp, fp, _, fn = confusion_counts(y_true, y_pred, self.thresholds, sample_weight,
                                         self.top_k, self.class_id)
        for var, delta in ((self.true_positives, tp), (self.false_positives, fp),
                           (self.false_negatives, fn)):
            var.assign_add(delta)

    def _finish(self, ratio):
        """One value per threshold, as a 0-d `Tensor` when there is one threshold."""
        return self.result_tensor(ratio[0] if len(ratio) == 1 else ratio)

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds,
                "top_k": self.top_k, "class_id": self.class_id}


def _host(var):
    return np.asarray(var.numpy(), "float64")


class Precision(_ThresholdMetric):
    """``tp / (tp + fp)``: the share of positive predictions that are right (0 if none).

    Args:
        thresholds: float or list of floats in [0, 1]; ``y_pred > t`` is a positive prediction.
            Defaults to 0.5 (or, with ``top_k``, "any of the top k").
        top_k: optional int: only each row's top ``k`` predictions count as positive.
        class_id: optional int: the binary metric of one class (a column of the last axis).
        name, dtype: as `Metric`.

    ``result()`` is a 0-d float32 `Tensor`, or one value per threshold.
    """

    def result(self):
        tp = _host(self.true_positives)
        return self._finish(_divide_no_nan(tp, tp + _host(self.false_positives)))


class Recall(_ThresholdMetric):
    """``tp / (tp + fn)``: the share of actual positives that are predicted positive.
    Arguments as `Precision`."""

    def result(self):
        tp = _host(self.true_positives)
        return self._finish(_divide_no_nan(tp, tp + _host(self.false_negatives)))
