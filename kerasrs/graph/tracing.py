"""Tracing: run a function of kerasrs ops once on real values and record each op as a node.

Why by execution and not on symbolic placeholders: kerasrs ops check their arguments eagerly
(shapes, sometimes label ranges) and their `Function`s only know how to compute on arrays, so
running the function once gives every node its exact shape and dtype and reuses every op
unchanged. `Function.apply` calls `Tracer.record` after each forward (the hook is the context
variable `kerasrs.context.tracers`: per thread and per asyncio task, so another thread's ops are
never recorded). The price: Python control flow on tensor values is frozen to the
branch the example took, and a value computed outside any recorded op is baked in as a
constant. `trace` warns about both, naming them (each node's site names the layer whose call
made it); a *strict* tracer (``Tracer(strict=True)``, what ``compile(jit_compile=True)`` uses)
raises `TraceError` instead, at the first of:

- an op whose `Function` is not registered (`kerasrs.graph.register_op`);
- a host read of a traced value: ``bool()``, ``float()``, ``int()``, ``.item()``, ``.numpy()``
  or ``np.asarray`` of a Tensor computed from inputs or variables (`Tensor` reports them);
- an array argument that is neither a traced value, a view of one, nor a constant made by
  `kerasrs.ops.core.constant` (creation ops, masks built in Python): a value computed on the
  raw arrays;
- a `Variable.assign` (``assign_add``, ``assign_sub``) of such a value. Assignments to
  variables while tracing become graph updates (they apply after each run, together); the
  traced run itself changes no variable.
- random numbers drawn on the host by `kerasrs.random` (a graph would repeat them: random
  layers draw with ``random_draw``, a graph op).

Inside the traced function, `grad` gives gradient tensors (real values now, ``gradient`` nodes
in the graph), `assign` declares a parameter update, and `already_computed` marks a value that
must be computed elsewhere anyway.
"""

import contextlib
import inspect
import os
import sys
import warnings

import numpy as np

from kerasrs import context
from kerasrs.autodiff import GradientTape, Tensor, Variable, convert_to_tensor
from kerasrs.graph import registry, text
from kerasrs.graph.ir import Builder, type_of
from kerasrs.ops import core, layout
from kerasrs.ops import math as ops_math

_KERASRS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LAYER_CALL = os.path.join(_KERASRS_DIR, "layers", "base.py")  # where Layer.__call__ runs


class TraceError(RuntimeError):
    """Something in the traced function cannot be captured in a graph (named in the message).

    Attributes:
        what: a short name of the culprit (an op's name, ``"float() of add"``...), for one-line
            warnings.
    """

    def __init__(self, message, what=None):
        super().__init__(message)
        self.what = what


def trace(fn, *args, **kwargs):
    """Trace ``fn(*args, **kwargs)`` into a `Graph`.

    Args:
        fn: a function of Tensors built from kerasrs ops (a model call, a loss, an update).
        *args, **kwargs: example values. Arrays and Tensors become ``input`` nodes named after
            ``fn``'s parameters (their shapes and dtypes are the graph's); `Variable`s become
            ``parameter`` nodes; anything else is passed through as it is.

    Returns:
        A `Graph`. Its outputs are ``fn``'s return value: a dict of Tensors (by name), a
        tuple/list (``output_0``, ``output_1``, ...) or one Tensor (``output``). Its
        ``bindings`` hold every Variable the function read, by ``Variable.path``.

    Raises:
        TraceError: for an op that is not registered (`kerasrs.graph.register_op`), an
            attribute that cannot be written as text, or an `assign` of the wrong type.
    """
    return Tracer().trace(fn, *args, **kwargs)


def _rebind(bound, values):
    new = bound.signature.bind_partial()
    new.arguments.update(values)
    return new


