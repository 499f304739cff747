"""Tracing by execution: node kinds, parameters, weak and strong constants, views of known
values, clear errors for what a graph cannot hold, and a third-party op that trains and
serializes."""

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import kerasrs
from kerasrs import graph, ops

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import third_party_op  # noqa: E402


def test_node_kinds_names_and_types():
    w = kerasrs.Variable(np.ones((3, 2), "float32"), name="kernel")
    w.path = "dense/kernel"

    def f(x, scale):
        return {"y": ops.matmul(x, w) * 2.0 + np.float32(1.0) + np.ones(2, "float32") + scale}

    traced = graph.trace(f, x=np.ones((4, 3), "float32"), scale=np.zeros((), "float32"))
    kinds = [(n.op, n.name, str(n.type)) for n in traced.nodes]
    assert kinds[:3] == [("input", "x", "float32[4,3]"), ("input", "scale", "float32[]"),
                         ("parameter", "dense/kernel", "float32[3,2]")]
    constants = [n for n in traced.nodes if n.op == "constant"]
    assert constants[0].value == 2.0 and type(constants[0].value) is float  # weak scalar
    assert isinstance(constants[1].value, np.ndarray) and constants[1].value.dtype == "float32"
    assert constants[2].value.shape == (2,)
    assert traced.bindings == {"dense/kernel": w}
    assert list(traced.outputs) == ["y"]


def test_tracing_changes_no_variable_and_returns_real_values():
    w = kerasrs.Variable(np.ones(3, "float32"))

    def f(x):
        graph.assign(w, w - 0.5 * graph.grad(ops.sum(w * x), w))
        return ops.sum(w * x)

    traced = graph.trace(f, x=np.arange(3, dtype="float32"))
    np.testing.assert_array_equal(w.numpy(), np.ones(3))
    out = traced.run(x=np.arange(3, dtype="float32"))
    assert float(out["output"].numpy()) == 3.0
    np.testing.assert_array_equal(w.numpy(), [1.0, 0.5, 0.0])


def test_a_view_of_an_input_passed_as_an_array_is_the_input_not_a_constant():
    def f(x, labels):
        return ops.sparse_categorical_crossentropy(labels, x, from_logits=True)

    x = np.zeros((4, 3), "float32")
    traced = graph.trace(f, x=x, labels=np.zeros(4, "int64"))
    ce = next(n for n in traced.nodes if n.op == "sparse_softmax_cross_entropy")
    assert [traced.nodes[j].op for j in ce.inputs] == ["input", "input"]
    labels = np.array([0, 2, 1, 2])
    out = traced.run(x=np.eye(4, 3, dtype="float32"), labels=labels)["output"].numpy()
    want = ops.sparse_categorical_crossentropy(labels, np.eye(4, 3, dtype="float32"),
                                               from_logits=True).numpy()
    np.testing.assert_array_equal(out, want)


def test_a_value_computed_outside_recorded_ops_is_baked_in_with_a_warning():
    def f(x):
        mask = kerasrs.Tensor(x.data > 0)  # computed on the raw array: no op records it
        return x * ops.cast(mask, "float32")

    with pytest.warns(UserWarning, match="baked in as constants.*argument 0 of 'cast'"):
        traced = graph.trace(f, x=np.array([1.0, -1.0], "float32"))
    assert any(n.op == "constant" and n.type.shape == (2,) for n in traced.nodes)


def test_comparisons_and_argmax_are_ops_without_a_gradient():
    def f(x):
        keep = ops.cast(ops.greater(x, 0.0), "float32")
        return {"y": ops.sum(x * keep), "top": ops.argmax(x, axis=-1)}

    traced = graph.trace(f, x=np.array([[1.0, -1.0, 3.0]], "float32"))
    assert {"greater", "argmax"} <= {n.op for n in traced.nodes}
    out = traced.run(x=np.array([[-2.0, 5.0, 1.0]], "float32"))
    assert float(out["y"].numpy()) == 6.0 and out["top"].numpy().tolist() == [1]

    def g(x):
        y = ops.sum(x * ops.cast(ops.greater(x, 0.0), "float32"))
        return graph.grad(y, x)

    diff = graph.differentiate(graph.trace(g, x=np.array([1.0, -1.0], "float32")))
    vjp_of = {diff.nodes[n.inputs[0]].op for n in diff.nodes if n.op == "vjp"}
    assert "greater" not in vjp_of and "multiply" in vjp_of
    np.testing.assert_array_equal(
        diff.run(x=np.array([2.0, -3.0], "float32"))["output"].numpy(), [1.0, 0.0])


