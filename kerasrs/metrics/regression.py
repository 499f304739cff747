"""Regression metrics: mean squared error, root mean squared error, mean absolute error."""

from kerasrs.metrics import base, reduction


def _errors(y_true, y_pred):
    """``y_pred - y_true`` in ``y_pred``'s float dtype."""
    y_true, y_pred = base.squeeze_or_expand(*base.inputs(y_true, y_pred))
    return y_pred - y_true.astype(y_pred.dtype)


def mean_squared_error(y_true, y_pred):
    """Per-sample ``mean((y_pred - y_true)**2, axis=-1)``, in ``y_pred``'s float dtype."""
    error = _errors(y_true, y_pred)
    return (error * error).mean(axis=-1)


def mean_absolute_error(y_true, y_pred):
    """Per-sample ``mean(|y_pred - y_true|, axis=-1)``, in ``y_pred``'s float dtype."""
    error = _errors(y_true, y_pred)
    return base.xp_of(error).abs(error).mean(axis=-1)


class MeanSquaredError(reduction.FunctionMean):
    """The running (weighted) mean of `mean_squared_error`."""

    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, name=name, dtype=dtype)


class MeanAbsoluteError(reduction.FunctionMean):
    """The running (weighted) mean of `mean_absolute_error`."""

    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(mean_absolute_error, name=name, dtype=dtype)


class RootMeanSquaredError(reduction.Mean):
    """``sqrt(weighted mean of (y_pred - y_true)**2)`` over all samples seen (not the mean of
    per-batch roots). Variables: ``total``, ``count``."""

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        error = _errors(y_true, y_pred)
        super().update_state(error * error, sample_weight)

    def result(self):
        return self.result_tensor(float(super().result()) ** 0.5)
