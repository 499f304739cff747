"""`Functional`: a model defined by a graph of layer calls on symbolic tensors.

``Model(inputs, outputs)`` walks the `Node`s back from ``outputs`` to ``inputs`` (Keras's
algorithm: a depth-first walk, then depths so that every node runs after its parents) and, when
called, replays the nodes in that order on real Tensors. Layers may be shared (called more than
once) and models may be nested as layers. ``inputs`` and ``outputs`` may be nested structures
(dicts, lists, tuples); a call returns the outputs in that structure. Inputs may also be
intermediate tensors of another graph: that part of the graph is then copied onto new inputs
(`kerasrs.models.functional_graph.slice_graph`), sharing its layers.
"""

import collections

from kerasrs import autodiff
from kerasrs import ops
from kerasrs.layers import serialization
from kerasrs.layers.base import Layer
from kerasrs.layers.input_layer import InputLayer
from kerasrs.layers.node import SymbolicTensor, map_structure
from kerasrs.models import functional_config, functional_graph
from kerasrs.models.model import Model
from kerasrs.saving import weights_h5
from kerasrs.trainers import trainer


class Functional(Model):
    """A model from symbolic ``inputs`` to ``outputs``.

    Args:
        inputs: a `SymbolicTensor` from `kerasrs.layers.Input`, or a list or dict of them.
        outputs: a symbolic tensor computed from ``inputs`` by layers, or a list or dict.
        name: defaults to ``functional`` (made unique).

    Raises:
        ValueError: if an input is not from `Input`, an output is not a symbolic tensor, or the
            outputs need a model input that is not in ``inputs`` ("graph disconnected").

    Example:
        >>> x = layers.Input((4,))
        >>> model = Model(x, layers.Dense(2)(x))
        >>> model.predict(np.ones((3, 4)), verbose=0).shape
        (3, 2)
    """

    _keras_module = "keras.src.models.functional"
    _layers_explicit = True  # `_layers`: the model's own list of its layers

    def __init__(self, inputs, outputs, name=None, trainable=True, **kwargs):
        Layer.__init__(self, name=name, trainable=trainable, **kwargs)
        trainer.Trainer.__init__(self)
        for kind, tensors in (("inputs", inputs), ("outputs", outputs)):
            for t in autodiff._flatten(tensors):
                if not isinstance(t, SymbolicTensor) or t._keras_history is None:
                    raise ValueError(f"{self.name}: {kind} must be symbolic tensors made from "
                                     f"layers.Input. Received: {t!r}")
        if not all(_is_input_tensor(t) for t in autodiff._flatten(inputs)):
            inputs, outputs = functional_graph.slice_graph(inputs, outputs)
        self._inputs_struct, self._outputs_struct = inputs, outputs
        self.inputs = autodiff._flatten(inputs)
        self.outputs = autodiff._flatten(outputs)
        self._layers, self._execution_order = _build_graph(self.name, self.inputs, self.outputs)
        counts = collections.Counter(layer.name for layer in self._layers)
        repeated = sorted(name for name, n in counts.items() if n > 1)
        if repeated:
            raise ValueError(f"{self.name}: every layer of a model needs a unique name (configs "
                             f"and saved weights refer to layers by name). Received: names "
                             f"{repeated} used more than once")
        self._node_set = set(self._execution_order) | {t._keras_history[0]._inbound_nodes[0]
                                                       for t in self.inputs}
        self._node_index = _relative_node_indices(self._layers, self._node_set)
        self._optional = [t._keras_history[0].optional for t in self.inputs]
        self.input_names = [t._keras_history[0].name for t in self.inputs]
        self.output_names = [t._keras_history[0].name for t in self.outputs]  # as Keras: flat
        self.built = True

    @property
    def layers(self):
        """The graph's layers, input layers included, in Keras's (depth) order; the ops
        recorded from `kerasrs.ops` calls and operators on symbolic tensors are not layers here
        (as in Keras), they are in `operations`."""
        return [layer for layer in self._layers if not getattr(layer, "_op_layer", False)]

    @property
    def operations(self):
        """Every operation of the graph: input layers, layers and recorded ops, in Keras's
        (depth) order."""
        return list(self._layers)

    @property
    def input(self):
        """The symbolic inputs, in the structure given to the constructor."""
        return self._inputs_struct

    @property
    def output(self):
        """The symbolic outputs, in the structure given to the constructor."""
        return self._outputs_struct

    @property
    def input_shape(self):
        shapes = [t.shape for t in self.inputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_shape(self):
        shapes = [t.shape for t in self.outputs]
        return shapes[0] if len(shapes) == 1 else shapes

    def _convert_inputs(self, inputs):
        return inputs  # each input is converted to its InputLayer's dtype in call()

    def call(self, inputs, training=None, mask=None):
        flat = self._standardize_inputs(inputs)
        values = {id(t): x for t, x in zip(self.inputs, flat)}
        kwargs = {} if training is None else {"training": training}
        for node in self._execution_order:
            args = map_structure(lambda v: values[id(v)] if isinstance(v, SymbolicTensor) else v,
                                 node.call_args)
            node_kwargs = map_structure(
                lambda v: values[id(v)] if isinstance(v, SymbolicTensor) else v, node.call_kwargs)
            if kwargs:  # the call's `training` wins over one recorded in the graph (as Keras)
                node_kwargs.update(kwargs)
            outs = node.layer(*args, **node_kwargs)
            for t, out in zip(node.outputs, autodiff._flatten(outs)):
                values[id(t)] = out
        outputs = self._outputs_struct
        packed = autodiff._pack(outputs, iter([values[id(t)] for t in self.outputs]))
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            return packed[0]  # as Keras (unpack_singleton): `Model(x, [y])` returns y's value
        return packed

    def _standardize_inputs(self, inputs):
        """The inputs as a flat list in `inputs` order, converted and shape-checked."""
        n = len(self.inputs)
        struct = self._inputs_struct
        if isinstance(inputs, dict):
            keys = list(struct) if isinstance(struct, dict) else self.input_names
            missing = [k for k in keys if k not in inputs]
            if missing:
                raise ValueError(f"{self.name}: missing inputs {missing}; the model's inputs are "
                                 f"{keys}. Received: keys {list(inputs)}")
            flat = autodiff._flatten({k: inputs[k] for k in keys}) if isinstance(
                struct, dict) else [inputs[k] for k in keys]
        elif isinstance(inputs, (list, tuple)) and (n > 1 or isinstance(struct, (list, tuple))):
            flat = autodiff._flatten(inputs)
        else:
            flat = [inputs]
        if len(flat) != n:
            raise ValueError(f"{self.name}: expected {n} inputs ({self.input_names}). Received: "
                             f"{len(flat)} inputs")
        return [check_input(self.name, i, t, x, optional)
                for i, (t, x, optional) in enumerate(zip(self.inputs, flat, self._optional))]

    # -- configuration --------------------------------------------------------------------------
    def get_config(self):
        """Keras's functional config: layers with their inbound nodes, input/output layers."""
        def tensor_config(t):
            layer, index, tensor_index = t._keras_history
            return {"class_name": "__keras_tensor__", "config": {
                "shape": list(t.shape), "dtype": t.dtype,
                "keras_history": [layer.name, self._node_index[id(layer._inbound_nodes[index])],
                                  tensor_index]}}

        layers = []
        for layer in self._layers:
            entry = serialization.serialize(layer)
            entry["name"] = layer.name
            entry["inbound_nodes"] = [
                {"args": _jsonable(map_structure(_if_tensor(tensor_config), list(node.call_args))),
                 "kwargs": _jsonable(map_structure(_if_tensor(tensor_config), node.call_kwargs))}
                for node in layer._inbound_nodes if node in self._node_set and not node.is_input]
            layers.append(entry)

        def triple(t):
            layer, index, tensor_index = t._keras_history
            return [layer.name, self._node_index[id(layer._inbound_nodes[index])], tensor_index]

        return {"name": self.name, "trainable": self.trainable, "layers": layers,
                "input_layers": map_structure(triple, self._inputs_struct),
                "output_layers": map_structure(triple, self._outputs_struct)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """Rebuild the graph: create every layer, then replay the inbound nodes in order."""
        inputs, outputs = functional_config.rebuild(config, custom_objects)
        return cls(inputs, outputs, name=config.get("name"),
                   trainable=config.get("trainable", True))

    _from_config_takes_custom_objects = True


Model._functional_class = Functional
serialization.MODEL_CLASSES.update(Model=Functional, Functional=Functional)
weights_h5.register_model_class(Functional, graph=True)


def check_input(model_name, index, spec, x, optional=False):
    """``x`` as a Tensor of the input's dtype (cast if needed), checked against its shape
    except the batch axis (as Keras's model input specs: an Input with ``batch_size`` takes
    other batch sizes too).

    As in Keras, a rank one above the input's with a last axis of size 1 is squeezed, and a
    rank one below it is expanded when the input's last axis has size 1. ``None`` is passed
    through for an ``optional`` input.

    Raises:
        ValueError: for None at an input that is not optional, or an incompatible shape.
    """
    if x is None:
        if optional:
            return None
        raise ValueError(f"{model_name}: The input {spec._keras_history[0].name!r} is not "
                         f"optional, but None was passed. Please provide a valid tensor "
                         f"(or make it Input(..., optional=True)). Received: None at input "
                         f"{index}")
    if not isinstance(x, autodiff.Tensor):
        x = autodiff.convert_to_tensor(x)
    received = shape = tuple(x.shape)
    expected = spec.shape
    if len(shape) != len(expected) and expected:
        if len(shape) == len(expected) + 1 and shape[-1] == 1:
            x = ops.squeeze(x, axis=-1)
        elif len(shape) == len(expected) - 1 and expected[-1] == 1:
            x = ops.expand_dims(x, axis=-1)
        shape = tuple(x.shape)
    if len(shape) != len(expected) or any(e is not None and e != s
                                          for e, s in zip(expected[1:], shape[1:])):
        raise ValueError(f"{model_name}: input {index} ({spec._keras_history[0].name!r}) is "
                         f"incompatible with the model: expected shape {expected} (None: any "
                         f"size). Received: input shape {received}")
    if x.dtype.name != spec.dtype:  # e.g. integer or float64 data for a float32 input
        x = ops.cast(x, spec.dtype)
    return x


def _is_input_tensor(t):
    return isinstance(t._keras_history[0], InputLayer)


def _build_graph(model_name, inputs, outputs):
    """``(layers, nodes to run)`` in Keras's depth order; raises on a disconnected graph."""
    finished, in_progress, ordered, layer_index = set(), set(), [], {}

    def visit(tensor):
        layer, node_index, _ = tensor._keras_history
        node = layer._inbound_nodes[node_index]
        if node in finished:
            return
        if node in in_progress:
            raise ValueError(f"{model_name}: the graph has a cycle at layer {layer.name!r}.")
        layer_index.setdefault(layer, len(layer_index))
        in_progress.add(node)
        for t in node.input_tensors:
            visit(t)
        in_progress.remove(node)
        finished.add(node)
        ordered.append(node)

    for t in outputs:
        visit(t)
    node_depth, layer_depth = {}, {}
    for node in reversed(ordered):
        depth = max(node_depth.setdefault(node, 0), layer_depth.get(node.layer, 0))
        layer_depth[node.layer] = node_depth[node] = depth
        for parent in node.parent_nodes:
            node_depth[parent] = max(depth + 1, node_depth.get(parent, 0))
    for t in inputs:
        layer = t._keras_history[0]
        if layer not in layer_depth:  # an input no output depends on
            layer_depth[layer], layer_index[layer] = 0, -1
            node_depth[layer._inbound_nodes[0]] = 0
    by_depth = collections.defaultdict(list)
    for node, depth in node_depth.items():
        by_depth[depth].append(node)
    layers_by_depth = collections.defaultdict(list)
    for layer, depth in layer_depth.items():
        layers_by_depth[depth].append(layer)
    depths = sorted(by_depth, reverse=True)
    layers = [layer for d in sorted(layers_by_depth, reverse=True)
              for layer in sorted(layers_by_depth[d], key=lambda x: layer_index[x])]
    available = {id(t) for t in inputs}
    order = []
    for depth in depths:
        for node in by_depth[depth]:
            if node.is_input:
                if not any(id(t) in available for t in node.outputs):
                    raise ValueError(
                        f"{model_name}: graph disconnected: the outputs need input "
                        f"{node.layer.name!r}, which is not among the model's inputs. Received: "
                        f"inputs {[t._keras_history[0].name for t in inputs]}")
                continue
            order.append(node)
            available.update(id(t) for t in node.outputs)
    return layers, order


def _relative_node_indices(layers, node_set):
    """id(node) -> its index among the layer's nodes that belong to this model."""
    index = {}
    for layer in layers:
        k = 0
        for node in layer._inbound_nodes:
            if node in node_set:
                index[id(node)] = k
                k += 1
    return index


def _if_tensor(fn):
    return lambda v: fn(v) if isinstance(v, SymbolicTensor) else v


def _jsonable(x):
    if isinstance(x, tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, list):
        return [_jsonable(v) for v in x]
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    return x