def test_host_reads_of_traced_values_are_reported_and_refused_when_strict():
    def f(x):
        if float(ops.sum(x)) > 0:  # Python control flow on a tensor's value
            return x * 2.0
        return x

    with pytest.warns(UserWarning, match=r"float\(\) of %\d+ \(sum\)"):
        graph.trace(f, x=np.ones(3, "float32"))
    with pytest.raises(graph.TraceError, match=r"float\(\) of %\d+ \(sum\).*frozen"):
        graph.Tracer(strict=True).trace(f, x=np.ones(3, "float32"))


def test_a_variable_assignment_is_a_graph_update_and_changes_nothing_while_tracing():
    v = kerasrs.Variable(np.zeros(3, "float32"), trainable=False, name="state")

    def f(x):
        v.assign(v * 0.5 + x)
        v.assign_add(ops.ones(3))
        return ops.sum(x)

    traced = graph.trace(f, x=np.ones(3, "float32"))
    np.testing.assert_array_equal(v.numpy(), np.zeros(3))
    assert list(traced.updates) == ["state"]
    traced.run(x=np.full(3, 2.0, "float32"))
    np.testing.assert_array_equal(v.numpy(), np.full(3, 3.0))

    def raw(x):
        v.assign(v.data * 0.5 + x.data)  # computed on the raw arrays
        return ops.sum(x)

    with pytest.raises(graph.TraceError, match="assign of a value of shape \\(3,\\) computed "
                                               "outside recorded ops"):
        graph.Tracer(strict=True).trace(raw, x=np.ones(3, "float32"))


def test_an_unregistered_op_is_an_error_naming_it_and_where():
    class Unknown(kerasrs.autodiff.Function):
        def forward(self, x):
            return x

        def backward(self, gy):
            return (gy,)

    with pytest.raises(graph.TraceError, match=r"op 'unknown' \(.*Unknown\) is not registered"
                                               r".*test_graph_trace.py:\d+"):
        graph.trace(lambda x: Unknown().apply(x), x=np.ones(2))


def test_an_attribute_that_text_cannot_hold_is_an_error():
    class Holder(kerasrs.autodiff.Function):
        def __init__(self, table):
            self.table = table

        def forward(self, x):
            return x + self.table

        def backward(self, gy):
            return (gy,)

    graph.register_op("test_trace.holder", Holder, attrs=("table",))
    with pytest.raises(graph.TraceError, match="attribute 'table'.*list it in `data`"):
        graph.trace(lambda x: Holder(np.ones(2)).apply(x), x=np.ones(2))


def test_registering_a_taken_name_or_a_non_function_is_refused():
    with pytest.raises(ValueError, match="the name 'add' is taken"):
        graph.register_op("add", third_party_op.Softclip)
    with pytest.raises(TypeError, match="Function subclass"):
        graph.register_op("test_trace.nothing", object)


def test_assign_checks_the_new_values_type():
    w = kerasrs.Variable(np.ones(3, "float32"), name="w")
    with pytest.raises(graph.TraceError, match="'w' is float32\\[3\\].*Received: float64\\[3\\]"):
        graph.trace(lambda x: graph.assign(w, x), x=np.ones(3))


def test_ops_of_other_threads_are_not_recorded():
    other = []

    def f(x):
        t = threading.Thread(target=lambda: other.append(ops.exp(np.ones(2))))
        t.start()
        t.join()
        return ops.tanh(x)

    traced = graph.trace(f, x=np.ones(2))
    assert [n.op for n in traced.nodes] == ["input", "tanh"]
    assert other and other[0].shape == (2,)


