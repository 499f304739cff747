"""Counts and operating points from per-threshold confusion counts (Keras 3's
``TruePositives``, ..., ``SensitivityAtSpecificity``, ``PrecisionAtRecall``, ...). Counts are
kept per threshold by `confusion.confusion_counts` (a prediction is positive when
``y_pred > threshold``)."""

import numpy as np

from kerasrs import backend as backend_module
from kerasrs.metrics import base, confusion


class _Count(base.Metric):
    """One confusion-matrix count at one or more thresholds (default 0.5)."""

    _index = 0  # position in (tp, fp, tn, fn)

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.thresholds = [0.5] if thresholds is None else np.atleast_1d(thresholds).tolist()
        self.accumulator = self.add_accumulator((len(self.thresholds),), "accumulator")

    def update_state(self, y_true, y_pred, sample_weight=None):
        counts = confusion.confusion_counts(y_true, y_pred, self.thresholds, sample_weight)
        self.accumulator.assign_add(counts[self._index])

    def result(self):
        values = np.asarray(self.accumulator.numpy(), "float64")
        single = self.init_thresholds is None or np.ndim(self.init_thresholds) == 0
        return self.result_tensor(values[0] if single else values)

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds}


class TruePositives(_Count):
    """Weighted count of predictions above the threshold whose label is positive."""
    _index = 0


class FalsePositives(_Count):
    """Weighted count of predictions above the threshold whose label is negative."""
    _index = 1


class TrueNegatives(_Count):
    """Weighted count of predictions at or below the threshold whose label is negative."""
    _index = 2


class FalseNegatives(_Count):
    """Weighted count of predictions at or below the threshold whose label is positive."""
    _index = 3


class _OperatingPoint(base.Metric):
    """Best value of one rate subject to a floor on another, over ``num_thresholds`` evenly
    spaced thresholds in [0, 1] (Keras's ``SensitivitySpecificityBase``)."""

    _arg = "value"

    def __init__(self, value, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        if num_thresholds <= 0:
            raise ValueError(f"{self.name}: num_thresholds must be an integer > 0. Received: "
                             f"num_thresholds={num_thresholds}")
        if not 0 <= value <= 1:
            raise ValueError(f"{self.name}: `{self._arg}` must be in [0, 1]. Received: {value}")
        self.value, self.num_thresholds, self.class_id = value, num_thresholds, class_id
        setattr(self, self._arg, value)  # Keras's name for it: ``recall``, ``specificity``...
        if num_thresholds == 1:
            self.thresholds = [0.5]
        else:
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            self.thresholds = [-confusion.EPSILON] + inner + [1.0 + confusion.EPSILON]
        shape = (len(self.thresholds),)
        self.true_positives = self.add_accumulator(shape, "true_positives")
        self.false_positives = self.add_accumulator(shape, "false_positives")
        self.true_negatives = self.add_accumulator(shape, "true_negatives")
        self.false_negatives = self.add_accumulator(shape, "false_negatives")

    def update_state(self, y_true, y_pred, sample_weight=None):
        counts = confusion.confusion_counts(y_true, y_pred, self.thresholds, sample_weight,
                                            class_id=self.class_id)
        for var, delta in zip(self.variables, counts):
            var.assign_add(delta)

    def _rates(self):
        tp, fp, tn, fn = (np.asarray(v.numpy(), "float64") for v in self.variables)
        div = confusion._divide_no_nan
        return {"sensitivity": div(tp, tp + fn), "specificity": div(tn, tn + fp),
                "precision": div(tp, tp + fp)}

    def _best(self, constrained, dependent):
        feasible = constrained >= self.value
        return self.result_tensor(np.max(np.where(feasible, dependent, 0.0), initial=0.0))

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds,
                self._arg: self.value, "class_id": self.class_id}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(config.pop(cls._arg), **config)