def grad(target, sources, output_gradients=None, unconnected_gradients="zero"):
    """Inside `trace`: gradients of ``target`` with respect to ``sources``, as ``gradient``
    nodes that later ops may use (``w - lr * grad(loss, w)``).

    Args:
        target: a Tensor of any shape (its sum is differentiated, unless ``output_gradients``
            gives the seed).
        sources: a Tensor/Variable or a list of them.
        output_gradients: optional seed with the shape of ``target``.
        unconnected_gradients: "zero" (zeros for a source the target does not depend on) or
            "none" (None for it, as `GradientTape.gradient` gives by default).

    Returns:
        One Tensor or a list, each with its source's shape and dtype. The values are the real
        gradients of this example.

    Raises:
        RuntimeError: outside `trace`.
    """
    tracer = _current("grad")
    flat = list(sources) if isinstance(sources, (list, tuple)) else [sources]
    values = tracer.tape.gradient(target, flat, output_gradients=output_gradients,
                                  unconnected_gradients=unconnected_gradients)
    target_id = tracer.node_of(target, "grad", 0)
    seed = () if output_gradients is None else (tracer.node_of(output_gradients, "grad", 2),)
    results = []
    for source, value in zip(flat, values):
        if value is None:
            results.append(None)
            continue
        node = tracer.builder.add("gradient", (target_id, tracer.node_of(source, "grad", 1))
                                  + seed, type=type_of(value.data), site=_site())
        results.append(tracer.bind(value, node))
    return results if isinstance(sources, (list, tuple)) else results[0]


def assign(variable, value):
    """Inside `trace`: after each run, ``variable`` holds ``value`` (all updates of a run read
    the old values: they apply together at its end). The traced run itself changes nothing.

    Raises:
        RuntimeError: outside `trace`.
        TraceError: if ``variable`` is no Variable, or ``value`` has another shape or dtype.
    """
    tracer = _current("assign")
    if not isinstance(variable, Variable):
        raise TraceError(f"kerasrs.graph.assign: the target must be a Variable. Received: "
                         f"{type(variable).__name__}")
    node = tracer.node_of(value, "assign", 1)
    param = tracer.node_of(variable, "assign", 0)
    want, got = tracer.builder.type(param), tracer.builder.type(node)
    if want != got:
        raise TraceError(f"kerasrs.graph.assign: {variable.path!r} is {want}; the new value must "
                         f"have that shape and dtype (cast it first). Received: {got}")
    name = tracer.builder.nodes[param].name
    tracer.updates[name] = tracer.guarded(name, node)


@contextlib.contextmanager
def updates_if(condition):
    """Inside `trace`: the updates declared in the block (`assign`, ``Variable.assign``) take
    effect only when ``condition`` (a traced 0-d bool Tensor) holds. Each becomes
    ``where(condition, new, old)``, ``old`` being what the variable would hold after the run
    without it: a decision taken in the graph, with no branch (dynamic loss scaling skips a step
    this way). Not nested.

    Raises:
        RuntimeError: outside `trace`, or inside another ``updates_if``.
    """
    tracer = _current("updates_if")
    if tracer._guard is not None:
        raise RuntimeError("kerasrs.graph.updates_if: already inside an updates_if block.")
    tracer._guard = tracer.node_of(condition, "updates_if", 0)
    try:
        yield
    finally:
        tracer._guard = None


def constant(value):
    """A constant: an array-like, or the path of a ``.npy`` file (read now). Inside `trace` it
    is a ``constant`` node of the graph; outside, a Tensor.

    Raises:
        FileNotFoundError: for a missing file.
    """
    if isinstance(value, (str, os.PathLike)):
        value = np.load(value, allow_pickle=False)
    tensor = convert_to_tensor(value)
    tracer = _current(None)
    if tracer is None:
        return tensor
    tensor = Tensor(tensor.data, backend=tensor.backend)
    return tracer.bind(tensor, tracer._constant(tensor.data))


