"""Lowering graph ops to ONNX nodes: one function per op name, in the table `LOWERINGS`.

A lowering is ``fn(emitter, node, inputs) -> str``: ``node`` is the `kerasrs.graph.ir.Node`,
``inputs`` the ONNX names of its inputs (in node order), and the result the ONNX name of its
value. It adds nodes and constants through the `kerasrs.export.onnx_emitter.Emitter`. Weak
Python-scalar constants (``x * 0.5``) and mixed dtypes are cast to the node's own dtype, as
NumPy's promotion did when the graph was traced.

The batch axis: the graph is traced at one batch size (``Emitter.batch``); shapes baked into
attributes (``reshape``'s ``newshape``, ``broadcast_to``'s ``shape``) are written with that axis
as ``-1`` or the runtime batch size, so the file runs on any batch. With ``batch=None`` the
exported batch size is the traced one.
"""

import numpy as np

from kerasrs.export import onnx_recurrent
from kerasrs.export.onnx_emitter import Unsupported, activation, gelu, same_dtype


# -- the table -------------------------------------------------------------------------------------
LOWERINGS = {}


def lowering(*names):
    """Register the decorated function as the lowering of the graph ops ``names``."""
    def register(fn):
        for name in names:
            LOWERINGS[name] = fn
        return fn
    return register


_BINARY = {"add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div",
           "maximum": "Max", "minimum": "Min", "power": "Pow"}
_UNARY = {"negative": "Neg", "relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp",
          "log": "Log", "sqrt": "Sqrt", "absolute": "Abs", "erf": "Erf", "softplus": "Softplus",
          "softsign": "Softsign", "reciprocal": "Reciprocal", "sin": "Sin", "cos": "Cos",
          "floor": "Floor", "ceil": "Ceil", "sign": "Sign", "hard_silu": "HardSwish"}


def lower_binary(em, node, inputs, graph_nodes):
    return em.add(_BINARY[node.op], same_dtype(em, node, inputs, graph_nodes), node.op)


def lower_unary(em, node, inputs, graph_nodes):
    return em.add(_UNARY[node.op], same_dtype(em, node, inputs, graph_nodes), node.op)


for _name in _BINARY:
    LOWERINGS[_name] = lower_binary
for _name in _UNARY:
    LOWERINGS[_name] = lower_unary


@lowering("rsqrt")
def _rsqrt(em, node, inputs, graph_nodes):
    return em.add("Reciprocal", [em.add("Sqrt", inputs)])


@lowering("square")
def _square(em, node, inputs, graph_nodes):
    return em.add("Mul", [inputs[0], inputs[0]])


@lowering("silu")
def _silu(em, node, inputs, graph_nodes):
    return em.add("Mul", [inputs[0], em.add("Sigmoid", inputs)])


@lowering("relu6")
def _relu6(em, node, inputs, graph_nodes):
    dtype = node.type.dtype
    return em.add("Clip", [inputs[0], em.scalar(0, dtype), em.scalar(6, dtype)])


@lowering("hard_sigmoid")
def _hard_sigmoid(em, node, inputs, graph_nodes):
    return em.add("HardSigmoid", inputs, alpha=1 / 6, beta=0.5)  # relu6(x + 3) / 6


@lowering("gelu")
def _gelu_op(em, node, inputs, graph_nodes):
    return gelu(em, inputs[0], node.type.dtype, node.attrs["approximate"])


@lowering("softmax", "log_softmax")
def _softmax(em, node, inputs, graph_nodes):
    axis = node.attrs["axis"]
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if len(axes) != 1:
        raise Unsupported(f"{node.op} over several axes {axes}")
    return em.add("Softmax" if node.op == "softmax" else "LogSoftmax", inputs, axis=axes[0])


@lowering("cast", "autocast")
def _cast(em, node, inputs, graph_nodes):
    if graph_nodes[node.inputs[0]].type.dtype == node.type.dtype:
        return em.add("Identity", inputs)
    return em.cast(inputs[0], node.type.dtype)


