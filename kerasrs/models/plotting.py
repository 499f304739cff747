"""Drawing a model's layer graph with pydot and Graphviz (Keras's ``utils.plot_model``)."""


def _pydot():
    try:
        import pydot
    except ImportError as e:
        raise ImportError("plot_model/model_to_dot need pydot and the Graphviz `dot` program: "
                          "`pip install pydot` and install Graphviz (e.g. `apt-get install "
                          "graphviz`).") from e
    return pydot


def _shape_text(shape):
    return str(tuple(shape)).replace("None", "?") if shape is not None else "?"


def model_to_dot(model, show_shapes=False, show_dtype=False, show_layer_names=True, rankdir="TB",
                 expand_nested=False, dpi=200, show_layer_activations=False,
                 show_trainable=False, **kwargs):
    """The model's layers and connections as a ``pydot.Dot`` graph (one node per layer, one edge
    per connection), top to bottom (``rankdir="TB"``) or left to right ("LR")."""
    pydot = _pydot()
    dot = pydot.Dot(graph_type="digraph", rankdir=rankdir, dpi=dpi)
    layers = list(model.layers)
    ids = {id(layer): str(i) for i, layer in enumerate(layers)}
    for layer in layers:
        label = type(layer).__name__
        if show_layer_names:
            label = f"{layer.name} ({label})"
        act = getattr(layer, "activation", None)
        if show_layer_activations and act is not None:
            label += f"\\nactivation: {getattr(act, '__name__', act)}"
        if show_shapes:
            out = getattr(layer, "output_shape", None) if _has(layer, "output_shape") else None
            label += f"\\noutput: {_shape_text(out)}"
        if show_dtype:
            label += f"\\ndtype: {layer.dtype}"
        if show_trainable:
            label += f"\\ntrainable: {layer.trainable}"
        dot.add_node(pydot.Node(ids[id(layer)], label=label, shape="record"))
    for src, dst in _edges(model, layers):
        dot.add_edge(pydot.Edge(ids[id(src)], ids[id(dst)]))
    return dot


def _has(layer, attr):
    try:
        getattr(layer, attr)
        return True
    except Exception:  # noqa: BLE001  (an unbuilt layer raises on output_shape)
        return False


def _edges(model, layers):
    """(source layer, target layer) pairs: the graph of a functional model, the chain of a
    Sequential one."""
    pairs = []
    known = {id(layer) for layer in layers}
    for layer in layers:
        for node in getattr(layer, "_inbound_nodes", ()) or ():
            for t in node.input_tensors:
                parent = t._keras_history[0]
                if id(parent) in known:
                    pairs.append((parent, layer))
    if not pairs:  # a Sequential model built without an Input
        pairs = list(zip(layers[:-1], layers[1:]))
    return pairs


def plot_model(model, to_file="model.png", show_shapes=False, show_dtype=False,
               show_layer_names=True, rankdir="TB", expand_nested=False, dpi=200,
               show_layer_activations=False, show_trainable=False, **kwargs):
    """Write the graph of `model_to_dot` to ``to_file`` (format from the extension: png, svg,
    pdf, dot, ...).

    Raises:
        ImportError: when pydot or Graphviz is missing, saying what to install.
    """
    dot = model_to_dot(model, show_shapes, show_dtype, show_layer_names, rankdir, expand_nested,
                       dpi, show_layer_activations, show_trainable)
    ext = to_file.rsplit(".", 1)[-1].lower() if "." in to_file else "png"
    try:
        if ext == "dot":
            dot.write_raw(to_file)
        else:
            dot.write(to_file, format=ext)
    except FileNotFoundError as e:  # pydot raises this when Graphviz's `dot` is not on PATH
        raise ImportError("plot_model: Graphviz's `dot` program was not found; install Graphviz "
                          "(e.g. `apt-get install graphviz`).") from e
    return to_file
