"""Arithmetic, comparisons, matmul, dot, einsum and indexing: values against NumPy, float64
gradients against finite differences, and the error messages."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis.extra import numpy as hnp

import kerasrs
from kerasrs import ops
from kerasrs.testing import check_gradients

GRADIENT_TESTED = {"add", "subtract", "multiply", "divide", "power", "negative", "mod", "matmul",
                   "getitem", "dot", "einsum"}
NON_DIFFERENTIABLE = {
    "floor_divide": "piecewise constant: derivative 0 almost everywhere (TF/Keras give None)",
    "equal": "bool result", "not_equal": "bool result", "less": "bool result",
    "less_equal": "bool result", "greater": "bool result", "greater_equal": "bool result",
    "logical_and": "bool result", "logical_or": "bool result", "logical_not": "bool result",
    "stop_gradient": "its gradient is zero by design (see test_stop_gradient_is_a_constant)",
}

FAST = settings(max_examples=15, deadline=None, derandomize=True)  # fast and repeatable


def _rand(shape, seed=0, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, shape)


# -- binary arithmetic -------------------------------------------------------------------------
BINARY = {
    "add": (ops.add, np.add),
    "subtract": (ops.subtract, np.subtract),
    "multiply": (ops.multiply, np.multiply),
    "divide": (ops.divide, np.divide),
    "power": (ops.power, np.power),
    "mod": (ops.mod, np.mod),
}

BROADCAST_PAIRS = [((3,), (3,)), ((2, 3), (3,)), ((3, 1), (1, 4)), ((2, 1, 4), (3, 1)),
                   ((), (2, 2))]


def _binary_inputs(name, s1, s2):
    a, b = _rand(s1, 1), _rand(s2, 2)
    if name in ("divide", "mod"):  # keep the divisor away from 0 (and mod away from its jumps)
        b = np.sign(b) * (np.abs(b) + 0.5)
        a = np.round(a / b) * b + 0.3 * b if name == "mod" else a
    if name == "power":
        a = np.abs(a) + 0.5
    return a, b


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("s1,s2", BROADCAST_PAIRS)
def test_binary_ops_match_numpy_and_gradients(backend, name, s1, s2):
    op, ref = BINARY[name]
    a, b = _binary_inputs(name, s1, s2)
    y = op(kerasrs.Tensor(a), kerasrs.Tensor(b))
    assert y.shape == np.broadcast_shapes(s1, s2)
    np.testing.assert_allclose(y.numpy(), ref(a, b), rtol=1e-12)
    check_gradients(op, [a, b])


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops_with_python_scalars_keep_float32(name):
    op, ref = BINARY[name]
    a = np.float32([1.5, 2.5, 3.5])
    for y, want in ((op(kerasrs.Tensor(a), 2.0), ref(a, np.float32(2))),
                    (op(2.0, kerasrs.Tensor(a)), ref(np.float32(2), a))):
        assert y.dtype == np.float32
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)


@FAST
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3))
def test_broadcast_gradients_sum_back_to_each_shape(shapes):
    s1, s2 = shapes.input_shapes
    check_gradients(lambda x, y: ops.multiply(ops.add(x, y), y), [_rand(s1, 3), _rand(s2, 4)])


def test_negative_and_operators():
    a, b = _rand((2, 3), 5), _rand((2, 3), 6) + 3
    ta, tb = kerasrs.Tensor(a), kerasrs.Tensor(b)
    np.testing.assert_allclose(ops.negative(ta).numpy(), -a)
    np.testing.assert_allclose((-ta + tb * 2 - 1 / tb).numpy(), -a + b * 2 - 1 / b)
    np.testing.assert_allclose((ta ** 2).numpy(), a ** 2)
    np.testing.assert_allclose((2.0 ** ta).numpy(), 2.0 ** a)
    np.testing.assert_allclose((ta @ tb.T).numpy(), a @ b.T)
    np.testing.assert_allclose((ta // 0.7).numpy(), a // 0.7)
    np.testing.assert_allclose((ta % 0.7).numpy(), a % 0.7)
    check_gradients(ops.negative, [a])


def test_power_gradient_with_respect_to_exponent_is_zero_at_zero_base():
    x = kerasrs.Tensor(np.array([0.0, 2.0]))
    e = kerasrs.Tensor(np.array([2.0, 3.0]))
    with kerasrs.GradientTape() as tape:
        tape.watch(e)
        y = ops.power(x, e)
    np.testing.assert_allclose(tape.gradient(y, e).numpy(), [0.0, 8 * np.log(2.0)])


def test_mod_gradient_values():
    a, b = kerasrs.Tensor(np.array([5.5, -5.5])), kerasrs.Tensor(np.array([2.0, 2.0]))
    with kerasrs.GradientTape() as tape:
        tape.watch([a, b])
        y = ops.mod(a, b)
    np.testing.assert_allclose(y.numpy(), [1.5, 0.5])
    ga, gb = tape.gradient(y, [a, b])
    np.testing.assert_allclose(ga.numpy(), [1, 1])
    np.testing.assert_allclose(gb.numpy(), [-2, 3])  # -floor(a / b)


def test_floor_divide_is_a_constant():
    a = kerasrs.Tensor(np.array([5.5, -5.5]))
    with kerasrs.GradientTape() as tape:
        tape.watch(a)
        y = ops.floor_divide(a, 2.0)
    np.testing.assert_allclose(y.numpy(), [2.0, -3.0])
    assert tape.gradient(y, a) is None


def test_stop_gradient_is_a_constant():
    x = kerasrs.Tensor(np.array([1.0, 2.0]))
    with kerasrs.GradientTape() as tape:
        tape.watch(x)
        y = ops.stop_gradient(x) * x
    np.testing.assert_array_equal(y.numpy(), [1.0, 4.0])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1.0, 2.0])


# -- comparisons -------------------------------------------------------------------------------
@pytest.mark.parametrize("name,ref", [
    ("equal", np.equal), ("not_equal", np.not_equal), ("less", np.less),
    ("less_equal", np.less_equal), ("greater", np.greater), ("greater_equal", np.greater_equal),
    ("logical_and", np.logical_and), ("logical_or", np.logical_or)])
def test_comparisons_match_numpy(backend, name, ref):
    a, b = np.array([[1.0, 2.0, 3.0]]), np.array([[2.0], [0.0]])
    if name.startswith("logical"):
        a, b = a > 1.5, b > 1.0
    y = getattr(ops, name)(kerasrs.Tensor(a), kerasrs.Tensor(b))
    assert y.dtype == bool
    np.testing.assert_array_equal(y.numpy(), ref(a, b))


def test_logical_not_and_operator_forms():
    a = kerasrs.Tensor(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(ops.logical_not(a > 1.5).numpy(), [True, False, False])
    np.testing.assert_array_equal((~(a > 1.5)).numpy(), [True, False, False])
    np.testing.assert_array_equal((a == 2.0).numpy(), [False, True, False])
    np.testing.assert_array_equal(((a > 1) & (a < 3)).numpy(), [False, True, False])
    np.testing.assert_array_equal(((a < 2) | (a > 2)).numpy(), [True, False, True])


# -- matmul and dot ----------------------------------------------------------------------------
MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                 ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)),
                 ((2, 1, 2, 3), (3, 3, 2)), ((3,), (2, 3, 4)), ((2, 2, 3), (3,))]


@pytest.mark.parametrize("s1,s2", MATMUL_SHAPES)
def test_matmul_values_and_gradients(backend, s1, s2):
    a, b = _rand(s1, 7), _rand(s2, 8)
    np.testing.assert_allclose(ops.matmul(a, b).numpy(), np.matmul(a, b), rtol=1e-12)
    check_gradients(ops.matmul, [a, b])


def test_matmul_error_names_the_op_and_shapes():
    with pytest.raises(ValueError, match=r"matmul.*Received: shapes \(2, 3\) and \(4, 5\)"):
        ops.matmul(np.ones((2, 3)), np.ones((4, 5)))
    with pytest.raises(ValueError, match="matmul: inputs must be at least 1-D"):
        ops.matmul(np.ones(()), np.ones((4, 5)))


DOT_SHAPES = [((), (2, 3)), ((3,), (3,)), ((2, 3), (3,)), ((2, 3), (3, 4)), ((2, 4, 3), (3,)),
              ((2, 4, 3), (5, 3, 2)), ((3,), (2, 3, 4)), ((2, 3), (4, 3, 2))]


@pytest.mark.parametrize("s1,s2", DOT_SHAPES)
def test_dot_values_and_gradients(backend, s1, s2):
    a, b = _rand(s1, 9), _rand(s2, 10)
    y = ops.dot(a, b)
    np.testing.assert_allclose(y.numpy(), np.dot(a, b), rtol=1e-12)
    check_gradients(ops.dot, [a, b])


def test_dot_error_names_the_op_and_shapes():
    with pytest.raises(ValueError, match=r"dot: .*Received: shapes \(2, 4, 3\) and \(5, 2, 2\)"):
        ops.dot(np.ones((2, 4, 3)), np.ones((5, 2, 2)))


# -- einsum ------------------------------------------------------------------------------------
EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),            # implicit output
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("bij,bjk->bik", [(1, 2, 3), (3, 3, 2)]),  # size-1 batch broadcast
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ij->j", [(2, 3)]),
    ("ii", [(3, 3)]),                       # trace
    ("ii->i", [(3, 3)]),                    # diagonal
    ("iij,j->i", [(3, 3, 2), (2,)]),
    ("i,j->ij", [(2,), (3,)]),              # outer product
    ("i,i", [(3,), (3,)]),                  # inner product
    ("...ij,...jk->...ik", [(2, 2, 3), (3, 2)]),
    ("...ij,...jk", [(2, 1, 2, 3), (3, 3, 4)]),
    ("...i->...", [(2, 3, 4)]),
    ("...i->i", [(4,)]),                    # an empty ellipsis
    ("ab,bc,cd->ad", [(2, 3), (3, 2), (2, 4)]),
    ("ij,ij->i", [(2, 3), (1, 3)]),
    ("i...->...", [(2, 3)]),
]


@pytest.mark.parametrize("spec,shapes", EINSUM_CASES)
def test_einsum_values_and_gradients(backend, spec, shapes):
    xs = [_rand(s, 11 + i) for i, s in enumerate(shapes)]
    np.testing.assert_allclose(ops.einsum(spec, *xs).numpy(), np.einsum(spec, *xs), rtol=1e-12,
                               atol=1e-12)
    check_gradients(lambda *ts: ops.einsum(spec, *ts), xs)


@pytest.mark.parametrize("spec,shapes,match", [
    ("ij,jk->ik", [(2, 3)], "2 operand subscripts for 1 operands"),
    ("ij,jk->ik", [(2, 3), (4, 5)], "einsum"),
    ("ijk->ik", [(2, 3)], "do not fit"),
    ("ij->iq", [(2, 3)], "every output letter"),
    ("i1->i", [(2, 3)], "must be letters"),
    ("...i->i", [(2, 3)], "cannot sum over the '...' axes"),
])
def test_einsum_errors(spec, shapes, match):
    with pytest.raises(ValueError, match=match):
        ops.einsum(spec, *[np.ones(s) for s in shapes])


# -- getitem -----------------------------------------------------------------------------------
GETITEM_KEYS = [
    1, -1, slice(1, None), (slice(None), 2), (Ellipsis, 1), (None, 0), (0, None, slice(None, 2)),
    (slice(None, None, -1), Ellipsis), np.array([0, 2, 0]), (slice(None), np.array([1, 1, 3])),
    (np.array([0, 2]), np.array([1, 3])), np.array([True, False, True]),
    (Ellipsis, np.array([True, False, True, True])), [2, 0],
]


@pytest.mark.parametrize("key", GETITEM_KEYS, ids=repr)
def test_getitem_values_and_gradients(backend, key):
    x = _rand((3, 4), 20)
    want = x[np.asarray(key) if isinstance(key, list) else key]
    np.testing.assert_allclose(ops.getitem(x, key).numpy(), want)
    np.testing.assert_allclose(kerasrs.Tensor(x)[key].numpy(), want)
    check_gradients(lambda t: ops.getitem(t, key), [x])


def test_getitem_repeated_indices_add_their_gradients():
    x = kerasrs.Tensor(np.zeros(3))
    with kerasrs.GradientTape() as tape:
        tape.watch(x)
        y = ops.getitem(x, np.array([0, 0, 2, 0]))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [3.0, 0.0, 1.0])


def test_getitem_with_a_tensor_mask_and_out_of_range_error():
    x = kerasrs.Tensor(np.arange(6.0).reshape(2, 3))
    np.testing.assert_allclose(x[x > 2.5].numpy(), [3.0, 4.0, 5.0])
    with pytest.raises(IndexError, match=r"getitem.*Received: input shapes \(2, 3\)"):
        ops.getitem(x, (5, 0))
