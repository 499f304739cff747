"""``Model.summary()``: the Keras 3 style table of layers, shapes and parameter counts."""

import numpy as np

_BOX = {  # the box-drawing characters Keras's summary uses (rich's HEAVY_HEAD box)
    "top": "┏━┳┓", "head": "┃┃┃", "head_sep": "┡━╇┩", "row": "│││", "row_sep": "├─┼┤",
    "bottom": "└─┴┘",
}


def shape_to_list(shape):
    if isinstance(shape, dict):
        return {k: shape_to_list(v) for k, v in shape.items()}
    if isinstance(shape, (list, tuple)) and shape and isinstance(shape[0], (list, tuple)):
        return [shape_to_list(s) for s in shape]
    return None if shape is None else list(shape)


def readable_memory_size(size):
    """Bytes as Keras prints them: ``198.79 KB`` (powers of 1024, two decimals)."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size / 1024 < 1:
            return f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} PB"


def _weights_size(weights):
    unique = {id(w): w for w in weights}.values()
    count = sum(int(np.prod(w.shape)) for w in unique)
    return count, sum(int(np.prod(w.shape)) * w.dtype.itemsize for w in unique)


def _output_shape_text(layer, model):
    nodes = [n for n in layer._inbound_nodes if model is None or n in model_nodes(model)]
    if not nodes:
        return "?"
    shapes = [tuple(t.shape) for t in nodes[-1].outputs]
    return str(shapes[0]) if len(shapes) == 1 else str(shapes)


def model_nodes(model):
    return getattr(model, "_node_set", None) or set(
        n for layer in model.layers for n in layer._inbound_nodes[-1:])


def _connected_to(layer, model):
    node_index = model._node_index
    parts = []
    for node in layer._inbound_nodes:
        if node not in model._node_set or node.is_input:
            continue
        for t in node.input_tensors:
            source, index, tensor_index = t._keras_history
            parts.append(f"{source.name}[{node_index[id(source._inbound_nodes[index])]}]"
                         f"[{tensor_index}]")
    return parts or ["-"]


def _rows(model, functional, show_trainable, expand_nested, model_class, prefix=""):
    """One row per layer: name (type), output shape, params, [connected to], [trainable];
    the layers of nested models (instances of ``model_class``) below theirs when asked."""
    rows = []
    for layer in getattr(model, "operations", model.layers):  # a graph's ops too, as Keras
        row = [f"{prefix}{layer.name} ({type(layer).__name__})",
               _output_shape_text(layer, model if functional else None),
               f"{layer.count_params():,}" if layer.built else "0 (unbuilt)"]
        if functional:
            row.append(_connected_to(layer, model) if not prefix else ["-"])
        if show_trainable:
            row.append("Y" if layer.trainable else "N")
        rows.append(row)
        if expand_nested and model_class is not None and isinstance(layer, model_class):
            inner = _is_graph(layer)
            for sub in _rows(layer, inner, show_trainable, expand_nested, model_class,
                             prefix + " └ "):
                rows.append(sub[:3] + (["-"] if functional else []) +
                            sub[(4 if inner else 3):])
    return rows


def _is_graph(model):
    """Whether ``model`` is functional (Sequential and subclassed models have no node set)."""
    return hasattr(model, "_node_set")


def _table(header, rows, widths, align):
    def line(kind):
        left, fill, mid, right = _BOX[kind]
        return left + mid.join(fill * (w + 2) for w in widths) + right

    def cells(values, bar):
        values = [v if isinstance(v, list) else _wrap(str(v), w) for v, w in zip(values, widths)]
        height = max(len(v) for v in values)
        out = []
        for i in range(height):
            texts = [(v[i] if i < len(v) else "") for v in values]
            parts = [t[:w].rjust(w) if a == "right" else t[:w].ljust(w)
                     for t, w, a in zip(texts, widths, align)]
            out.append(bar[0] + bar[1].join(f" {p} " for p in parts) + bar[2])
        return out

    lines = [line("top")] + cells(header, _BOX["head"]) + [line("head_sep")]
    for i, row in enumerate(rows):
        if i:
            lines.append(line("row_sep"))
        lines.extend(cells(row, _BOX["row"]))
    lines.append(line("bottom"))
    return lines


def _wrap(text, width):
    if len(text) <= width:
        return [text]
    return [text[i:i + width] for i in range(0, len(text), width)]


def print_summary(model, line_length=None, print_fn=None, expand_nested=False,
                  show_trainable=False, model_class=None):
    """Print ``model``'s summary (see `Model.summary`), one ``print_fn`` call per line;
    ``expand_nested`` opens the layers that are instances of ``model_class``."""
    functional = _is_graph(model)
    if functional:
        header, positions = ["Layer (type)", "Output Shape", "Param #", "Connected to"], \
            [0.3, 0.56, 0.74, 1.0]
        align, default_length = ["left", "left", "right", "left"], 108
    else:
        header, positions = ["Layer (type)", "Output Shape", "Param #"], [0.45, 0.80, 1.0]
        align, default_length = ["left", "left", "right"], 88
    if show_trainable:
        header, align = header + ["Trainable"], align + ["left"]
        positions = [p * 0.9 for p in positions] + [1.0]
    length = line_length or default_length
    bounds = [0] + [int(p * length) for p in positions]
    widths = [max(b - a - 3, 6) for a, b in zip(bounds, bounds[1:])]
    rows = _rows(model, functional, show_trainable, expand_nested, model_class)
    lines = [f'Model: "{model.name}"'] + _table(header, rows, widths, align)
    if model.built:
        total, total_bytes = _weights_size(model.weights)
        trainable, trainable_bytes = _weights_size(model.trainable_weights)
        lines += [f" Total params: {total:,} ({readable_memory_size(total_bytes)})",
                  f" Trainable params: {trainable:,} ({readable_memory_size(trainable_bytes)})",
                  f" Non-trainable params: {total - trainable:,} "
                  f"({readable_memory_size(total_bytes - trainable_bytes)})"]
        optimizer = getattr(model, "optimizer", None)
        if optimizer is not None and getattr(optimizer, "built", False):
            count, size = _weights_size(optimizer.variables)
            lines.append(f" Optimizer params: {count:,} ({readable_memory_size(size)})")
    else:
        lines.append(" Total params: 0 (unbuilt: call the model on data or build() it first)")
    print_fn = print_fn or print
    for text in lines:
        print_fn(text)
