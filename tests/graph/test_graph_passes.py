"""Each pass as "graph in, expected graph out", written in the text form; single step and to a
fixed point. The assertion node: CSE removes it when its value is computed anyway; a run of a
graph that still holds one is an error naming it."""

import numpy as np
import pytest

import kerasrs
from kerasrs import graph, ops


def g(body, outputs="output 'y' = %{last}"):
    """A graph from the lines of its body (``%{last}``: the last node)."""
    lines = [s.strip() for s in body.strip().splitlines()]
    return graph.parse("graph {\n" + "\n".join(lines) + "\n" +
                       outputs.format(last=len(lines) - 1) + "\n}\n")


X = "%0 = input {name='x'} : float32[3]"


# -- constant folding --------------------------------------------------------------------------
def test_fold_constants_computes_two_plus_one_with_the_op_itself():
    before = g("""
        %0 = constant {value=array(2, 'int64')} : int64[]
        %1 = constant {value=array(1, 'int64')} : int64[]
        %2 = add(%0, %1) : int64[]""")
    after = graph.fold_constants(before)
    assert after == g("""
        %0 = constant {value=array(2, 'int64')} : int64[]
        %1 = constant {value=array(1, 'int64')} : int64[]
        %2 = constant {value=array(3, 'int64')} : int64[]""")


def test_fold_constants_folds_a_chain_in_one_sweep_and_leaves_inputs_alone():
    before = g(f"""
        {X}
        %1 = constant {{value=array([1.0, 2.0, 3.0], 'float32')}} : float32[3]
        %2 = exp(%1) : float32[3]
        %3 = negative(%2) : float32[3]
        %4 = add(%0, %3) : float32[3]""")
    after = graph.fold_constants(before)
    want = -np.exp(np.array([1.0, 2.0, 3.0], "float32"))
    assert [n.op for n in after.nodes] == ["input", "constant", "constant", "constant", "add"]
    np.testing.assert_array_equal(after.nodes[3].value, want)


def test_fold_constants_keeps_an_op_whose_function_a_vjp_needs():
    before = g("""
        %0 = constant {value=array([1.0, 2.0], 'float64')} : float64[2]
        %1 = tanh(%0) : float64[2]
        %2 = constant {value=array([1.0, 1.0], 'float64')} : float64[2]
        %3 = vjp(%1, %2) {needs=(True,)} : (float64[2])
        %4 = pick(%3) {index=0} : float64[2]""")
    after = graph.fold_constants(before)
    assert after == before  # the vjp calls the backward of tanh's own instance
    y = graph.compile(after, optimize=False)()["y"].numpy()
    np.testing.assert_allclose(y, 1 - np.tanh([1.0, 2.0]) ** 2, rtol=1e-15)


# -- algebraic simplification --------------------------------------------------------------------
@pytest.mark.parametrize("op,args,constant", [
    ("multiply", "(%0, %1)", "1"), ("multiply", "(%1, %0)", "1.0"), ("add", "(%0, %1)", "0"),
    ("add", "(%1, %0)", "0.0"), ("divide", "(%0, %1)", "1.0"), ("subtract", "(%0, %1)", "0.0"),
    ("multiply", "(%1, %0)", "array([1.0, 1.0, 1.0], 'float32')"),
])
def test_simplify_removes_neutral_constants(op, args, constant):
    ctype = "float32[3]" if "array" in constant else (
        "int64[]" if "." not in constant else "float64[]")
    before = g(f"""
        {X}
        %1 = constant {{value={constant}}} : {ctype}
        %2 = {op}{args} : float32[3]""")
    assert graph.simplify(before) == g(f"""
        {X}
        %1 = constant {{value={constant}}} : {ctype}""", outputs="output 'y' = %0")


def test_simplify_keeps_other_constants_and_the_constant_side_of_subtract():
    for op, args, constant in [("multiply", "(%0, %1)", "2.0"), ("subtract", "(%1, %0)", "0.0"),
                               ("divide", "(%1, %0)", "1.0")]:
        before = g(f"""
            {X}
            %1 = constant {{value={constant}}} : float64[]
            %2 = {op}{args} : float32[3]""")
        assert graph.simplify(before) == before, op


def test_simplify_keeps_a_neutral_constant_that_changes_the_type():
    """``x * 1.0`` for integer x is a float result; ``x + zeros(1, 3)`` broadcasts x."""
    for before in (g("""
            %0 = input {name='x'} : int64[3]
            %1 = constant {value=1.0} : float64[]
            %2 = multiply(%0, %1) : float32[3]"""),
                   g(f"""
            {X}
            %1 = constant {{value=array([[0.0, 0.0, 0.0]], 'float32')}} : float32[1,3]
            %2 = add(%0, %1) : float32[1,3]""")):
        assert graph.simplify(before) == before