@lowering("where")
def _where(em, node, inputs, graph_nodes):
    cond = inputs[0]
    if graph_nodes[node.inputs[0]].type.dtype != "bool":
        cond = em.cast(cond, "bool")
    dtype = node.type.dtype
    values = [em.cast(name, dtype) if graph_nodes[i].type.dtype != dtype else name
              for name, i in zip(inputs[1:], node.inputs[1:])]
    return em.add("Where", [cond] + values)


@lowering("clip")
def _clip(em, node, inputs, graph_nodes):
    dtype = node.type.dtype
    x = same_dtype(em, node, inputs[:1], graph_nodes)[0]
    lo, hi = node.attrs["lo"], node.attrs["hi"]
    return em.add("Clip", [x, "" if lo is None else em.scalar(lo, dtype),
                           "" if hi is None else em.scalar(hi, dtype)])


@lowering("sum", "mean", "max", "min", "prod")
def _reduce(em, node, inputs, graph_nodes):
    rank = len(graph_nodes[node.inputs[0]].type.shape)
    axis = node.attrs["axis"]
    axes = range(rank) if axis is None else (axis if isinstance(axis, (tuple, list)) else (axis,))
    op_type = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin",
               "prod": "ReduceProd"}[node.op]
    x = same_dtype(em, node, inputs, graph_nodes)[0]
    return em.reduce(op_type, x, [a % rank for a in axes], node.attrs["keepdims"])


@lowering("matmul")
def _matmul(em, node, inputs, graph_nodes):
    return em.add("MatMul", same_dtype(em, node, inputs, graph_nodes))


@lowering("einsum")
def _einsum(em, node, inputs, graph_nodes):
    ins = node.attrs["ins"]
    ins = ",".join(ins) if isinstance(ins, (tuple, list)) else ins
    return em.add("Einsum", same_dtype(em, node, inputs, graph_nodes),
                  equation=f"{ins}->{node.attrs['out']}")


@lowering("var")
def _var(em, node, inputs, graph_nodes):
    """Population variance (or, with ``std``, its square root): the mean square deviation."""
    x = same_dtype(em, node, inputs, graph_nodes)[0]
    rank = len(graph_nodes[node.inputs[0]].type.shape)
    axis = node.attrs["axis"]
    axes = range(rank) if axis is None else (axis if isinstance(axis, (tuple, list)) else (axis,))
    axes = [a % rank for a in axes]
    centered = em.add("Sub", [x, em.reduce("ReduceMean", x, axes, True)])
    y = em.reduce("ReduceMean", em.add("Mul", [centered, centered]), axes,
                  node.attrs["keepdims"])
    return em.add("Sqrt", [y]) if node.attrs["std"] else y


# -- ops without a gradient (``kerasrs.ops.core.NO_GRADIENT_OPS``): comparisons, argmax... ---------
_COMPARE = {"equal": ("Equal", False), "not_equal": ("Equal", True), "less": ("Less", False),
            "less_equal": ("LessOrEqual", False), "greater": ("Greater", False),
            "greater_equal": ("GreaterOrEqual", False)}


def _promoted(em, inputs, nodes):
    """Two operands in their common dtype: a weak scalar takes the other's (as
    `kerasrs.ops.core.promoted_pair`), else NumPy's promotion."""
    a, b = nodes
    weak = [n.op == "constant" and isinstance(n.value, (bool, int, float)) for n in nodes]
    if a.type.dtype == b.type.dtype:
        return inputs
    if weak[0] != weak[1]:
        target = b.type.dtype if weak[0] else a.type.dtype
    else:
        target = np.result_type(a.type.dtype, b.type.dtype).name
    return [name if n.type.dtype == target else em.cast(name, target)
            for name, n in zip(inputs, nodes)]


@lowering(*_COMPARE)
def _compare(em, node, inputs, graph_nodes):
    op_type, negate = _COMPARE[node.op]
    y = em.add(op_type, _promoted(em, inputs, [graph_nodes[i] for i in node.inputs]), node.op)
    return em.add("Not", [y]) if negate else y


