"""Metrics that are the running mean of a loss function (Keras's probabilistic, hinge and
regression metrics): ``BinaryCrossentropy``, ``KLDivergence``, ``Hinge``, ``LogCoshError``, ...
Each keeps Keras's default name and constructor arguments."""

from kerasrs import losses
from kerasrs.metrics import base, reduction


def _metric(cls_name, fn, default_name, params, doc):
    """A `FunctionMean` subclass ``cls_name(name=default_name, dtype=None, **params)`` that
    keeps each of ``params`` as an attribute (``metric.from_logits``), as Keras's do."""
    def __init__(self, name=default_name, dtype=None, **kwargs):
        unknown = set(kwargs) - set(params)
        if unknown:
            raise TypeError(f"{cls_name}: unexpected arguments {sorted(unknown)}")
        values = {**params, **kwargs}
        reduction.FunctionMean.__init__(self, fn, name=name, dtype=dtype, **values)
        for key, value in values.items():
            setattr(self, key, value)

    return type(cls_name, (reduction.FunctionMean,), {"__init__": __init__, "__doc__": doc,
                                                      "__module__": __name__})


def cosine_similarity(y_true, y_pred, axis=-1):
    """Per-sample cosine of the angle between ``y_true`` and ``y_pred`` (1 when parallel)."""
    y_true, y_pred = base.squeeze_or_expand(*base.inputs(y_true, y_pred))
    a, b = y_true.astype(y_pred.dtype), y_pred
    xp = base.xp_of(b)
    na = a / xp.sqrt(xp.maximum((a * a).sum(axis, keepdims=True), 1e-12))
    nb = b / xp.sqrt(xp.maximum((b * b).sum(axis, keepdims=True), 1e-12))
    return (na * nb).sum(axis)


BinaryCrossentropy = _metric("BinaryCrossentropy", losses.binary_crossentropy,
                             "binary_crossentropy", {"from_logits": False, "label_smoothing": 0},
                             "Running mean of `losses.binary_crossentropy`.")
CategoricalCrossentropy = _metric(
    "CategoricalCrossentropy", losses.categorical_crossentropy, "categorical_crossentropy",
    {"from_logits": False, "label_smoothing": 0, "axis": -1},
    "Running mean of `losses.categorical_crossentropy`.")
SparseCategoricalCrossentropy = _metric(
    "SparseCategoricalCrossentropy", losses.sparse_categorical_crossentropy,
    "sparse_categorical_crossentropy", {"from_logits": False, "ignore_class": None, "axis": -1},
    "Running mean of `losses.sparse_categorical_crossentropy`; samples labelled "
    "``ignore_class`` count neither in the sum nor in the count.")
KLDivergence = _metric("KLDivergence", losses.kl_divergence, "kl_divergence", {},
                       "Running mean of `losses.kl_divergence`.")
Poisson = _metric("Poisson", losses.poisson, "poisson", {}, "Running mean of `losses.poisson`.")
Hinge = _metric("Hinge", losses.hinge, "hinge", {}, "Running mean of `losses.hinge`.")
SquaredHinge = _metric("SquaredHinge", losses.squared_hinge, "squared_hinge", {},
                       "Running mean of `losses.squared_hinge`.")
CategoricalHinge = _metric("CategoricalHinge", losses.categorical_hinge, "categorical_hinge", {},
                           "Running mean of `losses.categorical_hinge`.")
LogCoshError = _metric("LogCoshError", losses.log_cosh, "logcosh", {},
                       "Running mean of `losses.log_cosh`.")
MeanAbsolutePercentageError = _metric(
    "MeanAbsolutePercentageError", losses.mean_absolute_percentage_error,
    "mean_absolute_percentage_error", {}, "Running mean of the absolute percentage error.")
MeanSquaredLogarithmicError = _metric(
    "MeanSquaredLogarithmicError", losses.mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error", {}, "Running mean of the squared logarithmic error.")
CosineSimilarity = _metric("CosineSimilarity", cosine_similarity, "cosine_similarity",
                           {"axis": -1}, "Running mean of the per-sample cosine similarity.")

ALL = (BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy, KLDivergence,
       Poisson, Hinge, SquaredHinge, CategoricalHinge, LogCoshError, MeanAbsolutePercentageError,
       MeanSquaredLogarithmicError, CosineSimilarity)
