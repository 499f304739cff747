"""`AUC`: the area under the ROC or precision-recall curve, approximated on fixed thresholds."""

import numpy as np

from kerasrs.metrics import base, confusion

CURVES = ("ROC", "PR", "PRGAIN")
SUMMATIONS = ("interpolation", "minoring", "majoring")


class AUC(base.Metric):
    """Area under the ROC curve (default) or the precision-recall curve, as Keras 3 computes it.

    Predictions are binned at ``num_thresholds`` thresholds: ``-1e-7``, then
    ``i / (num_thresholds - 1)`` for ``i = 1 .. num_thresholds - 2``, then ``1 + 1e-7`` (or the
    given ``thresholds`` plus those two end points). From the weighted confusion counts at each
    threshold the curve is integrated with a Riemann sum:

    - ROC, ``"interpolation"``: trapezoids of recall (TPR) over FPR;
    - PR, ``"interpolation"``: Davis & Goadrich (2006) interpolation, which interpolates true
      and false positives (not precision) linearly between thresholds, integrated in closed
      form (Keras's ``interpolate_pr_auc``);
    - PRGAIN: the precision-recall-gain curve (Flach & Kull 2015, "Precision-Recall-Gain
      Curves", eq. 2): with ``pi = P / N`` (positives over negatives), ``recall_gain = 1 -
      pi FN / TP`` (0 where ``TP = 0``, and never below 0) and ``precision_gain = 1 - pi FP /
      TP`` (1 where ``TP = 0``), integrated like ROC;
    - ``"minoring"`` / ``"majoring"``: the lower / upper of the two heights per interval.

    Args:
        num_thresholds: int > 1. Defaults to 200.
        curve: ``"ROC"``, ``"PR"`` or ``"PRGAIN"`` (any case). Defaults to ``"ROC"``.
        summation_method: ``"interpolation"``, ``"minoring"`` or ``"majoring"``.
        name, dtype: as `Metric`.
        thresholds: optional list of floats in [0, 1] used instead of ``num_thresholds``.
        multi_label: False (default) flattens the label columns, each (label, prediction)
            pair counting as one point; True computes one AUC per label column and averages
            them (weighted by ``label_weights`` when given), as Keras.
        num_labels: the number of label columns (else taken from the first batch).
        label_weights: non-negative weight per label column: the weights of the average with
            ``multi_label``, else per-column sample weights.
        from_logits: apply a sigmoid to ``y_pred`` first. Defaults to False.

    Raises:
        ValueError: for ``num_thresholds <= 1`` or an unknown curve or summation method.

    Example:
        >>> m = AUC(num_thresholds=3)
        >>> m.update_state([0, 0, 1, 1], [0, 0.5, 0.3, 0.9])
        >>> float(m.result())
        0.75
    """

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation",
                 name=None, dtype=None, thresholds=None, multi_label=False, num_labels=None,
                 label_weights=None, from_logits=False):
        super().__init__(name=name, dtype=dtype)
        curve, summation_method = str(curve).upper(), str(summation_method).lower()
        if curve not in CURVES or summation_method not in SUMMATIONS:
            raise ValueError(f"{self.name}: curve must be one of {CURVES} and summation_method "
                             f"one of {SUMMATIONS}. Received: curve={curve!r}, "
                             f"summation_method={summation_method!r}")
        if thresholds is not None:
            inner = sorted(float(t) for t in np.atleast_1d(thresholds))
        elif num_thresholds > 1:
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        else:
            raise ValueError(f"{self.name}: num_thresholds must be an int > 1. Received: "
                             f"num_thresholds={num_thresholds!r}")
        self._init_thresholds = thresholds
        self.num_thresholds = len(inner) + 2
        self.curve, self.summation_method = curve, summation_method
        self.multi_label, self.num_labels = bool(multi_label), num_labels
        self.label_weights = None if label_weights is None else np.asarray(label_weights,
                                                                           "float64")
        if self.label_weights is not None and (self.label_weights < 0).any():
            raise ValueError(f"{self.name}: label_weights must be >= 0. Received: "
                             f"{label_weights!r}")
        self.from_logits = from_logits
        self._thresholds = [-confusion.EPSILON] + inner + [1.0 + confusion.EPSILON]
        self._built_counts = False
        if not self.multi_label or num_labels is not None:
            self._build_counts(num_labels)

    def _build_counts(self, num_labels):
        """Counts per threshold (and per label with ``multi_label``)."""
        shape = (self.num_thresholds,) + ((num_labels,) if self.multi_label else ())
        self.true_positives = self.add_accumulator(shape, "true_positives")
        self.false_positives = self.add_accumulator(shape, "false_positives")
        self.true_negatives = self.add_accumulator(shape, "true_negatives")
        self.false_negatives = self.add_accumulator(shape, "false_negatives")
        self._built_counts = True

    @property
    def thresholds(self):
        """The thresholds used, end points included."""
        return list(self._thresholds)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = base.inputs(y_true, y_pred)
        if self.from_logits:
            xp = base.xp_of(y_pred)
            y_pred = 1.0 / (1.0 + xp.exp(-y_pred.astype("float64")))
        if self.multi_label:
            if not self._built_counts:
                self._build_counts(y_pred.shape[-1])
            y_true, y_pred = base.squeeze_or_expand(y_true, y_pred)
            weight = None if sample_weight is None else base.weights_like(sample_weight, y_pred)
            columns = [confusion.confusion_counts(
                y_true[..., j], y_pred[..., j], self._thresholds,
                None if weight is None else weight[..., j]) for j in range(y_pred.shape[-1])]
            counts = [np.stack([c[i] for c in columns], axis=-1) for i in range(4)]
        else:
            if self.label_weights is not None:  # weights per label column, then flattened
                xp = base.xp_of(y_pred)
                lw = xp.asarray(self.label_weights)
                sample_weight = xp.broadcast_to(lw, y_pred.shape) if sample_weight is None \
                    else base.weights_like(sample_weight, y_pred) * lw
            counts = confusion.confusion_counts(y_true, y_pred, self._thresholds, sample_weight)
        for var, delta in zip((self.true_positives, self.false_positives, self.true_negatives,
                               self.false_negatives), counts):
            var.assign_add(delta)

    def result(self):
        if not self._built_counts:
            return self.result_tensor(0.0)
        tp, fp, tn, fn = (np.asarray(v.numpy(), "float64") for v in self.variables)
        area = self._area(tp, fp, tn, fn)
        if self.multi_label:
            area = np.mean(area) if self.label_weights is None else \
                np.sum(area * self.label_weights) / np.sum(self.label_weights)
        return self.result_tensor(area)

    def _area(self, tp, fp, tn, fn):
        """The area under the curve from counts of shape (thresholds,) or (thresholds,
        labels): one value per column."""
        if self.curve == "PR" and self.summation_method == "interpolation":
            return _interpolate_pr_auc(tp, fp, fn)
        divide = confusion._divide_no_nan
        recall = divide(tp, tp + fn)
        if self.curve == "ROC":
            x, y = divide(fp, fp + tn), recall
        elif self.curve == "PR":
            x, y = recall, divide(tp, tp + fp)
        else:  # PRGAIN (Flach & Kull 2015); TP = 0 gives recall gain 0, precision gain 1
            ratio = divide(tp + fn, tn + fp)
            x = np.maximum(np.where(tp == 0, 0.0, 1.0 - ratio * divide(fn, tp)), 0.0)
            y = np.where(tp == 0, 1.0, 1.0 - ratio * divide(fp, tp))
        if self.summation_method == "interpolation":
            heights = (y[:-1] + y[1:]) / 2
        elif self.summation_method == "minoring":
            heights = np.minimum(y[:-1], y[1:])
        else:
            heights = np.maximum(y[:-1], y[1:])
        return np.sum((x[:-1] - x[1:]) * heights, axis=0)

    def get_config(self):
        """Keras's config: ``thresholds`` (the inner ones, sorted) only when they were given."""
        config = {**super().get_config(), "num_thresholds": self.num_thresholds,
                  "curve": self.curve, "summation_method": self.summation_method,
                  "multi_label": self.multi_label, "num_labels": self.num_labels,
                  "label_weights": None if self.label_weights is None else
                  self.label_weights.tolist(), "from_logits": self.from_logits}
        if self._init_thresholds is not None:
            config["thresholds"] = self._thresholds[1:-1]
        return config


def _interpolate_pr_auc(tp, fp, fn):
    """PR-AUC with TP and P = TP + FP linear in each threshold interval (Davis & Goadrich 2006,
    section 4): the interval's area is ``slope * (dTP + intercept * log(P_A / P_B)) / (TP_B +
    FN_B)`` with ``slope = dTP / dP`` and ``intercept = TP_B - slope * P_B``."""
    dtp = tp[:-1] - tp[1:]
    p = tp + fp
    dp = p[:-1] - p[1:]
    slope = confusion._divide_no_nan(dtp, np.maximum(dp, 0))
    intercept = tp[1:] - slope * p[1:]
    both = (p[:-1] > 0) & (p[1:] > 0)
    ratio = np.where(both, p[:-1] / np.where(both, p[1:], 1.0), 1.0)
    area = confusion._divide_no_nan(slope * (dtp + intercept * np.log(ratio)),
                                    np.maximum(tp[1:] + fn[1:], 0))
    return np.sum(area, axis=0)
