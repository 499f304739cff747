"""Objects back from their Keras-style configs: ``deserialize_keras_object`` and what
`kerasrs.saving.load_model` and friends need to rebuild a model safely.

Loading never runs code from the file: classes and functions are only looked up by name among
kerasrs's own objects and the ones registered or passed in (see `kerasrs.registry`). Python
bytecode (a ``lambda`` inside a `Lambda` layer) is refused unless ``safe_mode=False``.
"""

import importlib
import inspect

from kerasrs import activations, initializers, losses, metrics, optimizers, registry, regularizers
from kerasrs.backend import settings
from kerasrs.layers import base, lambda_layer, serialization
from kerasrs.optimizers import schedules

_DROPPED_KEYS = ("shared_object_id",)  # Keras's in-process object ids: meaningless on load


def all_custom_objects(custom_objects=None):
    """Every user object findable now: registry, open scopes, then ``custom_objects`` (which win).
    Registered objects appear under both their registered name and their plain name."""
    registered = registry.get_custom_objects()
    merged, builtin = {}, _builtin_names() if registered else set()
    for key, obj in registered.items():
        plain = key.split(">", 1)[1]
        if plain not in builtin:  # never let a plain user name shadow a kerasrs object
            merged.setdefault(plain, obj)
        merged[key] = obj
    for scope in registry.open_scopes():
        merged.update(scope)
    merged.update(custom_objects or {})
    return merged


def _builtin_names():
    names = {name for name, cls in base._LAYER_CLASSES.items() if cls.__module__.startswith(
        "kerasrs.")}
    names.update(losses._CLASSES, losses._BY_NAME, metrics._CLASSES, metrics._FUNCTIONS,
                 initializers._CLASSES, activations._ALL,
                 (cls.__name__ for cls in optimizers.ALL_OBJECTS))
    return names


# -- deserialization ------------------------------------------------------------------------------
class _UnsafeLambda:
    """Stands in for `Lambda` in custom objects when the caller chose ``safe_mode=False``."""

    _from_config_takes_custom_objects = True

    @staticmethod
    def from_config(config, custom_objects=None):
        return lambda_layer.Lambda.from_config(config, custom_objects, safe_mode=False)


def prepare_config(config, custom_objects=None, safe_mode=True, where="load_model"):
    """A copy of a saved config ready for the kerasrs deserializers, plus the custom objects
    to pass to them: ``(config, custom_objects)``.

    Keras's in-process ids are dropped; Python bytecode is refused under ``safe_mode``;
    registered or given user objects are resolved (user layers by name, other user objects,
    such as initializers or activation functions inside a layer config, replaced by instances).

    Raises:
        ValueError: for bytecode under ``safe_mode``, or a function whose module is not kerasrs
            or Keras and that is neither registered nor in ``custom_objects``.
    """
    objects = all_custom_objects(custom_objects)
    if settings.is_unsafe_deserialization_enabled():  # keras.config.enable_unsafe_deserialization
        safe_mode = False
    if not safe_mode:
        objects.setdefault("Lambda", _UnsafeLambda)

    def visit(value, key=None):
        if isinstance(value, list):
            return [visit(v) for v in value]
        if isinstance(value, str) and key and key.endswith("activation") and value in objects:
            return objects[value]
        if not isinstance(value, dict):
            return value
        if value.get("class_name") == "__lambda__" and safe_mode:
            raise ValueError(f"{where}: the file holds Python bytecode (a lambda inside a Lambda "
                             "layer); loading it would run arbitrary code. If you trust the "
                             "file, pass safe_mode=False. Received: a '__lambda__' config")
        if "class_name" not in value:
            return {k: visit(v, k) for k, v in value.items() if k not in _DROPPED_KEYS}
        name, obj = _find(value, objects)
        if value.get("class_name") == "function":
            return obj or _builtin_or_refuse(value, safe_mode, where)
        if obj is None or (inspect.isclass(obj) and issubclass(obj, base.Layer)) \
                or obj is _UnsafeLambda:
            out = {k: visit(v, k) for k, v in value.items() if k not in _DROPPED_KEYS}
            if obj is not None and name != value.get("class_name"):
                out["class_name"] = name  # a registered layer: found by its registered name
            return out
        if not inspect.isclass(obj):
            return obj
        return obj.from_config(visit(value.get("config") or {}))

    return visit(config), objects


def _find(value, objects):
    """``(key, user object or None)`` for a serialized object: by registered name, else by
    class name (a function's name for functions)."""
    name = value.get("registered_name")
    if isinstance(name, str) and name in objects:
        return name, objects[name]
    key = value.get("config") if value.get("class_name") == "function" else value.get(
        "class_name")
    return key, objects.get(key) if isinstance(key, str) else None


def _builtin_or_refuse(value, safe_mode, where):
    """A kerasrs function for a function dict; else an error in safe mode, or the dict itself
    for a trusted file (the `Lambda` layer then imports the function by module)."""
    fn = builtin_function(value)
    if fn is not None:
        return fn
    if safe_mode:
        raise ValueError(_function_message(value, where))
    return dict(value)


_FUNCTION_MODULES = ("kerasrs.ops", "kerasrs.activations", "kerasrs.losses", "kerasrs.metrics")


