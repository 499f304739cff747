"""`get`, `serialize` and `deserialize`: optimizers by name and in Keras 3's serialized form.

The tables of classes by name are filled by `kerasrs.optimizers` once it has imported every
optimizer: the optimizers that hold others (`LossScaleOptimizer`, `MultiOptimizer`) rebuild
them with `deserialize`, so this module cannot import them.
"""

from kerasrs.optimizers import base

BY_NAME = {}  # lowercase class name -> class: the optimizers `get` makes from a name
WRAPPERS = {}  # lowercase class name -> class: the optimizers that hold others


def serialize(optimizer):
    """``{"module", "class_name", "config", "registered_name"}``, the form Keras 3 writes."""
    if not isinstance(optimizer, base.Optimizer):
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
    cls = (custom_objects or {}).get(name) or BY_NAME.get(name.lower()) or \
        WRAPPERS.get(name.lower())
    if cls is None:
        raise ValueError(f"optimizers.deserialize: unknown optimizer {name!r}; known: "
                         f"{sorted(c.__name__ for c in BY_NAME.values())}. Received: {config!r}")
    if cls is WRAPPERS.get("lossscaleoptimizer"):  # its inner optimizer may be a custom one
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
    if isinstance(identifier, base.Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str) and identifier.lower() in BY_NAME:
        return BY_NAME[identifier.lower()]()
    raise ValueError(f"optimizers.get: could not interpret optimizer identifier "
                     f"{identifier!r}; use one of {sorted(BY_NAME)} or an Optimizer. "
                     f"Received: {identifier!r}")
