"""Fusing chains of elementwise ops into one generated kernel.

An op is fusible when its registry entry has an ``elementwise`` template (``"{0} * {1}"``,
``"sqrt({0})"``; kerasrs's own templates are correctly rounded operations only, so fusing
changes no bit of a result), its operands and result are float32/float64 (or Python scalars),
nothing needs its `Function` instance (no ``vjp`` uses it: a fused op keeps no state) and its
result has more than one element. `groups` collects such nodes into `Group`s: a node joins the
groups of its operands (merging them) when it has their shape and no node outside a group used
one of its members before it (so the group can run as one step, at its last member's
position).

`numba_source` writes a group as a Python function that numba compiles (lazily, on the first
run, cached by source text): one loop over the elements that reads the inputs, evaluates the
members in order, each cast to its dtype as NumPy's result would be, and writes the outputs.
All reads of an element happen before its writes, so an output may be the memory of an input
(an in-place parameter update). Two loop forms: *flat* when every array input has the group's
shape, *nd* when some input is broadcast (a bias); one-element inputs are read once.
`kerasrs.graph.cuda_codegen` writes the same group as CUDA source, which
`kerasrs.graph.cuda_launch` launches on the CuPy backend.
"""

import dataclasses

import numpy as np

from kerasrs.graph import registry

FLOATS = ("float32", "float64")


@dataclasses.dataclass
class Group:
    """A fused group. ``members``: node ids in order; ``inputs``: ids of outside nodes it
    reads (in first-use order); ``outputs``: members used outside it; ``shape``/``dtype``: of
    the result (the loop's domain)."""

    members: list
    inputs: list
    outputs: list
    shape: tuple


def fusible(i, node, types, definition, stateful):
    """Whether node ``i`` (with per-signature ``types``) may join a group; ``stateful``: its
    Function instance is needed later (by a ``vjp``)."""
    if definition is None or definition.elementwise is None or stateful:
        return False
    out = types[i]
    if out.dtype not in FLOATS or out.size <= 1:
        return False
    return all(types[j].dtype in FLOATS or types[j].shape == () for j in node.inputs)


def groups(graph, types, candidates, roots):
    """Groups of at least two members from the fusible node ids ``candidates``.

    Args:
        graph: the `Graph`.
        types: per node id, its `TensorType` for this shape signature.
        candidates: set of fusible node ids.
        roots: ids read after the last step (outputs and update values).

    Returns:
        A list of `Group`s, in the order of their last member.
    """
    consumers = graph.consumers()
    group_of, members = {}, {}  # node id -> group key; group key -> member ids
    for i in sorted(candidates):
        joined = []
        for j in graph.nodes[i].inputs:
            g = group_of.get(j)
            if g is not None and g not in joined and types[i].shape == types[g].shape and \
                    not _used_before(members[g], consumers, i):
                joined.append(g)
        key = joined[0] if joined else i
        members.setdefault(key, [])
        for g in joined[1:]:  # the node joins several groups: they become one
            for m in members.pop(g):
                group_of[m] = key
                members[key].append(m)
        members[key].append(i)
        group_of[i] = key
    result = []
    for ids in members.values():
        group = _group(graph, sorted(ids), consumers, roots, types)
        if len(ids) >= 2 and group.outputs:
            result.append(group)
    return sorted(result, key=lambda g: g.members[-1])


def _used_before(ids, consumers, position):
    """Whether a node outside ``ids`` (and before ``position``) uses a member already."""
    inside = set(ids) | {position}
    return any(c < position and c not in inside for m in ids for c in consumers[m])


def _group(graph, ids, consumers, roots, types):
    inside = set(ids)
    inputs = []
    for i in ids:
        for j in graph.nodes[i].inputs:
            if j not in inside and j not in inputs:
                inputs.append(j)
    root_set = set(roots)
    outputs = [i for i in ids if i in root_set or any(c not in inside for c in consumers[i])]
    return Group(list(ids), inputs, outputs, types[ids[-1]].shape)


# -- numba source ----------------------------------------------------------------------------------
NUMBA_FUNCTIONS = {"sqrt": np.sqrt, "absolute": np.absolute, "maximum": np.maximum,
                   "minimum": np.minimum,
                   "float32": np.float32, "float64": np.float64, "inf": np.inf, "nan": np.nan}


def _numba_where(numba):
    """``where(c, a, b)`` for one element in a numba kernel (``c`` arrives cast to the
    member's dtype: any nonzero value picks ``a``, as NumPy's ``where`` on a boolean does)."""
    if "where" not in _COMPILED:
        _COMPILED["where"] = numba.njit(inline="always")(lambda c, a, b: a if c else b)
    return _COMPILED["where"]


def literal(value):
    """A Python scalar constant as source text (``inf`` and ``nan`` are names in both
    targets' namespaces)."""
    value = float(value)
    if value != value:
        return "nan"
    if value in (np.inf, -np.inf):
        return "inf" if value > 0 else "(-inf)"
    return repr(value)


