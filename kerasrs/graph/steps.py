"""The steps of a replay `kerasrs.graph.program.Plan`: one closure per node or fused run.

Each maker takes the plan and returns ``step(values, fns)`` (None for a leaf): ``values`` is
the list of node values, ``fns`` holds the Function instances a later ``vjp`` or ``saved``
node uses. Everything that does not change between runs (operand ids, targets' shapes and
dtypes, kernels, planned buffers) is looked up once here, so a run is a tight loop.
"""

import numpy as np

from kerasrs import backend as backend_module
from kerasrs.autodiff import Tensor, sum_to
from kerasrs.graph import fusion, registry
from kerasrs.graph.ir import type_of


def op_step(plan, i, node):
    """An op node: its Function made from the registry and run (kept for its vjp)."""
    definition = registry.get(node.op)
    attrs = dict(node.attrs)
    missing = [a for a in definition.attrs if a not in attrs]
    if missing and definition.custom_make is None:  # a written graph may leave them out
        raise ValueError(f"kerasrs.graph: %{i} = {node.op}(...) needs the attributes "
                         f"{list(definition.attrs)}. Received: {sorted(attrs)}")
    inputs = node.inputs
    keep = plan.fn_users.get(i)
    split = len(inputs) - definition.n_data(attrs)
    args_ids, data_ids = inputs[:split], inputs[split:]
    make = definition.make

    def step(values, fns):
        args = [_wrap(values[j]) for j in args_ids]
        try:
            fn = make(attrs, [values[j] for j in data_ids])
        except KeyError as e:  # an op with its own make (conv, pooling...): an attribute left out
            if not e.args or e.args[0] in attrs:
                raise  # another KeyError of the make: not a missing attribute
            raise ValueError(f"kerasrs.graph: %{i} = {node.op}(...) needs the attribute {e}. "
                             f"Received: attributes {sorted(attrs)}") from None
        values[i] = fn.apply(*args).data
        if keep:
            fns[i] = fn

    if not _direct(plan, args_ids, definition):
        return step
    be = plan.backend
    xp, array_type = be.xp, be.array_type
    where, out = plan.storage.get(i, (None, None))
    out = out if where == "buffer" else None  # a planned buffer (Function.writes_out)

    def direct(values, fns):  # Function.apply's work for arrays of one backend, no tape
        try:
            fn = make(attrs, [values[j] for j in data_ids])
        except KeyError:
            return step(values, fns)  # again through step: its error names the node
        fn.backend, fn.xp, fn.out = be, xp, out
        try:
            y = fn.forward(*[values[j] for j in args_ids])
        except (ValueError, TypeError, IndexError):
            return step(values, fns)  # again through apply: its error names the op
        values[i] = y if type(y) is array_type else Tensor(y, backend=be).data
        if keep:
            fns[i] = fn

    return direct


def _direct(plan, args_ids, definition):
    """Whether an op step may call its Function's ``forward`` directly: with known types and
    no operand half-precision (``apply`` upcasts those, and turns a Python float next to a
    bfloat16 into a bfloat16 array). Python scalars (weak constants) pass as they are, as
    ``apply`` passes them."""
    if plan.types is None or plan.backend is None:
        return False
    return all(plan.types[j].dtype not in ("float16", "bfloat16") for j in args_ids)


def vjp_step(plan, i, node):
    """A vjp node: the forward's Function's ``backward``, each gradient fitted (`_fit`)."""
    forward, gy_id = node.inputs
    needs = list(node.attrs["needs"])
    fit = None if plan.types is None else [
        None if t is None else (t.shape, backend_module.standardize_dtype(t.dtype))
        for t in plan.types[i]]
    sources = plan.graph.nodes[forward].inputs
    last = plan.fn_users[forward][-1] == i
    grad_out = _grad_buffers(plan, i, len(needs))

    def step(values, fns):
        fn = fns.pop(forward) if last else fns[forward]
        fn.needs_grad, fn.grad_out = needs, grad_out
        gy = values[gy_id]
        if fn.low_dtype is not None:  # its forward ran in float32 (as the tape does)
            gy = gy.astype(np.float32)
        gxs = fn.backward(gy)
        targets = fit if fit is not None else [
            _target(values[j]) if need else None for j, need in zip(sources, needs)]
        values[i] = tuple(_fit(g, t, gy) if t is not None else None
                          for g, t in zip(gxs, targets))

    return step


def _grad_buffers(plan, i, count):
    """The planned buffers of vjp node ``i``'s picked gradients (`Function.grad_out`), or
    None when it has none."""
    buffers = [None] * count
    for j in plan.consumers[i]:
        node = plan.graph.nodes[j]
        where, array = plan.storage.get(j, (None, None))
        if node.op == "pick" and where == "buffer":
            buffers[node.attrs["index"]] = array
    return tuple(buffers) if any(b is not None for b in buffers) else None


def saved_step(plan, i, node):
    forward, attr = node.inputs[0], node.attrs["attr"]
    last = plan.fn_users[forward][-1] == i

    def step(values, fns):
        fn = fns.pop(forward) if last else fns[forward]
        values[i] = getattr(fn, attr)

    return step


