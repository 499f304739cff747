"""Symbolic tensors and the nodes of a functional graph.

`kerasrs.layers.Input` returns a `SymbolicTensor` (Keras calls it KerasTensor): a shape with
``None`` for the batch axis and a dtype, but no values. Calling a layer on symbolic tensors
builds the layer, works out the output shapes and dtypes, records a `Node` (the layer, the call's
arguments and its outputs) in ``layer._inbound_nodes`` and returns new symbolic tensors whose
``_keras_history`` is ``(layer, node_index, tensor_index)``. Python operators and `kerasrs.ops`
functions applied to symbolic tensors record nodes of op layers (see `kerasrs.layers.op_layer`).
A functional `Model` walks these nodes back from its outputs to its inputs and replays them on
real Tensors.

Output shapes come from ``layer.compute_output_shape`` when the layer defines it; otherwise the
layer is *probed*: run (without recording gradients, ``training=False``) on zero tensors whose
unknown axes have size 2, and again with size 3 if any axis is unknown; axes whose size differs
between the two runs are unknown (None) in the output. This is what makes `Lambda` and custom
layers work without writing ``compute_output_shape``.
"""

import numpy as np

from kerasrs import autodiff, context, ops
from kerasrs import backend as backend_module

_PROBE_SIZES = (2, 3)


def _operator(op_name, reflected=False):
    """A Python operator method calling ``kerasrs.ops.<op_name>``, which records the op on
    symbolic tensors (see `kerasrs.ops.dispatch` and `kerasrs.layers.op_layer`)."""
    fn = getattr(ops, op_name)

    def method(self, *other):
        return fn(other[0], self) if reflected else fn(self, *other)

    method.__name__ = f"__{'r' if reflected else ''}{op_name}__"
    return method


class SymbolicTensor:
    """A placeholder with a shape and dtype but no values, used to build functional models.

    Attributes:
        shape: tuple of ints and None (None: unknown until data arrives, e.g. the batch axis).
        dtype: dtype name, e.g. "float32".
        name: optional name (the `InputLayer` name for model inputs).
        sparse / ragged: always False (Keras's arguments; True raises ValueError).
    """

    __array_ufunc__ = None  # NumPy defers: ndarray + symbolic calls SymbolicTensor.__radd__
    _kerasrs_symbolic = True  # how kerasrs.autodiff and kerasrs.ops recognise it

    def __init__(self, shape, dtype=None, sparse=False, ragged=False, record_history=True,
                 name=None, **kwargs):
        if sparse or ragged:
            raise ValueError(f"SymbolicTensor: kerasrs has no sparse or ragged tensors. "
                             f"Received: sparse={sparse!r}, ragged={ragged!r}")
        self.shape = tuple(None if d is None else int(d) for d in shape)
        self.dtype = backend_module.standardize_dtype(dtype).name
        self.name = name
        self.sparse = self.ragged = False  # Keras's attributes (no sparse/ragged tensors here)
        self._keras_history = None

    ndim = property(lambda self: len(self.shape))

    def __repr__(self):
        return f"<SymbolicTensor shape={self.shape}, dtype={self.dtype}, name={self.name}>"

    def _no_values(self, *args):
        raise TypeError("A symbolic tensor (from layers.Input) has no values, so it cannot be "
                        "converted to an array, a number or a bool. Apply kerasrs.ops functions, "
                        "operators or layers to it, and call the model on data. Received: "
                        f"{self!r}")

    __array__ = __float__ = __int__ = __bool__ = __iter__ = _no_values

    # Python operators record kerasrs.ops calls (see kerasrs.layers.op_layer), as in Keras.
    # __eq__ is not overloaded (Keras keeps identity comparison, so tensors can go in sets).
    __add__, __radd__ = _operator("add"), _operator("add", True)
    __sub__, __rsub__ = _operator("subtract"), _operator("subtract", True)
    __mul__, __rmul__ = _operator("multiply"), _operator("multiply", True)
    __truediv__, __rtruediv__ = _operator("divide"), _operator("divide", True)
    __floordiv__, __rfloordiv__ = _operator("floor_divide"), _operator("floor_divide", True)
    __mod__, __rmod__ = _operator("mod"), _operator("mod", True)
    __pow__, __rpow__ = _operator("power"), _operator("power", True)
    __matmul__, __rmatmul__ = _operator("matmul"), _operator("matmul", True)
    __and__, __rand__ = _operator("logical_and"), _operator("logical_and", True)
    __or__, __ror__ = _operator("logical_or"), _operator("logical_or", True)
    __lt__, __le__ = _operator("less"), _operator("less_equal")
    __gt__, __ge__ = _operator("greater"), _operator("greater_equal")
    __ne__ = _operator("not_equal")
    __neg__, __abs__, __invert__ = _operator("negative"), _operator("abs"), \
        _operator("logical_not")
    __getitem__ = _operator("getitem")
    __hash__ = object.__hash__

    def __pos__(self):
        return self