THIRD_PARTY_RUNNER = r"""
import json, sys
import numpy as np
sys.path[:0] = [sys.argv[2], sys.argv[3]]
import third_party_op  # registers the op before the graph is read
import kerasrs.graph
program = kerasrs.graph.compile(kerasrs.graph.load(sys.argv[1]))
out = [program(x=np.full((2, 3), k, "float32"))["loss"].numpy().item() for k in range(3)]
print(json.dumps({"losses": out, "w": program.graph.bindings["w"].numpy().tolist()}))
"""


def test_a_registered_third_party_op_traces_trains_and_serializes(tmp_path):
    w = kerasrs.Variable(np.full((3,), 0.5, "float32"), name="w")

    def step(x):
        loss = ops.mean(ops.square(third_party_op.softclip(x * w, 1.5) - 1.0))
        graph.assign(w, w - 0.2 * graph.grad(loss, w))
        return {"loss": loss}

    traced = graph.trace(step, x=np.ones((2, 3), "float32"))
    assert "third_party.softclip(%" in str(traced) and "{limit=1.5}" in str(traced)
    traced.save(tmp_path / "g")
    program = graph.compile(traced)
    losses = [program(x=np.full((2, 3), k, "float32"))["loss"].numpy().item() for k in range(3)]
    assert losses[2] < 1.0  # it trains: the loss went down from its start
    result = subprocess.run([sys.executable, "-c", THIRD_PARTY_RUNNER, str(tmp_path / "g"),
                             HERE, ROOT], capture_output=True, text=True, check=True)
    there = json.loads(result.stdout)
    assert there == {"losses": losses, "w": w.numpy().tolist()}


def test_loading_a_graph_with_an_unregistered_op_names_it(tmp_path):
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "graph.txt").write_text(
        "graph {\n  %0 = input {name='x'} : float32[2]\n  %1 = nowhere.op(%0) : float32[2]\n"
        "  output 'y' = %1\n}\n")
    loaded = graph.load(tmp_path / "g")
    with pytest.raises(KeyError, match="unknown op 'nowhere.op'"):
        graph.compile(loaded)(x=np.ones(2, "float32"))


def test_a_npy_file_becomes_a_constant_node(tmp_path):
    np.save(tmp_path / "table.npy", np.arange(6.0).reshape(2, 3))

    def f(x):
        return {"y": x @ graph.constant(tmp_path / "table.npy")}

    traced = graph.trace(f, x=np.ones((1, 2)))
    table = next(n for n in traced.nodes if n.op == "constant")
    np.testing.assert_array_equal(table.value, np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(traced.run(x=np.ones((1, 2)))["y"].numpy(), [[3.0, 5.0, 7.0]])
    assert graph.constant([1.0, 2.0]).shape == (2,)  # outside a trace: a Tensor


def test_labels_that_are_no_view_of_an_input_are_baked_in_with_a_warning():
    """Labels copied on the raw arrays are no input's memory: baked in, with a warning."""
    def f(x, labels):
        copied = kerasrs.Tensor(labels.data.astype("int64"))
        return ops.sparse_categorical_crossentropy(copied, x, from_logits=True)

    with pytest.warns(UserWarning, match="data 'labels' of 'sparse_softmax_cross_entropy'"):
        graph.trace(f, x=np.zeros((4, 3), "float32"), labels=np.zeros(4, "uint8"))
    with pytest.raises(graph.TraceError, match="data 'labels' of 'sparse_softmax_cross"):
        graph.Tracer(strict=True).trace(f, x=np.zeros((4, 3), "float32"),
                                        labels=np.zeros(4, "uint8"))


def test_labels_of_another_integer_dtype_are_cast_by_an_op():
    def f(x, labels):
        return ops.sparse_categorical_crossentropy(labels, x, from_logits=True)

    traced = graph.trace(f, x=np.zeros((4, 3), "float32"), labels=np.zeros(4, "uint8"))
    cast = next(n for n in traced.nodes if n.op == "cast")
    assert traced.nodes[cast.inputs[0]].name == "labels" and cast.attrs["dtype"] == "int64"
    labels = np.array([2, 0, 1, 2], "uint8")
    got = traced.run(x=np.eye(4, 3, dtype="float32"), labels=labels)["output"].numpy()
    want = ops.sparse_categorical_crossentropy(labels, np.eye(4, 3, dtype="float32"),
                                               from_logits=True).numpy()
    np.testing.assert_array_equal(got, want)
