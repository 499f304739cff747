"""Metrics with Keras 3's names, plus `get`, `resolve` (compile's "accuracy" rule) and config.

Every metric is stateful (``update_state`` / ``result`` / ``reset_state``), keeps its state in
non-trainable `kerasrs.Variable`s and accumulates exact sample-weighted totals, so epoch
results do not depend on how the data was batched.
"""

from kerasrs import losses as losses_module
from kerasrs import registry
from kerasrs.metrics import reduction
from kerasrs.metrics.accuracy_metrics import (
    Accuracy,
    BinaryAccuracy,
    CategoricalAccuracy,
    SparseCategoricalAccuracy,
    SparseTopKCategoricalAccuracy,
    TopKCategoricalAccuracy,
    accuracy,
    binary_accuracy,
    categorical_accuracy,
    sparse_categorical_accuracy,
    sparse_top_k_categorical_accuracy,
    top_k_categorical_accuracy,
)
from kerasrs.metrics.auc import AUC
from kerasrs.metrics.base import Metric
from kerasrs.metrics.confusion import Precision, Recall
from kerasrs.metrics.reduction import Mean, MeanMetricWrapper, Sum, lookup_function
from kerasrs.metrics.regression import (
    MeanAbsoluteError,
    MeanSquaredError,
    RootMeanSquaredError,
    mean_absolute_error,
    mean_squared_error,
)

from kerasrs.metrics.correlation import (  # noqa: E402
    ConcordanceCorrelation, PearsonCorrelation, R2Score, concordance_correlation,
    pearson_correlation)
from kerasrs.metrics.iou import BinaryIoU, IoU, MeanIoU, OneHotIoU, OneHotMeanIoU  # noqa: E402
from kerasrs.metrics.loss_metrics import (  # noqa: E402
    BinaryCrossentropy, CategoricalCrossentropy, CategoricalHinge, CosineSimilarity, Hinge,
    KLDivergence, LogCoshError, MeanAbsolutePercentageError, MeanSquaredLogarithmicError,
    Poisson, SparseCategoricalCrossentropy, SquaredHinge)
from kerasrs.metrics.threshold_metrics import (  # noqa: E402
    F1Score, FalseNegatives, FalsePositives, FBetaScore, PrecisionAtRecall, RecallAtPrecision,
    SensitivityAtSpecificity, SpecificityAtSensitivity, TrueNegatives, TruePositives)
# Keras's keras.metrics.<loss function> names are the loss functions themselves.
from kerasrs.losses import (  # noqa: E402
    binary_crossentropy, binary_focal_crossentropy, categorical_crossentropy,
    categorical_focal_crossentropy, categorical_hinge, hinge, huber, kl_divergence, log_cosh,
    mean_absolute_percentage_error, mean_squared_logarithmic_error, poisson,
    sparse_categorical_crossentropy, squared_hinge)

ALL_OBJECTS = (Mean, Sum, Accuracy, BinaryAccuracy, CategoricalAccuracy,
               SparseCategoricalAccuracy, TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy,
               MeanSquaredError, RootMeanSquaredError, MeanAbsoluteError, Precision, Recall, AUC,
               BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy,
               KLDivergence, Poisson, Hinge, SquaredHinge, CategoricalHinge, LogCoshError,
               MeanAbsolutePercentageError, MeanSquaredLogarithmicError, CosineSimilarity,
               PearsonCorrelation, ConcordanceCorrelation, R2Score, IoU, MeanIoU, BinaryIoU,
               OneHotIoU, OneHotMeanIoU, TruePositives, FalsePositives, TrueNegatives,
               FalseNegatives, SensitivityAtSpecificity, SpecificityAtSensitivity,
               PrecisionAtRecall, RecallAtPrecision, FBetaScore, F1Score)
_CLASSES = {cls.__name__: cls for cls in ALL_OBJECTS}
_METRIC_NAMES = {
    "accuracy": Accuracy, "acc": Accuracy, "binary_accuracy": BinaryAccuracy,
    "categorical_accuracy": CategoricalAccuracy,
    "sparse_categorical_accuracy": SparseCategoricalAccuracy,
    "top_k_categorical_accuracy": TopKCategoricalAccuracy,
    "sparse_top_k_categorical_accuracy": SparseTopKCategoricalAccuracy,
    "mean_squared_error": MeanSquaredError, "mse": MeanSquaredError,
    "mean_absolute_error": MeanAbsoluteError, "mae": MeanAbsoluteError,
    "root_mean_squared_error": RootMeanSquaredError, "rmse": RootMeanSquaredError,
    "precision": Precision, "recall": Recall, "auc": AUC, "mean": Mean, "sum": Sum,
    "mape": MeanAbsolutePercentageError, "msle": MeanSquaredLogarithmicError,
    "mean_absolute_percentage_error": MeanAbsolutePercentageError,
    "mean_squared_logarithmic_error": MeanSquaredLogarithmicError,
    "cosine_similarity": CosineSimilarity, "r2_score": R2Score, "f1_score": F1Score,
}
_FUNCTIONS = reduction.FUNCTIONS  # the table `lookup_function` reads first
_FUNCTIONS.update({fn.__name__: fn for fn in (
    accuracy, binary_accuracy, categorical_accuracy, sparse_categorical_accuracy,
    top_k_categorical_accuracy, sparse_top_k_categorical_accuracy, mean_squared_error,
    mean_absolute_error, pearson_correlation, concordance_correlation)})