@lowering("logical_and", "logical_or", "logical_not")
def _logical(em, node, inputs, graph_nodes):
    operands = [name if graph_nodes[i].type.dtype == "bool" else em.cast(name, "bool")
                for name, i in zip(inputs, node.inputs)]
    return em.add({"logical_and": "And", "logical_or": "Or", "logical_not": "Not"}[node.op],
                  operands, node.op)


@lowering("to_float")
def _to_float(em, node, inputs, graph_nodes):
    return em.cast(inputs[0], node.type.dtype)


@lowering("isnan", "isinf", "isfinite")
def _isnan(em, node, inputs, graph_nodes):
    if node.op == "isnan":
        return em.add("IsNaN", inputs)
    if node.op == "isinf":
        return em.add("IsInf", inputs)
    return em.add("Not", [em.add("Or", [em.add("IsNaN", inputs), em.add("IsInf", inputs)])])


@lowering("round")
def _round(em, node, inputs, graph_nodes):
    decimals = node.attrs.get("decimals", 0)
    if decimals:  # halves to even at 10^-decimals
        scale = em.scalar(10.0 ** decimals, node.type.dtype)
        return em.add("Div", [em.add("Round", [em.add("Mul", [inputs[0], scale])]), scale])
    return em.add("Round", inputs)


@lowering("argmax", "argmin")
def _argmax(em, node, inputs, graph_nodes):
    x, axis = inputs[0], node.attrs["axis"]
    if axis is None:
        x, axis = em.add("Reshape", [x, em.ints([-1])]), 0
    y = em.add("ArgMax" if node.op == "argmax" else "ArgMin", [x], node.op, axis=int(axis),
               keepdims=int(node.attrs["keepdims"]), select_last_index=0)
    return em.cast(y, node.type.dtype)


@lowering("floor_divide")
def _floor_divide(em, node, inputs, graph_nodes):
    if np.dtype(node.type.dtype).kind != "f":
        raise Unsupported("floor_divide of integers")
    return em.add("Floor", [em.add("Div", same_dtype(em, node, inputs, graph_nodes))])


# -- layout ----------------------------------------------------------------------------------------
@lowering("reshape")
def _reshape(em, node, inputs, graph_nodes):
    source = graph_nodes[node.inputs[0]].type.shape
    shape = node.type.shape
    if em.batch and source and shape and source[0] == shape[0] == em.batch:
        dims = [0] + list(shape[1:])  # 0: the input's batch axis, copied at run time
        return em.add("Reshape", [inputs[0], em.ints(dims)])
    return em.add("Reshape", [inputs[0], em.shape_tensor(shape, "reshape")])


@lowering("transpose")
def _transpose(em, node, inputs, graph_nodes):
    axes = node.attrs["axes"]
    rank = len(node.type.shape)
    perm = list(range(rank))[::-1] if axes is None else [int(a) % rank for a in axes]
    return em.add("Transpose", inputs, perm=perm)


@lowering("broadcast_to")
def _broadcast_to(em, node, inputs, graph_nodes):
    return em.add("Expand", [inputs[0], em.shape_tensor(node.type.shape, "broadcast_to")])


@lowering("concatenate")
def _concatenate(em, node, inputs, graph_nodes):
    axis = node.attrs["axis"]
    return em.add("Concat", same_dtype(em, node, inputs, graph_nodes),
                  axis=int(axis) % len(node.type.shape))


@lowering("repeat")
def _repeat(em, node, inputs, graph_nodes):
    """``np.repeat`` by an int: a new axis after ``axis`` tiled ``repeats`` times, merged."""
    repeats, axis = node.attrs["repeats"], node.attrs["axis"]
    if not isinstance(repeats, int) or axis is None:
        raise Unsupported("repeat by an array of counts or without an axis")
    rank = len(node.type.shape)
    axis %= rank
    x = em.add("Unsqueeze", [inputs[0], em.ints([axis + 1], "axes")])
    reps = [1] * (rank + 1)
    reps[axis + 1] = repeats
    x = em.add("Tile", [x, em.ints(reps, "repeats")])
    dims = [0] * axis + [-1] + list(node.type.shape[axis + 1:])  # 0: copy a leading axis
    return em.add("Reshape", [x, em.ints(dims)], "repeat")