def already_computed(x, name=None):
    """Inside `trace`: ``x``, marked as a value the graph computes anyway (CSE then removes the
    mark; a run of a graph that still has it raises, naming ``name``). Outside: ``x``."""
    tracer = _current(None)
    if tracer is None:
        return x
    node = tracer.builder.add("assert_computed", (tracer.node_of(x, "already_computed", 0),),
                              {"name": name or f"assert_{len(tracer.builder.nodes)}"},
                              tracer.builder.type(tracer.node_of(x, "already_computed", 0)),
                              site=_site())
    x = convert_to_tensor(x)
    return tracer.bind(Tensor(x.data, backend=x.backend), node)


def _current(what):
    for tracer in reversed(context.tracers.get()):
        if isinstance(tracer, Tracer):
            return tracer
    if what is None:
        return None
    raise RuntimeError(f"kerasrs.graph.{what}: only valid inside kerasrs.graph.trace(fn, ...); "
                       "eagerly, use GradientTape and Variable.assign.")


class Tracer:
    """Records the ops of one traced call into a `Builder` (see the module docstring).

    Args:
        strict: raise `TraceError` for what a graph cannot capture (host reads, values computed
            outside recorded ops) instead of warning and baking them in.
    """

    def __init__(self, strict=False):
        self.strict = strict
        self.builder = Builder()
        self.tape = None
        self.updates = {}    # parameter name -> node id of its new value
        self.bindings = {}   # parameter name -> Variable
        self.captured = []   # descriptions of Tensors baked in as constants
        self._tensors = {}   # id(tensor) -> (tensor, node id): the tensor keeps its id unique
        self._params = {}    # id(variable) -> node id
        self._assigned = {}  # id(variable) -> node id of the value a Variable.assign gave it
        self._addresses = {}  # data address -> [(array, node id)], to find views of known values
        self._declared = {}   # data address -> array made by kerasrs.ops.core.constant
        self._guard = None    # node id of the condition of `updates_if`, inside its block

    def trace(self, fn, *args, **kwargs):
        """`trace` with this tracer (see there)."""
        bound = inspect.signature(fn).bind(*args, **kwargs)
        call_args = {name: self.argument(name, value) for name, value in bound.arguments.items()}
        call = _rebind(bound, call_args)
        return self._run(lambda: fn(*call.args, **call.kwargs), call_args)

    def trace_feeds(self, fn, feeds):
        """Trace ``fn(tensors)``, where ``tensors`` maps each name of ``feeds`` (any string: the
        input's name) to its example value as a traced input (arrays and Tensors; other values
        are passed as they are). Returns the `Graph`."""
        tensors = {name: self.argument(name, value) for name, value in feeds.items()}
        return self._run(lambda: fn(tensors), tensors)

    def _run(self, call, arguments):
        token = context.tracers.set(context.tracers.get() + (self,))
        try:
            with GradientTape(persistent=True) as tape:
                tape.watch([t for t in arguments.values()  # integer inputs get no gradient
                            if isinstance(t, Tensor) and _differentiable(t)])
                self.tape = tape
                result = call()
        finally:
            context.tracers.reset(token)
            self.tape = None
        return self.finish(result)

    # -- leaves ------------------------------------------------------------------------------
    def argument(self, name, value):
        """The traced function's argument ``name``: a Tensor bound to a new ``input`` node (a
        Variable stays itself and becomes a parameter when used)."""
        if isinstance(value, Variable) or not _array_like(value):
            return value
        tensor = convert_to_tensor(value)
        tensor = Tensor(tensor.data, backend=tensor.backend)  # our own object for the id map
        node = self.builder.add("input", (), {"name": name}, type_of(tensor.data))
        return self.bind(tensor, node)

    def bind(self, tensor, node):
        """Map ``tensor`` (and its array, for views found later) to ``node``; returns it."""
        self._tensors[id(tensor)] = (tensor, node)
        self._addresses.setdefault(_address(tensor.data), []).append((tensor.data, node))
        return tensor

    def parameter(self, variable):
        node = self._params.get(id(variable))
        if node is None:
            name = variable.path
            while name in self.bindings and self.bindings[name] is not variable:
                name += "'"
            node = self.builder.add("parameter", (), {"name": name}, type_of(variable.data))
            self._params[id(variable)] = node
            self.bindings[name] = variable
        return node

    # -- the hook ----------------------------------------------------------------------------
    def record(self, fn, inputs, out):
        """Called by `Function.apply` after each forward: add the op's node."""
        definition = registry.lookup(fn)
        site = _site()
        if definition is None:
            cls = type(fn)
            raise TraceError(f"kerasrs.graph.trace: op {fn._name()!r} ({cls.__module__}."
                             f"{cls.__qualname__}) is not registered for graphs; register it "
                             f"with kerasrs.graph.register_op or run this code eagerly. At {site}",
                             f"op {fn._name()!r} at {site}")
        attrs = definition.attrs_of(fn)
        for key, value in attrs.items():
            if not text.is_attr_value(value):
                raise TraceError(f"kerasrs.graph.trace: op {definition.name!r} keeps attribute "
                                 f"{key!r} = {value!r} ({type(value).__name__}), which a graph "
                                 f"cannot write as text; list it in `data` if it is an array "
                                 f"input. At {site}")
        ids = [self.node_of(x, definition.name, i) for i, x in enumerate(inputs)]
        data = definition.data_of(fn)
        names = definition.data_names(attrs.get("absent", ())) if definition.data else \
            (None,) * len(data)  # getitem's index arrays: no names
        ids += [self.data_node(a, definition.name, name) for a, name in zip(data, names)]
        node = self.builder.add(definition.name, ids, attrs, type_of(out.data), site=site)
        self.bind(out, node)
        for name in definition.saved:  # arrays the caller may read after the op
            array = getattr(fn, name)
            self._addresses.setdefault(_address(array), []).append(
                (array, self.builder.add("saved", (node,), {"attr": name}, type_of(array),
                                         site=site)))

    # -- what a graph cannot hold ------------------------------------------------------------
    def declare_constant(self, array):
        """``array`` is a constant by construction (`kerasrs.ops.core.constant` calls this):
        used as an op argument, it is baked in without a warning."""
        self._declared[_address(array)] = array

    def host_read(self, tensor, how):
        """`Tensor` calls this when its value is read on the host (``how``: ``"float()"``...).
        Reading a traced value (not a constant) or a variable freezes it: a warning, or
        TraceError if strict."""
        known = self._tensors.get(id(tensor))
        if known is not None:
            op = self.builder.nodes[known[1]].op
            if op == "constant":
                return
            described, what = f"%{known[1]} ({op})", f"{how} of {op}"
        elif isinstance(tensor, Variable):
            described, what = f"variable {tensor.path!r}", f"{how} of {tensor.path}"
        else:
            return
        site = _site()
        self._problem(f"{how} of {described} at {site} reads a traced value on the host: "
                      "Python control flow or a conversion on it would be frozen to this "
                      "example's value", f"{what} at {site}")

    def host_random(self, who):
        """`kerasrs.random` calls this when it draws on the host (``who``: the function): a
        graph would keep this example's numbers (a warning, or TraceError if strict)."""
        site = _site()
        self._problem(f"{who} at {site} draws random numbers on the host, which a replay would "
                      "repeat; draw them with a graph op (kerasrs.layers.core.random_draw, "
                      "as GaussianNoise does)", f"{who} at {site}")

    def _problem(self, description, what):
        """Something the graph cannot hold: TraceError if strict, else a warning at the end."""
        if self.strict:
            raise TraceError("kerasrs.graph.trace: cannot capture this in a graph: "
                             f"{description}. Run this code eagerly (jit_compile=False), or "
                             "keep the computation in kerasrs ops.", what)
        self.captured.append(description)

    def assign_variable(self, variable, value, how="assign"):
        """``variable.assign(value)`` (``assign_add``, ``assign_sub``) while tracing: a graph
        update of ``variable`` (cast to its dtype and broadcast to its shape as ``assign``
        does), applied after each run; the variable itself is not changed now. As in eager
        code, later ops of the traced function that read ``variable`` read the new value (and
        a second assignment builds on it); `assign` (the graph's own) differs there. The value
        must be traced (or a constant made by `kerasrs.ops.core.constant`, or a Python or
        NumPy scalar)."""
        node = self._update_node(value, how)
        token = context.autocast.set(None)  # the update is in the variable's own dtype
        try:
            if how != "assign":
                op = core.Add() if how == "assign_add" else core.Subtract()
                value = op.apply(variable, self._tensor_of(value, node))
                node = self.node_of(value, how, 1)
            if self.builder.type(node).dtype != variable.dtype.name:
                value = ops_math.Cast(variable.dtype).apply(self._tensor_of(value, node))
                node = self.node_of(value, how, 1)
            if self.builder.type(node).shape != variable.shape:
                value = layout.BroadcastTo(variable.shape).apply(self._tensor_of(value, node))
                node = self.node_of(value, how, 1)
        finally:
            context.autocast.reset(token)
        name = self.builder.nodes[self.parameter(variable)].name
        node = self.updates[name] = self.guarded(name, node)
        self._assigned[id(variable)] = node  # later reads see it, as eagerly

    def guarded(self, name, node):
        """The update ``node`` of parameter ``name``, under `updates_if`'s condition if one
        holds: ``where(condition, node, old)`` (``old``: its earlier update, else itself)."""
        if self._guard is None:
            return node
        old = self.updates.get(name)
        if old is None:
            old = self._params[id(self.bindings[name])]
        return self.builder.add("where", (self._guard, node, old), type=self.builder.type(node),
                                site=_site())

    def _update_node(self, value, how):
        """The node of an assigned value; a value computed outside recorded ops is a problem
        (a new value computed on the raw arrays, as a moving average might be)."""
        if isinstance(value, Tensor) and (id(value) in self._tensors or
                                          isinstance(value, Variable)):
            return self.node_of(value, how, 1)
        if isinstance(value, (bool, int, float, np.generic)):
            return self.node_of(value, how, 1)
        array = value.data if isinstance(value, Tensor) else value
        if hasattr(array, "shape") and hasattr(array, "dtype"):
            node = self._view_of(array)
            if node is not None:
                return node
            if self._declared.get(_address(array)) is not array:
                site = _site()
                self._problem(f"{how} of a value of shape {tuple(array.shape)} computed outside "
                              f"recorded ops at {site}", f"{how} of a host value at {site}")
            return self._constant(array)
        return self.node_of(value, how, 1)

    def _tensor_of(self, value, node):
        if isinstance(value, Tensor) and id(value) in self._tensors:
            return value
        tensor = convert_to_tensor(value)
        tensor = Tensor(tensor.data, backend=tensor.backend)
        return self.bind(tensor, node)

    def node_of(self, x, op, index):
        """The node of an op argument: a known tensor, a parameter, a view of a known value,
        or a new constant."""
        if isinstance(x, Tensor):
            known = self._tensors.get(id(x))
            if known is not None:
                return known[1]
            if isinstance(x, Variable):
                node = self._assigned.get(id(x))
                return node if node is not None else self.parameter(x)
            node = self._view_of(x.data)
            if node is None:
                if self._declared.get(_address(x.data)) is not x.data:
                    self.captured.append(f"argument {index} of {op!r}, shape {x.shape} at "
                                         f"{_site()}")
                node = self._constant(x.data)
            return node
        if isinstance(x, (bool, int, float)) and not isinstance(x, np.generic):
            return self.builder.add("constant", (), type=type_of(x), value=x)  # weak
        if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, np.generic):
            node = self._view_of(x)
            return node if node is not None else self._constant(x)
        return self._constant(convert_to_tensor(x).data)

    def data_node(self, array, op, name):
        """The node of an op's data array (its labels, indices): a view of a known value, or a
        constant, baked in with a warning when it is a named data attribute (labels change
        from batch to batch; getitem's index arrays are usually constants: no warning)."""
        node = self._view_of(array) if hasattr(array, "dtype") else None
        if node is None and name is not None and \
                self._declared.get(_address(array)) is not array:
            site = _site()
            self._problem(f"data {name!r} of {op!r}, shape {tuple(np.shape(array))} "
                          f"(not a view of an input: convert it, e.g. labels to int64, "
                          f"before the traced function) at {site}", f"data of {op} at {site}")
        return node if node is not None else self._constant(array)

    def _constant(self, array):
        from kerasrs.backend import convert_to_numpy

        value = np.array(convert_to_numpy(array))
        return self.builder.add("constant", (), type=type_of(value), value=value, site=_site())

    def _view_of(self, array):
        """The node whose value is ``array`` (same memory, shape, strides and dtype), or a new
        ``reshape`` of a contiguous one with the same memory; None if there is none."""
        entries = self._addresses.get(_address(array), ())
        for known, node in reversed(entries):
            if known.shape == array.shape and known.strides == array.strides and \
                    known.dtype == array.dtype:
                return node
        for known, node in reversed(entries):
            if known.dtype == array.dtype and known.size == array.size and \
                    known.flags.c_contiguous and array.flags.c_contiguous:
                reshaped = self.builder.add("reshape", (node,),
                                            {"newshape": tuple(int(n) for n in array.shape)},
                                            type_of(array), site=_site())
                self._addresses[_address(array)].append((array, reshaped))
                return reshaped
        return None

    # -- the end -----------------------------------------------------------------------------
    def finish(self, result):
        """The `Graph` with ``result`` as its outputs (see `trace`)."""
        if isinstance(result, dict):
            items = list(result.items())
        elif isinstance(result, (list, tuple)):
            items = [(f"output_{i}", r) for i, r in enumerate(result)]
        elif result is None:
            items = []
        else:
            items = [("output", result)]
        outputs = {}
        for name, value in items:
            if not isinstance(name, str):
                raise TraceError(f"kerasrs.graph.trace: output names must be str. Received: "
                                 f"{name!r}")
            outputs[name] = self.node_of(value, "output", name)
        if self.captured and not self.strict:  # strict: the trainer checks by tracing again
            warnings.warn("kerasrs.graph.trace: values computed outside recorded ops were baked "
                          "in as constants (they will not change between runs): "
                          + "; ".join(self.captured), stacklevel=3)
        return self.builder.graph(outputs, self.updates, self.bindings)


