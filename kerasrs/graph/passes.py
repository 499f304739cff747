"""Graph-to-graph passes. Each is one sweep from the leaves up that builds a new graph:

- `fold_constants`: an op whose inputs are all constants becomes a constant (``2 + 1 -> 3``),
  computed by the op itself;
- `simplify`: algebraic identities that keep every value: ``x * 1``, ``x / 1``, ``x + 0``,
  ``x - 0``, ``-(-x)`` and a cast to the same dtype become ``x`` (when ``x`` already has the
  result's shape and dtype). ``x + 0.0`` is ``x`` up to the sign of a zero (``-0.0 + 0.0`` is
  ``+0.0``). ``x * 0`` becomes zeros only for integer ``x`` (a float ``x`` may be NaN or inf,
  where ``x * 0`` is NaN) unless ``assume_finite=True``;
- `cse`: common subexpressions merged by structural hashing (`kerasrs.graph.ir.Node.key`:
  op, merged inputs, attributes, type, constant value; not the creation site); then every
  ``assert_computed`` whose value is used by something else (or leaves the graph) is removed;
- `remove_dead`: nodes no output or update needs are dropped (inputs stay: they are the
  graph's interface).

`optimize` runs them in that order until the graph stops changing.
"""

import numpy as np

from kerasrs import backend as backend_module
from kerasrs.autodiff import convert_to_tensor, no_grad
from kerasrs.graph import registry
from kerasrs.graph.ir import FUNCTION_USERS, STRUCTURAL, Builder, type_of

MAX_FOLDED = 1 << 16  # larger results stay computed (a folded constant is stored in the graph)


def _rebuild(graph, builder, visit):
    """Sweep the nodes in order: ``visit(i, node, remap)`` returns the new id of node ``i``."""
    remap = {}
    for i, node in enumerate(graph.nodes):
        remap[i] = visit(i, node, remap)
    outputs = {name: remap[j] for name, j in graph.outputs.items()}
    updates = {name: remap[j] for name, j in graph.updates.items()}
    used = {builder.nodes[j].name for j in range(len(builder.nodes))
            if builder.nodes[j].op == "parameter"}
    bindings = {k: v for k, v in graph.bindings.items() if k in used}
    return builder.graph(outputs, updates, bindings)


def remove_dead(graph):
    """Drop the nodes that no output or update needs (inputs, and parameters that are updated,
    are kept)."""
    params = graph.parameter_ids()
    live = set(graph.roots()) | set(graph.input_ids().values()) | \
        {params[name] for name in graph.updates}
    for i in range(len(graph.nodes) - 1, -1, -1):
        if i in live:
            live.update(graph.nodes[i].inputs)
    builder = Builder()

    def visit(i, node, remap):
        return builder.copy(node, remap) if i in live else None

    return _rebuild(graph, builder, visit)


def fold_constants(graph):
    """Replace each pure op with constant inputs (and whose Function no ``vjp`` needs) by the
    constant it computes, if that has at most `MAX_FOLDED` elements."""
    builder = Builder()
    stateful = {n.inputs[0] for n in graph.nodes if n.op in FUNCTION_USERS}

    def visit(i, node, remap):
        inputs = [builder.nodes[remap[j]] for j in node.inputs]
        if node.op in STRUCTURAL or i in stateful or not registry.get(node.op).pure or \
                not all(n.op == "constant" for n in inputs) or \
                not isinstance(node.type, tuple) and node.type.size > MAX_FOLDED:
            return builder.copy(node, remap)
        value = evaluate(node, [n.value for n in inputs])
        return builder.add("constant", (), type=type_of(value), value=value, site=node.site)

    return _rebuild(graph, builder, visit)


