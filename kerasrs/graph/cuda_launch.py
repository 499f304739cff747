"""Graph replay on the CuPy backend: fused groups as RawKernels, and CUDA-graph capture.

`CudaFusion` is what a `kerasrs.graph.program.Plan` asks on CuPy (its ``device``): which fused
groups to keep (those without a broadcast input: `kerasrs.graph.cuda_codegen` writes only the
flat form; the others run unfused, op by op), where planned buffers live (device memory, made
once per plan) and the step of a group: one launch of its generated kernel through
``cupy.RawKernel``, compiled once per source (so per group and dtype; CuPy keeps the binaries)
with `cuda_codegen.NVRTC_OPTIONS`, on the grid-stride geometry of the backend's other kernels
(`kerasrs.backend.kernels.cuda.LauncherBase._grid`). A parameter's new value is written into
its own memory (in place) when the plan says so; nothing is read back to the host.

`CapturedPlan` (opt-in: ``kerasrs.graph.compile(..., cuda_graph=True)`` or
``KERASRS_CUDA_GRAPH=1`` for ``compile(jit_compile=True)``) runs the plan's first step as usual
(the warm-up: kernels compiled, cuBLAS ready), captures the second with CuPy's stream capture
(``Stream.begin_capture``/``end_capture`` -> ``cupy.cuda.Graph``) and from then on copies each
step's feeds into the captured input buffers and relaunches the graph on the current stream.
Memory allocated while capturing comes from a pool of its own, kept with the graph, so nothing
outside the graph reuses what the graph writes. If the parameters' arrays were replaced (for
example by ``set_weights`` that allocates) the graph is dropped and captured again. A step
with a random draw (dropout: its key is drawn on the host) is not captured, nor one whose
capture fails (a copy between host and device, an allocator that cannot capture): one
warning, and the plan runs uncaptured from then on.
"""

import copy
import os
import warnings

import numpy as np

from kerasrs import backend as backend_module
from kerasrs.autodiff import Tensor
from kerasrs.graph import cuda_codegen, registry
from kerasrs.graph.ir import STRUCTURAL

ENV = "KERASRS_CUDA_GRAPH"
_KERNELS = {}  # (array module, source) -> cupy.RawKernel


def cuda_graph_requested(cuda_graph):
    """``cuda_graph`` as a bool; None reads ``KERASRS_CUDA_GRAPH`` ("1"/"true": on)."""
    if cuda_graph is None:
        return os.environ.get(ENV, "").strip().lower() in ("1", "true", "yes", "on")
    return bool(cuda_graph)


def kernel(xp, source, name):
    """The ``RawKernel`` of a generated source, made once per array module and source."""
    key = (id(xp), source)
    k = _KERNELS.get(key)
    if k is None:
        k = _KERNELS[key] = xp.RawKernel(source, name, options=cuda_codegen.NVRTC_OPTIONS)
    return k


class CudaFusion:
    """The device side of a CuPy `Plan` (see the module docstring).

    Args:
        backend: the CuPy `Backend` the plan runs on.
    """

    def __init__(self, backend):
        self.backend, self.xp = backend, backend.xp

    def keep(self, graph, groups, types):
        """The groups that get a kernel: those with a flat form (no broadcast input) whose
        arrays are all floats (a guarded update's boolean condition is not read on the GPU:
        its group runs unfused)."""
        def flat_floats(g):
            kinds = cuda_codegen.fusion.classify_inputs(graph, g, types)
            return "broadcast" not in kinds and all(
                kind == "weak" or types[j].dtype in cuda_codegen.C_TYPES
                for j, kind in zip(g.inputs, kinds))

        return [g for g in groups if flat_floats(g)]

    def empty(self, shape, dtype):
        return self.xp.empty(shape, dtype)

    def constants(self, template):
        """The plan's constant values with host arrays copied to the device (once, here: a
        traced index array, such as the rows a loss picks, is a host constant in the graph)."""
        return [self.xp.asarray(v) if isinstance(v, np.ndarray) else v for v in template]

    def fused_step(self, plan, group):
        """The step that launches ``group``'s kernel: reads the inputs that are not inlined,
        writes each output where ``plan.storage`` puts it."""
        xp, graph, types = self.xp, plan.graph, plan.types
        source, name, kinds = cuda_codegen.cuda_source(graph, group, types)
        k = kernel(xp, source, name)
        params = graph.parameter_ids()
        readers = [j for j, kind in zip(group.inputs, kinds) if kind != "weak"]
        writers = []
        for i in group.outputs:
            where, array = plan.storage[i]
            writers.append((i, where, params[array] if where == "param" else array,
                            types[i].dtype))
        shape = group.shape
        size = int(np.prod(shape))
        grid, block = self.backend.kernels._grid(size)
        n = np.int64(size)
        contiguous = xp.ascontiguousarray

        def step(values, fns):
            args = [contiguous(values[j]) for j in readers]
            for i, where, target, dtype in writers:
                if where == "param":
                    out = values[target]
                elif where == "buffer":
                    out = target
                else:
                    out = xp.empty(shape, dtype)
                values[i] = out
                args.append(out)
            args.append(n)
            k(grid, block, tuple(args))

        return step


def device_for(backend):
    """The `CudaFusion` of ``backend`` when it is CuPy, else None."""
    return CudaFusion(backend) if backend.name == "cupy" else None