def builtin_function(value):
    """The kerasrs function a ``{"class_name": "function", ...}`` dict names, or None.

    Only plain tensor functions qualify: kerasrs ops, activations, losses and metrics (by
    module), and Keras's own activation/loss/metric functions (module ``keras...`` or
    ``builtins``) by name. Nothing else is imported, so a file cannot name arbitrary code.
    """
    name, module = value.get("config"), str(value.get("module") or "")
    if not isinstance(name, str):
        return None
    if module.startswith(_FUNCTION_MODULES):
        try:
            fn = getattr(importlib.import_module(module), name, None)
        except ImportError:
            fn = None
        return fn if inspect.isfunction(fn) else None
    if module == "builtins" or module == "keras" or module.startswith("keras."):
        return activations._ALL.get(name) or losses._BY_NAME.get(name) or \
            metrics._FUNCTIONS.get(name)
    return None


def _function_message(value, where):
    fn, module = value.get("config"), value.get("module")
    return (f"{where}: the file refers to the function {fn!r} of module {module!r}, which is "
            f"neither a kerasrs function nor registered. Modules named by a file are not "
            f"imported in safe mode: register it with "
            f"@kerasrs.saving.register_keras_serializable() or pass custom_objects="
            f"{{{fn!r}: {fn}}}, or pass safe_mode=False if you trust the file. Received: "
            f"{value!r}")


def check_layer_classes(config, objects, where="load_model"):
    """Raise a clear error naming the first unknown layer class of a model config.

    Raises:
        ValueError: naming the class and the layer, and saying how to register the class.
    """

    def visit(entry):
        if not isinstance(entry, dict) or "class_name" not in entry:
            return
        name = entry["class_name"]
        known = name in objects or name in base._LAYER_CLASSES or name in (
            "Model", "Functional", "Sequential") or str(entry.get("module") or "").startswith(
            "keras.src.ops")  # an op layer (kerasrs.layers.op_layer)
        if not known:
            inner = entry.get("config") if isinstance(entry.get("config"), dict) else {}
            raise ValueError(
                f"{where}: unknown layer class {name!r} (layer {inner.get('name')!r}). It is "
                f"not a kerasrs layer and was not registered. Decorate the class with "
                f"@kerasrs.saving.register_keras_serializable(), or pass custom_objects="
                f"{{{name!r}: {name}}} to {where}. Received: class_name={name!r}")
        inner = entry.get("config")
        if isinstance(inner, dict):
            for sub in inner.get("layers", []) if isinstance(inner.get("layers"), list) else []:
                visit(sub)
            for key in ("layer", "forward_layer", "backward_layer", "cell"):
                visit(inner.get(key))

    visit(config)


def deserialize_keras_object(config, custom_objects=None, safe_mode=True, module_objects=None):
    """An object from `serialize_keras_object`'s output (or Keras's).

    Plain values, lists and dicts without ``class_name`` are returned converted item by item;
    strings are looked up in ``module_objects`` when given. The class comes from the registered
    or given user objects first, else from the kerasrs module matching the ``module`` field
    (``keras.layers``, ``keras.optimizers``, ``keras.losses``, ``keras.metrics``,
    ``keras.initializers``, ``keras.regularizers``, ``keras.optimizers.schedules``).

    Raises:
        ValueError: for an unknown class (naming it and saying how to register it), or
            bytecode under ``safe_mode``.
    """
    if isinstance(config, str):
        return (module_objects or {}).get(config, config) if module_objects else config
    if isinstance(config, list):
        return [deserialize_keras_object(v, custom_objects, safe_mode, module_objects)
                for v in config]
    if not isinstance(config, dict):
        return config
    if "class_name" not in config:
        return {k: deserialize_keras_object(v, custom_objects, safe_mode, module_objects)
                for k, v in config.items()}
    prepared, objects = prepare_config(config, custom_objects, safe_mode,
                                       "deserialize_keras_object")
    if not isinstance(prepared, dict):
        return prepared  # a user object, already built
    return _deserialize_builtin(prepared, objects)


def _deserialize_builtin(config, objects):
    name, module = config["class_name"], str(config.get("module") or "")
    if name == "DTypePolicy":
        return config["config"]["name"]
    if name == "function":
        found = builtin_function(config)
        if found is None:
            raise ValueError(_unknown_message(config.get("config"), "function"))
        return found
    kinds = [("keras.optimizers.schedules", schedules.deserialize),
             ("keras.optimizers", optimizers.deserialize), ("keras.losses", losses.deserialize),
             ("keras.metrics", metrics.deserialize),
             ("keras.initializers", initializers.deserialize),
             ("keras.regularizers", regularizers.deserialize)]
    for prefix, fn in kinds:
        if module.startswith(prefix) or (".optimizers" in module and prefix == "keras.optimizers"):
            return fn(config, custom_objects=objects)
    if name in objects or name in base._LAYER_CLASSES or name in ("Model", "Functional") \
            or module.startswith("keras"):
        check_layer_classes(config, objects, "deserialize_keras_object")
        return serialization.deserialize(config, objects)
    for _, fn in kinds:
        try:
            return fn(config, custom_objects=objects)
        except (ValueError, TypeError, KeyError):
            continue
    raise ValueError(_unknown_message(name, "class"))


def _unknown_message(name, what):
    return (f"deserialize_keras_object: unknown {what} {name!r}. Register it with "
            f"@kerasrs.saving.register_keras_serializable() or pass custom_objects="
            f"{{{name!r}: {name}}}. Received: {what}={name!r}")
