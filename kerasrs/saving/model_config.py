"""Model and compile configs in the JSON forms Keras writes, and models rebuilt from them.

Three forms of the same model config:

* Keras 3 (``.keras`` ``config.json``, `Model.to_json`): every layer entry has ``module``,
  ``class_name``, ``config``, ``registered_name`` and, once built, ``build_config``;
* legacy (``.h5`` ``@model_config``): layer entries keep only ``class_name`` and ``config`` (plus
  ``name``/``inbound_nodes`` in functional models); nested objects keep ``module`` and
  ``registered_name``;
* Keras 2 configs (``batch_input_shape``, plain dtype strings, ``[[["in", 0, 0, {}]]]`` nodes),
  which the layer and model ``from_config`` methods accept.

The compile config uses Keras's keys (``optimizer``, ``loss``, ``loss_weights``, ``metrics``,
``weighted_metrics``, ``run_eagerly``, ``steps_per_execution``, ``jit_compile``); the legacy
``training_config`` stores the optimizer as ``optimizer_config`` ``{class_name, config}``.
"""

import json

from kerasrs import losses, metrics, optimizers, registry
from kerasrs.layers import serialization
from kerasrs.saving import serialization_lib

_LAYER_ENTRY_ONLY = ("module", "registered_name", "build_config")


def model_to_config(model):
    """The Keras 3 serialized dict of ``model`` (no compile config)."""
    return registry.serialize_keras_object(model)


def legacy_model_config(model):
    """The legacy ``@model_config`` dict: layer entries reduced to Keras's legacy keys. A
    subclassed model keeps its top-level ``build_config``: without it, it could not be built
    (and given its weights) when loaded."""
    config = model_to_config(model)
    out = _strip_layer_entries(config)
    if config.get("build_config") and config["class_name"] not in ("Sequential", "Functional"):
        out["build_config"] = config["build_config"]
    return out


def _strip_layer_entries(entry):
    """An entry reduced to the legacy keys. Op layers (``x + 1`` in a functional model) keep
    their ``module``: it is what tells the op ``Add`` from the merging layer ``Add``."""
    keep = ("module",) if str(entry.get("module") or "").startswith("keras.src.ops") else ()
    out = {k: v for k, v in entry.items() if k not in _LAYER_ENTRY_ONLY or k in keep}
    inner = out.get("config")
    if isinstance(inner, dict) and isinstance(inner.get("layers"), list):
        out["config"] = {**inner, "layers": [_strip_layer_entries(e) for e in inner["layers"]]}
    return out


def to_json(model, **kwargs):
    """``json.dumps`` of the Keras 3 config (Keras's `Model.to_json`)."""
    return json.dumps(model_to_config(model), **kwargs)


def model_from_config(config, custom_objects=None, safe_mode=True, where="load_model"):
    """A model (or layer) rebuilt from any of the three config forms (see module docstring).

    A model whose config carries a ``build_config`` but that did not build itself (a
    subclassed model) is built from it, so that its weights exist before loading.

    Raises:
        ValueError: for an unknown class (naming it and saying how to register it), or
            Python bytecode under ``safe_mode``.
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"{where}: a model config must be a dict with 'class_name' and "
                         f"'config'. Received: {str(config)[:200]!r}")
    config = {k: v for k, v in config.items() if k != "compile_config"}
    prepared, objects = serialization_lib.prepare_config(config, custom_objects, safe_mode,
                                                         where)
    if not isinstance(prepared, dict):
        return prepared  # a registered non-layer object (not a model)
    serialization_lib.check_layer_classes(prepared, objects, where)
    model = serialization.deserialize(prepared, objects)
    if not model.built and prepared.get("build_config"):
        model.build_from_config(prepared["build_config"])
    return model


# -- compile configs ------------------------------------------------------------------------------
def compile_config(model):
    """Keras 3 ``compile_config`` of a compiled model (``{}`` when never compiled)."""
    config = model.get_compile_config() if getattr(model, "compiled", False) else None
    if not config:
        return {}
    out = {"optimizer": registry.serialize_keras_object(model.optimizer)}
    for key in ("loss", "loss_weights", "metrics", "weighted_metrics"):
        out[key] = _serialize_value(config.get(key))
    out["run_eagerly"] = bool(config.get("run_eagerly") or False)
    out["steps_per_execution"] = int(config.get("steps_per_execution") or 1)
    jit = config.get("jit_compile")
    out["jit_compile"] = jit if isinstance(jit, bool) else False
    return out


def training_config(model):
    """Legacy ``@training_config`` of a compiled model (None when not compiled)."""
    config = compile_config(model)
    if not config:
        return None
    optimizer = config.pop("optimizer")
    return {**config, "optimizer_config": {"class_name": optimizer["class_name"],
                                           "config": optimizer["config"]}}


def _serialize_value(value):
    """Losses/metrics as given to compile: names stay names, objects become Keras dicts."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return [_serialize_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _serialize_value(v) for k, v in value.items()}
    if isinstance(value, losses.LossFunctionWrapper):
        fn = registry.serialize_keras_object(value.fn)
        if not value._fn_kwargs and value.reduction == "sum_over_batch_size":
            return fn
    return registry.serialize_keras_object(value)


def compile_args(config, custom_objects=None, safe_mode=True, where="load_model"):
    """Keyword arguments for ``model.compile`` from a Keras 3 ``compile_config`` or a legacy
    ``training_config`` (optimizer, losses and metrics rebuilt as objects)."""
    prepared, objects = serialization_lib.prepare_config(config, custom_objects, safe_mode,
                                                         where)
    optimizer = prepared.get("optimizer", prepared.get("optimizer_config", "rmsprop"))
    if isinstance(optimizer, dict):
        optimizer = optimizers.deserialize(optimizer, custom_objects=objects)

    def rebuild(value, module):
        if isinstance(value, list):
            return [rebuild(v, module) for v in value]
        if isinstance(value, dict) and "class_name" not in value:
            return {k: rebuild(v, module) for k, v in value.items()}
        if isinstance(value, dict) and value["class_name"] == "function":
            return serialization_lib._deserialize_builtin(value, objects)
        if isinstance(value, dict):
            return module.deserialize(value, custom_objects=objects)
        return value

    args = {"optimizer": optimizer, "loss": rebuild(prepared.get("loss"), losses),
            "loss_weights": prepared.get("loss_weights"),
            "metrics": rebuild(prepared.get("metrics"), metrics),
            "weighted_metrics": rebuild(prepared.get("weighted_metrics"), metrics)}
    for key in ("run_eagerly", "steps_per_execution", "jit_compile"):
        if key in prepared:
            args[key] = prepared[key]
    return args
