"""Correlation and goodness-of-fit metrics: `PearsonCorrelation`, `ConcordanceCorrelation`
(Lin 1989) and `R2Score` (coefficient of determination), with Keras 3's formulas."""

import numpy as np

from kerasrs import backend as backend_module
from kerasrs.metrics import base, reduction


def _pair(y_true, y_pred, axis):
    """Both as arrays of ``y_pred``'s float dtype, ranks aligned."""
    y_true, y_pred = base.squeeze_or_expand(*base.inputs(y_true, y_pred))
    return y_true.astype(y_pred.dtype), y_pred


def pearson_correlation(y_true, y_pred, axis=-1):
    """Per-sample Pearson correlation along ``axis``: ``cov(t, p) / (std(t) std(p))``."""
    t, p = _pair(y_true, y_pred, axis)
    xp = base.xp_of(p)
    t = t - t.mean(axis, keepdims=True)
    p = p - p.mean(axis, keepdims=True)
    denom = xp.sqrt((t * t).mean(axis) * (p * p).mean(axis))
    return (t * p).mean(axis) / xp.maximum(denom, 1e-7)


def concordance_correlation(y_true, y_pred, axis=-1):
    """Per-sample concordance correlation ``2 cov / (var(t) + var(p) + (mean(t) - mean(p))**2)``
    (Lin 1989, eq. 2)."""
    t, p = _pair(y_true, y_pred, axis)
    xp = base.xp_of(p)
    mt, mp = t.mean(axis, keepdims=True), p.mean(axis, keepdims=True)
    cov = ((t - mt) * (p - mp)).mean(axis)
    denom = ((t - mt) ** 2).mean(axis) + ((p - mp) ** 2).mean(axis) + \
        ((mt - mp) ** 2).squeeze(axis)
    return 2 * cov / xp.maximum(denom, 1e-7)


class PearsonCorrelation(reduction.FunctionMean):
    """Running mean of the per-sample `pearson_correlation`."""

    def __init__(self, name="pearson_correlation", dtype=None, axis=-1):
        super().__init__(pearson_correlation, name=name, dtype=dtype, axis=axis)


class ConcordanceCorrelation(reduction.FunctionMean):
    """Running mean of the per-sample `concordance_correlation`."""

    def __init__(self, name="concordance_correlation", dtype=None, axis=-1):
        super().__init__(concordance_correlation, name=name, dtype=dtype, axis=axis)


class R2Score(base.Metric):
    """Coefficient of determination ``1 - SS_res / SS_tot`` over all samples seen, per output
    column, then aggregated.

    Args:
        class_aggregation: "uniform_average" (default), "variance_weighted_average" or None
            (one value per output).
        num_regressors: p for the adjusted R2 ``1 - (1 - R2)(n - 1)/(n - p - 1)`` (0: plain).

    Inputs (batch, outputs) or (batch,); weighted by ``sample_weight`` as Keras.
    """

    def __init__(self, class_aggregation="uniform_average", num_regressors=0, name="r2_score",
                 dtype=None):
        super().__init__(name=name, dtype=dtype)
        if class_aggregation not in ("uniform_average", "variance_weighted_average", None):
            raise ValueError(f"{self.name}: invalid class_aggregation {class_aggregation!r}")
        if num_regressors < 0:
            raise ValueError(f"{self.name}: num_regressors must be >= 0. Received: "
                             f"{num_regressors}")
        self.class_aggregation, self.num_regressors = class_aggregation, num_regressors
        self._stats = None

    def update_state(self, y_true, y_pred, sample_weight=None):
        t, p = (np.asarray(backend_module.convert_to_numpy(base.raw(v)), "float64")
                for v in (y_true, y_pred))
        if t.ndim == 1:
            t, p = t[:, None], p.reshape(-1, 1)
        w = np.ones(t.shape[0]) if sample_weight is None else np.asarray(
            backend_module.convert_to_numpy(base.raw(sample_weight)), "float64")
        if w.ndim == 1:  # one weight per sample
            w = w[:, None]
        w = np.broadcast_to(w, t.shape)
        if self._stats is None:
            names = ("squared_sum", "sum", "total_mse", "count")
            self._stats = [self.add_accumulator((t.shape[1],), n) for n in names]
            self._num_samples = self.add_accumulator((), "num_samples")
        squared_sum, total, mse, count = self._stats
        squared_sum.assign_add((w * t * t).sum(0))
        total.assign_add((w * t).sum(0))
        mse.assign_add((w * (t - p) ** 2).sum(0))
        count.assign_add(w.sum(0))
        self._num_samples.assign_add(float(t.shape[0]))

    def result(self):
        if self._stats is None:
            return self.result_tensor(0.0)
        squared_sum, total, mse, count = (np.asarray(v.numpy(), "float64") for v in self._stats)
        mean = total / count
        ss_tot = squared_sum - total * mean
        raw = np.where(ss_tot != 0, 1 - mse / np.where(ss_tot != 0, ss_tot, 1), 0.0)
        if self.class_aggregation == "uniform_average":
            r2 = raw.mean()
        elif self.class_aggregation == "variance_weighted_average":
            r2 = (raw * ss_tot).sum() / ss_tot.sum()
        else:
            r2 = raw
        n = float(self._num_samples.numpy())
        if self.num_regressors:
            p = self.num_regressors
            if n - p - 1 > 0:
                r2 = 1 - (1 - r2) * (n - 1) / (n - p - 1)
        return self.result_tensor(r2)

    def get_config(self):
        return {**super().get_config(), "class_aggregation": self.class_aggregation,
                "num_regressors": self.num_regressors}