@lowering("tile")
def _tile(em, node, inputs, graph_nodes):
    rank = len(node.type.shape)
    reps = list(node.attrs["reps"]) if isinstance(node.attrs["reps"], (tuple, list)) else \
        [node.attrs["reps"]]
    reps = [1] * (rank - len(reps)) + reps
    x = inputs[0]
    source_rank = len(graph_nodes[node.inputs[0]].type.shape)
    if source_rank < rank:
        x = em.add("Unsqueeze", [x, em.ints(list(range(rank - source_rank)), "axes")])
    return em.add("Tile", [x, em.ints(reps, "repeats")])


@lowering("take")
def _take(em, node, inputs, graph_nodes):
    axis = node.attrs["axis"]
    if axis is None:
        raise Unsupported("take without an axis")
    return em.add("Gather", inputs, axis=int(axis))


@lowering("pad")
def _pad(em, node, inputs, graph_nodes):
    if node.attrs["mode"] != "constant":
        raise Unsupported(f"pad in mode {node.attrs['mode']!r}")
    widths = [tuple(w) for w in node.attrs["pad_width"]]
    pads = [w[0] for w in widths] + [w[1] for w in widths]
    value = em.scalar(node.attrs["value"] or 0, node.type.dtype)
    return em.add("Pad", [inputs[0], em.ints(pads), value], mode="constant")


@lowering("getitem")
def _getitem(em, node, inputs, graph_nodes):
    """Basic indexing: slices, integers, None and Ellipsis (no index arrays)."""
    key = node.attrs["key"] if node.attrs["tuple_key"] else (node.attrs["key"],)
    if any(isinstance(p, str) for p in key):
        raise Unsupported("getitem with an index array")
    rank = len(graph_nodes[node.inputs[0]].type.shape)
    if Ellipsis in key:
        k = key.index(Ellipsis)
        fill = rank - sum(1 for p in key if p is not None and p is not Ellipsis)
        key = key[:k] + (slice(None),) * fill + key[k + 1:]
    starts, ends, axes, steps, squeeze, new = [], [], [], [], [], []
    axis = 0
    for part in key:
        if part is None:
            new.append(axis + len(new) - len(squeeze))
            continue
        if isinstance(part, int):
            starts.append(part), ends.append(part + 1 if part != -1 else 2 ** 62)
            axes.append(axis), steps.append(1), squeeze.append(axis)
        else:
            start, stop, step = part.start, part.stop, part.step
            if (start, stop, step) != (None, None, None):
                step = 1 if step is None else step
                starts.append(start if start is not None else (0 if step > 0 else -1))
                ends.append(stop if stop is not None else (2 ** 62 if step > 0 else -2 ** 62))
                axes.append(axis), steps.append(step)
        axis += 1
    x = inputs[0]
    if axes:
        x = em.add("Slice", [x, em.ints(starts), em.ints(ends), em.ints(axes), em.ints(steps)])
    if squeeze:
        x = em.add("Squeeze", [x, em.ints(squeeze, "axes")])
    if new:
        x = em.add("Unsqueeze", [x, em.ints(new, "axes")])
    return x if x != inputs[0] else em.add("Identity", [x])


# -- layers' fused ops -----------------------------------------------------------------------------
@lowering("projection")
def _projection(em, node, inputs, graph_nodes):
    x, kernel, *bias = inputs
    k_shape = graph_nodes[node.inputs[1]].type.shape
    x_node = graph_nodes[node.inputs[0]]
    return _project(em, node, x, x_node, kernel, k_shape, bias[0] if bias else None,
                    node.attrs["n_in"])


