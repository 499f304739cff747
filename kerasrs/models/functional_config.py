"""Rebuilding a functional graph from its Keras config (``Functional.from_config``).

Layers are created from their configs first; then each layer's inbound nodes are replayed by
calling the layer on the symbolic tensors its node names (``[layer name, node index, tensor
index]``). A node whose inputs do not exist yet (a shared layer used later in the graph) waits
for a later pass. Keras 2 node lists (``[[["input_1", 0, 0, {}]]]``) are accepted too.
"""

from kerasrs.layers import serialization

_LAYER_ENTRY_KEYS = ("name", "inbound_nodes")


class _NotReady(Exception):
    pass


def rebuild(config, custom_objects=None):
    """``(inputs, outputs)`` symbolic structures for ``config``; the layers are created here.

    Raises:
        ValueError: if a node refers to a layer or node that never appears.
    """
    created, pending = {}, {}
    for entry in config["layers"]:
        layer_config = {k: v for k, v in entry.items() if k not in _LAYER_ENTRY_KEYS}
        layer = serialization.deserialize(layer_config, custom_objects)
        created[entry.get("name", layer.name)] = layer
        pending[entry.get("name", layer.name)] = [_standard_node(n)
                                                  for n in entry.get("inbound_nodes", [])]
    while any(pending.values()):
        progress = False
        for name in list(pending):
            while pending[name]:
                try:
                    args, kwargs = _resolve(pending[name][0], created)
                except _NotReady:
                    break
                created[name](*args, **kwargs)
                pending[name].pop(0)
                progress = True
        if not progress:
            stuck = {k: v for k, v in pending.items() if v}
            raise ValueError(f"Functional.from_config: cannot rebuild the nodes of layers "
                             f"{sorted(stuck)}: they refer to tensors that never appear. "
                             f"Received: {stuck}")

    def tensor(triple):
        layer_name, node_index, tensor_index = triple[:3]
        return created[layer_name]._inbound_nodes[node_index].outputs[tensor_index]

    return _map_triples(tensor, config["input_layers"]), \
        _map_triples(tensor, config["output_layers"])


def _map_triples(fn, spec):
    """``fn`` applied to every ``[layer name, node index, tensor index]`` of a (nested)
    ``input_layers``/``output_layers`` spec; dicts, lists and tuples keep their type, so a
    config from `get_config` gives back the same structure (a JSON file has lists only)."""
    if isinstance(spec, dict):
        return {k: _map_triples(fn, v) for k, v in spec.items()}
    if _is_triple(spec):
        return fn(spec)
    return type(spec)(_map_triples(fn, t) for t in spec)


def _is_triple(spec):
    return isinstance(spec, (list, tuple)) and len(spec) in (3, 4) and \
        isinstance(spec[0], str) and isinstance(spec[1], int)


def _standard_node(node):
    """Keras 3 ``{"args", "kwargs"}`` form from either Keras 3 or Keras 2 node data."""
    if isinstance(node, dict):
        return node
    tensors = [{"class_name": "__keras_tensor__", "config": {"keras_history": list(t[:3])}}
               for t in node]
    kwargs = node[0][3] if node and len(node[0]) > 3 else {}
    return {"args": [tensors[0] if len(tensors) == 1 else tensors], "kwargs": kwargs or {}}


def _resolve(node, created):
    def convert(value):
        if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
            name, node_index, tensor_index = value["config"]["keras_history"]
            layer = created.get(name)
            if layer is None:
                raise ValueError(f"Functional.from_config: unknown layer {name!r} in a node. "
                                 f"Received: keras_history={value['config']['keras_history']}")
            if node_index >= len(layer._inbound_nodes):
                raise _NotReady
            return layer._inbound_nodes[node_index].outputs[tensor_index]
        if isinstance(value, list):
            return [convert(v) for v in value]
        if isinstance(value, dict):
            return {k: convert(v) for k, v in value.items()}
        return value

    return convert(node.get("args", [])), convert(node.get("kwargs", {}))