def _differentiable(tensor):
    """Float, complex and bfloat16 tensors carry gradients (the tape's rule)."""
    dtype = tensor.data.dtype
    return dtype.kind in "fc" or dtype.name == "bfloat16"


def _array_like(value):
    if isinstance(value, (Tensor, np.ndarray, list)):
        return True
    return hasattr(value, "__cuda_array_interface__")


def _address(array):
    interface = getattr(array, "__cuda_array_interface__", None) or array.__array_interface__
    return interface["data"][0]


def _site():
    """``file:line`` of the innermost caller outside the kerasrs package (and its generated
    op wrappers), else of the innermost frame; followed by ``, in layer 'name' (Class)`` when
    a layer's call runs (the innermost), so that a message about a node names its layer."""
    frame = sys._getframe(1)
    site = first = layer = None
    while frame is not None and (site is None or layer is None):
        code = frame.f_code
        name = code.co_filename
        if layer is None and code.co_name == "__call__" and \
                os.path.abspath(name) == _LAYER_CALL:
            layer = frame.f_locals.get("self")
        if site is None:
            path = os.path.abspath(name)
            here = f"{os.path.basename(path)}:{frame.f_lineno}"
            first = first or here
            if not path.startswith(_KERASRS_DIR + os.sep) and not name.startswith("<kerasrs"):
                site = here
        frame = frame.f_back
    site = site or first
    if layer is None:
        return site
    return f"{site}, in layer {getattr(layer, 'name', '?')!r} ({type(layer).__name__})"