def serialize(metric):
    """``{"module", "class_name", "config", "registered_name"}`` for a metric."""
    if not isinstance(metric, Metric):
        raise TypeError(f"metrics.serialize: expected a Metric. Received: {metric!r}")
    return {"module": "keras.metrics", "class_name": type(metric).__name__,
            "config": metric.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """A metric from `serialize`'s output or a name string.

    Raises:
        ValueError: for an unknown class or a malformed value.
    """
    if isinstance(config, str):
        return get(config)
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError("metrics.deserialize: expected a dict with 'class_name' and 'config'. "
                         f"Received: {config!r}")
    classes = {**_CLASSES, "MeanMetricWrapper": MeanMetricWrapper, **(custom_objects or {})}
    cls = classes.get(config["class_name"])
    if cls is None:
        raise ValueError(f"metrics.deserialize: unknown metric {config['class_name']!r}. "
                         f"Received: {config!r}")
    return cls.from_config(config.get("config") or {})


def get(identifier):
    """A `Metric` from a Metric, a Metric class, a name, a function or a serialized dict.

    Names: ``"accuracy"``/``"acc"`` (exact-match `Accuracy`; compile uses `resolve` instead),
    the accuracy names, ``"mse"``/``"mae"``/``"rmse"`` and their long forms, ``"precision"``,
    ``"recall"``, ``"auc"``, ``"mean"``, ``"sum"``, class names, and any loss name (its running
    mean, e.g. ``"binary_crossentropy"``). A function becomes a `MeanMetricWrapper`.

    None gives None, as in Keras.

    Raises:
        ValueError: if the identifier cannot be interpreted.
    """
    if identifier is None:
        return None
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        return identifier()
    if isinstance(identifier, str):
        cls = _CLASSES.get(identifier) or _METRIC_NAMES.get(identifier.lower())
        if cls is not None:
            return cls()
        try:
            return MeanMetricWrapper(lookup_function(identifier), name=identifier)
        except ValueError:
            pass
    elif isinstance(identifier, losses_module.Loss) or callable(identifier):
        return MeanMetricWrapper(identifier)
    raise ValueError(f"metrics.get: could not interpret metric identifier {identifier!r}. "
                     f"Received: {identifier!r}")


def _loss_name(loss):
    if loss is None:
        return ""
    if isinstance(loss, str):
        fn = losses_module._BY_NAME.get(loss) or losses_module._BY_NAME.get(loss.lower())
        return fn.__name__ if fn is not None else loss.lower()
    if isinstance(loss, losses_module.LossFunctionWrapper):
        return getattr(loss.fn, "__name__", "")
    return getattr(loss, "__name__", type(loss).__name__)


def _label_kind(loss, output_shape, y_true_shape):
    """"binary", "sparse" or "categorical", as Keras's compile decides for "accuracy"."""
    name = _loss_name(loss)
    if output_shape is not None and len(output_shape) and output_shape[-1] == 1:
        return "binary"
    if name == "binary_crossentropy" or isinstance(loss, losses_module.BinaryCrossentropy):
        return "binary"
    if "sparse_categorical" in name or isinstance(loss,
                                                  losses_module.SparseCategoricalCrossentropy):
        return "sparse"
    if y_true_shape is not None and output_shape is not None and (
            len(y_true_shape) < len(output_shape) or (y_true_shape[-1] == 1
                                                      and output_shape[-1] != 1)):
        return "sparse"
    return "categorical"


def resolve(identifier, loss=None, output_shape=None, y_true_shape=None):
    """The metric ``compile(metrics=[identifier])`` should track for a model output.

    ``"accuracy"``/``"acc"`` become `BinaryAccuracy` when the output's last dimension is 1 or
    the loss is binary cross-entropy, `SparseCategoricalAccuracy` when the loss is sparse
    categorical cross-entropy (or ``y_true_shape`` shows integer labels: rank lower than the
    output's, or a last dimension of 1), else `CategoricalAccuracy`. ``"crossentropy"``/``"ce"``
    become the running mean of the matching cross-entropy (with the loss's ``from_logits``).
    A string identifier is kept as the metric's ``name``, so logs say ``"acc"`` if the user wrote
    ``"acc"``. Anything else goes through `get`.

    Args:
        identifier: name, Metric, function or None (returns None).
        loss: the output's loss (name, Loss or function), or None.
        output_shape: the model output's shape (``(batch, d)``), or None.
        y_true_shape: the targets' shape, when known, or None.
    """
    if identifier is None:
        return None
    if isinstance(identifier, str) and identifier.lower() in ("accuracy", "acc", "crossentropy",
                                                              "ce"):
        kind = _label_kind(loss, output_shape, y_true_shape)
        if identifier.lower() in ("accuracy", "acc"):
            cls = {"binary": BinaryAccuracy, "sparse": SparseCategoricalAccuracy,
                   "categorical": CategoricalAccuracy}[kind]
            return cls(name=identifier)
        fn = {"binary": losses_module.binary_crossentropy,
              "sparse": losses_module.sparse_categorical_crossentropy,
              "categorical": losses_module.categorical_crossentropy}[kind]
        return MeanMetricWrapper(fn, name=identifier,
                                 from_logits=bool(getattr(loss, "from_logits", False)))
    metric = get(identifier)
    if isinstance(identifier, str):
        metric.name = identifier
    return metric


__all__ = ["Metric", "MeanMetricWrapper", "get", "resolve", "serialize", "deserialize"] + \
    [cls.__name__ for cls in ALL_OBJECTS] + list(_FUNCTIONS) + [
        "binary_crossentropy", "binary_focal_crossentropy", "categorical_crossentropy",
        "categorical_focal_crossentropy", "categorical_hinge", "hinge", "huber", "kl_divergence",
        "log_cosh", "mean_absolute_percentage_error", "mean_squared_logarithmic_error",
        "poisson", "sparse_categorical_crossentropy", "squared_hinge"]

registry.register_kind(Metric, serialize)
registry.register_functions("keras.metrics", _FUNCTIONS)