class SensitivityAtSpecificity(_OperatingPoint):
    """The best sensitivity (recall) where specificity >= ``specificity``."""
    _arg = "specificity"

    def __init__(self, specificity, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(specificity, num_thresholds, class_id, name, dtype)

    def result(self):
        r = self._rates()
        return self._best(r["specificity"], r["sensitivity"])


class SpecificityAtSensitivity(_OperatingPoint):
    """The best specificity where sensitivity >= ``sensitivity``."""
    _arg = "sensitivity"

    def __init__(self, sensitivity, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(sensitivity, num_thresholds, class_id, name, dtype)

    def result(self):
        r = self._rates()
        return self._best(r["sensitivity"], r["specificity"])


class PrecisionAtRecall(_OperatingPoint):
    """The best precision where recall >= ``recall``."""
    _arg = "recall"

    def __init__(self, recall, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(recall, num_thresholds, class_id, name, dtype)

    def result(self):
        r = self._rates()
        return self._best(r["sensitivity"], r["precision"])


class RecallAtPrecision(_OperatingPoint):
    """The best recall where precision >= ``precision``."""
    _arg = "precision"

    def __init__(self, precision, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(precision, num_thresholds, class_id, name, dtype)

    def result(self):
        r = self._rates()
        return self._best(r["precision"], r["sensitivity"])


class FBetaScore(base.Metric):
    """F-beta score per class, ``(1 + b**2) P R / (b**2 P + R)`` (van Rijsbergen 1979).

    Args:
        average: None (one value per class), "micro", "macro" or "weighted" (by support).
        beta: weight of recall.
        threshold: predictions above it are positive; None takes each row's maximum.
    Inputs are (batch, classes), labels one-hot or multi-hot.
    """

    def __init__(self, average=None, beta=1.0, threshold=None, name="fbeta_score", dtype=None):
        super().__init__(name=name, dtype=dtype)
        if average not in (None, "micro", "macro", "weighted"):
            raise ValueError(f"{self.name}: average must be None, 'micro', 'macro' or 'weighted'."
                             f" Received: average={average!r}")
        if not beta > 0:
            raise ValueError(f"{self.name}: beta must be > 0. Received: beta={beta}")
        if threshold is not None and not 0 < threshold <= 1:
            raise ValueError(f"{self.name}: threshold must be in (0, 1]. Received: {threshold}")
        self.average, self.beta, self.threshold = average, beta, threshold
        self._vars = None

    def update_state(self, y_true, y_pred, sample_weight=None):
        t = np.asarray(backend_module.convert_to_numpy(base.raw(y_true)), "float64")
        p = np.asarray(backend_module.convert_to_numpy(base.raw(y_pred)), "float64")
        if p.ndim != 2:
            raise ValueError(f"{self.name}: expects (batch, classes) inputs. Received: "
                             f"y_pred.shape={p.shape}")
        if self._vars is None:
            n = 1 if self.average == "micro" else p.shape[-1]
            self._vars = [self.add_accumulator((n,), name) for name in (
                "true_positives", "false_positives", "false_negatives", "intermediate_weights")]
        if self.threshold is None:
            pred = (p >= p.max(-1, keepdims=True)) & (np.abs(p) > 1e-9)
        else:
            pred = p > self.threshold
        pred = pred.astype("float64")
        w = np.ones((p.shape[0], 1)) if sample_weight is None else np.asarray(
            backend_module.convert_to_numpy(base.raw(sample_weight)), "float64")
        w = np.broadcast_to(w.reshape(-1, 1) if w.ndim == 1 else w, p.shape)  # per sample or
        # per (sample, class)
        axis = None if self.average == "micro" else 0
        tp, fp, fn, tw = self._vars
        for var, val in ((tp, pred * t), (fp, pred * (1 - t)), (fn, (1 - pred) * t), (tw, t)):
            var.assign_add(np.atleast_1d((val * w).sum(axis=axis)))

    def result(self):
        if self._vars is None:
            return self.result_tensor(0.0)
        tp, fp, fn, tw = (np.asarray(v.numpy(), "float64") for v in self._vars)
        eps = 1e-7
        precision = tp / (tp + fp + eps)
        recall = tp / (tp + fn + eps)
        b2 = self.beta ** 2
        f = precision * recall / (b2 * precision + recall + eps) * (1 + b2)
        if self.average == "weighted":
            return self.result_tensor((f * tw / (tw.sum() + eps)).sum())
        if self.average is not None:
            return self.result_tensor(f.mean())
        return self.result_tensor(f)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype, "average": self.average,
                "beta": self.beta, "threshold": self.threshold}


class F1Score(FBetaScore):
    """`FBetaScore` with ``beta=1``."""

    def __init__(self, average=None, threshold=None, name="f1_score", dtype=None):
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name, dtype=dtype)

    def get_config(self):
        config = super().get_config()
        config.pop("beta")
        return config
