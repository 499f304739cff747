"""``model.export(path, format="onnx")``: the inference graph as an ONNX file.

The model's forward pass in inference mode (``training=False``, as `Model.predict` runs it) is
traced into a `kerasrs.graph.Graph` (`trace_inference`), each graph op is lowered to ONNX nodes
by the table `kerasrs.export.onnx_lowering.LOWERINGS` (`graph_to_onnx`), the weights become
initializers named by their variable paths, and the checked model is written atomically. No
Keras, PyTorch or TensorFlow is involved: the `onnx` package builds the file and ONNX Runtime
(or any ONNX runtime) runs it.

The batch axis is dynamic unless the signature fixes it: the graph is traced at the batch size
`TRACE_BATCH` and the shapes the graph holds are written relative to the runtime batch (see
`kerasrs.export.onnx_lowering`). Other axes are the signature's sizes (tracing runs the model
once on real values, so every other size must be known).
"""

import numpy as np

from kerasrs import autodiff, backend, context
from kerasrs.export import onnx_emitter, onnx_lowering
from kerasrs.graph import tracing
from kerasrs.saving import atomic

TRACE_BATCH = 37  # a prime that no layer size is likely to be (or to be a multiple of)
DEFAULT_OPSET = 18
MIN_OPSET = 17  # LayerNormalization


def import_onnx():
    """The `onnx` package, or ImportError saying which extra installs it."""
    try:
        import onnx
    except ImportError as e:
        raise ImportError("export to ONNX needs the `onnx` package (and `onnxruntime` to run "
                          "the file): pip install kerasrs[onnx]") from e
    return onnx


def export_onnx(model, filepath, verbose=None, input_signature=None, opset_version=None):
    """Write ``model``'s inference graph to ``filepath`` as an ONNX model.

    Args:
        model: a built kerasrs `Model` (or any layer whose call takes its inputs).
        filepath: str or path-like: the file to write (replaced atomically if it exists).
        verbose: bool; None means True (as Keras): print where the file went.
        input_signature: None (the model's inputs), or one spec per input in the model's
            input structure: anything with ``shape`` and ``dtype`` (`kerasrs.layers.InputSpec`,
            a symbolic tensor, an array). A batch size of None gives a dynamic batch axis;
            every other size must be given.
        opset_version: int, the ONNX opset; None means `DEFAULT_OPSET`. At least 17.

    Inputs are named as the model's inputs (their input layers), outputs as the model's
    ``output_names`` (``output_0``... when it has none).

    Raises:
        ImportError: without the `onnx` package (``pip install kerasrs[onnx]``).
        ValueError: for a model that was never built, a bad signature or opset.
        NotImplementedError: naming the layer and the op, for an op with no ONNX lowering;
            no file is written then.
        kerasrs.graph.TraceError: if the forward pass cannot be traced (names the op).
    """
    onnx = import_onnx()
    opset = _opset(onnx, opset_version)
    specs, structure = _signature(model, input_signature)
    graph, layers, batch = trace_inference(model, specs, structure)
    proto = graph_to_onnx(graph, opset, batch, layers, getattr(model, "name", "kerasrs"))
    onnx.checker.check_model(proto, full_check=True)
    with atomic.atomic_write(filepath, who="export_onnx") as tmp:
        onnx.save(proto, tmp)
    if verbose is None or verbose:
        print(f"Saved the ONNX model at {str(filepath)!r} (opset {opset}).")


def _opset(onnx, opset_version):
    newest = onnx.defs.onnx_opset_version()
    if opset_version is None:
        return DEFAULT_OPSET
    if not isinstance(opset_version, int) or not MIN_OPSET <= opset_version <= newest:
        raise ValueError(f"export_onnx: `opset_version` must be an int from {MIN_OPSET} to "
                         f"{newest} (the installed onnx's newest). Received: "
                         f"opset_version={opset_version!r}")
    return opset_version