def _project(em, node, x, x_node, kernel, k_shape, bias, n_in):
    """``act(x @ kernel + bias)`` over the last ``n_in`` axes of ``x`` (see `_Projection`)."""
    dtype = node.type.dtype
    if x_node.type.dtype != dtype:
        x = em.cast(x, dtype)
    k_in = int(np.prod(k_shape[:n_in], dtype=np.int64))
    rest = tuple(k_shape[n_in:])
    lead = len(x_node.type.shape) - n_in
    if n_in != 1:
        x = em.add("Reshape", [x, em.ints([0] * lead + [k_in])])
    if n_in != 1 or len(rest) != 1:
        kernel = em.add("Reshape", [kernel, em.ints([k_in, -1])])
    y = em.add("MatMul", [x, kernel], "projection")
    if bias is not None:
        if len(rest) != 1:
            bias = em.add("Reshape", [bias, em.ints([-1])])
        y = em.add("Add", [y, bias])
    y = activation(em, y, node.attrs["activation"], dtype)
    if len(rest) != 1:
        y = em.add("Reshape", [y, em.ints([0] * lead + list(rest))])
    return y


@lowering("packed_projection")
def _packed_projection(em, node, inputs, graph_nodes):
    n = node.attrs["n"]
    x, kernels, biases = inputs[0], inputs[1:n + 1], inputs[n + 1:]
    d = graph_nodes[node.inputs[0]].type.shape[-1]
    flat = [em.add("Reshape", [k, em.ints([d, -1])]) for k in kernels]
    kernel = em.add("Concat", flat, axis=1)
    bias = None
    if biases:
        bias = em.add("Concat", [em.add("Reshape", [b, em.ints([-1])]) for b in biases], axis=0)
    width = node.type.shape[-1]
    return _project(em, node, x, graph_nodes[node.inputs[0]], kernel, (d, width), bias, 1)


def _geometry(node):
    """The node's sliding-window sizes (`kerasrs.graph.builtin_ops._GEOMETRY` order)."""
    in_shape, window, strides, dilation, out, before, after = node.attrs["geometry"]
    return dict(in_shape=in_shape, window=list(window), strides=list(strides),
                dilation=list(dilation), out=out, pads=list(before) + list(after))


def _to_first(em, x, rank, channels_first):
    """Channels-last ``x`` transposed to ONNX's channels-first layout (unless it is)."""
    if channels_first:
        return x
    return em.add("Transpose", [x], perm=[0, rank - 1] + list(range(1, rank - 1)))


def _to_last(em, y, rank, channels_first):
    if channels_first:
        return y
    return em.add("Transpose", [y], perm=[0] + list(range(2, rank)) + [1])


@lowering("conv")
def _conv(em, node, inputs, graph_nodes):
    x, w, *bias = inputs
    geo, rank = _geometry(node), len(node.type.shape)
    first = node.attrs["channels_first"]
    x = same_dtype(em, node, [x], graph_nodes)[0]
    spatial = rank - 2
    w = em.add("Transpose", [w], perm=[spatial + 1, spatial] + list(range(spatial)))
    y = em.add("Conv", [_to_first(em, x, rank, first), w] + bias, "conv",
               kernel_shape=geo["window"], strides=geo["strides"], dilations=geo["dilation"],
               pads=geo["pads"], group=int(node.attrs["groups"]))
    if node.attrs["activation"] != "linear":
        y = activation(em, y, node.attrs["activation"], node.type.dtype)
    return _to_last(em, y, rank, first)


@lowering("conv_transpose")
def _conv_transpose(em, node, inputs, graph_nodes):
    """The full scatter (ConvTranspose without pads), then the kept window: from the
    convolution's padding ``before`` plus ``crop``, zeros where the output reaches past it."""
    x, w = inputs
    geo, rank = _geometry(node), len(node.type.shape)
    first, spatial = node.attrs["channels_first"], rank - 2
    full = geo["in_shape"][1:-1]
    before = geo["pads"][:spatial]
    x_spatial = geo["out"]
    reach = [(k - 1) * d + 1 for k, d in zip(geo["window"], geo["dilation"])]
    raw = [(n - 1) * s + r for n, s, r in zip(x_spatial, geo["strides"], reach)]
    w = em.add("Transpose", [w], perm=[spatial + 1, spatial] + list(range(spatial)))
    y = em.add("ConvTranspose", [_to_first(em, x, rank, first), w], "conv_transpose",
               kernel_shape=geo["window"], strides=geo["strides"], dilations=geo["dilation"])
    out = node.attrs["out_spatial"]
    starts = [b + c for b, c in zip(before, node.attrs["crop"])]
    ends = [min(r, s + o, b + f) for r, s, o, b, f in zip(raw, starts, out, before, full)]
    axes = list(range(2, rank))
    y = em.add("Slice", [y, em.ints(starts), em.ints(ends), em.ints(axes)])
    missing = [o - (e - s) for o, s, e in zip(out, starts, ends)]
    if any(missing):
        pads = [0, 0] + [0] * spatial + [0, 0] + missing
        y = em.add("Pad", [y, em.ints(pads)], mode="constant")
    return _to_last(em, y, rank, first)