def test_simplify_times_zero_only_where_ieee_allows_or_when_asked():
    floats = g(f"""
        {X}
        %1 = constant {{value=0.0}} : float64[]
        %2 = multiply(%0, %1) : float32[3]""")
    assert graph.simplify(floats) == floats  # x may be NaN or inf: NaN * 0 is NaN, not 0
    zero = g(f"""
        {X}
        %1 = constant {{value=0.0}} : float64[]
        %2 = constant {{value=array([0.0, 0.0, 0.0], 'float32')}} : float32[3]""")
    assert graph.simplify(floats, assume_finite=True) == zero
    ints = g("""
        %0 = input {name='x'} : int32[3]
        %1 = constant {value=0} : int64[]
        %2 = multiply(%1, %0) : int32[3]""")
    assert graph.simplify(ints) == g("""
        %0 = input {name='x'} : int32[3]
        %1 = constant {value=0} : int64[]
        %2 = constant {value=array([0, 0, 0], 'int32')} : int32[3]""")


def test_simplify_assume_finite_changes_values_only_at_nan_and_inf():
    x = np.array([np.nan, np.inf, 2.0], "float32")
    floats = g(f"""
        {X}
        %1 = constant {{value=0.0}} : float64[]
        %2 = multiply(%0, %1) : float32[3]""")
    with np.errstate(invalid="ignore"):  # inf * 0 is NaN, with NumPy's warning
        exact = graph.compile(floats, optimize=False, fuse=False)(x=x)["y"].numpy()
        safe = graph.compile(graph.simplify(floats), optimize=False, fuse=False)(x=x)["y"]
        unsafe = graph.compile(graph.simplify(floats, assume_finite=True), optimize=False,
                               fuse=False)(x=x)["y"].numpy()
    safe = safe.numpy()
    np.testing.assert_array_equal(safe, exact)
    assert np.isnan(exact[:2]).all() and not np.isnan(unsafe).any()


def test_simplify_double_negation_and_same_dtype_cast():
    before = g(f"""
        {X}
        %1 = negative(%0) : float32[3]
        %2 = negative(%1) : float32[3]
        %3 = cast(%2) {{dtype='float32'}} : float32[3]""")
    once = graph.simplify(before)
    assert once == g(f"""
        {X}
        %1 = negative(%0) : float32[3]""", outputs="output 'y' = %0")


def test_simplify_keeps_a_same_dtype_cast_whose_function_a_vjp_needs():
    """Replaced by its operand, the cast's vjp would call the gather's backward (Embedding's
    no-op cast after ``take``: a (20, 8) table gradient for a (16, 7, 8) output)."""
    before = g("""
        %0 = input {name='x'} : float64[2, 3]
        %1 = cast(%0) {dtype='float64'} : float64[2, 3]
        %2 = constant {value=array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], 'float64')} : float64[2, 3]
        %3 = vjp(%1, %2) {needs=(True,)} : (float64[2, 3])
        %4 = pick(%3) {index=0} : float64[2, 3]""")
    assert graph.simplify(before) == before
    x = np.zeros((2, 3))
    y = graph.compile(before)(x=x)["y"].numpy()
    np.testing.assert_array_equal(y, [[1, 2, 3], [4, 5, 6]])


def test_simplify_leaves_a_real_cast():
    before = g(f"""
        {X}
        %1 = cast(%0) {{dtype='float64'}} : float64[3]""")
    assert graph.simplify(before) == before


# -- CSE ---------------------------------------------------------------------------------------
def test_cse_merges_equal_subexpressions_from_the_leaves_up_ignoring_sites():
    before = g(f"""
        {X}
        %1 = parameter {{name='w'}} : float32[3]
        %2 = multiply(%0, %1) : float32[3]  # a.py:1
        %3 = exp(%2) : float32[3]  # a.py:2
        %4 = parameter {{name='w'}} : float32[3]
        %5 = multiply(%0, %4) : float32[3]  # b.py:7
        %6 = exp(%5) : float32[3]  # b.py:8
        %7 = add(%3, %6) : float32[3]""")
    after = graph.cse(before)
    assert after == g(f"""
        {X}
        %1 = parameter {{name='w'}} : float32[3]
        %2 = multiply(%0, %1) : float32[3]
        %3 = exp(%2) : float32[3]
        %4 = add(%3, %3) : float32[3]""")
    assert after.nodes[2].site == "a.py:1"  # the first one's site is kept


def test_cse_keeps_nodes_that_differ_in_attributes_types_or_constant_bits():
    before = g(f"""
        {X}
        %1 = sum(%0) {{axis=0, keepdims=False}} : float32[]
        %2 = sum(%0) {{axis=0, keepdims=True}} : float32[1]
        %3 = constant {{value=0.0}} : float64[]
        %4 = constant {{value=-0.0}} : float64[]
        %5 = constant {{value=0}} : int64[]
        %6 = constant {{value=array(0.0, 'float64')}} : float64[]
        %7 = concatenate(%1, %2, %3, %4, %5, %6) {{axis=0}} : float32[1]""")
    assert graph.cse(before) == before


