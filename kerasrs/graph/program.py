"""Replay: `compile` a graph into a `Program` that runs it again and again.

A program keeps one `Plan` per input shape signature (a short last batch gets its own). The
plan is made on the first run with those shapes: a list of steps in graph order, where

- an op node makes its Function from the registry and calls ``apply`` (the op's own forward);
  the instance is kept until the ``vjp`` node that calls its ``backward``;
- a fused group (`kerasrs.graph.fusion`) is one call of its generated kernel, run on both cores
  for large arrays (`kerasrs.backend.cpu_threads`), writing into buffers planned once: an
  output that is a parameter's new value goes straight into the parameter's memory when
  nothing reads the old value later (an in-place update); other outputs reuse buffers whose
  values are dead (by liveness, with views and saved Function state counted as reads);
- on NumPy, a large result of an op whose Function can write into a given array
  (``Function.writes_out``: projections, adds, layer norms) goes to such a buffer too: a fresh
  array of that size may be faulted in page by page on every step;
- each value is dropped after its last use.

At the end of a run the remaining updates are copied into their variables (all of them read
the old values: updates apply together). On the NumPy backend fused groups run as numba
kernels; on CuPy (`kerasrs.graph.cuda_launch`) groups without a broadcast input launch their
generated CUDA kernel (`kerasrs.graph.cuda_codegen`) through ``cupy.RawKernel``, the others run
unfused, buffers are device memory, and the step can be captured once and relaunched as a CUDA
graph (``cuda_graph=True``).
"""

import numpy as np

from kerasrs import backend as backend_module
from kerasrs.autodiff import Tensor, no_grad
from kerasrs.graph import backward, cuda_launch, fusion, passes, registry
from kerasrs.graph import steps as replay_steps
from kerasrs.graph.ir import FUNCTION_USERS, STRUCTURAL, type_of
from kerasrs.graph.steps import as_tensor, dtype_object

END = float("inf")  # the position of reads after the last step (outputs, updates)
PLANNED_ELEMENTS = 1 << 15  # an op result this large (elements) gets a planned buffer


def compile(graph, fuse=True, optimize=True, cuda_graph=None):  # noqa: A001  (Keras's name)
    """A `Program` running ``graph``.

    Args:
        graph: a `Graph`; its ``gradient`` nodes are differentiated first
            (`kerasrs.graph.differentiate`).
        fuse: fuse elementwise chains into generated kernels (numba on NumPy, RawKernels
            on CuPy).
        optimize: run `kerasrs.graph.passes.optimize` (folding, simplification, CSE, dead
            nodes) first.
        cuda_graph: on CuPy, capture the step as a CUDA graph after one warm-up step and
            relaunch it (`kerasrs.graph.cuda_launch.CapturedPlan`); None reads the
            ``KERASRS_CUDA_GRAPH`` environment variable ("1": on). Ignored on NumPy.

    Returns:
        A `Program`.

    Raises:
        RuntimeError: if an ``assert_computed`` node is left (it names the node).
        ValueError: if a parameter has no bound variable, or one of another type.
    """
    if any(n.op == "gradient" for n in graph.nodes):
        graph = backward.differentiate(graph)
    if optimize:
        graph = passes.optimize(graph)
    return Program(graph, fuse, cuda_graph)


def run(graph, **feeds):
    """Run ``graph`` once, unfused and as it is (the reference executor; ``graph.run``).

    Returns:
        ``{output name: Tensor}``; the updates are applied to the bound variables.
    """
    return compile(graph, fuse=False, optimize=False)(**feeds)


