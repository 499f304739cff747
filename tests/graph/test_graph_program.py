"""Replay: fused kernels give NumPy's results, parameters update in place when safe (and not
when an old value is still read), dead buffers are reused, each shape signature gets its own
plan, outputs never alias state, and feeds are checked."""

import numpy as np
import pytest

import kerasrs
from kerasrs import graph, ops
from kerasrs.graph import cuda_codegen, fusion
from kerasrs.ops.projection import projection

rng = np.random.default_rng(0)


def g(body, outputs):
    lines = [s.strip() for s in body.strip().splitlines()]
    return graph.parse("graph {\n" + "\n".join(lines) + "\n" + outputs.strip() + "\n}\n")


CHAIN = g("""
    %0 = input {name='x'} : float32[64,32]
    %1 = input {name='y'} : float32[64,32]
    %2 = input {name='b'} : float32[32]
    %3 = multiply(%0, %1) : float32[64,32]
    %4 = constant {value=0.5} : float64[]
    %5 = add(%3, %4) : float32[64,32]
    %6 = sqrt(%5) : float32[64,32]
    %7 = divide(%6, %1) : float32[64,32]
    %8 = maximum(%7, %3) : float32[64,32]
    %9 = sum(%8) {axis=None, keepdims=False} : float32[]
    %10 = add(%8, %2) : float32[64,32]
    %11 = negative(%10) : float32[64,32]
""", "output 's' = %9\n output 'z' = %11")


def _feeds():
    return {"x": rng.uniform(0.1, 2, (64, 32)).astype("float32"),
            "y": rng.uniform(0.1, 2, (64, 32)).astype("float32"),
            "b": rng.normal(size=32).astype("float32")}


def test_fused_groups_give_numpys_results_bit_for_bit():
    feeds = _feeds()
    feeds["x"][0, :3] = [np.nan, np.inf, -1.0]  # NaN and inf go through maximum as in NumPy
    fused = graph.compile(CHAIN, optimize=False)
    plan = fused.plan_for(**feeds)
    assert [len(group.members) for group in plan.groups] == [5, 2]  # broken by the sum's use
    with np.errstate(invalid="ignore"):
        want = graph.compile(CHAIN, optimize=False, fuse=False)(**feeds)
        got = fused(**feeds)
    for name in ("s", "z"):
        np.testing.assert_array_equal(got[name].numpy(), want[name].numpy())


def test_the_generated_numba_source_reads_then_computes_then_writes():
    fused = graph.compile(CHAIN, optimize=False)
    plan = fused.plan_for(**_feeds())
    source, kinds = fusion.numba_source(CHAIN, plan.groups[0], plan.types)
    assert kinds == ["full", "full", "weak"]
    assert source.splitlines() == [
        "def fused(in_0, in_1, out_0, start, stop):",
        "    in_0 = in_0[start:stop]",
        "    in_1 = in_1[start:stop]",
        "    out_0 = out_0[start:stop]",
        "    for i in range(stop - start):",
        "        a0 = in_0[i]",
        "        a1 = in_1[i]",
        "        t3 = float32(float32(a0) * float32(a1))",
        "        t5 = float32(float32(t3) + float32(0.5))",
        "        t6 = float32(sqrt(float32(t5)))",
        "        t7 = float32(float32(t6) / float32(a1))",
        "        t8 = float32(maximum(float32(t7), float32(t3)))",
        "        out_0[i] = t8",
    ]
    broadcast, kinds = fusion.numba_source(CHAIN, plan.groups[1], plan.types)
    assert kinds == ["full", "broadcast"]
    assert "    for i0 in range(stop - start):" in broadcast
    assert "            a1 = in_1[i0, i1]" in broadcast


def test_the_cuda_source_for_a_flat_group_and_none_for_a_broadcast_one():
    fused = graph.compile(CHAIN, optimize=False)
    plan = fused.plan_for(**_feeds())
    source, name, kinds = cuda_codegen.cuda_source(CHAIN, plan.groups[0], plan.types)
    assert name.startswith("kerasrs_fused_")
    assert f'extern "C" __global__ void {name}(const float* in_0, const float* in_1, ' \
           "float* out_0, long long n) {" in source
    # members named by their place in the group (%3 %5 %6 %7 %8 -> t0..t4)
    assert "const float t2 = float32(sqrt(float32(t1)));" in source
    assert "out_0[i] = t4;" in source
    assert cuda_codegen.cuda_source(CHAIN, plan.groups[1], plan.types) is None


