"""`AUC`: the area under the ROC or precision-recall curve, approximated on fixed thresholds."""

import numpy as np

from kerasrs.metrics import base, confusion

CURVES = ("ROC", "PR")
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
    - ``"minoring"`` / ``"majoring"``: the lower / upper of the two heights per interval.

    Args:
        num_thresholds: int > 1. Defaults to 200.
        curve: ``"ROC"`` or ``"PR"``. Defaults to ``"ROC"``.
        summation_method: ``"interpolation"``, ``"minoring"`` or ``"majoring"``.
        name, dtype: as `Metric`.
        thresholds: optional list of floats in [0, 1] used instead of ``num_thresholds``.
        multi_label, num_labels, label_weights: only the single-label form
            (``multi_label=False``, no label weights) is supported; data with several columns is
            flattened, each (label, prediction) pair counting as one point, as in Keras.
        from_logits: apply a sigmoid to ``y_pred`` first. Defaults to False.

    Raises:
        ValueError: for ``num_thresholds <= 1`` or an unknown curve or summation method.
        NotImplementedError: for ``multi_label=True`` or ``label_weights``.

    Example:
        >>> m = AUC(num_thresholds=3)
        >>> m.update_state([0, 0, 1, 1], [0, 0.5, 0.3, 0.9])
        >>> m.result()
        0.75
    """

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation",
                 name=None, dtype=None, thresholds=None, multi_label=False, num_labels=None,
                 label_weights=None, from_logits=False):
        super().__init__(name=name, dtype=dtype)
        if multi_label or label_weights is not None:
            raise NotImplementedError(f"{self.name}: multi_label and label_weights are not "
                                      f"supported. Received: multi_label={multi_label}, "
                                      f"label_weights={label_weights!r}")
        curve, summation_method = str(curve).upper(), str(summation_method).lower()
        if curve not in CURVES or summation_method not in SUMMATIONS:
            raise ValueError(f"{self.name}: curve must be one of {CURVES} and summation_method "
                             f"one of {SUMMATIONS}. Received: curve={curve!r}, "
                             f"summation_method={summation_method!r}")
        if thresholds is not None:
            inner = sorted(float(t) for t in thresholds)
        elif num_thresholds > 1:
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        else:
            raise ValueError(f"{self.name}: num_thresholds must be an int > 1. Received: "
                             f"num_thresholds={num_thresholds!r}")
        self._init_thresholds = thresholds
        self.num_thresholds = len(inner) + 2
        self.curve, self.summation_method = curve, summation_method
        self.multi_label, self.num_labels, self.label_weights = False, num_labels, None
        self.from_logits = from_logits
        self._thresholds = [-confusion.EPSILON] + inner + [1.0 + confusion.EPSILON]
        shape = (self.num_thresholds,)
        self.true_positives = self.add_variable(shape, "true_positives")
        self.false_positives = self.add_variable(shape, "false_positives")
        self.true_negatives = self.add_variable(shape, "true_negatives")
        self.false_negatives = self.add_variable(shape, "false_negatives")

    @property
    def thresholds(self):
        """The thresholds used, end points included."""
        return list(self._thresholds)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = base.inputs(y_true, y_pred)
        if self.from_logits:
            xp = base.xp_of(y_pred)
            y_pred = 1.0 / (1.0 + xp.exp(-y_pred.astype("float64")))
        counts = confusion.confusion_counts(y_true, y_pred, self._thresholds, sample_weight)
        for var, delta in zip((self.true_positives, self.false_positives, self.true_negatives,
                               self.false_negatives), counts):
            var.assign_add(delta)

    def result(self):
        tp, fp, tn, fn = (np.asarray(v.numpy(), "float64") for v in self.variables)
        if self.curve == "PR" and self.summation_method == "interpolation":
            return _interpolate_pr_auc(tp, fp, fn)
        recall = confusion._divide_no_nan(tp, tp + fn)
        if self.curve == "ROC":
            x, y = confusion._divide_no_nan(fp, fp + tn), recall
        else:
            x, y = recall, confusion._divide_no_nan(tp, tp + fp)
        if self.summation_method == "interpolation":
            heights = (y[:-1] + y[1:]) / 2
        elif self.summation_method == "minoring":
            heights = np.minimum(y[:-1], y[1:])
        else:
            heights = np.maximum(y[:-1], y[1:])
        return float(np.sum((x[:-1] - x[1:]) * heights))

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds,
                "curve": self.curve, "summation_method": self.summation_method,
                "thresholds": self._init_thresholds, "multi_label": False,
                "num_labels": self.num_labels, "label_weights": None,
                "from_logits": self.from_logits}


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
    return float(np.sum(area))