class Program:
    """A runnable graph: ``program(**feeds)`` -> ``{output name: Tensor}``.

    Attributes:
        graph: the graph it runs (after differentiation and passes).
    """

    def __init__(self, graph, fuse=True, cuda_graph=None):
        for i, node in enumerate(graph.nodes):
            if node.op == "assert_computed":
                raise RuntimeError(
                    f"kerasrs.graph: assertion {node.name!r} (%{i}, made at {node.site}) "
                    f"failed: the value it marks is not computed elsewhere in the graph, so it "
                    f"would be computed just for this. Run kerasrs.graph.passes.cse first if "
                    f"the computation exists. Received: %{i} = assert_computed(%"
                    f"{node.inputs[0]}) on a {graph.nodes[node.inputs[0]].op} node")
            if node.op == "gradient":
                raise ValueError(f"kerasrs.graph.Program: %{i} is a gradient node; "
                                 "differentiate the graph first (kerasrs.graph.compile does).")
        missing = [name for name in graph.parameter_ids() if name not in graph.bindings]
        if missing:
            raise ValueError(f"kerasrs.graph.Program: parameters without a variable: {missing}. "
                             "Bind them with graph.with_bindings({name: Variable}) or load the "
                             "graph with kerasrs.graph.load(directory).")
        for kind, ids in (("input", graph.input_ids()), ("parameter", graph.parameter_ids())):
            if sum(n.op == kind for n in graph.nodes) != len(ids):  # a run fills one per name
                raise ValueError(f"kerasrs.graph.Program: several {kind} nodes share a name; "
                                 "merge them first (kerasrs.graph.cse, which compile runs "
                                 "unless optimize=False).")
        wrong = [f"{name!r} is {graph.nodes[i].type} but its variable "
                 f"{type_of(graph.bindings[name].data)}"
                 for name, i in graph.parameter_ids().items()
                 if type_of(graph.bindings[name].data) != graph.nodes[i].type]
        if wrong:  # a planned run reads and writes the declared sizes in place
            raise ValueError(f"kerasrs.graph.Program: parameters bound to variables of another "
                             f"type: {'; '.join(wrong)}.")
        self.graph = graph
        self.fuse = fuse
        self.cuda_graph = cuda_launch.cuda_graph_requested(cuda_graph)
        self._plans = {}
        self._inputs = [(name, i, graph.nodes[i].type) for name, i in graph.input_ids().items()]
        self._dtypes = [dtype_object(t.dtype) for _, _, t in self._inputs]

    def __call__(self, **feeds):
        """Run one step: ``feeds`` maps each input name to an array (or Tensor) of its dtype.

        Returns:
            ``{output name: Tensor}``; the parameters' updates are applied.

        Raises:
            ValueError: for a missing, unknown or wrongly typed feed (naming it).
        """
        arrays = self._arrays(feeds)
        key = tuple((name, a.shape) for name, a in arrays.items())
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._plan(arrays)
        return plan.run(arrays, self.graph.bindings)

    def plan_for(self, **feeds):
        """The `Plan` these feeds' shapes use (made if needed, without running a step)."""
        arrays = self._arrays(feeds)
        key = tuple((name, a.shape) for name, a in arrays.items())
        if key not in self._plans:
            self._plans[key] = self._plan(arrays)
        return self._plans[key]

    def _arrays(self, feeds):
        inputs = self._inputs
        if len(feeds) != len(inputs) or any(name not in feeds for name, _, _ in inputs):
            names = [name for name, _, _ in inputs]
            unknown = sorted(set(feeds) - set(names))
            missing = [n for n in names if n not in feeds]
            raise ValueError(f"kerasrs.graph.Program: feed exactly the inputs {names}. "
                             f"Received: missing {missing}, unknown {unknown}")
        arrays = {}
        for (name, _, want), dtype in zip(inputs, self._dtypes):
            value = feeds[name]
            value = value.data if isinstance(value, Tensor) else value
            if not hasattr(value, "dtype") or not hasattr(value, "shape"):
                value = np.asarray(value)
            if value.dtype != dtype or len(value.shape) != len(want.shape):
                raise ValueError(f"kerasrs.graph.Program: input {name!r} must be {want.dtype} "
                                 f"of rank {len(want.shape)} (traced as {want}). Received: "
                                 f"{value.dtype.name}{list(value.shape)}")
            arrays[name] = value
        return arrays

    def _plan(self, arrays):
        graph = self.graph
        declared = all(arrays[n].shape == graph.nodes[i].type.shape
                       for n, i in graph.input_ids().items())
        be = backend_module.backend_of(next(iter(arrays.values()))) if arrays else \
            backend_module.get()
        device = cuda_launch.device_for(be)
        types = [n.type for n in graph.nodes] if declared else \
            Plan(graph, None, False, be, device).types_for(arrays, graph.bindings)
        plan = Plan(graph, types, self.fuse and be.name in ("numpy", "cupy"), be, device)
        return cuda_launch.CapturedPlan(plan, be.xp) if device and self.cuda_graph else plan


