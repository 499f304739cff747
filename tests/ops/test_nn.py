"""Activations, softmax/log_softmax and normalize: values against NumPy formulas and real Keras 3
values, float64 gradients, stability at extreme inputs, float32/float16 dtypes, and behaviour
cases C09 (masked softmax) and C11 step 4 (normalize of a zero vector)."""

import json
import math
import pathlib
import warnings

import numpy as np
import pytest

import kerasrs
from kerasrs import ops
from kerasrs.testing import check_gradients

GRADIENT_TESTED = {
    "relu", "relu6", "sigmoid", "softplus", "softsign", "silu", "swish", "log_sigmoid",
    "leaky_relu", "hard_sigmoid", "hard_silu", "hard_swish", "elu", "selu", "celu", "gelu",
    "glu", "tanh_shrink", "hard_tanh", "hard_shrink", "soft_shrink", "sparse_sigmoid",
    "sparse_plus", "squareplus", "threshold", "softmax", "log_softmax", "normalize",
}

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures"
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
_erf = np.vectorize(math.erf)


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _grad(fn, x):
    """d sum(fn(x)) / dx as a NumPy array."""
    xt = kerasrs.Tensor(np.asarray(x))
    with kerasrs.GradientTape() as tape:
        tape.watch(xt)
        y = fn(xt)
    return tape.gradient(y, xt).numpy()


# name: (call, NumPy reference). Kinks are avoided by the test inputs (see _points).
ACTIVATIONS = {
    "relu": (ops.relu, lambda x: np.maximum(x, 0)),
    "relu6": (ops.relu6, lambda x: np.clip(x, 0, 6)),
    "sigmoid": (ops.sigmoid, _sig),
    "softplus": (ops.softplus, lambda x: np.log1p(np.exp(x))),
    "softsign": (ops.softsign, lambda x: x / (1 + np.abs(x))),
    "silu": (ops.silu, lambda x: x * _sig(x)),
    "swish": (ops.swish, lambda x: x * _sig(x)),
    "log_sigmoid": (ops.log_sigmoid, lambda x: np.log(_sig(x))),
    "leaky_relu": (ops.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * x)),
    "leaky_relu_0.05": (lambda x: ops.leaky_relu(x, negative_slope=0.05),
                        lambda x: np.where(x > 0, x, 0.05 * x)),
    "hard_sigmoid": (ops.hard_sigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    "hard_silu": (ops.hard_silu, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "hard_swish": (ops.hard_swish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "elu": (ops.elu, lambda x: np.where(x > 0, x, np.exp(x) - 1)),
    "elu_0.5": (lambda x: ops.elu(x, alpha=0.5), lambda x: np.where(x > 0, x, 0.5 * np.expm1(x))),
    "selu": (ops.selu, lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x))),
    "celu": (lambda x: ops.celu(x, alpha=2.0),
             lambda x: np.where(x > 0, x, 2.0 * np.expm1(x / 2.0))),
    "gelu": (ops.gelu, lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) *
                                                         (x + 0.044715 * x ** 3)))),
    "gelu_exact": (lambda x: ops.gelu(x, approximate=False),
                   lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2)))),
    "tanh_shrink": (ops.tanh_shrink, lambda x: x - np.tanh(x)),
    "hard_tanh": (ops.hard_tanh, lambda x: np.clip(x, -1, 1)),
    "hard_shrink": (ops.hard_shrink, lambda x: np.where(np.abs(x) > 0.5, x, 0)),
    "soft_shrink": (ops.soft_shrink, lambda x: np.sign(x) * np.maximum(np.abs(x) - 0.5, 0)),
    "sparse_sigmoid": (ops.sparse_sigmoid, lambda x: np.clip((x + 1) / 2, 0, 1)),
    "sparse_plus": (ops.sparse_plus,
                    lambda x: np.where(x <= -1, 0, np.where(x < 1, (x + 1) ** 2 / 4, x))),
    "squareplus": (ops.squareplus, lambda x: (x + np.sqrt(x * x + 4)) / 2),
    "threshold": (lambda x: ops.threshold(x, 0.3, -2.0), lambda x: np.where(x > 0.3, x, -2.0)),
}