@lowering("max_pool", "average_pool")
def _pool(em, node, inputs, graph_nodes):
    geo, rank = _geometry(node), len(node.type.shape)
    first = node.attrs["channels_first"]
    attrs = dict(kernel_shape=geo["window"], strides=geo["strides"], pads=geo["pads"])
    if any(d != 1 for d in geo["dilation"]):
        attrs["dilations"] = geo["dilation"]
    op_type = "MaxPool" if node.op == "max_pool" else "AveragePool"
    if op_type == "AveragePool":
        attrs["count_include_pad"] = 0
    y = em.add(op_type, [_to_first(em, inputs[0], rank, first)], node.op, **attrs)
    return _to_last(em, y, rank, first)


@lowering("layer_norm")
def _layer_norm(em, node, inputs, graph_nodes):
    x, gamma, beta = same_dtype(em, node, inputs, graph_nodes)
    axis = -len(node.attrs["gamma_shape"])
    return em.add("LayerNormalization", [x, gamma, beta], "layer_norm", axis=axis,
                  epsilon=float(node.attrs["epsilon"]))


@lowering("attention")
def _attention(em, node, inputs, graph_nodes):
    """``softmax(q k^T * scale (+ mask)) v`` on ``(batch, seq, heads, dim)``; the packed form
    is split first. The mask (True = attend) lowers masked scores, then zeroes their weights,
    as `kerasrs.ops.attention._Attention` does."""
    absent = node.attrs.get("absent", ())
    if "keep" not in absent:
        raise Unsupported("attention with dropout (a training-mode graph)")
    split = node.attrs["split"]
    dtype = node.type.dtype
    n_data = 2 - len(absent)
    arrays, mask = inputs[:len(inputs) - n_data], (inputs[-1] if "mask" not in absent else None)
    if split:
        heads, h, hv = split
        packed = arrays[0]
        bounds = [0, heads * h, 2 * heads * h, 2 * heads * h + heads * hv]
        parts = [em.add("Slice", [packed, em.ints([a]), em.ints([b]), em.ints([-1])])
                 for a, b in zip(bounds, bounds[1:])]
        q, k, v = (em.add("Reshape", [p, em.ints([0, 0, heads, d])])
                   for p, d in zip(parts, (h, h, hv)))
    else:
        q, k, v = arrays
    qh = em.add("Transpose", [q], perm=[0, 2, 1, 3])
    kt = em.add("Transpose", [k], perm=[0, 2, 3, 1])
    vh = em.add("Transpose", [v], perm=[0, 2, 1, 3])
    s = em.add("Mul", [em.add("MatMul", [qh, kt]), em.scalar(node.attrs["scale"], dtype)])
    if mask is not None:
        mask_bool = em.cast(mask, "bool")
        s = em.add("Where", [mask_bool, s, em.scalar(np.finfo(dtype).min / 2, dtype)])
    p = em.add("Softmax", [s], axis=-1)
    if mask is not None:
        p = em.add("Mul", [p, em.cast(mask, dtype)])
    return em.add("Transpose", [em.add("MatMul", [p, vh])], "attention", perm=[0, 2, 1, 3])


for _name, _fn in onnx_recurrent.LOWERINGS.items():
    LOWERINGS[_name] = _fn
