"""Registry of user classes and functions, and Keras-style object (de)serialization.

Keras stores every object as ``{"module", "class_name", "config", "registered_name"}``. Built-in
kerasrs objects are written under Keras's module names (``keras.layers``, ``keras.optimizers``,
...), so that Keras can rebuild them. User objects are found again through:

* `register_keras_serializable` (``registered_name`` ``"<package>><name>"``, as in Keras);
* `custom_object_scope` / `CustomObjectScope`;
* the ``custom_objects`` argument of `kerasrs.saving.load_model` and friends.

Loading never runs code from the file: classes and functions are only looked up by name among
kerasrs's own objects and the ones registered or passed in. Python bytecode (a ``lambda`` inside
a `Lambda` layer) is refused unless ``safe_mode=False``.
"""

import inspect

import numpy as np

from kerasrs.backend import settings

_GLOBAL_CUSTOM_OBJECTS = {}  # registered name ("package>Name") -> class or function
_GLOBAL_CUSTOM_NAMES = {}  # class or function -> registered name
_scopes = []  # dicts of the custom_object_scope blocks now open, innermost last
_DROPPED_KEYS = ("shared_object_id",)  # Keras's in-process object ids: meaningless on load


# -- registration ---------------------------------------------------------------------------------
def register_keras_serializable(package="Custom", name=None):
    """Decorator registering a class or function under ``"<package>><name>"`` for loading.

    Args:
        package: str, a namespace for the name (``"my_project"``). Defaults to ``"Custom"``.
        name: str; defaults to the class's or function's ``__name__``.

    Returns:
        The decorator; it returns the object unchanged.

    Raises:
        ValueError: if ``package`` or ``name`` contains ``>``, or a class has no ``get_config``.

    Example:
        >>> @kerasrs.saving.register_keras_serializable(package="demo")
        ... class Scale(kerasrs.layers.Layer):
        ...     def __init__(self, factor=2.0, **kwargs):
        ...         super().__init__(**kwargs)
        ...         self.factor = factor
        ...     def call(self, x):
        ...         return x * self.factor
        ...     def get_config(self):
        ...         return {**super().get_config(), "factor": self.factor}
        >>> kerasrs.saving.get_registered_name(Scale)
        'demo>Scale'
    """
    if ">" in str(package) or (name is not None and ">" in str(name)):
        raise ValueError("register_keras_serializable: `package` and `name` must not contain "
                         f"'>'. Received: package={package!r}, name={name!r}")

    def decorator(obj):
        key = f"{package}>{name if name is not None else obj.__name__}"
        if inspect.isclass(obj) and not hasattr(obj, "get_config"):
            raise ValueError(f"register_keras_serializable: the class {obj.__name__} needs a "
                             f"get_config() method to be saved. Received: {obj!r}")
        _GLOBAL_CUSTOM_OBJECTS[key] = obj
        _GLOBAL_CUSTOM_NAMES[obj] = key
        return obj

    return decorator


def get_registered_name(obj):
    """The name ``obj`` is registered under, else its ``__name__``."""
    return _GLOBAL_CUSTOM_NAMES.get(obj, getattr(obj, "__name__", None))


def get_registered_object(name, custom_objects=None, module_objects=None):
    """The class or function called ``name``: open scopes first, then the global registry,
    then ``custom_objects``, then ``module_objects``; None if not found."""
    for source in (*reversed(_scopes), _GLOBAL_CUSTOM_OBJECTS, custom_objects or {},
                   module_objects or {}):
        if name in source:
            return source[name]
    return None


def get_custom_objects():
    """The global registry dict (``"package>Name" -> object``); it may be edited in place."""
    return _GLOBAL_CUSTOM_OBJECTS


class CustomObjectScope:
    """``with CustomObjectScope({"MyLayer": MyLayer}):`` makes the objects findable by name
    during loading (Keras's ``custom_object_scope``). Scopes nest; inner ones win."""

    def __init__(self, custom_objects):
        self.custom_objects = dict(custom_objects or {})

    def __enter__(self):
        _scopes.append(self.custom_objects)
        return self

    def __exit__(self, *exc):
        _scopes.remove(self.custom_objects)


custom_object_scope = CustomObjectScope


def all_custom_objects(custom_objects=None):
    """Every user object findable now: registry, open scopes, then ``custom_objects`` (which win).
    Registered objects appear under both their registered name and their plain name."""
    merged, builtin = {}, _builtin_names() if _GLOBAL_CUSTOM_OBJECTS else set()
    for key, obj in _GLOBAL_CUSTOM_OBJECTS.items():
        plain = key.split(">", 1)[1]
        if plain not in builtin:  # never let a plain user name shadow a kerasrs object
            merged.setdefault(plain, obj)
        merged[key] = obj
    for scope in _scopes:
        merged.update(scope)
    merged.update(custom_objects or {})
    return merged