KerasTensor = SymbolicTensor  # Keras's name


class Node:
    """One call of a layer on symbolic tensors: the arguments, keyword arguments and outputs.

    Args:
        layer: the `Layer` called.
        call_args / call_kwargs: the call's arguments, with `SymbolicTensor`s where tensors went.
        outputs: flat list of the output `SymbolicTensor`s (their history is set here).
    """

    def __init__(self, layer, call_args=(), call_kwargs=None, outputs=()):
        self.layer = layer
        self.call_args = tuple(call_args)
        self.call_kwargs = dict(call_kwargs or {})
        self.outputs = list(outputs)
        self.input_tensors = [t for t in autodiff._flatten([list(self.call_args), self.call_kwargs])
                              if isinstance(t, SymbolicTensor)]
        index = len(layer._inbound_nodes)
        layer._inbound_nodes.append(self)
        for i, t in enumerate(self.outputs):
            t._keras_history = (layer, index, i)

    @property
    def parent_nodes(self):
        """The nodes that produced this node's input tensors."""
        return [t._keras_history[0]._inbound_nodes[t._keras_history[1]]
                for t in self.input_tensors]

    @property
    def is_input(self):
        return not self.input_tensors

    def __repr__(self):
        return (f"<Node {self.layer.name} inputs={len(self.input_tensors)} "
                f"outputs={len(self.outputs)}>")


def map_structure(fn, structure):
    """Apply ``fn`` to every leaf of nested lists/tuples/dicts, keeping the structure."""
    if isinstance(structure, (list, tuple)):
        return type(structure)([map_structure(fn, v) if isinstance(v, _NESTED) else fn(v)
                                for v in structure])
    if isinstance(structure, dict):
        return {k: map_structure(fn, v) for k, v in structure.items()}
    return fn(structure)


_NESTED = autodiff._NESTED


def any_symbolic(args, kwargs):
    """Whether a leaf of the call's arguments is a `SymbolicTensor` (runs on every layer call:
    no flattening unless an argument is nested)."""
    for t in (*args, *kwargs.values()) if kwargs else args:
        if isinstance(t, SymbolicTensor) or isinstance(t, _NESTED) and any(
                isinstance(x, SymbolicTensor) for x in autodiff._flatten(t)):
            return True
    return False