def _points():
    """Inputs on every piece of every piecewise activation, at least 0.05 from any kink."""
    base = np.linspace(-7.9, 7.9, 41)
    kinks = np.array([-3, -1, -0.5, 0, 0.3, 0.5, 1, 3, 6])
    keep = np.min(np.abs(base[:, None] - kinks[None, :]), axis=1) > 0.05
    return base[keep]


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_values_and_gradients(name):
    call, ref = ACTIVATIONS[name]
    x = _points()
    np.testing.assert_allclose(call(x).numpy(), ref(x), rtol=1e-12, atol=1e-14)
    check_gradients(call, [x.reshape(4, -1)], max_elements=100)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_activation_keeps_low_precision_dtypes(name, dtype):
    call, ref = ACTIVATIONS[name]
    x = _points().astype(dtype)
    y = call(x)
    assert y.dtype == np.dtype(dtype)
    tol = 1e-6 if dtype == "float32" else 3e-3
    np.testing.assert_allclose(y.numpy(), ref(x.astype("float64")), rtol=tol, atol=tol * 4)
    assert _grad(call, x).dtype == np.dtype(dtype)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_is_finite_with_finite_gradient_at_huge_inputs(name):
    call, _ = ACTIVATIONS[name]
    x = np.array([-1e4, -80.0, 80.0, 1e4], "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warnings from a discarded branch either
        y = call(x).numpy()
        g = _grad(call, x)
    assert np.all(np.isfinite(y)) and np.all(np.isfinite(g)), (y, g)


def test_softplus_and_log_sigmoid_are_exact_at_extremes():
    x = np.array([-1e4, -50.0, 50.0, 1e4], "float32")
    np.testing.assert_allclose(ops.softplus(x).numpy(), [0.0, np.exp(-50.0), 50.0, 1e4],
                               rtol=1e-6)
    np.testing.assert_allclose(ops.log_sigmoid(x).numpy(), [-1e4, -50.0, -np.exp(-50.0), 0.0],
                               rtol=1e-6)
    np.testing.assert_allclose(_grad(ops.softplus, x), [0.0, np.exp(-50.0), 1.0, 1.0], rtol=1e-6)


def test_kink_conventions():
    """Gradients at kinks: relu'(0) = 0 (PyTorch), leaky_relu'(0) = slope, elu'(0) = alpha."""
    zero = np.zeros(1)
    assert _grad(ops.relu, zero)[0] == 0.0
    assert _grad(lambda t: ops.leaky_relu(t, 0.1), zero)[0] == pytest.approx(0.1)
    assert _grad(lambda t: ops.elu(t, 0.7), zero)[0] == pytest.approx(0.7)
    assert _grad(ops.gelu, zero)[0] == pytest.approx(0.5)
    assert _grad(lambda t: ops.gelu(t, approximate=False), zero)[0] == pytest.approx(0.5)


def test_gelu_exact_and_approximate_differ_slightly():
    x = np.linspace(-4, 4, 33)
    exact = ops.gelu(x, approximate=False).numpy()
    approx = ops.gelu(x).numpy()
    assert 1e-5 < np.abs(exact - approx).max() < 1e-3


def test_glu_values_and_gradients():
    x = np.random.default_rng(0).standard_normal((3, 4, 6))
    np.testing.assert_allclose(ops.glu(x).numpy(), x[..., :3] * _sig(x[..., 3:]), rtol=1e-12)
    np.testing.assert_allclose(ops.glu(x, axis=1).numpy(), x[:, :2] * _sig(x[:, 2:]),
                               rtol=1e-12)
    check_gradients(lambda t: ops.glu(t, axis=1), [x])


@pytest.mark.parametrize("call,pattern", [
    (lambda: ops.leaky_relu(np.ones(2), negative_slope=float("nan")),
     r"leaky_relu: `negative_slope` must be a finite number. Received"),
    (lambda: ops.elu(np.ones(2), alpha="big"), r"elu: `alpha` must be a finite number"),
    (lambda: ops.celu(np.ones(2), alpha=0.0), r"celu: `alpha` must be positive"),
    (lambda: ops.squareplus(np.ones(2), b=-1), r"squareplus: `b` must be >= 0"),
    (lambda: ops.glu(np.ones((2, 3))), r"glu: the size of `axis` must be even. Received"),
])
def test_activation_argument_errors(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


# -- softmax / log_softmax ---------------------------------------------------------------------
def _softmax_ref(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [-1, 0, 1, (1, 2), (0, 2), (0, 1, 2)])
def test_softmax_and_log_softmax_values_and_gradients(axis):
    x = np.random.default_rng(0).standard_normal((3, 4, 5)) * 3
    want = _softmax_ref(x, axis)
    np.testing.assert_allclose(ops.softmax(x, axis=axis).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(ops.log_softmax(x, axis=axis).numpy(), np.log(want), rtol=1e-12)
    check_gradients(lambda t: ops.softmax(t, axis=axis), [x])
    check_gradients(lambda t: ops.log_softmax(t, axis=axis), [x])


def test_softmax_of_huge_logits_is_finite():
    x = np.array([[1e4, 0.0, -1e4], [1e8, 1e8, 0.0]], "float32")
    np.testing.assert_allclose(ops.softmax(x).numpy(), [[1, 0, 0], [0.5, 0.5, 0]], atol=1e-7)
    np.testing.assert_allclose(ops.log_softmax(x).numpy()[1, :2], [-np.log(2)] * 2, rtol=1e-6)
    assert np.all(np.isfinite(_grad(ops.log_softmax, x)))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_c09_softmax_with_minus_inf_is_not_nan(dtype):
    """Behaviour case C09 step 3: softmax([1, -inf, 1]) = [0.5, 0, 0.5]; gradient of its first
    output is [0.25, 0, -0.25] (0, not NaN, at the -inf slot)."""
    x = kerasrs.Tensor(np.array([1.0, -np.inf, 1.0], dtype))
    with kerasrs.GradientTape() as tape:
        tape.watch(x)
        y = ops.softmax(x)
        first = y[0]
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y.numpy(), [0.5, 0.0, 0.5])
    np.testing.assert_array_equal(tape.gradient(first, x).numpy(), [0.25, 0.0, -0.25])


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_c09_masked_softmax_with_large_negative_mask(dtype):
    """C09 step 1 at op level: a mask added as a large negative number in float32."""
    x = np.array([[1.0, 2.0, 3.0]], dtype)
    masked = np.where([[True, True, False]], x, np.finfo(dtype).min)
    y = ops.softmax(masked).numpy()
    np.testing.assert_allclose(y, [[0.268941, 0.731059, 0.0]], atol=1e-3 if dtype == "float16"
                               else 1e-6)
    assert np.all(np.isfinite(y))


@pytest.mark.parametrize("op", [ops.softmax, ops.log_softmax, ops.normalize])
@pytest.mark.parametrize("axis", [3, -4, (0, 0)])
def test_axis_errors(op, axis):
    with pytest.raises(ValueError, match=r"(`axis` must name distinct axes of|axis -?\d is out "
                                         r"of bounds for) a rank-3 tensor. Received: axis="):
        op(np.ones((2, 3, 4)), axis=axis)


# -- normalize ---------------------------------------------------------------------------------
@pytest.mark.parametrize("order,axis", [(2, -1), (2, 0), (2, (0, 2)), (1, 1), (3, -1)])
def test_normalize_values_and_gradients(order, axis):
    x = np.random.default_rng(1).standard_normal((3, 4, 5))
    norm = (np.abs(x) ** order).sum(axis=axis, keepdims=True) ** (1 / order)
    np.testing.assert_allclose(ops.normalize(x, axis=axis, order=order).numpy(), x / norm,
                               rtol=1e-12)
    check_gradients(lambda t: ops.normalize(t, axis=axis, order=order), [x])


def test_c11_normalize_of_zero_vector_has_finite_gradient():
    """Behaviour case C11 step 4: normalize([[0,0,0]]) = 0 with gradient 1/epsilon = 1e7."""
    v = np.zeros((1, 3), "float32")
    np.testing.assert_array_equal(ops.normalize(v).numpy(), [[0.0, 0.0, 0.0]])
    g = _grad(lambda t: ops.sum(ops.normalize(t)), v)
    np.testing.assert_allclose(g, [[1e7, 1e7, 1e7]], rtol=1e-5)
    g1 = _grad(lambda t: ops.sum(ops.normalize(t, order=1)), v)
    np.testing.assert_allclose(g1, [[1e7, 1e7, 1e7]], rtol=1e-5)


def test_normalize_tiny_vector_uses_the_epsilon_floor():
    v = np.array([[3e-9, 4e-9]])
    np.testing.assert_allclose(ops.normalize(v).numpy(), v * 1e7, rtol=1e-12)
    np.testing.assert_allclose(ops.normalize(v, epsilon=1e-10).numpy(), [[0.6, 0.8]], rtol=1e-9)
    assert ops.normalize(np.float64(3.0)).numpy().tolist() == [1.0]  # 0-d: shape (1,)


@pytest.mark.parametrize("kwargs,pattern", [
    ({"order": 0}, r"`order` must be an int >= 1. Received: order=0"),
    ({"order": 2.5}, r"`order` must be an int >= 1"),
    ({"order": 1, "axis": (0, 1)}, r"matrix norm"),
])
def test_normalize_argument_errors(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        ops.normalize(np.ones((2, 3)), **kwargs)


# -- real Keras values -------------------------------------------------------------------------
def _keras_cases():
    """The activation/softmax/normalize cases of the Keras fixture (conv ones: test_conv.py)."""
    data = np.load(FIXTURES / "keras_nn_ops.npz")
    cases = json.loads(str(data["cases"]))
    return data, [(i, op, kw) for i, (op, kw) in enumerate(cases) if op in GRADIENT_TESTED]


_KERAS_DATA, _KERAS_CASES = _keras_cases()


@pytest.mark.parametrize("index,op,kwargs", _KERAS_CASES,
                         ids=[f"{i}-{op}" for i, op, _ in _KERAS_CASES])
def test_matches_keras_values_and_gradients(index, op, kwargs):
    data = _KERAS_DATA
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}
    x = kerasrs.Tensor(data[f"{index}/x0"])
    with kerasrs.GradientTape() as tape:
        tape.watch(x)
        y = getattr(ops, op)(x, **kwargs)
    g = tape.gradient(y, x, output_gradients=data[f"{index}/w"])
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), data[f"{index}/y"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g.numpy(), data[f"{index}/g0"], rtol=1e-5, atol=1e-6)