class CapturedPlan:
    """A `Plan` replayed as a CUDA graph after one warm-up step (see the module docstring).
    Everything but `run` is the plan's (``labels``, ``groups``, ``describe()``...).

    Steps whose results live on the host (an optimizer's ``iterations`` counter is a host
    variable, so that its step-size scalars need no device read) are no device work and a
    graph would not repeat them: they run in Python before every launch, and their updates
    are applied after it.

    Attributes:
        captured: whether a graph is held now; ``launches``: graph launches so far;
        ``failed``: a capture failed (the plan runs uncaptured).
    """

    warned = False  # one warning per process for a failed capture

    def __init__(self, plan, xp):
        self.plan, self.xp = plan, xp
        self.steps_run, self.failed, self.launches = 0, False, 0
        self._graph = None

    def __getattr__(self, name):
        return getattr(self.plan, name)

    @property
    def captured(self):
        return self._graph is not None

    def run(self, feeds, bindings):
        """One step: as `Plan.run` (outputs are fresh arrays, updates applied)."""
        self.steps_run += 1
        if self._graph is not None and not self._same_arrays(bindings):
            self._graph = None  # a variable got new memory: capture again
            return self.plan.run(feeds, bindings)
        if self._graph is None:
            if self.failed or self.steps_run == 1:
                return self.plan.run(feeds, bindings)
            try:
                host = self._capture(feeds, bindings)
            except Exception as e:  # noqa: BLE001  (any capture failure falls back)
                self.failed, self._graph = True, None
                if not CapturedPlan.warned:
                    CapturedPlan.warned = True
                    warnings.warn(f"kerasrs.graph: capturing the replayed step as a CUDA graph "
                                  f"failed; it runs uncaptured. Received: "
                                  f"{type(e).__name__}: {e}", RuntimeWarning, stacklevel=3)
                return self.plan.run(feeds, bindings)
        else:
            self._refill(feeds)
            host = self._run_steps(self._host_steps, feeds, bindings)
        self._graph.launch(stream=self.xp.cuda.get_current_stream())
        self.launches += 1
        for name, j in self._host_updates:
            bindings[name].data[...] = host[j]
        outputs = {}
        for name, j in self.plan.graph.outputs.items():
            value = host[j] if j in self._host_ids else self._values[j]
            outputs[name] = _tensor(value.copy() if hasattr(value, "copy") else value)
        return outputs

    def _same_arrays(self, bindings):
        """Whether every variable still holds the array the graph was captured with."""
        return len(bindings) == len(self._bound) and \
            all(v.data is a for v, a in zip(bindings.values(), self._bound))

    def _refill(self, feeds):
        for name, buffer in self._inputs.items():
            value = feeds[name]
            if isinstance(value, np.ndarray):
                buffer.set(np.ascontiguousarray(value))
            else:
                buffer[...] = value

    def _run_steps(self, steps, feeds, bindings, host_steps=None):
        """`Plan.execute` over ``steps``; with ``host_steps`` (a list) the steps whose results
        are all on the host are appended to it."""
        if host_steps is not None:
            steps = [(_watch(step, drop, host_steps), drop) for step, drop in steps]
        plan = copy.copy(self.plan)
        plan.steps = steps
        return plan.execute(feeds, bindings)

    def _capture(self, feeds, bindings):
        """Capture the plan's device work and its updates on a side stream (capturing runs
        nothing on the device); returns the node values (the host ones are real)."""
        xp, plan, graph = self.xp, self.plan, self.plan.graph
        for i, node in enumerate(graph.nodes):
            if node.op not in STRUCTURAL and not registry.get(node.op).pure:
                raise RuntimeError(f"%{i} = {node.op} draws random numbers (or has effects) "
                                   "from host state each step; a CUDA graph would repeat what "
                                   "it drew when captured")
        self._inputs = {name: xp.empty(v.shape, v.dtype) for name, v in feeds.items()
                        if not _on_host(v)}
        self._refill(feeds)
        fed = {**feeds, **self._inputs}
        on_host = {name for name, v in bindings.items() if _on_host(v.data)}
        # host variables are updated after each launch, not by the capture
        device = {name: v if name not in on_host else _Scratch(v.data)
                  for name, v in bindings.items()}
        pool, stream = xp.cuda.MemoryPool(), xp.cuda.Stream(non_blocking=True)
        host_steps = []
        with xp.cuda.using_allocator(pool.malloc), stream:
            stream.begin_capture()
            try:
                values = self._run_steps(plan.steps, fed, bindings, host_steps)
                plan._apply_updates(values, device)
            except BaseException:
                try:  # leave the stream usable; the step's own error is the one to report
                    stream.end_capture()
                except Exception:  # noqa: BLE001,S110
                    pass
                raise
            captured = stream.end_capture()
        self._values, self._pool, self._graph = values, pool, captured
        self._host_steps = host_steps
        self._host_ids = {i for i, v in enumerate(values) if v is not None and _on_host(v)}
        self._host_updates = [(name, j) for name, j in graph.updates.items() if name in on_host]
        self._bound = [v.data for v in bindings.values()]
        return values


def _watch(step, drop, host_steps):
    """``step`` noting itself in ``host_steps`` when all the values it makes are on the host."""
    def run(values, fns):
        before = list(map(id, values))
        step(values, fns)
        made = [v for v, b in zip(values, before) if id(v) != b and v is not None]
        if made and all(map(_on_host, made)):
            host_steps.append((step, drop))
    return run


class _Scratch:
    """Where a capture writes a host variable's update (discarded: `run` applies it)."""

    def __init__(self, data):
        self.data = np.empty_like(data)


def _on_host(value):
    if isinstance(value, tuple):
        return all(v is None or _on_host(v) for v in value)
    return isinstance(value, (np.ndarray, np.generic, bool, int, float))


def _tensor(value):
    if isinstance(value, (bool, int, float)):
        return Tensor(value)
    t = Tensor.__new__(Tensor)
    t.data, t.backend = value, backend_module.backend_of(value)
    return t