# -- the signature ---------------------------------------------------------------------------------
def _signature(model, input_signature):
    """``([(name, shape, dtype)], structure)``: one spec per input, and how the model takes
    them (``"single"``, ``"list"`` or ``"dict"`` with the keys)."""
    names = [getattr(t, "name", None) for t in (getattr(model, "inputs", None) or [])]
    if input_signature is None:
        inputs = getattr(model, "inputs", None)
        if not inputs:
            raise ValueError(f"export_onnx: the model {getattr(model, 'name', model)!r} has no "
                             "known inputs (it was never built or called); call it on data, "
                             "or pass input_signature.")
        leaves, structure = list(inputs), ("single" if len(inputs) == 1 else "list")
    elif isinstance(input_signature, dict):
        leaves, structure = list(input_signature.values()), ("dict", tuple(input_signature))
        names = list(input_signature)
    elif isinstance(input_signature, (list, tuple)):
        leaves = list(input_signature)
        structure = "single" if len(leaves) == 1 and len(names) <= 1 else "list"
    else:
        leaves, structure = [input_signature], "single"
    specs = []
    for k, leaf in enumerate(leaves):
        shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
        if shape is None:
            raise ValueError("export_onnx: each input_signature entry needs a `shape` (an "
                             f"InputSpec, a symbolic tensor or an array). Received: {leaf!r}")
        shape = tuple(None if d is None else int(d) for d in shape)
        if any(d is None for d in shape[1:]):
            raise ValueError(f"export_onnx: input {k} has shape {shape}: only the batch axis "
                             "may be None (the graph is traced on real values); give the other "
                             "sizes in input_signature.")
        name = getattr(leaf, "name", None) or (names[k] if k < len(names) and names[k] else
                                               f"input_{k}")
        dtype = backend.standardize_dtype(dtype or backend.floatx())
        specs.append((name, shape, dtype))
    if input_signature is not None:
        _check_against_inputs(model, specs)
    return specs, structure


def _check_against_inputs(model, specs):
    """A signature whose shapes cannot fit the model's known inputs is refused here, naming
    both shapes (tracing would report its own placeholder batch instead)."""
    inputs = getattr(model, "inputs", None) or []
    if len(inputs) != len(specs):
        return  # dict inputs and other structures are matched by the trace itself
    for (name, shape, _), tensor in zip(specs, inputs):
        expected = tuple(getattr(tensor, "shape", ()) or ())
        fits = len(expected) == len(shape) and all(
            a is None or b is None or a == b for a, b in zip(expected, shape))
        if expected and not fits:
            raise ValueError(f"export_onnx: input_signature for input {name!r} does not fit the "
                             f"model: expected shape {expected}. Received: shape {shape}")


# -- tracing ---------------------------------------------------------------------------------------
class _LayerTracer(tracing.Tracer):
    """A strict tracer that remembers which layer (its name scopes) made each node."""

    def __init__(self):
        super().__init__(strict=True)
        self.layers = {}

    def record(self, fn, inputs, out):
        start = len(self.builder.nodes)
        where = "/".join(context.layer_call.get()[1]) or "(outside any layer)"
        try:
            super().record(fn, inputs, out)
        except tracing.TraceError as e:
            raise tracing.TraceError(f"export_onnx: layer {where!r}: {e}", e.what) from e
        for i in range(start, len(self.builder.nodes)):
            self.layers.setdefault(i, where)


def trace_inference(model, specs, structure="single"):
    """``(graph, layers, batch)``: ``model``'s forward pass in inference mode traced on
    example inputs of ``specs`` (``[(name, shape, dtype)]``, batch None -> `TRACE_BATCH`),
    ``{node id: layer path}``, and the traced batch size that stands for a dynamic batch (None
    when the signature fixes it)."""
    dynamic = any(shape[0] is None for _, shape, _ in specs) if specs else False
    batch = TRACE_BATCH if dynamic else None
    rng = np.random.default_rng(0)
    feeds = {}
    for name, shape, dtype in specs:
        shape = (TRACE_BATCH if shape[0] is None else shape[0],) + shape[1:]
        feeds[name] = np.zeros(shape, dtype) if np.dtype(dtype).kind in "iub" else \
            rng.random(shape).astype(dtype)
    order = list(feeds)

    def step(tensors):
        values = [tensors[n] for n in order]
        if structure == "single":
            x = values[0]
        elif structure == "list":
            x = values
        else:
            x = dict(zip(structure[1], values))
        with autodiff.no_grad():
            y = model(x, training=False)
        return dict(zip(_output_names(model, y), autodiff._flatten(y)))

    tracer = _LayerTracer()
    graph = tracer.trace_feeds(step, feeds)
    return graph, tracer.layers, batch


def _output_names(model, y):
    count = len(autodiff._flatten(y))
    names = getattr(model, "output_names", None)
    if isinstance(y, dict):
        return [str(k) for k in y]
    if names and len(names) == count and len(set(names)) == count:
        return [str(n) for n in names]
    return [f"output_{i}" for i in range(count)]


