"""Walking a functional graph outside the model's own call: slicing and replaying.

`slice_graph` lets ``Model(dense2.output, outputs)`` start from intermediate tensors of another
graph, as Keras does: every such input gets a new `InputLayer` of the same shape and dtype, and
the nodes between the inputs and the outputs are recorded again on new symbolic tensors. The
layers are the same objects (their weights are shared with the original graph); only the nodes
are new, so the original model is unchanged.

`run_nodes` replays a model's nodes on new symbolic inputs through a layer-mapping function and
an optional call function (what ``clone_model`` does with ``clone_function`` and
``call_function``).
"""

from kerasrs import autodiff
from kerasrs.layers.input_layer import InputLayer
from kerasrs.layers.node import Node, SymbolicTensor, map_structure


def slice_graph(inputs, outputs):
    """``(inputs, outputs)`` on a copy of the graph whose inputs all come from `InputLayer`s.

    Inputs that already come from an `InputLayer` are kept; every other input tensor gets a
    new `InputLayer` (default name, same shape and dtype).
    """
    new = {}
    for t in autodiff._flatten(inputs):
        if isinstance(t._keras_history[0], InputLayer):
            new[id(t)] = t
        elif id(t) not in new:
            new[id(t)] = InputLayer(batch_shape=t.shape, dtype=t.dtype).output
    for node in _nodes_between(new, autodiff._flatten(outputs)):
        args = _substitute(node.call_args, new)
        kwargs = _substitute(node.call_kwargs, new)
        outs = [_like(t) for t in node.outputs]
        Node(node.layer, args, kwargs, outs)
        new.update((id(old), t) for old, t in zip(node.outputs, outs))

    def mapped(t):
        return new.get(id(t), t)

    return map_structure(mapped, inputs), map_structure(mapped, outputs)


def _nodes_between(known, outputs):
    """The nodes that compute ``outputs`` from the tensors in ``known`` (ids), parents first.
    Input nodes not reached through ``known`` are left out (the model then reports the graph
    as disconnected)."""
    order, seen = [], set()

    def visit(t):
        if id(t) in known:
            return
        layer, index, _ = t._keras_history
        node = layer._inbound_nodes[index]
        if node in seen or node.is_input:
            return
        seen.add(node)
        for parent in node.input_tensors:
            visit(parent)
        order.append(node)

    for t in outputs:
        visit(t)
    return order


def _substitute(structure, new):
    return map_structure(lambda v: new.get(id(v), v) if isinstance(v, SymbolicTensor) else v,
                         structure)


def _like(t):
    """A new symbolic tensor with ``t``'s shape, dtype and symbolic mask."""
    out = SymbolicTensor(t.shape, t.dtype)
    mask = getattr(t, "_keras_mask", None)
    if mask is not None:
        out._keras_mask = SymbolicTensor(mask.shape, mask.dtype)
    return out


def run_nodes(model, inputs, layer_fn, call_fn=None):
    """``model``'s outputs computed from the symbolic ``inputs`` (its input structure) by
    calling ``layer_fn(layer)`` for each node's layer, through ``call_fn(layer, *args,
    **kwargs)`` when given. Returns the outputs in the model's output structure."""
    values = {id(t): x for t, x in zip(model.inputs, autodiff._flatten(inputs))}
    for node in model._execution_order:
        layer = layer_fn(node.layer)
        args = map_structure(lambda v: values[id(v)] if isinstance(v, SymbolicTensor) else v,
                             node.call_args)
        kwargs = map_structure(lambda v: values[id(v)] if isinstance(v, SymbolicTensor) else v,
                               node.call_kwargs)
        outs = call_fn(layer, *args, **kwargs) if call_fn is not None else layer(*args, **kwargs)
        for t, out in zip(node.outputs, autodiff._flatten(outs)):
            values[id(t)] = out
    return autodiff._pack(model._outputs_struct, iter([values[id(t)] for t in model.outputs]))