def evaluate(node, values):
    """Run op ``node`` eagerly on ``values`` (arrays or Python scalars); a NumPy array."""
    definition = registry.get(node.op)
    split = len(values) - definition.n_data(node.attrs)
    args = [v if isinstance(v, (bool, int, float)) else convert_to_tensor(v)
            for v in values[:split]]
    with no_grad():
        out = definition.make(node.attrs, values[split:]).apply(*args)
    return np.array(backend_module.convert_to_numpy(out.data))


def simplify(graph, assume_finite=False):
    """Apply the identities of the module docstring once to every node.

    Args:
        graph: a `Graph`.
        assume_finite: also turn ``x * 0`` into zeros for float ``x`` (wrong where ``x`` is
            NaN or inf: there the product is NaN).
    """
    builder = Builder()
    # A node whose Function a vjp calls stays: replaced by its operand, the vjp would call the
    # operand's backward (a no-op cast after a gather gave the gather's gradient shape).
    stateful = {n.inputs[0] for n in graph.nodes if n.op in FUNCTION_USERS}

    def visit(i, node, remap):
        inputs = [remap[j] for j in node.inputs]
        same = None if i in stateful else _identity(builder, node, inputs, assume_finite)
        if same is not None:
            return same
        return builder.add(node.op, inputs, node.attrs, node.type, node.value, node.site)

    return _rebuild(graph, builder, visit)


def _identity(builder, node, inputs, assume_finite):
    """The id that ``node`` (with new ``inputs``) equals, a new zeros node, or None."""
    op = node.op

    def is_const(k, number):
        n = builder.nodes[inputs[k]]
        return n.op == "constant" and bool(np.all(np.asarray(n.value) == number))

    def keeps(k):  # operand k already has the result's type
        return builder.type(inputs[k]) == node.type

    if op in ("multiply", "add") and len(inputs) == 2:
        neutral = 1 if op == "multiply" else 0
        for k in (0, 1):
            if is_const(1 - k, neutral) and keeps(k):
                return inputs[k]
    if op in ("divide", "subtract") and is_const(1, 1 if op == "divide" else 0) and keeps(0):
        return inputs[0]
    if op == "negative" and builder.nodes[inputs[0]].op == "negative":
        inner = builder.nodes[inputs[0]].inputs[0]
        if builder.type(inner) == node.type:
            return inner
    if op == "cast" and keeps(0):
        return inputs[0]
    if op == "multiply" and len(inputs) == 2:
        for k in (0, 1):
            other = builder.type(inputs[k])
            if is_const(1 - k, 0) and (assume_finite or other.dtype[0] in "iub") and \
                    node.type.size <= MAX_FOLDED:
                zeros = np.zeros(node.type.shape, node.type.dtype)
                return builder.add("constant", (), type=node.type, value=zeros, site=node.site)
    return None


def cse(graph):
    """Merge structurally equal nodes, then remove satisfied ``assert_computed`` nodes."""
    builder = Builder(dedupe=True)
    merged = _rebuild(graph, builder, lambda i, node, remap: builder.copy(node, remap))
    consumers = merged.consumers()
    roots = set(merged.roots())
    satisfied = {}
    for i, node in enumerate(merged.nodes):
        if node.op == "assert_computed":
            x = node.inputs[0]
            others = [c for c in consumers[x] if merged.nodes[c].op != "assert_computed"]
            if others or x in roots:
                satisfied[i] = x
    if not satisfied:
        return merged
    builder = Builder()

    def visit(i, node, remap):
        return remap[satisfied[i]] if i in satisfied else builder.copy(node, remap)

    return _rebuild(merged, builder, visit)


DEFAULT_PASSES = (fold_constants, simplify, cse, remove_dead)


def optimize(graph, passes=DEFAULT_PASSES, max_rounds=20):
    """Run ``passes`` in order, again and again, until the graph no longer changes (a fixed
    point) or ``max_rounds`` rounds have run."""
    for _ in range(max_rounds):
        new = graph
        for run in passes:
            new = run(new)
        if new == graph:
            return new
        graph = new
    return graph