# -- lowering --------------------------------------------------------------------------------------
def graph_to_onnx(graph, opset_version=DEFAULT_OPSET, batch=None, layers=None,
                  name="kerasrs"):
    """An ``onnx.ModelProto`` computing ``graph`` (an inference graph: inputs, parameters,
    constants and registered ops; no gradients or updates).

    Args:
        graph: a `kerasrs.graph.Graph`, e.g. from `kerasrs.graph.trace` or `trace_inference`.
        opset_version: the ONNX opset to write.
        batch: the traced batch size that stands for a dynamic batch axis, or None.
        layers: optional ``{node id: layer name}`` for error messages.
        name: the ONNX graph's name.

    Raises:
        NotImplementedError: naming the layer and the op, for an op with no lowering.
        ValueError: for a graph with updates or gradient nodes.
    """
    onnx = import_onnx()
    from onnx import helper, numpy_helper

    if graph.updates:
        raise ValueError("export_onnx: the graph updates variables "
                         f"({sorted(graph.updates)}); export an inference graph.")
    inputs = graph.input_ids()
    if not inputs:
        raise ValueError("export_onnx: the graph has no inputs.")
    em = onnx_emitter.Emitter(helper, numpy_helper, batch, opset_version, next(iter(inputs)))
    names = {}
    for i, node in enumerate(graph.nodes):
        if node.op == "input":
            names[i] = node.name
        elif node.op == "parameter":
            value = backend.convert_to_numpy(graph.bindings[node.name].data)
            names[i] = em.constant(np.asarray(value), name=node.name)
        elif node.op == "constant":
            names[i] = _constant(em, node, (layers or {}).get(i, "?"))
        else:
            names[i] = _lower(em, graph, i, [names[j] for j in node.inputs], layers or {})
    outputs = []
    for out_name, i in graph.outputs.items():
        em.nodes.append(helper.make_node("Identity", [names[i]], [out_name],
                                         name=em.fresh("output")))
        outputs.append(_value_info(helper, out_name, graph.nodes[i].type, batch))
    graph_inputs = [_value_info(helper, n, graph.nodes[i].type, batch) for n, i in inputs.items()]
    onnx_graph = helper.make_graph(em.nodes, name, graph_inputs, outputs, em.initializers)
    opsets = [helper.make_opsetid("", opset_version)]
    return helper.make_model(onnx_graph, opset_imports=opsets, producer_name="kerasrs",
                             ir_version=helper.find_min_ir_version_for(opsets))


def _lower(em, graph, i, inputs, layers):
    node = graph.nodes[i]
    fn = onnx_lowering.LOWERINGS.get(node.op)
    where = layers.get(i, "?")
    if fn is None:
        raise NotImplementedError(f"export_onnx: layer {where!r} uses the op {node.op!r}, which "
                                  f"has no ONNX lowering (node %{i}, {node.type}, at "
                                  f"{node.site}); the lowered ops are the keys of "
                                  "kerasrs.export.LOWERINGS.")
    try:
        return fn(em, node, inputs, graph.nodes)
    except NotImplementedError as e:
        raise NotImplementedError(f"export_onnx: layer {where!r}: the op {node.op!r} cannot be "
                                  f"lowered to ONNX: {e} (node %{i}, {node.type}, at "
                                  f"{node.site})") from e


def _constant(em, node, where):
    """A constant; one whose axis 0 is the traced batch (an RNN's zero initial state) is
    written as one row expanded to the runtime batch."""
    value = node.value
    if isinstance(value, (bool, int, float)):
        return em.constant(np.asarray(value, node.type.dtype))
    value = np.asarray(value)
    if em.batch and value.ndim and value.shape[0] == em.batch:
        if not (value == value[:1]).all():
            raise NotImplementedError(f"export_onnx: layer {where!r} uses a constant of shape "
                                      f"{value.shape} whose rows differ along the batch axis; "
                                      "export with a fixed batch size")
        return em.add("Expand", [em.constant(value[:1]),
                                 em.shape_tensor(value.shape, "constant")], "batch_constant")
    return em.constant(value)


def _value_info(helper, name, tensor_type, batch):
    shape = list(tensor_type.shape)
    if batch and shape and shape[0] == batch:
        shape[0] = "batch"
    return helper.make_tensor_value_info(name, onnx_emitter.onnx_dtype(tensor_type.dtype), shape)