class Spec:
    """The shape and dtype of one output, without values."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype

    def __repr__(self):
        return f"Spec(shape={self.shape}, dtype={self.dtype})"


def symbolic_call(layer, args, kwargs):
    """Build ``layer`` if needed, record a `Node` and return its symbolic outputs. A
    ``training`` given here is kept in the node (the model's own ``training``, when not None,
    overrides it, as in Keras)."""
    kwargs = dict(kwargs)
    training = kwargs.pop("training", None)
    if not layer.built:
        layer._build_from_call(args, kwargs)
    if layer.input_spec is not None and args:
        layer._check_input_spec(args[0])
    specs = output_spec(layer, args, kwargs)
    outputs = map_structure(lambda spec: SymbolicTensor(spec.shape, spec.dtype), specs)
    node_kwargs = kwargs if training is None else {**kwargs, "training": training}
    Node(layer, args, node_kwargs, autodiff._flatten(outputs))
    _attach_symbolic_masks(layer, args, kwargs, outputs)
    return outputs


def _attach_symbolic_masks(layer, args, kwargs, outputs):
    """Give the symbolic outputs the ``_keras_mask`` the layer would compute (a bool
    `SymbolicTensor` with the mask's shape, batch axis None), as Keras shows on KerasTensors.
    Found by one eager probe with all-True input masks; the values are not used."""
    flat_in = [t for t in autodiff._flatten([list(args), kwargs]) if isinstance(t, SymbolicTensor)]
    if not any(getattr(t, "_keras_mask", None) is not None for t in flat_in) and \
            not layer._overrides("compute_mask"):
        return
    try:
        probed = autodiff._flatten(_probe(layer, args, kwargs, _PROBE_SIZES[0], masks=True))
    except Exception:  # noqa: BLE001  (the mask is informational; the graph is already built)
        return
    for out, eager in zip(autodiff._flatten(outputs), probed):
        mask = getattr(eager, "_keras_mask", None)
        if mask is not None and isinstance(out, SymbolicTensor):
            shape = tuple(np.shape(autodiff.raw(mask)))
            batch = out.shape[0] if out.shape else None
            out._keras_mask = SymbolicTensor((batch,) + shape[1:], "bool")


def output_spec(layer, args, kwargs):
    """Structure of `Spec`s for ``layer(*args, **kwargs)`` on symbolic inputs: from the layer's
    own ``compute_output_spec``, else its ``compute_output_shape``, else a probe."""
    if layer._overrides("compute_output_spec"):
        return map_structure(lambda t: Spec(t.shape, t.dtype),
                             layer.compute_output_spec(*args, **kwargs))
    if layer._overrides("compute_output_shape"):
        shapes = layer.compute_output_shape(_shape_of(args[0]))
        try:
            dtype = autodiff._flatten(_probe(layer, args, kwargs, 1))[0].dtype.name
        except Exception:  # the probe is only for the dtype here: a shape rule exists
            dtype = layer.compute_dtype
        return map_structure_shapes(lambda s: Spec(s, dtype), shapes)
    return _probe_spec(layer, args, kwargs)


def output_shape_by_probe(layer, input_shape):
    """``compute_output_shape`` by probing with zero inputs of ``input_shape``."""
    dtype = layer.compute_dtype
    structure = map_structure_shapes(lambda s: SymbolicTensor(s, dtype), input_shape)
    specs = _probe_spec(layer, (structure,), {})
    return map_structure(lambda spec: spec.shape, specs)


def _probe_spec(layer, args, kwargs):
    flat_in = [t for t in autodiff._flatten([list(args), kwargs]) if isinstance(t, SymbolicTensor)]
    unknown = any(d is None for t in flat_in for d in t.shape)
    first = _probe(layer, args, kwargs, _PROBE_SIZES[0])
    if not unknown:
        return map_structure(lambda t: Spec(t.shape, t.dtype.name), first)
    second = _probe(layer, args, kwargs, _PROBE_SIZES[1])
    flat = [Spec(tuple(a if a == b else None for a, b in zip(x.shape, y.shape)), x.dtype.name)
            for x, y in zip(autodiff._flatten(first), autodiff._flatten(second))]
    return autodiff._pack(first, iter(flat))


def _probe(layer, args, kwargs, size, masks=False):
    """Run the layer eagerly on zeros shaped like the symbolic inputs (None -> ``size``); with
    ``masks``, inputs with a symbolic ``_keras_mask`` get an all-True mask of its shape."""
    be = backend_module.get()

    def zeros(t):
        if not isinstance(t, SymbolicTensor):
            return t
        shape = tuple(size if d is None else d for d in t.shape)
        out = autodiff.Tensor(be.xp.zeros(shape, dtype=backend_module.standardize_dtype(t.dtype)),
                              backend=be)
        mask = getattr(t, "_keras_mask", None)
        if masks and isinstance(mask, SymbolicTensor):
            out._keras_mask = be.xp.ones(tuple(size if d is None else d for d in mask.shape),
                                         dtype=bool)
        return out

    token = context.symbolic_probe.set(True)
    try:
        with autodiff.no_grad(), np.errstate(all="ignore"):  # zeros: log(0), 0/0 are fine here
            return layer(*map_structure(zeros, list(args)), training=False,
                         **map_structure(zeros, kwargs))
    finally:
        context.symbolic_probe.reset(token)


def _shape_of(x):
    """The shape of a tensor, or the structure of shapes of a list/tuple/dict of tensors (None
    for a None in it: an optional input left out)."""
    if x is None:
        return None
    if isinstance(x, (list, tuple)):
        return [_shape_of(v) for v in x]
    if isinstance(x, dict):
        return {k: _shape_of(v) for k, v in x.items()}
    return tuple(x.shape)


def _is_shape(s):
    return isinstance(s, (list, tuple)) and all(d is None or isinstance(d, (int, np.integer))
                                                 for d in s)


def map_structure_shapes(fn, shapes):
    """Apply ``fn`` to every shape in a nested structure of shapes (a shape is a flat tuple)."""
    if _is_shape(shapes):
        return fn(shapes)
    if isinstance(shapes, dict):
        return {k: map_structure_shapes(fn, v) for k, v in shapes.items()}
    return type(shapes)(map_structure_shapes(fn, s) for s in shapes)