def _builtin_names():
    from kerasrs import activations, initializers, losses, metrics, optimizers
    from kerasrs.layers import base

    names = {name for name, cls in base._LAYER_CLASSES.items() if cls.__module__.startswith(
        "kerasrs.")}
    names.update(losses._CLASSES, losses._BY_NAME, metrics._CLASSES, metrics._FUNCTIONS,
                 initializers._CLASSES, activations._ALL,
                 (cls.__name__ for cls in optimizers.ALL_OBJECTS))
    return names


# -- serialization --------------------------------------------------------------------------------
def serialize_keras_object(obj):
    """The Keras-style JSON-able form of ``obj``.

    Layers, models, optimizers, losses, metrics, initializers, regularizers and schedules become
    ``{"module", "class_name", "config", "registered_name"}`` dicts (layers also get
    ``build_config``); functions become ``{"class_name": "function", "config": name, ...}``;
    registered user objects carry their registered name; NumPy values become Python ones;
    lists, tuples and dicts are converted item by item.

    Raises:
        TypeError: for an object that has no ``get_config`` and is not a plain value.
    """
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (list, tuple)):
        return [serialize_keras_object(v) for v in obj]
    if isinstance(obj, dict):
        return {k: serialize_keras_object(v) for k, v in obj.items()}
    registered = _GLOBAL_CUSTOM_NAMES.get(type(obj)) or _GLOBAL_CUSTOM_NAMES.get(obj)
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return _serialize_function(obj, registered)
    builtin = _serialize_builtin(obj)
    if builtin is not None and registered is None:
        return builtin
    if not hasattr(obj, "get_config"):
        raise TypeError(f"serialize_keras_object: cannot serialize {obj!r}: it has no "
                        "get_config(). Received: type " + type(obj).__name__)
    out = {"module": type(obj).__module__, "class_name": type(obj).__name__,
           "config": serialize_keras_object(obj.get_config()), "registered_name": registered}
    if builtin is not None and "build_config" in builtin:
        out["build_config"] = builtin["build_config"]
    return out


def _serialize_function(fn, registered):
    from kerasrs import activations, losses, metrics

    name = fn.__name__
    for module, table in (("keras.losses", losses._BY_NAME), ("keras.metrics", metrics._FUNCTIONS),
                          ("keras.activations", activations._ALL)):
        if registered is None and table.get(name) is fn:
            return {"module": module, "class_name": "function", "config": name,
                    "registered_name": name}
    return {"module": fn.__module__, "class_name": "function", "config": name,
            "registered_name": registered or name}


def _serialize_builtin(obj):
    """The kerasrs module's own serializer for ``obj``'s kind, or None."""
    from kerasrs import initializers, losses, metrics, optimizers, regularizers
    from kerasrs.layers import base, serialization
    from kerasrs.optimizers import schedules

    if isinstance(obj, base.Layer):
        return fix_registered_names(serialization.serialize(obj), obj)
    for kind, module in ((optimizers.Optimizer, optimizers), (losses.Loss, losses),
                         (metrics.Metric, metrics), (initializers.Initializer, initializers),
                         (regularizers.Regularizer, regularizers),
                         (schedules.LearningRateSchedule, schedules)):
        if isinstance(obj, kind):
            try:
                return module.serialize(obj)
            except TypeError:  # e.g. a LossFunctionWrapper around a user function
                return None
    return None


def fix_registered_names(config, root):
    """Give each layer entry of a serialized layer/model the registered name (and module) of
    its class when that class was registered with `register_keras_serializable`."""
    if not _GLOBAL_CUSTOM_NAMES:
        return config
    by_name = {layer.name: layer for layer in root._flatten_layers()}

    def visit(value):
        if isinstance(value, list):
            for v in value:
                visit(v)
        elif isinstance(value, dict):
            inner = value.get("config")
            if "class_name" in value and isinstance(inner, dict):
                layer = by_name.get(inner.get("name"))
                key = _GLOBAL_CUSTOM_NAMES.get(type(layer))
                if layer is not None and key and type(layer).__name__ == value["class_name"]:
                    value["registered_name"] = key
                    value["module"] = type(layer).__module__
            for v in value.values():
                visit(v)

    visit(config)
    return config


# -- deserialization ------------------------------------------------------------------------------
class _UnsafeLambda:
    """Stands in for `Lambda` in custom objects when the caller chose ``safe_mode=False``."""

    _from_config_takes_custom_objects = True

    @staticmethod
    def from_config(config, custom_objects=None):
        from kerasrs.layers import lambda_layer

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
    from kerasrs.layers import base

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
    import importlib

    from kerasrs import activations, losses, metrics

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
    from kerasrs.layers import base

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
    from kerasrs import initializers, losses, metrics, optimizers, regularizers
    from kerasrs.layers import base, serialization
    from kerasrs.optimizers import schedules

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
