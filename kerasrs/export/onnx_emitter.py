"""The ONNX writer's emitter and the helpers every lowering shares (see
`kerasrs.export.onnx_lowering`): dtype numbers, the `Emitter` that collects nodes and
initializers, the `Unsupported` error, and the casts and fused activations that projection,
convolution and the elementwise lowerings all need.
"""

import math

import numpy as np

# The `onnx` package's TensorProto dtype numbers (stable across versions).
_DTYPES = {"float32": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6,
           "int64": 7, "bool": 9, "float16": 10, "float64": 11, "uint32": 12, "uint64": 13,
           "bfloat16": 16}


def onnx_dtype(name):
    """The ONNX element type of a dtype name; ValueError for one ONNX has not."""
    try:
        return _DTYPES[name]
    except KeyError:
        raise ValueError(f"export_onnx: dtype {name!r} has no ONNX equivalent. Received: "
                         f"dtype={name!r}") from None


class Emitter:
    """Collects the ONNX nodes and constants of one graph.

    Args:
        helper, numpy_helper: the `onnx` modules (imported lazily by the caller).
        batch: the traced batch size standing for the dynamic batch axis, or None (static).
        opset: the ONNX opset the nodes are written for.
        batch_source: the ONNX name of a graph input whose axis 0 is the batch.
    """

    def __init__(self, helper, numpy_helper, batch, opset, batch_source):
        self.helper, self.numpy_helper = helper, numpy_helper
        self.batch, self.opset, self.batch_source = batch, opset, batch_source
        self.nodes, self.initializers = [], []
        self._count = 0
        self._batch_size = None

    def fresh(self, hint):
        self._count += 1
        return f"{hint}_{self._count}"

    def add(self, op_type, inputs, hint=None, outputs=1, **attrs):
        """Append one ONNX node; returns its output name (a list for ``outputs > 1``)."""
        names = [self.fresh(hint or op_type) for _ in range(outputs)]
        self.nodes.append(self.helper.make_node(op_type, list(inputs), names,
                                                name=self.fresh(f"n_{op_type}"), **attrs))
        return names[0] if outputs == 1 else names

    def constant(self, value, hint="const", name=None):
        """An initializer holding ``value`` (an array); returns its name."""
        name = name or self.fresh(hint)
        array = np.asarray(value)
        self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def ints(self, values, hint="shape"):
        return self.constant(np.asarray(values, dtype=np.int64), hint)

    def scalar(self, value, dtype, hint="scalar"):
        return self.constant(np.asarray(value, dtype=dtype), hint)

    def cast(self, name, to):
        return self.add("Cast", [name], "cast", to=onnx_dtype(to))

    # -- the batch axis --------------------------------------------------------------------------
    def batch_size(self):
        """A 1-element int64 tensor: the runtime batch size (made once)."""
        if self._batch_size is None:
            shape = self.add("Shape", [self.batch_source], "input_shape")
            self._batch_size = self.add("Slice", [shape, self.ints([0]), self.ints([1])],
                                        "batch_size")
        return self._batch_size

    def shape_tensor(self, dims, what):
        """``dims`` (a traced shape) as an int64 tensor for Reshape/Expand: a dimension that
        holds the traced batch (the batch size, or the batch times other sizes) becomes ``-1``
        (``allow_minus_one``) or the runtime batch size times the rest.

        Raises:
            NotImplementedError: if two dimensions look like the batch.
        """
        dims = [int(d) for d in dims]
        holders = [k for k, d in enumerate(dims) if self.batch and d and d % self.batch == 0]
        if not holders:
            return self.ints(dims)
        if len(holders) > 1:
            raise NotImplementedError(f"{what}: shape {tuple(dims)} has more than one axis "
                                      f"that may hold the batch ({self.batch}); export with a "
                                      f"fixed batch size (input_signature with a batch size)")
        k = holders[0]
        if dims[k] == self.batch:
            return self.add("Concat", [self.ints(dims[:k]), self.batch_size(),
                                       self.ints(dims[k + 1:])], "shape", axis=0)
        scaled = self.add("Mul", [self.batch_size(), self.ints([dims[k] // self.batch])])
        return self.add("Concat", [self.ints(dims[:k]), scaled, self.ints(dims[k + 1:])],
                        "shape", axis=0)

    def reduce(self, op_type, x, axes, keepdims):
        """A Reduce* node over ``axes`` (an attribute before opset 18, an input from it)."""
        axes = [int(a) for a in axes]
        if op_type == "ReduceSum" or self.opset >= 18:
            return self.add(op_type, [x, self.ints(axes, "axes")], keepdims=int(keepdims))
        return self.add(op_type, [x], axes=axes, keepdims=int(keepdims))


class Unsupported(NotImplementedError):
    """A graph op (or one of its forms) has no ONNX lowering."""


# -- helpers ---------------------------------------------------------------------------------------
def same_dtype(em, node, inputs, graph_nodes):
    """Each input cast to the node's dtype where it differs (weak scalars, promotions)."""
    out = []
    for name, i in zip(inputs, node.inputs):
        if graph_nodes[i].type.dtype != node.type.dtype:
            name = em.cast(name, node.type.dtype)
        out.append(name)
    return out


def activation(em, x, activation, dtype):
    """The fused activations of projection and conv (`kerasrs.ops.projection.ACTIVATIONS`)."""
    if activation == "linear":
        return x
    if activation == "relu":
        return em.add("Relu", [x])
    if activation == "sigmoid":
        return em.add("Sigmoid", [x])
    if activation == "tanh":
        return em.add("Tanh", [x])
    if activation == "gelu":
        return gelu(em, x, dtype, False)
    raise Unsupported(f"fused activation {activation!r}")


def gelu(em, x, dtype, approximate):
    """GELU (Hendrycks and Gimpel 2016): ``0.5 x (1 + erf(x / sqrt 2))``, or its tanh form."""
    half, one = em.scalar(0.5, dtype), em.scalar(1.0, dtype)
    if approximate:
        cube = em.add("Mul", [em.add("Mul", [x, x]), x])
        inner = em.add("Add", [x, em.add("Mul", [cube, em.scalar(0.044715, dtype)])])
        t = em.add("Tanh", [em.add("Mul", [inner, em.scalar(math.sqrt(2 / math.pi), dtype)])])
    else:
        t = em.add("Erf", [em.add("Mul", [x, em.scalar(1 / math.sqrt(2), dtype)])])
    return em.add("Mul", [em.add("Mul", [x, half]), em.add("Add", [t, one])])
