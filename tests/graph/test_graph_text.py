"""The text form: readable lines, and parse(str(graph)) == graph for random graphs (hypothesis).
Saving writes the text and one .npy per array; a fresh process loads and runs it with results
identical to this one's."""

import json
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kerasrs
from kerasrs import graph, ops
from kerasrs.graph.ir import Builder, TensorType

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _step_graph():
    w = kerasrs.Variable(np.arange(6.0, dtype="float32").reshape(3, 2) / 10, name="w")
    w.path = "dense/kernel"

    def step(x):
        y = ops.tanh(ops.matmul(x, w)) * 0.5
        loss = ops.mean(ops.square(y))
        graph.assign(w, w - 0.1 * graph.grad(loss, w))
        return {"loss": loss, "y": y}

    return graph.trace(step, x=np.ones((4, 3), "float32")), w


def test_str_is_one_line_per_node_with_types_and_sites():
    traced, _ = _step_graph()
    text = str(traced)
    lines = text.splitlines()
    assert lines[0] == "graph {" and lines[-1] == "}"
    assert "  %0 = input {name='x'} : float32[4,3]" in lines
    assert "  %1 = parameter {name='dense/kernel'} : float32[3,2]" in lines
    assert any(s.startswith("  %2 = matmul(%0, %1) : float32[4,2]  # test_graph_text.py:")
               for s in lines)
    assert any(s.strip().startswith("%") and "constant {value=0.5} : float64[]" in s
               for s in lines)
    assert "  output 'loss' = %" in text and "  update 'dense/kernel' = %" in text
    assert len([s for s in lines if s.startswith("  %")]) == len(traced)


def test_parse_gives_back_an_equal_graph_also_after_differentiation():
    traced, _ = _step_graph()
    for g in (traced, graph.differentiate(traced), graph.optimize(graph.differentiate(traced))):
        again = graph.parse(str(g))
        assert again == g
        assert str(again) == str(g)  # sites come back too


def test_large_constants_are_files_in_the_text_and_need_their_arrays():
    b = Builder()
    big = b.add("constant", type=TensorType("float64", (100,)), value=np.arange(100.0))
    g = b.graph({"y": big})
    assert "file('constants/c0.npy')" in str(g)
    with pytest.raises(ValueError, match="constant file 'constants/c0.npy' not given"):
        graph.parse(str(g))
    assert graph.parse(str(g), arrays={"constants/c0.npy": np.arange(100.0)}) == g


@pytest.mark.parametrize("text,message", [
    ("graph {\n  %1 = input {name='x'} : float32[3]\n}", "line 2: node ids must count up"),
    ("graph {\n  %0 = input {name='x'} : floaty[3]\n}", "line 2"),
    ("graph {\n  %0 = input {name='x'}\n}", "expected ' : <type>'"),
    ("graph {\n  %0 = input {name=open('f')} : float32[3]\n}", "not a literal"),
    ("graph {\n  %0 = exp(%0) : float32[3]\n}", "not an earlier node"),
    ("%0 = input {name='x'} : float32[3]", "must start with 'graph {'"),
])
def test_parse_errors_name_the_line_and_the_problem(text, message):
    with pytest.raises(ValueError, match=message):
        graph.parse(text)


# -- random graphs ------------------------------------------------------------------------------
DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int8", "uint8", "bool"]
names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8)
floats = st.floats(allow_nan=True, allow_infinity=True)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), floats, names)
attr_values = st.recursive(
    st.one_of(scalars, st.just(Ellipsis),
              st.builds(slice, st.none() | st.integers(-5, 5), st.none() | st.integers(-5, 5),
                        st.none() | st.integers(1, 3))),
    lambda inner: st.lists(inner, max_size=3).map(tuple), max_leaves=6)
shapes = st.lists(st.integers(0, 3), max_size=3).map(tuple)


@st.composite
def array_values(draw):
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(shapes)
    size = int(np.prod(shape))
    if dtype == "bool":
        data = draw(st.lists(st.booleans(), min_size=size, max_size=size))
    elif dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        data = draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=size,
                             max_size=size))
    else:
        width = 16 if dtype in ("float16", "bfloat16") else (32 if dtype == "float32" else 64)
        data = draw(st.lists(st.floats(width=min(width, 64) if width != 16 else 16,
                                       allow_nan=True, allow_infinity=True),
                             min_size=size, max_size=size))
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    return np.array(data, dtype=np.float64 if np_dtype == ml_dtypes.bfloat16 else np_dtype
                    ).astype(np_dtype).reshape(shape)


def tensor_types():
    return st.builds(TensorType, st.sampled_from(DTYPES), shapes)


