"""Elementwise math, reductions and statistics: values against NumPy, float64 gradients against
finite differences over every axis/keepdims variant, and the conventions at kinks."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import kerasrs
from kerasrs import ops
from kerasrs.testing import check_gradients

GRADIENT_TESTED = {
    "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "square", "absolute", "tanh", "sin", "cos",
    "reciprocal", "erf", "cast", "where", "maximum", "minimum", "clip", "sum", "mean", "max",
    "min", "prod", "var", "std", "moments", "cumsum", "logsumexp", "norm",
}
NON_DIFFERENTIABLE = {
    "sign": "piecewise constant: derivative 0 almost everywhere",
    "argmax": "integer result", "argmin": "integer result",
    "isnan": "bool result", "isfinite": "bool result", "isinf": "bool result",
    "all": "bool result", "any": "bool result", "count_nonzero": "integer result",
}

FAST = settings(max_examples=12, deadline=None, derandomize=True)  # fast and repeatable


def _rand(shape, seed=0, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, shape)


def _grad(fn, x):
    """Gradient of sum(fn(x)) with respect to x, as a NumPy array."""
    x = kerasrs.Tensor(np.asarray(x, dtype="float64"))
    with kerasrs.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return tape.gradient(y, x).numpy()


# -- unary elementwise -------------------------------------------------------------------------
_erf = np.vectorize(math.erf)
UNARY = {  # name: (reference, input domain)
    "exp": (np.exp, (-2, 2)),
    "log": (np.log, (0.2, 3)),
    "log1p": (np.log1p, (-0.5, 3)),
    "expm1": (np.expm1, (-2, 2)),
    "sqrt": (np.sqrt, (0.2, 3)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.2, 3)),
    "square": (np.square, (-2, 2)),
    "absolute": (np.abs, (0.1, 2)),
    "abs": (np.abs, (0.1, 2)),
    "tanh": (np.tanh, (-2, 2)),
    "sin": (np.sin, (-3, 3)),
    "cos": (np.cos, (-3, 3)),
    "reciprocal": (np.reciprocal, (0.3, 3)),
    "erf": (_erf, (-3, 3)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("shape", [(), (5,), (2, 3, 2)])
def test_unary_values_and_gradients(backend, name, shape):
    ref, (lo, hi) = UNARY[name]
    x = _rand(shape, 1, lo, hi)
    if name == "absolute":
        x = x * np.random.default_rng(2).choice([-1.0, 1.0], shape)
    op = getattr(ops, name)
    np.testing.assert_allclose(op(x).numpy(), ref(x), rtol=1e-12, atol=1e-14)
    check_gradients(op, [x])


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_keeps_float32(name):
    ref, (lo, hi) = UNARY[name]
    x = _rand((4,), 3, lo, hi).astype("float32")
    y = getattr(ops, name)(kerasrs.Tensor(x))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), ref(x.astype("float64")), rtol=2e-6, atol=1e-6)


def test_erf_is_float64_accurate_against_math_erf():
    x = np.concatenate([np.linspace(-7, 7, 40001), [0.0, -0.0, 1e-300, 1.999999, 2.0, 2.000001],
                        -np.logspace(-8, 1.5, 200), np.logspace(-8, 1.5, 200)])
    got = ops.erf(x).numpy()
    assert got.dtype == np.float64
    assert np.abs(got - _erf(x)).max() < 1e-12
    np.testing.assert_array_equal(ops.erf([np.inf, -np.inf]).numpy(), [1.0, -1.0])
    assert np.isnan(ops.erf([np.nan]).numpy()[0])
    assert ops.erf(np.array([1, 2])).dtype == np.float32


def test_sqrt_gradient_at_zero_is_inf_without_warning():  # behaviour case C11, step 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = _grad(ops.sqrt, [0.0, 4.0])
    assert g[0] == np.inf and g[1] == 0.25


def test_kink_conventions_follow_pytorch():
    np.testing.assert_array_equal(_grad(ops.abs, [-1.0, 0.0, 2.0]), [-1.0, 0.0, 1.0])
    # clip: gradient 1 inside [lo, hi] with both ends included, 0 outside
    g = _grad(lambda t: ops.clip(t, 0.0, 2.0), [-1.0, 0.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(g, [0.0, 1.0, 1.0, 1.0, 0.0])
    # sum of squares at 0: gradient 0 (behaviour case C11, step 3)
    np.testing.assert_array_equal(_grad(lambda t: ops.sum(ops.square(t)), [0.0, 0.0, 0.0]),
                                  [0.0, 0.0, 0.0])


def test_sign_values_and_no_gradient():
    x = kerasrs.Tensor(np.array([-2.0, 0.0, 3.0]))
    with kerasrs.GradientTape() as tape:
        tape.watch(x)
        y = ops.sign(x)
    np.testing.assert_array_equal(y.numpy(), [-1.0, 0.0, 1.0])
    assert tape.gradient(y, x) is None


def test_isnan_isfinite_isinf():
    x = np.array([1.0, np.nan, np.inf, -np.inf])
    np.testing.assert_array_equal(ops.isnan(x).numpy(), np.isnan(x))
    np.testing.assert_array_equal(ops.isfinite(x).numpy(), np.isfinite(x))
    np.testing.assert_array_equal(ops.isinf(x).numpy(), np.isinf(x))


# -- cast --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_cast_values_and_gradients(dtype):
    x = _rand((3, 2), 4)
    y = ops.cast(x, dtype)
    assert y.dtype == kerasrs.backend.standardize_dtype(dtype)
    np.testing.assert_allclose(y.numpy().astype("float64"), x, rtol=1e-2)
    # a round trip through a low precision has gradient 1 (finite differences cannot see it)
    np.testing.assert_array_equal(
        _grad(lambda t: ops.cast(ops.cast(t, dtype), "float64") * 2.0, x), np.full((3, 2), 2.0))
    check_gradients(lambda t: ops.cast(t, "float64") * t, [x])


def test_cast_to_int_stops_the_gradient_and_gradient_comes_back_in_input_dtype():
    x = kerasrs.Tensor(np.array([1.7, -2.2], dtype="float32"))
    with kerasrs.GradientTape(persistent=True) as tape:
        tape.watch(x)
        i = ops.cast(x, "int32")
        f = ops.cast(x, "float64") * 3.0
    np.testing.assert_array_equal(i.numpy(), [1, -2])
    assert tape.gradient(i, x) is None or not tape.gradient(i, x).numpy().any()
    g = tape.gradient(f, x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g.numpy(), [3.0, 3.0])


# -- where, maximum, minimum, clip -------------------------------------------------------------
@pytest.mark.parametrize("sc,s1,s2", [((3,), (3,), (3,)), ((2, 3), (3,), (2, 1)),
                                      ((2, 1), (1, 3), ())])
def test_where_values_and_gradients(backend, sc, s1, s2):
    cond = np.random.default_rng(5).random(sc) > 0.5
    a, b = _rand(s1, 6), _rand(s2, 7)
    np.testing.assert_allclose(ops.where(cond, a, b).numpy(), np.where(cond, a, b))
    check_gradients(lambda x, y: ops.where(cond, x, y), [a, b])


def test_where_with_condition_only_gives_indices():
    idx = ops.where(np.array([[0, 1], [1, 0]]))
    assert len(idx) == 2
    np.testing.assert_array_equal(idx[0].numpy(), [0, 1])
    np.testing.assert_array_equal(idx[1].numpy(), [1, 0])


@pytest.mark.parametrize("name", ["maximum", "minimum"])
@pytest.mark.parametrize("s1,s2", [((4,), (4,)), ((2, 3), (3,)), ((3, 1), ())])
def test_maximum_minimum_values_and_gradients(backend, name, s1, s2):
    a, b = _rand(s1, 8), _rand(s2, 9)
    op = getattr(ops, name)
    np.testing.assert_allclose(op(a, b).numpy(), getattr(np, name)(a, b))
    check_gradients(op, [a, b])


def test_maximum_ties_split_the_gradient_evenly():
    a, b = kerasrs.Tensor(np.array([1.0, 2.0, 3.0])), kerasrs.Tensor(np.array([1.0, 5.0, 0.0]))
    with kerasrs.GradientTape() as tape:
        tape.watch([a, b])
        y = ops.maximum(a, b)
    ga, gb = tape.gradient(y, [a, b])
    np.testing.assert_array_equal(ga.numpy(), [0.5, 0.0, 1.0])
    np.testing.assert_array_equal(gb.numpy(), [0.5, 1.0, 0.0])


@pytest.mark.parametrize("lo,hi", [(-1.0, 1.0), (0.0, 5.0)])
def test_clip_values_and_gradients(backend, lo, hi):
    x = _rand((3, 4), 10) * 1.3
    x[np.isclose(np.abs(x), 1.0, atol=1e-3)] += 0.01  # keep away from the ends
    np.testing.assert_allclose(ops.clip(x, lo, hi).numpy(), np.clip(x, lo, hi))
    check_gradients(lambda t: ops.clip(t, lo, hi), [x])


# -- reductions --------------------------------------------------------------------------------
AXES = [None, 0, 1, -1, (0, 2), (-1, 0), (0, 1, 2)]
REDUCTIONS = {  # name: (op, numpy reference)
    "sum": (ops.sum, lambda x, a, k: np.sum(x, axis=a, keepdims=k)),
    "mean": (ops.mean, lambda x, a, k: np.mean(x, axis=a, keepdims=k)),
    "max": (ops.max, lambda x, a, k: np.max(x, axis=a, keepdims=k)),
    "min": (ops.min, lambda x, a, k: np.min(x, axis=a, keepdims=k)),
    "prod": (ops.prod, lambda x, a, k: np.prod(x, axis=a, keepdims=k)),
    "var": (ops.var, lambda x, a, k: np.var(x, axis=a, keepdims=k)),
    "std": (ops.std, lambda x, a, k: np.std(x, axis=a, keepdims=k)),
    "logsumexp": (ops.logsumexp,
                  lambda x, a, k: np.log(np.sum(np.exp(x), axis=a, keepdims=k))),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_values_and_gradients(backend, name, axis, keepdims):
    op, ref = REDUCTIONS[name]
    x = _rand((2, 3, 4), 11, 0.5, 1.5) * np.random.default_rng(12).choice([-1, 1], (2, 3, 4))
    y = op(x, axis=axis, keepdims=keepdims)
    want = ref(x, axis, keepdims)
    assert y.shape == np.shape(want)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12)
    check_gradients(lambda t: op(t, axis=axis, keepdims=keepdims), [x])


@FAST
@given(x=hnp.arrays("float64", hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                    elements=st.integers(-300, 300).map(lambda i: i / 100),
                    unique=True),
       data=st.data())
def test_reductions_over_random_shapes_and_axes(x, data):
    axis = data.draw(st.sampled_from([None] + list(range(-x.ndim, x.ndim))))
    keepdims = data.draw(st.booleans())
    for name in ("sum", "max", "var", "logsumexp", "prod"):
        op, ref = REDUCTIONS[name]
        np.testing.assert_allclose(op(x, axis=axis, keepdims=keepdims).numpy(),
                                   ref(x, axis, keepdims), rtol=1e-10, atol=1e-12)
        check_gradients(lambda t: op(t, axis=axis, keepdims=keepdims), [x], atol=1e-5)


def test_max_min_ties_share_the_gradient_and_initial():
    np.testing.assert_allclose(_grad(ops.max, [1.0, 3.0, 3.0]), [0.0, 0.5, 0.5])
    np.testing.assert_allclose(_grad(lambda t: ops.min(t, axis=0), [[1.0, 2.0], [1.0, 0.0]]),
                               [[0.5, 0.0], [0.5, 1.0]])
    np.testing.assert_allclose(ops.max(np.array([1.0, 2.0]), initial=5.0).numpy(), 5.0)
    assert ops.amax is ops.max and ops.amin is ops.min


def test_reduction_bad_axis_error_names_the_op():
    with pytest.raises(ValueError, match=r"sum: axis 3 is out of bounds .* rank 2. Received"):
        ops.sum(np.ones((2, 3)), axis=3)
    with pytest.raises(ValueError, match=r"var: axis -3"):
        ops.var(np.ones((2, 3)), axis=-3)


def test_prod_gradient_is_exact_with_zeros():
    # one zero: only the zero's slot gets the product of the others; two zeros: nothing
    np.testing.assert_array_equal(_grad(ops.prod, [2.0, 0.0, 3.0]), [0.0, 6.0, 0.0])
    np.testing.assert_array_equal(_grad(ops.prod, [0.0, 0.0, 3.0]), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(_grad(lambda t: ops.prod(t, axis=1),
                                        [[2.0, 0.0], [4.0, 5.0]]), [[0.0, 2.0], [5.0, 4.0]])
    check_gradients(lambda t: ops.prod(t, axis=-1), [np.array([[0.0, 1.5, -2.0], [0.0, 0.0, 1.0]])])
    assert ops.prod(np.array([2, 3]), dtype="float32").dtype == np.float32


def test_std_gradient_at_constant_input_is_zero_not_nan():
    np.testing.assert_array_equal(_grad(ops.std, [2.0, 2.0, 2.0]), [0.0, 0.0, 0.0])


def test_var_of_integers_is_float():
    y = ops.var(np.array([1, 2, 3, 4]))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), 1.25)


@pytest.mark.parametrize("axes", [0, (0, 2), -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_moments_values_and_gradients(axes, keepdims):
    x = _rand((2, 3, 4), 13)
    m, v = ops.moments(x, axes, keepdims=keepdims)
    np.testing.assert_allclose(m.numpy(), np.mean(x, axis=axes, keepdims=keepdims))
    np.testing.assert_allclose(v.numpy(), np.var(x, axis=axes, keepdims=keepdims))
    check_gradients(lambda t: ops.moments(t, axes, keepdims=keepdims), [x])


def test_moments_in_float16_is_computed_in_float32():
    x = np.array([300.0, 310.0, 290.0], dtype="float16")  # squares overflow float16 (> 65504)
    m, v = ops.moments(x, 0)
    assert m.dtype == np.float16 and v.dtype == np.float16
    np.testing.assert_allclose(v.numpy().astype("float32"), np.var(x.astype("float32")),
                               rtol=1e-3)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_cumsum_values_and_gradients(backend, axis):
    x = _rand((3, 4), 14)
    np.testing.assert_allclose(ops.cumsum(x, axis).numpy(), np.cumsum(x, axis))
    check_gradients(lambda t: ops.cumsum(t, axis), [x])
    assert ops.cumsum(np.array([1, 2]), dtype="float32").dtype == np.float32


def test_logsumexp_is_stable():
    np.testing.assert_allclose(ops.logsumexp(np.array([1000.0, 1000.0])).numpy(),
                               1000 + np.log(2))
    np.testing.assert_allclose(ops.logsumexp(np.array([-1000.0, -1000.0])).numpy(),
                               -1000 + np.log(2))
    y = ops.logsumexp(np.array([[-np.inf, -np.inf], [0.0, -np.inf]]), axis=1)
    np.testing.assert_array_equal(y.numpy(), [-np.inf, 0.0])
    np.testing.assert_allclose(_grad(ops.logsumexp, [1000.0, 1000.0]), [0.5, 0.5])
    g = _grad(lambda t: ops.logsumexp(t, axis=1), [[-np.inf, -np.inf], [0.0, -np.inf]])
    np.testing.assert_array_equal(g, [[0.0, 0.0], [1.0, 0.0]])


# -- norm --------------------------------------------------------------------------------------
NORM_CASES = [  # (shape, ord, axis)
    ((5,), None, None), ((5,), 2, None), ((5,), 1, None), ((5,), np.inf, None),
    ((5,), -np.inf, None), ((5,), 3, None), ((5,), 0.5, None),
    ((2, 3, 4), None, None), ((2, 3, 4), None, 1), ((2, 3, 4), 2, -1), ((2, 3, 4), 1, 0),
    ((2, 3, 4), np.inf, 2),
    ((3, 4), None, None), ((3, 4), "fro", None), ((3, 4), "nuc", None), ((3, 4), 1, None),
    ((3, 4), -1, None), ((3, 4), np.inf, None), ((3, 4), -np.inf, None), ((3, 4), 2, None),
    ((3, 4), -2, None), ((2, 3, 4), "fro", (0, 2)), ((2, 3, 4), "nuc", (2, 1)),
    ((2, 3, 4), 1, (-1, 0)), ((2, 3, 4), 2, (0, 1)),
]


@pytest.mark.parametrize("shape,ord,axis", NORM_CASES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_norm_values_and_gradients(backend, shape, ord, axis, keepdims):
    x = _rand(shape, 15, 0.2, 2.0) * np.random.default_rng(16).choice([-1, 1], shape)
    y = ops.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    want = np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    assert y.shape == np.shape(want)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-10)
    check_gradients(lambda t: ops.norm(t, ord=ord, axis=axis, keepdims=keepdims), [x])


def test_norm_gradient_at_zero_is_zero_not_nan():  # behaviour case C11, step 2
    for ord in (None, 2, 1, np.inf, 3):
        g = _grad(lambda t: ops.norm(t, ord=ord), [0.0, 0.0, 0.0])
        np.testing.assert_array_equal(g, [0.0, 0.0, 0.0])
    g = _grad(lambda t: ops.norm(t, axis=1), [[0.0, 0.0], [3.0, 4.0]])
    np.testing.assert_allclose(g, [[0.0, 0.0], [0.6, 0.8]])
    assert ops.norm(np.array([0, 3, 4])).dtype == np.float32


def test_norm_rejects_bad_arguments():
    with pytest.raises(ValueError, match="norm: with ord set and axis=None"):
        ops.norm(np.ones((2, 2, 2)), ord=1)
    with pytest.raises(ValueError, match="norm: axis"):
        ops.norm(np.ones((2, 2)), ord="fro", axis=0)
    with pytest.raises(ValueError, match="norm: axis 5"):
        ops.norm(np.ones((2, 2)), axis=5)


# -- argmax, boolean reductions ----------------------------------------------------------------
@pytest.mark.parametrize("axis", [None, 0, -1])
def test_argmax_argmin_match_numpy(axis):
    x = _rand((3, 4), 17)
    np.testing.assert_array_equal(ops.argmax(x, axis).numpy(), np.argmax(x, axis))
    np.testing.assert_array_equal(ops.argmin(x, axis).numpy(), np.argmin(x, axis))
    np.testing.assert_array_equal(ops.argmax(x, axis, keepdims=True).numpy(),
                                  np.argmax(x, axis, keepdims=True))


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_all_any_count_nonzero(axis, keepdims):
    x = np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]])
    np.testing.assert_array_equal(ops.all(x, axis, keepdims).numpy(), np.all(x, axis,
                                                                              keepdims=keepdims))
    np.testing.assert_array_equal(ops.any(x, axis, keepdims).numpy(), np.any(x, axis,
                                                                             keepdims=keepdims))
    np.testing.assert_array_equal(ops.count_nonzero(x, axis).numpy(), np.count_nonzero(x, axis))
    assert ops.all(x).dtype == bool and ops.count_nonzero(x).dtype == np.int32


# -- Tensor methods ----------------------------------------------------------------------------
def test_tensor_reduction_methods_delegate_to_ops():
    x = _rand((2, 3), 18)
    t = kerasrs.Tensor(x)
    np.testing.assert_allclose(t.sum().numpy(), x.sum())
    np.testing.assert_allclose(t.mean(axis=0).numpy(), x.mean(0))
    np.testing.assert_allclose(t.max(axis=1, keepdims=True).numpy(), x.max(1, keepdims=True))
    np.testing.assert_allclose(t.min().numpy(), x.min())
    np.testing.assert_allclose(abs(t).numpy(), np.abs(x))
    assert t.astype("float32").dtype == np.float32
    check_gradients(lambda a: a.sum(axis=0) + a.mean() * a.max(axis=0) - a.min(), [x])


def test_numpy_reductions_on_a_tensor_take_numpy_keywords():
    """np.mean/np.sum/np.max/np.min(t) call the Tensor's method with dtype= and out=; out=None
    and dtype work, a real out= is a clear TypeError (was: unexpected keyword 'dtype')."""
    a = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], "float32")
    t = ops.convert_to_tensor(a)
    for fn in (np.mean, np.sum, np.max, np.min):
        np.testing.assert_allclose(np.asarray(fn(t)), fn(a), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(fn(t, axis=0, keepdims=True)),
                                   fn(a, axis=0, keepdims=True), rtol=1e-6)
    assert np.sum(t, dtype="float64").dtype == "float64"
    with pytest.raises(TypeError, match="Tensor.sum: out= is not supported"):
        np.sum(t, out=np.zeros(()))