UPDATE = """
    %0 = input {name='g'} : float32[50,20]
    %1 = parameter {name='w'} : float32[50,20]
    %2 = constant {value=0.1} : float64[]
    %3 = multiply(%2, %0) : float32[50,20]
    %4 = subtract(%1, %3) : float32[50,20]
"""


def _bound(text, outputs):
    w = kerasrs.Variable(rng.normal(size=(50, 20)).astype("float32"), name="w")
    return g(text, outputs).with_bindings({"w": w}), w


def test_a_parameter_update_is_written_into_the_variables_own_memory():
    graph_, w = _bound(UPDATE, "update 'w' = %4")
    program = graph.compile(graph_, optimize=False)
    g_ = rng.normal(size=(50, 20)).astype("float32")
    before, memory = w.numpy().copy(), w.data
    program(g=g_)
    plan = program.plan_for(g=g_)
    assert "%4->param w" in plan.describe()
    assert w.data is memory
    group = plan.groups[0]
    assert group.inputs == [2, 0, 1]  # the constant 0.1, g, w
    source, _ = fusion.numba_source(graph_, group, plan.types, in_place={0: 2})
    assert source.splitlines()[0] == "def fused(in_1, in_2, start, stop):"  # no out_0
    assert source.splitlines()[-1] == "        in_2[i] = t4"
    np.testing.assert_array_equal(w.numpy(), before - np.float32(0.1) * g_)


@pytest.mark.parametrize("first, merged", [("multiply(%2, %2)", True),
                                           ("multiply(%1, %2)", False)])
def test_consecutive_fused_groups_run_as_one_step_only_when_independent(first, merged):
    """Two groups in a row are one step (one split over the threads, as the eager optimizer
    updates all variables at once), unless one reads memory the other writes: in the second
    case the first group reads w, which the second updates in place."""
    text = f"""
        %0 = input {{name='g'}} : float32[50,20]
        %1 = parameter {{name='w'}} : float32[50,20]
        %2 = input {{name='h'}} : float32[50,20]
        %3 = constant {{value=0.1}} : float64[]
        %4 = {first} : float32[50,20]
        %5 = add(%4, %0) : float32[50,20]
        %6 = multiply(%3, %0) : float32[50,20]
        %7 = subtract(%1, %6) : float32[50,20]
    """
    feeds = {"g": rng.normal(size=(50, 20)).astype("float32"),
             "h": rng.normal(size=(50, 20)).astype("float32")}
    results = []
    for fuse in (True, False):
        graph_, w = _bound(text, "output 'u' = %5\n update 'w' = %7")
        w.assign(np.ones((50, 20), "float32"))
        program = graph.compile(graph_, optimize=False, fuse=fuse)
        results.append((program(**feeds)["u"].numpy(), w.numpy().copy()))
        if fuse:
            plan = program.plan_for(**feeds)
            assert len(plan.groups) == 2 and "%7->param w" in plan.describe()
            assert ("fused 2 ops + fused 2 ops" in plan.labels) == merged
    for got, want in zip(*results):
        np.testing.assert_array_equal(got, want)


def test_no_in_place_update_while_the_old_value_is_still_read():
    """The output reads the old w after the update's group: the group writes a buffer and the
    variable is assigned at the end."""
    text = UPDATE + "%5 = exp(%4) : float32[50,20]\n" \
        "%6 = sum(%1) {axis=None, keepdims=False} : float32[]"
    graph_, w = _bound(text, "update 'w' = %4\n output 'old_sum' = %6\n output 'e' = %5")
    program = graph.compile(graph_, optimize=False)
    g_ = rng.normal(size=(50, 20)).astype("float32")
    before = w.numpy().copy()
    out = program(g=g_)
    assert "param" not in program.plan_for(g=g_).describe()
    assert out["old_sum"].numpy() == np.sum(before, dtype="float32")
    np.testing.assert_array_equal(w.numpy(), before - np.float32(0.1) * g_)


def test_an_output_of_a_parameter_is_a_copy_of_its_old_value():
    graph_, w = _bound(UPDATE, "update 'w' = %4\n output 'w' = %1")
    program = graph.compile(graph_, optimize=False)
    before = w.numpy().copy()
    out = program(g=np.ones((50, 20), "float32"))
    np.testing.assert_array_equal(out["w"].numpy(), before)
    assert not np.shares_memory(out["w"].numpy(), w.data)


