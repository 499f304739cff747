"""Differentiation on the graph gives the eager tape's gradients (the same backward rules run:
float64 results are equal to the last bit), computes only what outputs need, and handles
non-scalar targets, seeds, intermediate nodes and unconnected sources."""

import numpy as np
import pytest

import kerasrs
from kerasrs import graph, ops
from kerasrs.ops import projection

rng = np.random.default_rng(0)


def _vars():
    w = kerasrs.Variable(rng.normal(size=(3, 4)), dtype="float64", name="w")
    b = kerasrs.Variable(rng.normal(size=(4,)), dtype="float64", name="b")
    return w, b


FUNCTIONS = {
    "dense_tanh_mean": lambda x, w, b: ops.mean(ops.tanh(ops.matmul(x, w) + b)),
    "broadcast_multiply": lambda x, w, b: ops.sum(ops.exp(x[:, :1] * b) / (1.0 + ops.square(w[0]))),
    "softmax_ce": lambda x, w, b: ops.mean(ops.categorical_crossentropy(
        ops.softmax(ops.matmul(x, w)), ops.sigmoid(b + x[:, 1:2]), from_logits=False)),
    "sparse_ce_projection": lambda x, w, b: ops.mean(ops.sparse_categorical_crossentropy(
        np.array([0, 3, 1, 2, 2]), projection.projection(x, w, b, activation="relu") + 0.1,
        from_logits=True)),
    "reshape_transpose_max": lambda x, w, b: ops.sum(ops.max(ops.transpose(
        ops.reshape(ops.matmul(x, w), (5, 2, 2)), (0, 2, 1)), axis=1) * ops.maximum(b[:2], 0.0)),
    "reused_value": lambda x, w, b: ops.sum((lambda h: h * h + ops.log1p(ops.square(h)))(
        ops.matmul(x, w) - b)),
}


def _eager(fn, x, w, b, sources):
    with kerasrs.GradientTape() as tape:
        tape.watch(sources)
        y = fn(x, w, b)
    return y.numpy(), [g.numpy() for g in tape.gradient(y, sources)]


@pytest.mark.filterwarnings("ignore:kerasrs.graph.trace")  # sparse_ce's labels: a constant
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_graph_gradients_equal_the_tapes(name):
    fn = FUNCTIONS[name]
    w, b = _vars()
    x = rng.normal(size=(5, 3))

    def step(x):
        y = fn(x, w, b)
        gw, gb, gx = graph.grad(y, [w, b, x])
        return {"y": y, "gw": gw, "gb": gb, "gx": gx}

    traced = graph.trace(step, x=x)
    out = graph.compile(traced)(x=x)
    xt = kerasrs.ops.convert_to_tensor(x)
    y, (gw, gb, gx) = _eager(fn, xt, w, b, [w, b, xt])
    np.testing.assert_array_equal(out["y"].numpy(), y)
    for key, want in (("gw", gw), ("gb", gb), ("gx", gx)):
        np.testing.assert_array_equal(out[key].numpy(), want, err_msg=key)


def test_gradients_are_also_right_for_new_values_and_a_new_batch_size():
    w, b = _vars()
    fn = FUNCTIONS["dense_tanh_mean"]

    def step(x):
        return {"gw": graph.grad(fn(x, w, b), w)}

    program = graph.compile(graph.trace(step, x=np.zeros((5, 3))))
    x = rng.normal(size=(7, 3))
    xt = kerasrs.ops.convert_to_tensor(x)
    _, (gw,) = _eager(fn, xt, w, b, [w])
    np.testing.assert_array_equal(program(x=x)["gw"].numpy(), gw)


def test_non_scalar_target_sums_or_takes_a_seed():
    w, b = _vars()
    x = rng.normal(size=(5, 3))
    seed = rng.normal(size=(5, 4))

    def step(x, seed):
        y = ops.tanh(ops.matmul(x, w))
        return {"summed": graph.grad(y, w), "seeded": graph.grad(y, w, output_gradients=seed)}

    out = graph.compile(graph.trace(step, x=x, seed=seed))(x=x, seed=seed)
    with kerasrs.GradientTape(persistent=True) as tape:
        y = ops.tanh(ops.matmul(x, w))
    np.testing.assert_array_equal(out["summed"].numpy(), tape.gradient(y, w).numpy())
    np.testing.assert_array_equal(out["seeded"].numpy(),
                                  tape.gradient(y, w, output_gradients=seed).numpy())


def test_gradient_with_respect_to_an_intermediate_node():
    w, _ = _vars()
    x = rng.normal(size=(5, 3))

    def step(x):
        h = ops.matmul(x, w)
        loss = ops.sum(ops.sin(h))
        return {"gh": graph.grad(loss, h)}

    out = graph.compile(graph.trace(step, x=x))(x=x)
    np.testing.assert_array_equal(out["gh"].numpy(), np.cos(x @ w.numpy()))


def test_unconnected_source_gets_zeros():
    w, b = _vars()

    def step(x):
        return {"gb": graph.grad(ops.sum(ops.matmul(x, w)), b)}

    traced = graph.trace(step, x=np.ones((2, 3)))
    out = graph.compile(traced)(x=np.ones((2, 3)))
    np.testing.assert_array_equal(out["gb"].numpy(), np.zeros(4))
    assert [n.op for n in graph.differentiate(traced).nodes].count("zeros_like") == 1


def test_only_what_outputs_need_is_computed():
    w, b = _vars()

    def step(x):
        loss = ops.sum(ops.tanh(ops.matmul(x, w) + b))
        graph.grad(ops.sum(ops.exp(b)), b)  # nobody uses this gradient
        return {"gw": graph.grad(loss, w), "loss": loss}

    traced = graph.trace(step, x=np.ones((2, 3)))
    diff = graph.differentiate(traced)
    vjps = [n for n in diff.nodes if n.op == "vjp"]
    # the exp/sum of b had no output: no vjp for it; the add asks only for its left input's
    # gradient path to w (b needs none), the matmul only for w (x is an input)
    assert {diff.nodes[n.inputs[0]].op for n in vjps} == {"sum", "tanh", "add", "matmul"}
    needs = {diff.nodes[n.inputs[0]].op: n.attrs["needs"] for n in vjps}
    assert needs["matmul"] == (False, True)
    assert needs["add"] == (True, False)
    assert not any(n.op == "exp" for n in diff.nodes)


def test_integer_sources_are_refused_with_the_node_named():
    def step(x, k):
        return {"g": graph.grad(ops.sum(x * k), k)}

    traced = graph.trace(step, x=np.ones(3), k=np.arange(3))
    with pytest.raises(ValueError, match="gradients need a float dtype"):
        graph.differentiate(traced)


def test_grad_assign_outside_a_trace_raise():
    w = kerasrs.Variable(np.ones(2))
    with pytest.raises(RuntimeError, match="only valid inside kerasrs.graph.trace"):
        graph.grad(ops.sum(w), w)
    with pytest.raises(RuntimeError, match="only valid inside kerasrs.graph.trace"):
        graph.assign(w, w)
