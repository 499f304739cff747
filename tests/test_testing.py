"""kerasrs.testing.check_gradients must pass right gradients and catch wrong ones."""

import numpy as np
import pytest

import kerasrs
from kerasrs import ops
from kerasrs.autodiff import Function
from kerasrs.testing import check_gradients


class _WrongSquare(Function):
    """x**2 with a deliberately wrong backward (3x instead of 2x)."""

    def forward(self, x):
        self.x = x
        return x * x

    def backward(self, gy):
        return (gy * 3 * self.x,)


class _DropsSecondInput(Function):
    def forward(self, a, b):
        return a * b

    def backward(self, gy):
        return gy, None  # wrong on both counts


def test_passes_for_correct_gradients_of_several_inputs_and_outputs():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal(4)
    check_gradients(lambda x, y: ops.tanh(x * y), [a, b])
    check_gradients(lambda x, y: [ops.sum(x, axis=0), x * y], [a, b])  # list of outputs


def test_fails_for_a_wrong_gradient_naming_input_shape_and_values():
    x = np.array([[1.0, -2.0], [0.5, 3.0]])
    with pytest.raises(AssertionError, match=r"check_gradients: input 0 \(shape \(2, 2\)\) has "
                                             r"a wrong gradient\. Worst element \(\d, \d\): "
                                             r"reverse mode"):
        check_gradients(lambda t: _WrongSquare().apply(t), [x])


def test_a_missing_gradient_counts_as_zero_and_fails():
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    with pytest.raises(AssertionError, match="input 0"):
        check_gradients(lambda x, y: _DropsSecondInput().apply(x, y), [a, b])


def test_integer_inputs_pass_through_unchecked():
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    seen = []

    def fn(t, idx):
        seen.append(idx.dtype)
        return ops.take(t, idx, axis=1)

    check_gradients(fn, [x, np.array([2, 0])])
    assert all(d.kind == "i" for d in seen)


def test_float32_inputs_are_checked_in_float64():
    dtypes = []

    def fn(t):
        dtypes.append(t.dtype)
        return t * t

    check_gradients(fn, [np.array([1.0, 2.0], dtype="float32")])
    assert set(dtypes) == {np.dtype("float64")}


def test_large_inputs_check_a_random_subset():
    calls = []

    def fn(t):
        calls.append(1)
        return ops.sum(t * t)

    check_gradients(fn, [np.linspace(-1, 1, 5000)], max_elements=10)
    assert len(calls) <= 2 + 2 * 10  # one weight-fixing pass, one taped pass, 2 per element


def test_tolerances_are_respected():
    x = np.array([1.0, 2.0])
    # 3x vs 2x: |error| = x; a huge atol accepts it, the default does not
    check_gradients(lambda t: _WrongSquare().apply(t), [x], atol=10.0)
    with pytest.raises(AssertionError):
        check_gradients(lambda t: _WrongSquare().apply(t), [x])


def test_accepts_tensors_and_leaves_them_unchanged():
    t = kerasrs.Tensor(np.array([0.5, 1.5]))
    before = t.numpy().copy()
    check_gradients(ops.exp, [t])
    np.testing.assert_array_equal(t.numpy(), before)
