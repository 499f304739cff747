"""Reverse-mode differentiation on a graph, with the eager tape's rules and no second copy.

`differentiate` replaces every ``gradient(target, of[, seed])`` node by real computation, built
the way `GradientTape.gradient` walks its records:

1. gradients nobody uses are removed first (`kerasrs.graph.passes.remove_dead`), and the
   gradients with one target and seed share one backward sweep;
2. a forward sweep marks the nodes that depend on a requested source (float sources only; an
   ``input`` is differentiated only when a gradient asks for it);
3. a backward sweep from the target (seeded with ``ones_like(target)`` or the seed) visits
   those nodes in reverse order. Each op node gets one ``vjp`` node: at run time it calls the
   `Function.backward` of the very instance that ran the op's forward, with ``needs_grad`` set
   to the inputs that lead to a source, and fits each gradient to its input (summed over
   broadcast axes with `kerasrs.autodiff.sum_to`, cast to its dtype), as the tape does.
   ``pick`` nodes take the gradients out; contributions to one node are summed with ``add``
   in the tape's order;
4. a source the target does not depend on gets ``zeros_like(source)``.

Gradients are first order, as on the tape: ``vjp``, ``pick`` and ``saved`` nodes, and ops
registered as not differentiable (comparisons, argmax, dropout masks), are constants for a
differentiation.
"""

from kerasrs.graph import passes, registry
from kerasrs.graph.ir import LEAVES, STRUCTURAL, Builder


def differentiate(graph):
    """The graph with every ``gradient`` node replaced by its computation (see above).

    Raises:
        ValueError: if a source of a gradient has an integer or bool dtype.
    """
    graph = passes.remove_dead(graph)
    wanted = {}  # (target, seed) -> sources, in order
    for node in graph.nodes:
        if node.op == "gradient":
            key = (node.inputs[0], node.inputs[2] if len(node.inputs) == 3 else None)
            wanted.setdefault(key, []).append(node.inputs[1])
    builder, remap, done = Builder(), {}, {}
    for i, node in enumerate(graph.nodes):
        if node.op != "gradient":
            remap[i] = builder.copy(node, remap)
            continue
        key = (node.inputs[0], node.inputs[2] if len(node.inputs) == 3 else None)
        if key not in done:
            done[key] = _backward(graph, builder, remap, key, wanted[key])
        g = done[key].get(node.inputs[1])
        remap[i] = g if g is not None else builder.add(
            "zeros_like", (remap[node.inputs[1]],), type=node.type, site=node.site)
    outputs = {name: remap[j] for name, j in graph.outputs.items()}
    updates = {name: remap[j] for name, j in graph.updates.items()}
    return builder.graph(outputs, updates, graph.bindings)


def _backward(graph, builder, remap, key, sources):
    """Append the backward sweep for one (target, seed); {source id: new gradient id}."""
    target, seed = key
    nodes = graph.nodes
    for s in sources:
        if not _float(nodes[s].type):
            raise ValueError(f"kerasrs.graph.differentiate: cannot differentiate with respect to "
                             f"%{s} ({nodes[s].op}), which is {nodes[s].type}: gradients need a "
                             "float dtype.")
    reach = _depends_on(graph, set(sources), target)
    if target not in reach:
        return {}
    site = nodes[target].site
    grads = {target: remap[seed] if seed is not None else builder.add(
        "ones_like", (remap[target],), type=nodes[target].type, site=site)}
    keep = set(sources)
    for i in range(target, -1, -1):
        if i not in reach:
            continue
        gy = grads.get(i) if i in keep else grads.pop(i, None)
        node = nodes[i]
        if gy is None or node.op in LEAVES:
            continue
        if node.op == "assert_computed":  # the identity
            _accumulate(builder, grads, nodes, node.inputs[0], gy)
            continue
        n_apply = len(node.inputs) - registry.get(node.op).n_data(node.attrs)
        needs = tuple(k < n_apply and j in reach for k, j in enumerate(node.inputs))
        vjp = builder.add("vjp", (remap[i], gy), {"needs": needs},
                          tuple(nodes[j].type if need else None
                                for j, need in zip(node.inputs, needs)), site=node.site)
        for k, (j, need) in enumerate(zip(node.inputs, needs)):
            if need:
                pick = builder.add("pick", (vjp,), {"index": k}, nodes[j].type, site=node.site)
                _accumulate(builder, grads, nodes, j, pick)
    return {s: grads.get(s) for s in sources}


def _depends_on(graph, sources, last):
    """Ids up to ``last`` whose value depends on a source through differentiable nodes."""
    reach = set(sources)
    for i in range(min(sources, default=last + 1), last + 1):
        node = graph.nodes[i]
        if i in reach or node.op in ("vjp", "pick", "gradient", "saved") or \
                node.op in LEAVES or not _differentiable(node):
            continue
        if any(j in reach for j in node.inputs):
            reach.add(i)
    return reach


def _differentiable(node):
    return node.op in STRUCTURAL or registry.get(node.op).differentiable


def _accumulate(builder, grads, nodes, j, g):
    prev = grads.get(j)
    grads[j] = g if prev is None else builder.add("add", (prev, g), type=nodes[j].type,
                                                  site=nodes[j].site)


def _float(t):
    return t is not None and (t.dtype.startswith("float") or t.dtype == "bfloat16")