def member_expressions(graph, group, types, operand, cast):
    """``[(member id, expression)]``: each member's template filled with its operands.

    ``operand(j)`` spells the value of outside node ``j``; ``cast(dtype, text)`` a conversion.
    Every operand is converted to the member's dtype first (the dtype NumPy computed in) and
    the result again (a template like ``1 / {0}`` may widen).
    """
    names = {}
    result = []
    for i in group.members:
        node = graph.nodes[i]
        dtype = types[i].dtype
        args = [cast(dtype, names[j] if j in names else operand(j)) for j in node.inputs]
        template = registry.get(node.op).elementwise
        result.append((i, cast(dtype, template.format(*args))))
        names[i] = f"t{i}"
    return result


def classify_inputs(graph, group, types):
    """Per outside input: ``"weak"`` (a Python scalar constant, written inline), ``"scalar"``
    (one element, read once), ``"full"`` (the group's shape) or ``"broadcast"``."""
    kinds = []
    for j in group.inputs:
        node, t = graph.nodes[j], types[j]
        if node.op == "constant" and isinstance(node.value, (bool, int, float)):
            kinds.append("weak")
        elif t.size == 1 and len(t.shape) <= len(group.shape):
            kinds.append("scalar")
        elif t.shape == group.shape:
            kinds.append("full")
        else:
            kinds.append("broadcast")
    return kinds


def numba_source(graph, group, types, name="fused", in_place=None):
    """Python source of the group's kernel ``name(in_0.., out_0.., start, stop)``.

    Args:
        graph, group, types: the group and the node types of this shape signature.
        name: the function's name.
        in_place: ``{output position: input position}`` for outputs written into the memory
            of one of the group's (full) inputs: no ``out_`` argument is made for them. Fewer
            distinct arrays let LLVM vectorize the loop (its aliasing checks give up on many:
            an Adam step with three in-place outputs ran 4x faster written this way).

    The arrays are sliced to ``start:stop`` first and the loop counts from 0 (LLVM vectorizes
    that form); the flat form works on flattened arrays, the nd form slices the first axis and
    loops over all others (inputs given broadcast to the group's shape). Scalar inputs come as
    one-element 1-d arrays and are read once.

    Returns:
        ``(source, kinds)``: the text and `classify_inputs`'s kinds.
    """
    in_place = in_place or {}
    kinds = classify_inputs(graph, group, types)
    flat = "broadcast" not in kinds
    rank = len(group.shape)
    index = "i" if flat else ", ".join(f"i{k}" for k in range(rank))
    arrays = [f"in_{k}" for k, kind in enumerate(kinds) if kind != "weak"]
    outs = [f"out_{k}" for k in range(len(group.outputs)) if k not in in_place]
    targets = [f"in_{in_place[k]}" if k in in_place else f"out_{k}"
               for k in range(len(group.outputs))]
    lines = [f"def {name}({', '.join(arrays + outs + ['start', 'stop'])}):"]
    spelled = {}
    for k, (j, kind) in enumerate(zip(group.inputs, kinds)):
        if kind == "weak":
            spelled[j] = literal(graph.nodes[j].value)
        elif kind == "scalar":
            lines.append(f"    a{k} = in_{k}[0]")
            spelled[j] = f"a{k}"
        else:
            lines.append(f"    in_{k} = in_{k}[start:stop]")
            spelled[j] = f"a{k}"
    lines += [f"    {out} = {out}[start:stop]" for out in outs]
    if flat:
        lines.append("    for i in range(stop - start):")
    else:
        lines.append("    for i0 in range(stop - start):")
        for k in range(1, rank):
            lines.append("    " * (k + 1) + f"for i{k} in range({targets[0]}.shape[{k}]):")
    body = [f"a{k} = in_{k}[{index}]" for k, kind in enumerate(kinds)
            if kind in ("full", "broadcast")]
    for i, expression in member_expressions(graph, group, types, spelled.__getitem__,
                                            lambda dtype, text: f"{dtype}({text})"):
        body.append(f"t{i} = {expression}")
    body += [f"{target}[{index}] = t{i}" for target, i in zip(targets, group.outputs)]
    depth = 2 if flat else rank + 1
    lines += ["    " * depth + line for line in body]
    return "\n".join(lines) + "\n", kinds


_COMPILED = {}  # source -> numba dispatcher (compiled lazily per argument types)


def numba_kernel(source, name="fused"):
    """The numba function for ``source`` (made once per source; compiled on its first call).

    ``error_model="numpy"``: a division by zero gives inf/NaN as NumPy does; no fastmath, so
    results follow IEEE rules as NumPy's do."""
    kernel = _COMPILED.get(source)
    if kernel is None:
        import numba

        namespace = dict(NUMBA_FUNCTIONS, where=_numba_where(numba))
        exec(compile(source, f"<kerasrs.graph fused kernel {len(_COMPILED)}>", "exec"), namespace)
        kernel = numba.njit(nogil=True, error_model="numpy")(namespace[name])
        _COMPILED[source] = kernel
    return kernel