def pick_step(plan, i, node):
    source, index = node.inputs[0], node.attrs["index"]

    def step(values, fns):
        values[i] = values[source][index]

    return step


def leaf_step(plan, i, node):
    return None


def fused_part(plan, group):
    """``(prepare, count, flat, work)``: ``prepare(values)`` puts the group's outputs into
    ``values`` and returns ``(kernel, args)`` for `cpu_threads` to run over ``count``
    indices, ``work`` element operations each."""
    params = plan.graph.parameter_ids()
    writers, in_place = [], {}
    for k, i in enumerate(group.outputs):
        where, array = plan.storage[i]
        param = params[array] if where == "param" else None
        if param in group.inputs:  # written through the input's own array argument
            in_place[k] = group.inputs.index(param)
        else:
            writers.append((i, where, array, param, plan.types[i].dtype))
    source, kinds = fusion.numba_source(plan.graph, group, plan.types, in_place=in_place)
    kernel = fusion.numba_kernel(source)
    flat = "broadcast" not in kinds
    shape = group.shape
    count = int(np.prod(shape)) if flat else shape[0]
    readers = [(j, kind, plan.types[j].dtype) for j, kind in zip(group.inputs, kinds)
               if kind != "weak"]
    # work per index for cpu_threads' grain: the arrays streamed per element (the kernels are
    # memory-bound), as the eager kernels count it (Adam: 4); one per member over-split small
    # updates onto a core busy with OpenBLAS's spinning thread
    streamed = sum(kind in ("full", "broadcast") for _, kind, _ in readers) + len(writers)
    work = max(1, streamed * int(np.prod(shape[1:] if not flat else ())))
    done = [(group.outputs[k], group.inputs[m]) for k, m in in_place.items()]
    members = ", ".join(f"%{i} {plan.graph.nodes[i].op}" for i in group.members)

    def prepare(values):
        args = []
        for j, kind, dtype in readers:
            a = values[j]
            if kind == "scalar":
                args.append(np.asarray(a, dtype).reshape(1))
            elif flat:
                if a.size != count:  # the kernel reads ``count`` elements: not past the end
                    raise ValueError(f"kerasrs.graph: the fused ops {members} are declared of "
                                     f"shape {list(shape)}, but their input %{j} holds "
                                     f"{a.dtype.name}{list(a.shape)}.")
                args.append(a.reshape(-1))
            else:
                args.append(np.broadcast_to(a, shape))
        for i, where, array, param, dtype in writers:
            if where == "param":
                array = values[param]
            elif where == "fresh":
                array = np.empty(shape, dtype)
            values[i] = array
            args.append(array.reshape(-1) if flat else array)
        for i, j in done:
            values[i] = values[j]
        return kernel, tuple(args)

    return prepare, count, flat, work


def fused_run(parts):
    """One step running fused groups' ``parts`` (`fused_part`): a single group is split over
    the threads by itself; several are laid end to end (`cpu_threads.split_many`, with their
    mean work per index), waking the other threads once."""
    from kerasrs.backend import cpu_threads

    if len(parts) == 1:
        (prepare, count, _, work), = parts

        def step(values, fns):
            kernel, args = prepare(values)
            cpu_threads.split(kernel, count, *args, work_per_item=work)

        return step
    total = sum(count for _, count, _, _ in parts)
    work = max(1, -(-sum(count * w for _, count, _, w in parts) // max(1, total)))  # mean, up

    def many(values, fns):
        items = []
        for prepare, count, _, _ in parts:
            kernel, args = prepare(values)
            items.append((kernel, args, count))
        cpu_threads.split_many(items, work_per_item=work)

    return many


def _wrap(value):
    """A Tensor around an array without `Tensor.__init__`'s conversions (Python scalars stay
    scalars: weak, as in eager code)."""
    if isinstance(value, (bool, int, float)):
        return value
    t = Tensor.__new__(Tensor)
    t.data, t.backend = value, backend_module.backend_of(value)
    return t


def as_tensor(value):
    return value if isinstance(value, Tensor) else (
        Tensor(value) if isinstance(value, (bool, int, float)) else _wrap(value))


def dtype_object(name):
    """The dtype object of a dtype name (NumPy's, or ml_dtypes' bfloat16)."""
    return backend_module.standardize_dtype(name)


def _target(value):
    """``(shape, dtype)`` of a value, as `_fit` takes it."""
    t = type_of(value)
    return t.shape, backend_module.standardize_dtype(t.dtype)


def _fit(g, target, gy):
    """A backward's gradient as the tape accumulates it: summed to the input's shape, cast to
    its dtype (``target = (shape, dtype)``); zeros where the Function gave None for an input
    that needs one."""
    shape, dtype = target
    if g is None:
        be = backend_module.backend_of(gy)
        return be.xp.zeros(shape, dtype)
    if g.shape != shape:
        g = sum_to(g, shape)
    if g.dtype != dtype:
        g = g.astype(dtype)
    return g
