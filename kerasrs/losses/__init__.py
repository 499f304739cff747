"""Loss functions and `Loss` classes with Keras 3's names, plus `get`/`serialize`/`deserialize`.

Functions (``mean_squared_error(y_true, y_pred)``, ...) return one value per sample; classes
(``MeanSquaredError()``, ...) reduce those values with optional sample weights. Both are
differentiable with respect to ``y_pred``.
"""

from kerasrs import registry
from kerasrs.losses.base import Loss, LossFunctionWrapper, reduce_weighted_values  # noqa: F401
from kerasrs.losses.ctc import CTC, ctc
from kerasrs.losses.hinge import (
    CategoricalHinge,
    Hinge,
    SquaredHinge,
    categorical_hinge,
    hinge,
    squared_hinge,
)
from kerasrs.losses.metric_learning import Circle, circle
from kerasrs.losses.overlap import Dice, Tversky, dice, tversky
from kerasrs.losses.probabilistic import (
    BinaryCrossentropy,
    BinaryFocalCrossentropy,
    CategoricalCrossentropy,
    CategoricalFocalCrossentropy,
    CategoricalGeneralizedCrossEntropy,
    KLDivergence,
    Poisson,
    SparseCategoricalCrossentropy,
    binary_crossentropy,
    binary_focal_crossentropy,
    categorical_crossentropy,
    categorical_focal_crossentropy,
    categorical_generalized_cross_entropy,
    kl_divergence,
    poisson,
    sparse_categorical_crossentropy,
)
from kerasrs.losses.regression import (
    CosineSimilarity,
    Huber,
    LogCosh,
    MeanAbsoluteError,
    MeanAbsolutePercentageError,
    MeanSquaredError,
    MeanSquaredLogarithmicError,
    cosine_similarity,
    huber,
    log_cosh,
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_squared_error,
    mean_squared_logarithmic_error,
)

# The class for each function, so a function name or object becomes a configurable Loss.
FUNCTION_CLASSES = {
    mean_squared_error: MeanSquaredError, mean_absolute_error: MeanAbsoluteError,
    mean_absolute_percentage_error: MeanAbsolutePercentageError,
    mean_squared_logarithmic_error: MeanSquaredLogarithmicError, huber: Huber,
    log_cosh: LogCosh, cosine_similarity: CosineSimilarity,
    binary_crossentropy: BinaryCrossentropy, categorical_crossentropy: CategoricalCrossentropy,
    sparse_categorical_crossentropy: SparseCategoricalCrossentropy,
    kl_divergence: KLDivergence, poisson: Poisson, hinge: Hinge, squared_hinge: SquaredHinge,
    categorical_hinge: CategoricalHinge,
    binary_focal_crossentropy: BinaryFocalCrossentropy,
    categorical_focal_crossentropy: CategoricalFocalCrossentropy,
    categorical_generalized_cross_entropy: CategoricalGeneralizedCrossEntropy,
    dice: Dice, tversky: Tversky, circle: Circle, ctc: CTC,
}
ALL_OBJECTS = tuple(FUNCTION_CLASSES.values())
ALIASES = {"mse": mean_squared_error, "mae": mean_absolute_error,
           "mape": mean_absolute_percentage_error, "msle": mean_squared_logarithmic_error,
           "kld": kl_divergence, "kullback_leibler_divergence": kl_divergence,
           "logcosh": log_cosh, "huber_loss": huber, "bce": binary_crossentropy}
_BY_NAME = {**{fn.__name__: fn for fn in FUNCTION_CLASSES}, **ALIASES}
_CLASSES = {cls.__name__: cls for cls in ALL_OBJECTS}


def serialize(loss):
    """``{"module", "class_name", "config", "registered_name"}`` for a Loss (Keras 3's form).

    Raises:
        TypeError: for anything but a `Loss` built on a kerasrs class.
    """
    if not isinstance(loss, Loss) or type(loss) is LossFunctionWrapper:
        raise TypeError(f"losses.serialize: expected a built-in Loss object. Received: {loss!r}")
    return {"module": "keras.losses", "class_name": type(loss).__name__,
            "config": loss.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """A Loss from `serialize`'s output or a name string (see `get`).

    Raises:
        ValueError: for an unknown class name or a malformed value.
    """
    if isinstance(config, str):
        return get(config)
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError("losses.deserialize: expected a dict with 'class_name' and 'config'. "
                         f"Received: {config!r}")
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _CLASSES.get(name)
    if cls is None:
        if name == "function" and isinstance(config.get("config"), str):  # Keras: bare fn
            return get(config["config"])
        raise ValueError(f"losses.deserialize: unknown loss class {name!r}; known: "
                         f"{sorted(_CLASSES)}. Received: {config!r}")
    return cls.from_config(config.get("config") or {})


def get(identifier):
    """A `Loss` object from a name, a Loss, a Loss class, a function or a serialized dict.

    Names are Keras's function names (``"mean_squared_error"``,
    ``"sparse_categorical_crossentropy"``, ...), their aliases (``"mse"``, ``"mae"``, ``"mape"``,
    ``"msle"``, ``"kld"``, ``"logcosh"``, ``"bce"``; case-insensitive) and class names
    (``"MeanSquaredError"``). Each gives the matching class with default arguments. A kerasrs
    loss function gives its class; any other function ``fn(y_true, y_pred) -> per-sample
    Tensor`` is wrapped in a `LossFunctionWrapper` named after it.

    Raises:
        ValueError: if the identifier cannot be interpreted.
    """
    if isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if isinstance(identifier, str):
        if identifier in _CLASSES:
            return _CLASSES[identifier]()
        fn = _BY_NAME.get(identifier) or _BY_NAME.get(identifier.lower())
        if fn is not None:
            return FUNCTION_CLASSES[fn]()
    elif callable(identifier):
        cls = FUNCTION_CLASSES.get(identifier)
        return cls() if cls is not None else LossFunctionWrapper(identifier)
    raise ValueError(f"losses.get: could not interpret loss identifier {identifier!r}; use a "
                     f"name such as {sorted(_BY_NAME)[:6]}..., a Loss or a function. "
                     f"Received: {identifier!r}")


__all__ = ["Loss", "LossFunctionWrapper", "get", "serialize", "deserialize"] + \
    [fn.__name__ for fn in FUNCTION_CLASSES] + [cls.__name__ for cls in ALL_OBJECTS]

registry.register_kind(Loss, serialize)
registry.register_functions("keras.losses", _BY_NAME)
