"""Optimizers with Keras 3's names, defaults and update rules, plus `get`/`serialize`/`deserialize`.

Every optimizer updates its variables in place (no tape recording) and keeps its state in
non-trainable `kerasrs.Variable`s with Keras-style paths (``adam/iteration``,
``adam/sequential_dense_kernel_momentum``), listed by ``optimizer.variables``.
"""

from kerasrs import registry
from kerasrs.optimizers import schedules  # noqa: F401
from kerasrs.optimizers.adadelta import Adadelta
from kerasrs.optimizers.adagrad import Adagrad
from kerasrs.optimizers.adam import Adam, AdamW
from kerasrs.optimizers.adamax import Adamax
from kerasrs.optimizers.base import Optimizer
from kerasrs.optimizers.lion import Lion
from kerasrs.optimizers.loss_scale_optimizer import LossScaleOptimizer
from kerasrs.optimizers.nadam import Nadam
from kerasrs.optimizers.rmsprop import RMSprop
from kerasrs.optimizers.sgd import SGD
from kerasrs.optimizers.extra import Adafactor, Ftrl, Lamb, Muon, ScheduleFreeAdamW
from kerasrs.optimizers.routing import MultiOptimizer, OptimizerMap

ALL_OBJECTS = (SGD, RMSprop, Adam, AdamW, Adagrad, Adadelta, Adamax, Nadam, Lion, Ftrl,
               Adafactor, Lamb, Muon, ScheduleFreeAdamW)
_BY_NAME = {cls.__name__.lower(): cls for cls in ALL_OBJECTS}
_BY_NAME_DESERIALIZE = {**_BY_NAME, "lossscaleoptimizer": LossScaleOptimizer}


def serialize(optimizer):
    """``{"module", "class_name", "config", "registered_name"}``, the form Keras 3 writes."""
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"optimizers.serialize: expected an Optimizer. Received: "
                        f"{type(optimizer).__name__}")
    return {"module": "keras.optimizers", "class_name": type(optimizer).__name__,
            "config": optimizer.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """An unbuilt optimizer from a ``{"class_name", "config"}`` dict (Keras 2 or 3 form).

    Class names match case-insensitively (``"Adam"``, ``"adam"``); ``custom_objects`` maps extra
    names to classes.

    Raises:
        ValueError: for a malformed dict or an unknown class name.
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError("optimizers.deserialize: expected a dict with 'class_name' and 'config'."
                         f" Received: {config!r}")
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _BY_NAME_DESERIALIZE.get(name.lower()) or \
        {"multioptimizer": MultiOptimizer}.get(name.lower())
    if cls is None:
        raise ValueError(f"optimizers.deserialize: unknown optimizer {name!r}; known: "
                         f"{sorted(c.__name__ for c in ALL_OBJECTS)}. Received: {config!r}")
    if cls is LossScaleOptimizer:
        return cls.from_config(config.get("config", {}), custom_objects)
    return cls.from_config(config.get("config", {}))


def get(identifier):
    """An `Optimizer` from an instance (returned as is), a name or a serialized dict.

    Names are case-insensitive class names: ``"sgd"``, ``"rmsprop"``, ``"adam"``, ``"adamw"``,
    ``"adagrad"``, ``"adadelta"``, ``"adamax"``, ``"nadam"``, ``"lion"``; each gives the class
    with Keras's default arguments.

    Raises:
        ValueError: for anything else.
    """
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()]()
    raise ValueError(f"optimizers.get: could not interpret optimizer identifier "
                     f"{identifier!r}; use one of {sorted(_BY_NAME)} or an Optimizer. "
                     f"Received: {identifier!r}")


__all__ = ["Optimizer", "SGD", "RMSprop", "Adam", "AdamW", "Adagrad", "Adadelta", "Adamax",
           "Nadam", "Lion", "Ftrl", "Adafactor", "Lamb", "Muon", "ScheduleFreeAdamW", "schedules",
           "MultiOptimizer", "LossScaleOptimizer", "OptimizerMap", "get", "serialize", "deserialize"]

registry.register_kind(Optimizer, serialize)
