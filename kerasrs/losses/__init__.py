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


# What `get` accepts by name, as Keras 3's table: class names, function names and the short
# aliases (lower and upper case). The Keras 2 spellings in `ALIASES` ("logcosh", "huber_loss",
# "kullback_leibler_divergence") are only read from saved configs (`_BY_NAME`).
_GET_NAMES = {**_CLASSES, **{fn.__name__: fn for fn in FUNCTION_CLASSES},
              **{alias: ALIASES[alias] for alias in ("bce", "kld", "mae", "mse", "mape", "msle")},
              **{alias.upper(): ALIASES[alias]
                 for alias in ("bce", "kld", "mae", "mse", "mape", "msle")}}
for _name in ("CategoricalGeneralizedCrossEntropy", "categorical_generalized_cross_entropy"):
    del _GET_NAMES[_name]  # in keras.losses, but not among the names Keras's `get` knows


def serialize(loss):
    """``{"module", "class_name", "config", "registered_name"}`` for a Loss (Keras 3's form); a
    loss function gives Keras's function entry (``"class_name": "function"``).

    Raises:
        TypeError: for anything but a `Loss` built on a kerasrs class or a loss function.
    """
    if callable(loss) and not isinstance(loss, Loss):
        return registry.serialize_keras_object(loss)
    if not isinstance(loss, Loss) or type(loss) is LossFunctionWrapper:
        raise TypeError(f"losses.serialize: expected a built-in Loss object. Received: {loss!r}")
    return {"module": "keras.losses", "class_name": type(loss).__name__,
            "config": loss.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """A Loss from `serialize`'s output, or a loss function from a name string (see `get`).

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
            return _BY_NAME.get(config["config"]) or get(config["config"])
        raise ValueError(f"losses.deserialize: unknown loss class {name!r}; known: "
                         f"{sorted(_CLASSES)}. Received: {config!r}")
    return cls.from_config(config.get("config") or {})


def get(identifier):
    """The loss for ``identifier``, as Keras 3's ``keras.losses.get``.

    * ``None`` gives ``None``;
    * a function name (``"mean_squared_error"``) or alias (``"mse"``/``"MSE"``, ``"mae"``,
      ``"mape"``, ``"msle"``, ``"kld"``, ``"bce"``) gives the loss *function*, which returns one
      value per sample (``compile`` wraps it in a `LossFunctionWrapper` that averages them);
    * a class name (``"MeanSquaredError"``) or a class gives an instance with default arguments;
    * a serialized dict gives the object it describes (`deserialize`);
    * any other callable (a `Loss`, a function ``fn(y_true, y_pred)``) is returned as it is.

    Names are case-sensitive, as in Keras.

    Raises:
        ValueError: ``Could not interpret loss identifier`` for anything else.
    """
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        obj = deserialize(identifier)
    elif isinstance(identifier, str):
        obj = _GET_NAMES.get(identifier)
    else:
        obj = identifier
    if isinstance(obj, type):
        return obj()
    if callable(obj):
        return obj
    raise ValueError(f"Could not interpret loss identifier: {identifier!r}. Use a loss name "
                     f"such as 'mse' or 'sparse_categorical_crossentropy', a Loss class or "
                     f"object, or a function (y_true, y_pred). Received: {identifier!r}")


__all__ = ["Loss", "LossFunctionWrapper", "get", "serialize", "deserialize"] + \
    [fn.__name__ for fn in FUNCTION_CLASSES] + [cls.__name__ for cls in ALL_OBJECTS]

registry.register_kind(Loss, serialize)
registry.register_functions("keras.losses", _BY_NAME)
