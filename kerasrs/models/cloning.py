"""``clone_model``: a new model of the same architecture with freshly initialized weights."""

from kerasrs import autodiff
from kerasrs.layers.input_layer import Input, InputLayer
from kerasrs.layers.node import SymbolicTensor, map_structure
from kerasrs.metrics.base import Metric
from kerasrs.models import functional_graph
from kerasrs.models.functional import Functional
from kerasrs.models.model import _revivable_as_functional
from kerasrs.models.sequential import Sequential


def _default_clone(layer):
    return layer.__class__.from_config(layer.get_config())


def clone_model(model, input_tensors=None, clone_function=None, call_function=None,
                recursive=False, **kwargs):
    """A copy of ``model``'s architecture that shares no weights with it (Keras's
    ``keras.models.clone_model``). Weights are newly initialized, not copied; use
    ``clone.set_weights(model.get_weights())`` to copy them. A clone of a compiled model is
    compiled the same way (`get_compile_config`), with a new optimizer.

    Args:
        model: a `Sequential`, functional or subclassed model (the latter must implement
            ``get_config``/``from_config``, or record its constructor arguments).
        input_tensors: optional symbolic tensor(s) to build the clone on, in the structure of
            ``model.input`` (one tensor for a Sequential model).
        clone_function: ``layer -> new layer``, called once per layer (shared layers stay
            shared) except the input layers, which are always new. Defaults to
            ``layer.__class__.from_config(layer.get_config())``; ``lambda layer: layer`` reuses
            the layers (and their weights).
        call_function: ``(layer, *args, **kwargs) -> outputs``, how each cloned layer is
            called when the functional graph is rebuilt (e.g. to insert a layer after some);
            functional models only.
        recursive: clone nested Sequential and functional models with `clone_model` (same
            arguments) instead of passing them to ``clone_function``.

    Raises:
        ValueError: for unexpected keyword arguments, ``call_function`` with a Sequential
            model, ``clone_function``/``input_tensors``/``call_function`` with a subclassed
            model, ``input_tensors`` that do not match the model's inputs, or an object that is
            not a Model.
    """
    cache = kwargs.pop("cache", None)
    if kwargs:
        raise ValueError(f"clone_model: Unexpected keyword argument(s): {tuple(kwargs)}")
    if isinstance(model, (Sequential, Functional)):
        clone = _layer_cloner(clone_function, call_function, recursive,
                              {} if cache is None else cache)
        if isinstance(model, Sequential):
            if call_function is not None:
                raise ValueError(
                    "clone_model: `call_function` argument is not supported with Sequential "
                    "models (their layers are listed, not called, when the model is made); use "
                    f"it with functional models. Received: call_function={call_function!r}")
            new = _clone_sequential(model, clone, input_tensors)
        else:
            new = _clone_functional(model, clone, call_function, input_tensors)
        _compile_like(new, model)
        return new
    if clone_function is not None or input_tensors is not None:
        raise ValueError(f"clone_model: Arguments `clone_function` and `input_tensors` are only "
                         f"supported for Sequential models or Functional models. Received: a "
                         f"{type(model).__name__} with clone_function={clone_function!r} and "
                         f"input_tensors={input_tensors!r}")
    if call_function is not None:
        raise ValueError(f"clone_model: Argument `call_function` is only supported for "
                         f"Functional models. Received: a {type(model).__name__}")
    if not hasattr(model, "get_config") or not hasattr(model, "layers"):
        raise ValueError(f"clone_model: expects a Model. Received: {type(model).__name__}")
    new = model.__class__.from_config(model.get_config())
    if not new.built and model.built:  # built as the original was (Keras's build_config)
        new.build_from_config(model.get_build_config())
    _compile_like(new, model)
    return new


def _compile_like(new, model):
    """Compile ``new`` as ``model`` was compiled (as Keras's clone does), with a new optimizer
    and new metric objects (a metric's state is not shared with the original)."""
    if not getattr(model, "compiled", False):
        return
    config = dict(model.get_compile_config())
    for key in ("metrics", "weighted_metrics"):
        config[key] = map_structure(
            lambda m: type(m).from_config(m.get_config()) if isinstance(m, Metric) else m,
            config.get(key))
    new.compile_from_config(config)


def _layer_cloner(clone_function, call_function, recursive, cache):
    """``layer -> clone``: each layer cloned once (shared layers stay shared), nested models
    through `clone_model` when ``recursive``."""
    fn = clone_function or _default_clone

    def clone(layer):
        if id(layer) not in cache:
            if recursive and isinstance(layer, (Sequential, Functional)):
                cache[id(layer)] = clone_model(
                    layer, clone_function=clone_function, recursive=True, cache=cache,
                    call_function=call_function if isinstance(layer, Functional) else None)
            else:
                cache[id(layer)] = fn(layer)
        return cache[id(layer)]

    return clone


def _clone_sequential(model, clone, input_tensors):
    layers = [clone(layer) for layer in model.layers]
    first = model._layers[0] if model._layers else None
    spec = first if isinstance(first, InputLayer) else None
    name = spec.name if spec is not None else None
    if input_tensors is not None:
        if isinstance(input_tensors, (list, tuple)):
            if len(input_tensors) != 1:
                raise ValueError(f"clone_model: Argument `input_tensors` must contain a single "
                                 f"tensor for a Sequential model. Received: "
                                 f"{len(input_tensors)} tensors")
            input_tensors = input_tensors[0]
        if not isinstance(input_tensors, SymbolicTensor):
            raise ValueError(f"clone_model: Argument `input_tensors` must be a symbolic tensor "
                             f"(layers.Input). Received: input_tensors={input_tensors!r}")
        layers.insert(0, InputLayer(input_tensor=input_tensors, name=name,
                                    optional=spec is not None and spec.optional))
    elif spec is not None:
        layers.insert(0, InputLayer(batch_shape=spec.batch_shape, dtype=spec.dtype, name=name,
                                    optional=spec.optional))
    return Sequential(layers, name=model.name, trainable=model.trainable)


def _clone_functional(model, clone, call_function, input_tensors):
    if input_tensors is not None:
        leaves = autodiff._flatten(input_tensors)
        if not all(isinstance(t, SymbolicTensor) for t in leaves) or \
                len(leaves) != len(model.inputs):
            raise ValueError(f"clone_model: `input_tensors` must be symbolic tensors with the "
                             f"structure of model.input ({len(model.inputs)} tensors). "
                             f"Received: input_tensors={input_tensors!r}")
    else:
        input_tensors = map_structure(lambda t: Input(batch_shape=t.shape, dtype=t.dtype,
                                             name=t._keras_history[0].name,
                                             optional=t._keras_history[0].optional),
                             model.input)
    outputs = functional_graph.run_nodes(model, input_tensors, clone, call_function)
    cls = type(model) if _revivable_as_functional(type(model)) else Functional
    return cls(input_tensors, outputs, name=model.name)