def test_cse_merges_equal_nan_constants_and_is_a_fixed_point():
    before = g(f"""
        {X}
        %1 = constant {{value=nan}} : float64[]
        %2 = add(%0, %1) : float32[3]
        %3 = constant {{value=nan}} : float64[]
        %4 = add(%0, %3) : float32[3]
        %5 = multiply(%2, %4) : float32[3]""")
    once = graph.cse(before)
    assert len(once) == 4
    assert graph.cse(once) == once


def test_cse_never_merges_impure_ops():
    class Draw(kerasrs.autodiff.Function):
        def forward(self, x):
            return x + np.random.default_rng().normal(size=x.shape).astype(x.dtype)

        def backward(self, gy):
            return (gy,)

    graph.register_op("test_passes.draw", Draw, pure=False)
    before = g(f"""
        {X}
        %1 = test_passes.draw(%0) : float32[3]
        %2 = test_passes.draw(%0) : float32[3]
        %3 = add(%1, %2) : float32[3]""")
    assert graph.cse(before) == before


# -- the "already computed" assertion ------------------------------------------------------------
def _asserted(second_copy):
    """x*w used by the output, and (second_copy) another x*w marked already computed."""
    def step(x):
        w = kerasrs.Variable(np.ones(3, "float32"), name="w")
        y = ops.exp(x * w)
        again = graph.already_computed(x * w if second_copy else x + w, "xw")
        return {"y": y + again}
    return graph.trace(step, x=np.ones(3, "float32"))


def test_cse_removes_an_assertion_whose_computation_exists():
    traced = _asserted(second_copy=True)
    assert any(n.op == "assert_computed" for n in traced.nodes)
    after = graph.cse(traced)
    assert not any(n.op == "assert_computed" for n in after.nodes)
    assert [n.op for n in after.nodes].count("multiply") == 1
    graph.compile(traced)(x=np.ones(3, "float32"))  # compile's passes remove it too


def test_running_a_graph_that_still_holds_an_assertion_names_it():
    traced = _asserted(second_copy=False)
    after = graph.optimize(traced)
    assert any(n.op == "assert_computed" for n in after.nodes)
    with pytest.raises(RuntimeError, match="assertion 'xw'.*not computed elsewhere"):
        graph.compile(traced)
    with pytest.raises(RuntimeError, match="assertion 'xw'"):
        traced.run(x=np.ones(3, "float32"))


def test_already_computed_is_the_identity_outside_a_trace():
    x = ops.convert_to_tensor(np.ones(2))
    assert graph.already_computed(x) is x


# -- dead nodes and the fixed point --------------------------------------------------------------
def test_remove_dead_drops_unused_nodes_but_keeps_inputs():
    before = g("""
        %0 = input {name='x'} : float32[3]
        %1 = input {name='unused'} : float32[2]
        %2 = exp(%0) : float32[3]
        %3 = parameter {name='w'} : float32[3]
        %4 = log(%3) : float32[3]
        %5 = tanh(%0) : float32[3]""")
    assert graph.remove_dead(before) == g("""
        %0 = input {name='x'} : float32[3]
        %1 = input {name='unused'} : float32[2]
        %2 = tanh(%0) : float32[3]""")


def test_remove_dead_keeps_what_updates_need():
    before = g("""
        %0 = input {name='x'} : float32[3]
        %1 = parameter {name='w'} : float32[3]
        %2 = add(%1, %0) : float32[3]
        %3 = exp(%0) : float32[3]""", outputs="update 'w' = %2")
    assert graph.remove_dead(before) == g("""
        %0 = input {name='x'} : float32[3]
        %1 = parameter {name='w'} : float32[3]
        %2 = add(%1, %0) : float32[3]""", outputs="update 'w' = %2")


def test_optimize_reaches_a_fixed_point_that_one_round_does_not():
    """Round 1 turns int x * 0 into zeros; only round 2 can fold exp(cast(zeros))."""
    before = g("""
        %0 = input {name='x'} : int32[3]
        %1 = constant {value=0} : int64[]
        %2 = multiply(%0, %1) : int32[3]
        %3 = cast(%2) {dtype='float32'} : float32[3]
        %4 = exp(%3) : float32[3]""")
    one_round = graph.remove_dead(graph.cse(graph.simplify(graph.fold_constants(before))))
    assert [n.op for n in one_round.nodes] == ["input", "constant", "cast", "exp"]
    fixed = graph.optimize(before)
    assert fixed == g("""
        %0 = input {name='x'} : int32[3]
        %1 = constant {value=array([1.0, 1.0, 1.0], 'float32')} : float32[3]""")
    assert graph.optimize(fixed) == fixed
