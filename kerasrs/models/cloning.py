"""``clone_model``: a new model of the same architecture with freshly initialized weights."""

from kerasrs.models.functional import Functional
from kerasrs.models.sequential import Sequential


def _default_clone(layer):
    return layer.__class__.from_config(layer.get_config())


def clone_model(model, input_tensors=None, clone_function=None, call_function=None,
                recursive=False, **kwargs):
    """A copy of ``model``'s architecture that shares no weights with it (Keras's
    ``keras.models.clone_model``). Weights are newly initialized, not copied; use
    ``clone.set_weights(model.get_weights())`` to copy them.

    Args:
        model: a `Sequential`, functional or subclassed model (the latter must implement
            ``get_config``/``from_config``, or record its constructor arguments).
        input_tensors: optional symbolic tensor(s) to build a functional clone on.
        clone_function: ``layer -> new layer`` for each layer of a Sequential model (default:
            ``layer.__class__.from_config(layer.get_config())``).
        call_function, recursive: accepted for Keras compatibility; ``recursive`` clones nested
            Sequential models with the same ``clone_function``.

    Raises:
        ValueError: for ``clone_function`` on a functional or subclassed model (not supported
            yet), or an object that is not a Model.
    """
    if kwargs:
        raise ValueError(f"clone_model: unexpected arguments {sorted(kwargs)}")
    if isinstance(model, Sequential):
        fn = clone_function or _default_clone

        def clone(layer):
            if recursive and isinstance(layer, Sequential):
                return clone_model(layer, clone_function=clone_function, recursive=True)
            return fn(layer)

        layers = [clone(layer) for layer in model.layers]
        new = Sequential(layers, name=model.name)
        shape = getattr(model, "_build_input_shape", None) or _input_shape(model)
        if input_tensors is not None:
            return Functional(input_tensors, new(input_tensors), name=model.name)
        if shape is not None:
            new.build(shape)
        return new
    if clone_function is not None:
        raise ValueError("clone_model: `clone_function` is supported for Sequential models; for "
                         "a functional model, rebuild it by calling the cloned layers.")
    if not hasattr(model, "get_config") or not hasattr(model, "layers"):
        raise ValueError(f"clone_model: expects a Model. Received: {type(model).__name__}")
    new = model.__class__.from_config(model.get_config())
    if input_tensors is not None and isinstance(new, Functional):
        return Functional(input_tensors, new(input_tensors), name=model.name)
    shape = _input_shape(model)
    if shape is not None and not new.built:
        new.build(shape)
    return new


def _input_shape(model):
    try:
        shape = model.input_shape
    except (AttributeError, ValueError, RuntimeError):
        return getattr(model, "_build_input_shape", None)
    return shape