def test_dead_buffers_are_reused_and_outputs_are_fresh_each_run():
    text = """
        %0 = input {name='x'} : float32[30,30]
        %1 = square(%0) : float32[30,30]
        %2 = sqrt(%1) : float32[30,30]
        %3 = matmul(%2, %2) : float32[30,30]
        %4 = reciprocal(%3) : float32[30,30]
        %5 = absolute(%4) : float32[30,30]
        %6 = matmul(%5, %0) : float32[30,30]
        %7 = sqrt(%6) : float32[30,30]
        %8 = negative(%7) : float32[30,30]
    """
    program = graph.compile(g(text, "output 'y' = %8"), optimize=False)
    x = rng.uniform(0.1, 1, (30, 30)).astype("float32")
    plan = program.plan_for(x=x)
    first, second, last = (plan.storage[i] for i in (2, 5, 8))
    assert first[0] == second[0] == "buffer" and first[1] is second[1]
    assert last[0] == "fresh"
    y1 = program(x=x)["y"].numpy()
    y1_copy = y1.copy()
    y2 = program(x=x * 0.5)["y"].numpy()
    np.testing.assert_array_equal(y1, y1_copy)  # the first result was not overwritten
    assert not np.shares_memory(y1, y2)
    want = graph.compile(g(text, "output 'y' = %8"), optimize=False, fuse=False)(x=x)
    np.testing.assert_array_equal(y1, want["y"].numpy())


def test_each_shape_signature_gets_its_own_plan():
    w = kerasrs.Variable(rng.normal(size=(3, 2)).astype("float32"), name="w")

    def f(x):
        return {"y": ops.tanh(ops.matmul(x, w)) * 2.0 + 1.0}

    program = graph.compile(graph.trace(f, x=np.ones((4, 3), "float32")))
    for batch in (4, 7, 4):
        x = rng.normal(size=(batch, 3)).astype("float32")
        want = ops.tanh(ops.matmul(x, w)) * 2.0 + 1.0
        np.testing.assert_array_equal(program(x=x)["y"].numpy(), want.numpy())
    assert len(program._plans) == 2


def test_feeds_are_checked_by_name_dtype_and_rank():
    program = graph.compile(CHAIN, optimize=False)
    feeds = _feeds()
    with pytest.raises(ValueError, match=r"missing \['b'\], unknown \['c'\]"):
        program(x=feeds["x"], y=feeds["y"], c=feeds["b"])
    with pytest.raises(ValueError, match="input 'b' must be float32 of rank 1.*float64"):
        program(**{**feeds, "b": feeds["b"].astype("float64")})


def test_a_parameter_without_a_variable_is_named():
    graph_ = g(UPDATE, "update 'w' = %4")
    with pytest.raises(ValueError, match=r"parameters without a variable: \['w'\]"):
        graph.compile(graph_)


def test_ops_with_weak_python_scalars_run_directly_with_the_tapes_dtypes():
    text = """
        %0 = input {name='x'} : float32[4,3]
        %1 = input {name='n'} : int64[]
        %2 = constant {value=0.5} : float64[]
        %3 = multiply(%0, %2) : float32[4,3]
        %4 = constant {value=1} : int64[]
        %5 = add(%1, %4) : int64[]
        %6 = constant {value=3} : int64[]
        %7 = subtract(%3, %6) : float32[4,3]
    """
    graph_ = g(text, "output 'y' = %7\n output 'm' = %5")
    program = graph.compile(graph_, optimize=False, fuse=False)
    feeds = {"x": rng.normal(size=(4, 3)).astype("float32"), "n": np.asarray(41, "int64")}
    plan = program.plan_for(**feeds)
    names = {label: step.__name__ for (step, _), label in zip(plan.steps, plan.labels)}
    assert names == {"multiply": "direct", "add": "direct", "subtract": "direct"}
    got = program(**feeds)
    assert got["y"].numpy().dtype == np.float32 and got["m"].numpy().dtype == np.int64
    want = ops.subtract(ops.multiply(feeds["x"], 0.5), 3)
    np.testing.assert_array_equal(got["y"].numpy(), want.numpy())
    assert int(got["m"].numpy()) == 42