class Plan:
    """The steps for one shape signature (see the module docstring). ``labels`` names each
    step (its op, ``vjp of <op>`` or ``fused <n> ops``), for profiles.

    Args:
        graph: the graph.
        types: per node, its type for this signature (None: unknown, then nothing is fused,
            no value is dropped and gradients fit the shapes seen at run time).
        fuse: whether to fuse elementwise groups and give large results of ops that can
            write into a given array (`Function.writes_out`) buffers kept across steps.
        backend: the `Backend` the values live on (None: found per op by ``apply``).
        device: None (NumPy: numba kernels, host buffers) or the `cuda_launch.CudaFusion`
            that keeps, allocates and launches the groups on CuPy.
    """

    def __init__(self, graph, types, fuse, backend=None, device=None):
        self.graph, self.types, self.backend, self.device = graph, types, backend, device
        nodes = graph.nodes
        self.fn_users = {}  # op node id -> ids of the vjp/saved nodes that use its Function
        for i, node in enumerate(nodes):
            if node.op in FUNCTION_USERS:
                self.fn_users.setdefault(node.inputs[0], []).append(i)
        self.fuse = fuse and types is not None  # fused groups, and planned op results
        self.groups = self._fusion_groups() if self.fuse else []
        self.position = list(range(len(nodes)))
        for group in self.groups:
            for i in group.members:
                self.position[i] = group.members[-1]
        self.roots = self._alias_roots()
        self.last_read = self._last_reads()
        self.storage = self._storage()
        self.consumers = graph.consumers()
        self.template = [n.value if n.op == "constant" else None for n in nodes]
        if device is not None:  # array constants live where the step runs, copied once
            self.template = device.constants(self.template)
        self.steps = self._steps()
        live = self._live_state()
        self.outputs = [(name, j, bool(self.roots[j] & live))  # (copied: shares live memory)
                        for name, j in graph.outputs.items()]
        self.copy_outputs = {name: copy for name, _, copy in self.outputs}
        self.feed_slots = list(graph.input_ids().items())
        self.param_slots = list(graph.parameter_ids().items())
        self.pending = self._pending_updates()

    # -- analysis ----------------------------------------------------------------------------
    def _fusion_groups(self):
        graph, types = self.graph, self.types
        candidates = set()
        for i, node in enumerate(graph.nodes):
            if node.op in STRUCTURAL:
                continue
            definition = registry.get(node.op)
            if fusion.fusible(i, node, types, definition, i in self.fn_users):
                candidates.add(i)
        groups = fusion.groups(graph, types, candidates, graph.roots())
        return groups if self.device is None else self.device.keep(graph, groups, types)

    def reads(self, i):
        """The ids whose values the step of node ``i`` reads (a vjp also reads what its
        Function holds: the forward op's inputs and output)."""
        node = self.graph.nodes[i]
        if node.op == "vjp":
            forward = node.inputs[0]
            return set(node.inputs) | set(self.graph.nodes[forward].inputs)
        return set(node.inputs)

    def _alias_roots(self):
        """Per node, the ids whose memory its value may share: itself, plus for a view-making
        op its inputs' roots, for a vjp's gradients the roots of ``gy`` (a backward's results
        share memory at most with ``gy``), for a pick the vjp's."""
        nodes = self.graph.nodes
        fused = {i for g in self.groups for i in g.members}
        roots = []
        for i, node in enumerate(nodes):
            mine = {i}
            if node.op == "pick":
                mine |= roots[node.inputs[0]]
            elif node.op == "vjp":
                mine |= roots[node.inputs[1]]
            elif node.op == "assert_computed":
                mine |= roots[node.inputs[0]]
            elif node.op not in ("input", "parameter", "constant", "saved") and \
                    i not in fused and \
                    not registry.get(node.op).fresh:
                for j in node.inputs:
                    mine |= roots[j]
            roots.append(frozenset(mine))
        return roots

    def _last_reads(self):
        """{root id: the last position at which a value sharing its memory is read}."""
        last = {}
        members = {i for g in self.groups for i in g.members}
        readers = [(i, self.reads(i)) for i in range(len(self.graph.nodes)) if i not in members]
        readers += [(g.members[-1], set(g.inputs)) for g in self.groups]
        for i, ids in readers:
            at = self.position[i]
            for j in ids:
                for root in self.roots[j]:
                    last[root] = max(last.get(root, -1), at)
        for j in self.graph.roots():
            for root in self.roots[j]:
                last[root] = END
        return last

    def _live_state(self):
        """Ids of parameters and planned buffers: outputs sharing their memory are copied."""
        params = set(self.graph.parameter_ids().values())
        return params | {i for i, s in self.storage.items() if s[0] == "buffer"}

    def _storage(self):
        """{fused output id: ("param", name) | ("buffer", array) | ("fresh", None)}, plus
        ("buffer", array) for the op nodes of `_writing_ops` (their Functions write into it)."""
        graph, types = self.graph, self.types
        params = graph.parameter_ids()
        by_value = {}
        for name, j in graph.updates.items():
            by_value.setdefault(j, name)
        outputs = set(graph.outputs.values())
        storage, pool, busy = {}, {}, []
        writers = [(g.members[-1], g.outputs, g) for g in self.groups] + \
            [(at, (i,), None) for at, i in self._writing_ops(outputs)]
        for at, ids, group in sorted(writers, key=lambda w: w[0]):
            for entry in [b for b in busy if b[0] < at]:  # buffers whose values are dead
                busy.remove(entry)
                pool.setdefault(entry[1], []).append(entry[2])
            for i in ids:
                name = by_value.get(i) if group is not None else None
                if name is not None and self._in_place(group, i, params[name]):
                    storage[i] = ("param", name)
                    by_value.pop(i)
                elif i in outputs:
                    storage[i] = ("fresh", None)
                else:
                    key = (types[i].dtype, types[i].shape)
                    free = pool.get(key)
                    array = free.pop() if free else (self.device or np).empty(
                        types[i].shape, types[i].dtype)
                    storage[i] = ("buffer", array)
                    busy.append((self.last_read.get(i, END), key, array))
        return storage

    def _writing_ops(self, outputs):
        """``[(position, id)]``: the large results (NumPy only) of op nodes whose Function
        `writes_out`, and the gradients its ``vjp`` gives to ``pick`` nodes where it
        `writes_grad_out` (written at the vjp's position). A buffer kept across steps is
        cheaper than a fresh array, which the allocator may have to fault in page by page each
        step (the transformer benchmark: most
        of its ~3,500 page faults per step were its projections', residual adds' and layer
        norms' results). Not graph outputs and not parameter updates (returned or copied)."""
        if self.device is not None or not self.fuse:
            return []
        nodes = self.graph.nodes
        fused = {i for g in self.groups for i in g.members}
        skip = fused | set(outputs) | set(self.graph.updates.values())
        found = []
        for i, node in enumerate(nodes):
            at, grad = i, None
            if node.op == "pick" and nodes[node.inputs[0]].op == "vjp":
                at, grad = node.inputs[0], node.attrs["index"]
                node = nodes[nodes[at].inputs[0]]  # the forward op
            elif node.op in STRUCTURAL:
                continue
            t = self.types[i]
            if i in skip or isinstance(t, tuple) or t is None or \
                    int(np.prod(t.shape)) < PLANNED_ELEMENTS:
                continue
            definition = registry.get(node.op)
            function = definition.function if definition is not None else None
            if getattr(function, "writes_out", False) if grad is None else \
                    grad in getattr(function, "writes_grad_out", ()):
                found.append((at, i))
        return found

    def _in_place(self, group, i, param):
        """Whether fused output ``i`` may be written into parameter ``param``'s memory: same
        type, nothing reads the old value after the group, and no group input is another view
        of it (a transposed one would be read after being overwritten)."""
        return self.types[param] == self.types[i] and \
            self.last_read.get(param, -1) <= group.members[-1] and \
            not any(param in self.roots[j] for j in group.inputs if j != param)

    # -- steps -------------------------------------------------------------------------------
    def _steps(self):
        """``[(step, ids to drop after it)]``; runs of fused groups that can run together
        (`_independent`) become one step, so a model's optimizer update wakes the other
        threads once (as the eager multi-tensor update does), not once per variable."""
        graph = self.graph
        members = {i: g for g in self.groups for i in g.members}
        drop = self._drops()
        steps, self.labels = [], []
        run = []  # consecutive fused groups not yet made a step: [(group, part)]

        def flush():
            if run:
                steps.append((replay_steps.fused_run([part for _, part in run]),
                              tuple(j for g, _ in run for j in drop.get(g.members[-1], ()))))
                self.labels.append(" + ".join(f"fused {len(g.members)} ops" for g, _ in run))
                run.clear()

        for i, node in enumerate(graph.nodes):
            group = members.get(i)
            if group is not None:
                if i == group.members[-1]:
                    if self.device is not None:  # CuPy: one RawKernel launch per group
                        flush()
                        steps.append((self.device.fused_step(self, group), drop.get(i, ())))
                        self.labels.append(f"fused {len(group.members)} ops")
                        continue
                    part = replay_steps.fused_part(self, group)
                    if run and not all(self._independent(g, group) for g, _ in run):
                        flush()
                    run.append((group, part))
                continue
            make = _STEPS.get(node.op, replay_steps.op_step)
            step = make(self, i, node)
            if step is not None:
                flush()
                steps.append((step, drop.get(i, ())))
                self.labels.append(node.op if node.op != "vjp" else
                                   f"vjp of {graph.nodes[node.inputs[0]].op}")
        flush()
        return steps

    def _independent(self, a, b):
        """Whether fused groups ``a`` (earlier) and ``b`` may run at once: neither reads nor
        writes memory the other writes (outputs by alias roots, planned buffers by identity;
        a buffer is reused only after its value is dead, so it may be ``a``'s input and
        ``b``'s output)."""
        def written(g):
            ids, arrays = set(), set()
            for i in g.outputs:
                where, what = self.storage[i]
                if where == "buffer":
                    arrays.add(id(what))
                ids |= self.roots[i] | ({self.graph.parameter_ids()[what]} if where == "param"
                                         else set())
            return ids, arrays

        def read(g):
            ids, arrays = set(), set()
            for j in g.inputs:
                ids |= self.roots[j]
                where, what = self.storage.get(j, (None, None))
                if where == "buffer":
                    arrays.add(id(what))
            return ids, arrays

        (wa, ba), (wb, bb) = written(a), written(b)
        (ra, rba), (rb, rbb) = read(a), read(b)
        return not (wa & (rb | wb) or wb & ra or ba & (rbb | bb) or bb & rba)

    def _drops(self):
        """{position: ids whose last direct reader runs there}. Leaves are kept (their memory
        belongs to the caller, the variables or the plan); with unknown types nothing is
        dropped, so that every shape can be read at the end."""
        if self.types is None:
            return {}
        keep = set(self.graph.roots()) | {i for i, n in enumerate(self.graph.nodes)
                                          if n.op in ("input", "parameter", "constant")}
        last = {}
        members = {i for g in self.groups for i in g.members}
        for i in range(len(self.graph.nodes)):
            if i not in members:
                for j in self.graph.nodes[i].inputs:
                    last[j] = self.position[i]
        for g in self.groups:
            for j in g.inputs:
                last[j] = max(last.get(j, -1), g.members[-1])
        drop = {}
        for j, at in last.items():
            if j not in keep:
                drop.setdefault(at, []).append(j)
        return drop

    # -- running -----------------------------------------------------------------------------
    def run(self, feeds, bindings):
        """One step: returns ``{output name: Tensor}`` and applies the updates."""
        values = self.execute(feeds, bindings)
        outputs = {}
        for name, j, copy in self.outputs:
            value = values[j]
            if copy and hasattr(value, "copy"):
                value = value.copy()
            outputs[name] = as_tensor(value)
        self._apply_updates(values, bindings)
        return outputs

    def execute(self, feeds, bindings):
        """Run the steps; returns the list of node values (dropped ones are None). Changes
        no variable, except through in-place fused updates (`run` applies the others)."""
        values = list(self.template)
        for name, i in self.feed_slots:
            values[i] = feeds[name]
        for name, i in self.param_slots:
            values[i] = bindings[name].data
        fns = {}
        with no_grad():
            for step, drop in self.steps:
                step(values, fns)
                for j in drop:
                    values[j] = None
        return values

    def _pending_updates(self):
        """``[(variable name, value id, copied first)]``: the updates not written in place; a
        value sharing another target's memory is copied before any is written."""
        params = self.graph.parameter_ids()
        pending = [(name, j) for name, j in self.graph.updates.items()
                   if self.storage.get(j) != ("param", name)]
        updated = {params[name] for name, _ in pending}
        return [(name, j, bool((self.roots[j] & updated) - {params[name]}))
                for name, j in pending]

    def _apply_updates(self, values, bindings):
        arrays = [values[j].copy() if copy else values[j] for _, j, copy in self.pending]
        for (name, _, _), array in zip(self.pending, arrays):
            bindings[name].data[...] = array

    def types_for(self, feeds, bindings):
        """The type of every node for these feeds, from one unfused run that changes no
        variable (this plan must have been made without types: it drops no value)."""
        values = self.execute(feeds, bindings)
        return [tuple(None if g is None else type_of(g) for g in v) if isinstance(v, tuple)
                else type_of(v) for v in values]

    def describe(self):
        """A short text: the fused groups and where each output is written."""
        lines = []
        for g in self.groups:
            where = ", ".join(f"%{i}->{self.storage[i][0]}" +
                              (f" {self.storage[i][1]}" if self.storage[i][0] == "param" else "")
                              for i in g.outputs)
            lines.append(f"fused {len(g.members)} ops at %{g.members[-1]} {g.shape}: {where}")
        return "\n".join(lines)




_STEPS = {"vjp": replay_steps.vjp_step, "pick": replay_steps.pick_step,
          "saved": replay_steps.saved_step, "input": replay_steps.leaf_step,
          "parameter": replay_steps.leaf_step, "constant": replay_steps.leaf_step}
