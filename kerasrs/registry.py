"""The registry of serializable objects: the user's classes and functions, and kerasrs's own kinds.

Keras stores every object as ``{"module", "class_name", "config", "registered_name"}``. Built-in
kerasrs objects are written under Keras's module names (``keras.layers``, ``keras.optimizers``,
...), so that Keras can rebuild them. User objects are found again through:

* `register_keras_serializable` (``registered_name`` ``"<package>><name>"``, as in Keras);
* `custom_object_scope` / `CustomObjectScope`;
* the ``custom_objects`` argument of `kerasrs.saving.load_model` and friends.

kerasrs's own kinds register themselves when their package is imported: `register_kind` (layers,
optimizers, learning-rate schedules, losses, metrics, initializers, regularizers: a base class
and the package's ``serialize``) and `register_functions` (the loss, metric and activation
functions Keras names by module). So `serialize_keras_object` works here, at the bottom of the
library, without importing any of them. Reading objects back is
`kerasrs.saving.serialization_lib`.
"""

import inspect

import numpy as np

_GLOBAL_CUSTOM_OBJECTS = {}  # registered name ("package>Name") -> class or function
_GLOBAL_CUSTOM_NAMES = {}  # class or function -> registered name
_scopes = []  # dicts of the custom_object_scope blocks now open, innermost last
_KINDS = []  # (base class, serialize, strict) of each built-in kind, in registration order
_FUNCTIONS = {}  # Keras module ("keras.losses") -> {name: kerasrs function}


# -- user objects ---------------------------------------------------------------------------------
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


def registered_key(obj):
    """The ``"package>Name"`` key ``obj`` was registered under, or None."""
    return _GLOBAL_CUSTOM_NAMES.get(obj)


def any_registered():
    """Whether any class or function has been registered with `register_keras_serializable`."""
    return bool(_GLOBAL_CUSTOM_NAMES)


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


def open_scopes():
    """The dicts of the `CustomObjectScope` blocks now open, outermost first."""
    return list(_scopes)


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


# -- kerasrs's own kinds --------------------------------------------------------------------------
def register_kind(base, serialize, strict=False):
    """Make `serialize_keras_object` write instances of ``base`` with ``serialize(obj)`` (the
    kind's Keras dict). A TypeError from ``serialize`` (say, a wrapper around a user function)
    falls back to the generic form, unless ``strict``."""
    _KINDS.append((base, serialize, strict))


def register_functions(module, table):
    """Make `serialize_keras_object` write the functions of ``table`` (``{name: function}``,
    kept by reference) under the Keras module ``module`` (``"keras.losses"``)."""
    _FUNCTIONS[module] = table


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
    name = fn.__name__
    for module, table in _FUNCTIONS.items():
        if registered is None and table.get(name) is fn:
            return {"module": module, "class_name": "function", "config": name,
                    "registered_name": name}
    return {"module": fn.__module__, "class_name": "function", "config": name,
            "registered_name": registered or name}


def _serialize_builtin(obj):
    """The registered kind's serializer for ``obj``, or None."""
    for base, serialize, strict in _KINDS:
        if isinstance(obj, base):
            if strict:
                return serialize(obj)
            try:
                return serialize(obj)
            except TypeError:  # e.g. a LossFunctionWrapper around a user function
                return None
    return None