def test_large_op_results_go_to_planned_buffers_and_give_the_same_numbers():
    """Projections, adds, products and layer norms (``Function.writes_out``) write large
    results, and their gradients, into buffers kept across steps; the numbers are the
    unplanned run's, and outputs never alias a buffer the next step overwrites."""
    w = kerasrs.Variable(rng.normal(size=(64, 128)).astype("float32"), name="w")
    w2 = kerasrs.Variable(rng.normal(size=(128, 128)).astype("float32") / 8, name="w2")
    gamma = kerasrs.Variable(np.ones(128, "float32"), name="gamma")

    def f(x):
        h = projection(x, w, activation="relu")           # (512, 128): 65,536 elements
        r = ops.add(h, projection(h, w2))
        y = ops.layer_normalization(ops.multiply(r, r), gamma, None, epsilon=1e-5)
        loss = ops.sum(ops.multiply(y, y))
        gw, gw2, gg = (graph.grad(loss, v) for v in (w, w2, gamma))
        return {"m": ops.mean(y, axis=0), "loss": loss, "gw": gw, "gw2": gw2, "gg": gg}

    x = rng.normal(size=(512, 64)).astype("float32")
    traced = graph.trace(f, x=x)
    planned = graph.compile(traced)
    plan = planned.plan_for(x=x)
    nodes = planned.graph.nodes
    kinds = {nodes[i].op if nodes[i].op != "pick" else
             "grad of " + nodes[nodes[nodes[i].inputs[0]].inputs[0]].op
             for i, (where, _) in plan.storage.items() if where == "buffer"}
    assert {"projection", "add", "multiply", "layer_norm", "grad of projection",
            "grad of layer_norm", "grad of multiply"} <= kinds
    buffers = {i: array for i, (where, array) in plan.storage.items() if where == "buffer"}
    values = list(plan.template)  # run the steps by hand: who writes into its buffer
    values[planned.graph.input_ids()["x"]] = x
    for name, i in plan.param_slots:
        values[i] = planned.graph.bindings[name].data
    written, fns = set(), {}
    for step, _ in plan.steps:
        step(values, fns)
        written |= {nodes[i].op for i, array in buffers.items()
                    if values[i] is not None and np.shares_memory(values[i], array)}
    assert {"projection", "add", "multiply", "pick"} <= written
    reference = graph.compile(traced, fuse=False)
    first = planned(x=x)
    kept = {k: v.numpy().copy() for k, v in first.items()}
    second = planned(x=x * 2)
    for name in ("m", "loss", "gw", "gw2", "gg"):
        np.testing.assert_array_equal(first[name].numpy(), kept[name])  # not overwritten
        np.testing.assert_array_equal(second[name].numpy(),
                                      reference(x=x * 2)[name].numpy())


GUARDED = """
    %0 = input {name='p'} : float32[64,32]
    %1 = input {name='g'} : float32[64,32]
    %2 = input {name='ok'} : bool[]
    %3 = constant {value=0.5} : float64[]
    %4 = multiply(%1, %3) : float32[64,32]
    %5 = subtract(%0, %4) : float32[64,32]
    %6 = where(%2, %5, %0) : float32[64,32]
"""


@pytest.mark.parametrize("ok", [True, False])
def test_a_guarded_update_fuses_with_its_chain_bit_for_bit(ok):
    """``where(finite, new, old)`` with a scalar condition (loss scaling's skipped step) joins
    the update's fused kernel; inf/NaN in the branch not taken do not leak."""
    guarded = g(GUARDED, "output 'p2' = %6")
    feeds = {"p": rng.normal(size=(64, 32)).astype("float32"),
             "g": rng.normal(size=(64, 32)).astype("float32"), "ok": np.asarray(ok)}
    feeds["g"][0, :2] = [np.inf, np.nan]
    program = graph.compile(guarded, optimize=False)
    assert [len(group.members) for group in program.plan_for(**feeds).groups] == [3]
    with np.errstate(invalid="ignore"):
        got = program(**feeds)["p2"].numpy()
        want = graph.compile(guarded, optimize=False, fuse=False)(**feeds)["p2"].numpy()
    np.testing.assert_array_equal(got, want)
    if not ok:
        np.testing.assert_array_equal(got, feeds["p"])


def test_gradients_a_backward_cannot_write_get_no_buffer():
    """An add's gradients are its incoming gradient itself (`Add` lists no ``writes_grad_out``):
    no buffer is planned for them, only for the gradients a backward fills in."""
    w = kerasrs.Variable(rng.normal(size=(64, 128)).astype("float32"), name="w")

    def f(x):
        h = projection(x, w, activation="relu")
        loss = ops.sum(ops.multiply(ops.add(h, h), h))
        return {"loss": loss, "gw": graph.grad(loss, w)}

    x = rng.normal(size=(512, 64)).astype("float32")
    planned = graph.compile(graph.trace(f, x=x))
    plan = planned.plan_for(x=x)
    nodes = planned.graph.nodes
    planned_grads = {nodes[nodes[nodes[i].inputs[0]].inputs[0]].op
                     for i, (where, _) in plan.storage.items()
                     if where == "buffer" and nodes[i].op == "pick"}
    assert "multiply" in planned_grads and "add" not in planned_grads