@st.composite
def random_graphs(draw):
    b = Builder()
    n = draw(st.integers(1, 12))
    for i in range(n):
        kind = draw(st.sampled_from(["input", "parameter", "constant", "scalar", "op", "vjp"]
                                    if i else ["input", "constant"]))
        site = draw(st.none() | st.from_regex(r"[a-z_]{1,8}\.py:[0-9]{1,3}", fullmatch=True))
        if kind in ("input", "parameter"):  # a name used again keeps its type
            name = draw(names)
            first = [node.type for node in b.nodes if node.op == kind and node.name == name]
            b.add(kind, (), {"name": name}, first[0] if first else draw(tensor_types()),
                  site=site)
        elif kind == "constant":
            value = draw(array_values())
            b.add("constant", (), type=graph.ir.type_of(value), value=value, site=site)
        elif kind == "scalar":
            value = draw(st.one_of(st.booleans(), st.integers(-2**62, 2**62), floats))
            b.add("constant", (), type=graph.ir.type_of(value), value=value, site=site)
        else:
            inputs = draw(st.lists(st.integers(0, i - 1), min_size=1, max_size=3))
            attrs = draw(st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)
                                         .filter(lambda k: k != "value") | st.sampled_from(
                                             ["as", "if", "lambda", "None"]),
                                         attr_values, max_size=3))
            # structural nodes are well formed (a Graph refuses others: ir._check_structural)
            ops = [j for j, node in enumerate(b.nodes) if node.op in PLAIN_OPS]
            tuples = [j for j, node in enumerate(b.nodes)
                      if isinstance(node.type, tuple) and node.type]
            if kind == "vjp" and ops:
                types = tuple(draw(st.lists(st.none() | tensor_types(), max_size=3)))
                attrs["needs"] = tuple(draw(st.lists(st.booleans(), max_size=3)))
                b.add("vjp", (draw(st.sampled_from(ops)),) + tuple(inputs[:1]), attrs, types,
                      site=site)
                continue
            op = draw(st.sampled_from(PLAIN_OPS + ("gradient", "assert_computed") +
                                      (("pick",) if tuples else ())))
            if op == "gradient":
                inputs = (inputs * 3)[:draw(st.integers(2, 3))]
            elif op == "assert_computed":
                inputs = inputs[:1]
            elif op == "pick":
                inputs = [draw(st.sampled_from(tuples))]
                attrs["index"] = draw(st.integers(0, len(b.nodes[inputs[0]].type) - 1))
            b.add(op, inputs, attrs, draw(tensor_types()), site=site)
    n = len(b.nodes)
    ends = [j for j, node in enumerate(b.nodes) if node.op != "vjp"]
    outputs = draw(st.dictionaries(names, st.sampled_from(ends), max_size=3))
    params = [node.name for node in b.nodes if node.op == "parameter"]
    updates = draw(st.dictionaries(st.sampled_from(params), st.sampled_from(ends),
                                   max_size=2)) if params else {}
    return b.graph(outputs, updates)


PLAIN_OPS = ("add", "matmul", "my_pkg.op", "sum")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs())
def test_parse_of_str_gives_back_an_equal_graph(g):
    text = str(g)
    again = graph.parse(text)
    assert again == g
    assert str(again) == text


def test_the_round_trip_check_sees_a_changed_constant_bit():
    """The property's equality is bitwise on constants: -0.0 is not 0.0, NaN equals NaN."""
    b = Builder()
    b.add("constant", type=TensorType("float32", (2,)), value=np.array([0.0, np.nan], "f4"))
    other = Builder()
    other.add("constant", type=TensorType("float32", (2,)), value=np.array([-0.0, np.nan], "f4"))
    assert b.graph({}) == graph.parse(str(b.graph({})))
    assert b.graph({}) != other.graph({})


# -- files and a fresh process -------------------------------------------------------------------
RUNNER = r"""
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[3])
import kerasrs.graph
program = kerasrs.graph.compile(kerasrs.graph.load(sys.argv[1]))
losses = []
for k in range(3):
    out = program(x=np.load(f"{sys.argv[2]}/x{k}.npy"))
    losses.append(out["loss"].numpy().tobytes().hex())
params = {n: v.numpy().tobytes().hex() for n, v in program.graph.bindings.items()}
print(json.dumps({"losses": losses, "params": params}))
"""


def test_save_writes_text_and_arrays_by_relative_paths(tmp_path):
    traced, _ = _step_graph()
    traced.save(tmp_path / "step")
    files = sorted(str(p.relative_to(tmp_path / "step")) for p in (tmp_path / "step").rglob("*")
                   if p.is_file())
    assert "graph.txt" in files and "parameters/dense/kernel.npy" in files
    assert not any(".tmp-" in f for f in files)
    text = (tmp_path / "step" / "graph.txt").read_text()
    assert graph.load(tmp_path / "step") == graph.parse(text, arrays={
        f: np.load(tmp_path / "step" / f) for f in files if f.startswith("constants/")})


def test_load_in_a_fresh_process_gives_identical_results(tmp_path):
    traced, w = _step_graph()
    traced.save(tmp_path / "step")
    rng = np.random.default_rng(0)
    for k in range(3):
        np.save(tmp_path / f"x{k}.npy", rng.normal(size=(4, 3)).astype("float32"))
    here = graph.compile(graph.load(tmp_path / "step"))
    losses = [here(x=np.load(tmp_path / f"x{k}.npy"))["loss"].numpy().tobytes().hex()
              for k in range(3)]
    params = {n: v.numpy().tobytes().hex() for n, v in here.graph.bindings.items()}
    result = subprocess.run([sys.executable, "-c", RUNNER, str(tmp_path / "step"),
                             str(tmp_path), ROOT], capture_output=True, text=True, check=True)
    there = json.loads(result.stdout)
    assert there == {"losses": losses, "params": params}
    assert len(set(losses)) == 3  # the parameters changed between the steps


def test_load_refuses_paths_that_leave_the_directory(tmp_path):
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "graph.txt").write_text(
        "graph {\n  %0 = constant {value=file('../evil.npy')} : float32[2]\n"
        "  output 'y' = %0\n}\n")
    np.save(tmp_path / "evil.npy", np.zeros(2, "float32"))
    with pytest.raises(ValueError, match="leaves the graph's directory"):
        graph.load(tmp_path / "g")


def test_parameter_paths_cannot_escape_and_keep_folders():
    assert graph.files.parameter_path("dense/kernel") == "parameters/dense/kernel.npy"
    assert ".." not in graph.files.parameter_path("../../etc/passwd").split("/")
    assert graph.files.parameter_path("a//b").count("/") == 1
