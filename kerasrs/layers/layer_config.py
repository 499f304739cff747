"""The pieces of a layer's configuration: the ``dtype=`` argument as a dtype policy,
regularizers by name or config, shapes as JSON, and the constructor arguments Keras 3 records
for a user subclass without ``get_config``."""

import inspect

from kerasrs import dtype_policies, regularizers


def dtype_policy_arg(dtype, who):
    """The `DTypePolicy` for a layer's ``dtype=`` argument (a name, dtype, policy or Keras
    policy config); None (use floatx()) when neither it nor a global policy is given."""
    if dtype is None:
        return dtype_policies._explicit_global()
    try:
        return dtype_policies.get(dtype)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{who}: {e}") from e


def get_regularizer(identifier):
    """A regularizer from a name, config, object or callable (None stays None)."""
    return None if identifier is None else regularizers.get(identifier)


def serialize_regularizer(reg):
    """The Keras config of a regularizer (None stays None)."""
    return None if reg is None else regularizers.serialize(reg)


def shape_to_config(shape):
    """A shape (or a list/dict of shapes) as JSON: tuples become lists."""
    if isinstance(shape, dict):
        return {k: shape_to_config(v) for k, v in shape.items()}
    if isinstance(shape, (list, tuple)) and shape and isinstance(shape[0], (list, tuple)):
        return [shape_to_config(s) for s in shape]
    return None if shape is None else list(shape)


def shape_from_config(shape):
    """The inverse of `shape_to_config`: lists become tuples."""
    if isinstance(shape, dict):
        return {k: shape_from_config(v) for k, v in shape.items()}
    if isinstance(shape, (list, tuple)) and shape and isinstance(shape[0], (list, tuple)):
        return [shape_from_config(s) for s in shape]
    return None if shape is None else tuple(shape)


def jsonable(value):
    """Whether ``value`` is plain JSON (None, bools, numbers, strings, lists and str-keyed
    dicts of them)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(jsonable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and jsonable(v) for k, v in value.items())
    return False


def record_arguments(cls, args, kwargs):
    """The constructor arguments of a user subclass, by name, when they are plain JSON values:
    Keras 3 records them so that a subclass without ``get_config`` still saves and reloads."""
    if cls.__module__.startswith("kerasrs.") or not (args or kwargs):
        return None
    try:
        bound = inspect.signature(cls.__init__).bind(None, *args, **kwargs)
    except TypeError:
        return None
    out = {}
    for name, value in list(bound.arguments.items())[1:]:
        param = inspect.signature(cls.__init__).parameters[name]
        if param.kind is param.VAR_KEYWORD:
            out.update({k: v for k, v in value.items() if jsonable(v)})
        elif param.kind is not param.VAR_POSITIONAL and jsonable(value):
            out[name] = value
    return out
