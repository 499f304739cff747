"""Cross-entropy ops: Keras's probability-path formula (clip to [1e-7, 1 - 1e-7], categorical
rescaled by the sum), the overflow-free logits path, float64 gradients, behaviour cases C06
(huge logits), C08 (probabilities of exactly 0 and 1) and C18 (sparse labels (N,) and (N, 1)) at
op level, and the shape errors."""

import numpy as np
import pytest

import kerasrs
from kerasrs import ops
from kerasrs.testing import check_gradients

GRADIENT_TESTED = {"binary_crossentropy", "categorical_crossentropy",
                   "sparse_categorical_crossentropy"}

EPS = np.float32(1e-7)


def _value_and_grad(fn, output):
    """(fn(output), d sum(fn(output)) / d output) as NumPy arrays."""
    out = kerasrs.Tensor(np.asarray(output))
    with kerasrs.GradientTape() as tape:
        tape.watch(out)
        y = fn(out)
    return y.numpy(), tape.gradient(y, out).numpy()


# -- Keras's formulas, in NumPy float32 (keras/src/backend/*/nn.py) ---------------------------
def keras_bce(t, p):
    p = np.clip(p, EPS, 1 - EPS)
    return -(t * np.log(p) + (1 - t) * np.log(1 - p))


def keras_cce(t, p, axis=-1):
    p = p / p.sum(axis=axis, keepdims=True)
    return -(t * np.log(np.clip(p, EPS, 1 - EPS))).sum(axis=axis)


def _log_softmax(x, axis=-1):
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def _probs(shape, seed):
    p = np.random.default_rng(seed).uniform(0.05, 1.0, shape)
    return p / p.sum(-1, keepdims=True)


# -- values ------------------------------------------------------------------------------------
def test_binary_crossentropy_matches_keras_formula_in_float32():
    rng = np.random.default_rng(0)
    t = rng.integers(0, 2, (4, 5)).astype("float32")
    p = rng.uniform(0, 1, (4, 5)).astype("float32")
    p[0, :2] = [0.0, 1.0]
    got = ops.binary_crossentropy(t, p)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.numpy(), keras_bce(t, p), rtol=1e-6)
    logits = rng.standard_normal((4, 5)).astype("float32") * 4
    want = keras_bce(t, 1 / (1 + np.exp(-logits.astype("float64"))))
    np.testing.assert_allclose(ops.binary_crossentropy(t, logits, from_logits=True).numpy(),
                               want, rtol=1e-5)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_categorical_crossentropy_matches_keras_formula(axis):
    rng = np.random.default_rng(1)
    p = rng.uniform(0, 1, (3, 4, 5)).astype("float32")
    others = tuple(n for i, n in enumerate(p.shape) if i != axis % 3)
    t = np.moveaxis(rng.dirichlet(np.ones(p.shape[axis]), size=others), -1, axis)
    t = t.astype("float32")
    got = ops.categorical_crossentropy(t, p, axis=axis)
    np.testing.assert_allclose(got.numpy(), keras_cce(t, p, axis), rtol=1e-6)
    logits = rng.standard_normal(p.shape).astype("float32")
    want = -(t * _log_softmax(logits.astype("float64"), axis)).sum(axis)
    np.testing.assert_allclose(
        ops.categorical_crossentropy(t, logits, from_logits=True, axis=axis).numpy(), want,
        rtol=1e-5)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_sparse_categorical_crossentropy_matches_one_hot_version(axis):
    rng = np.random.default_rng(2)
    p = rng.uniform(0, 1, (3, 4, 5))
    classes = p.shape[axis]
    label_shape = tuple(n for i, n in enumerate(p.shape) if i != axis % 3)
    labels = rng.integers(0, classes, label_shape)
    onehot = np.moveaxis(np.eye(classes)[labels], -1, axis)
    for from_logits in (False, True):
        got = ops.sparse_categorical_crossentropy(labels, p, from_logits=from_logits, axis=axis)
        want = ops.categorical_crossentropy(onehot, p, from_logits=from_logits, axis=axis)
        assert got.shape == label_shape
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


# -- gradients ---------------------------------------------------------------------------------
@pytest.mark.parametrize("from_logits", [False, True])
def test_binary_crossentropy_gradients(from_logits):
    rng = np.random.default_rng(3)
    t = rng.uniform(0, 1, (3, 4))
    out = rng.standard_normal((3, 4)) * 3 if from_logits else rng.uniform(0.05, 0.95, (3, 4))
    check_gradients(lambda a, b: ops.binary_crossentropy(a, b, from_logits=from_logits),
                    [t, out])


@pytest.mark.parametrize("from_logits", [False, True])
@pytest.mark.parametrize("axis", [-1, 1])
def test_categorical_crossentropy_gradients(from_logits, axis):
    rng = np.random.default_rng(4)
    t = np.moveaxis(_probs((2, 5, 4), 5), -1, axis)
    out = rng.standard_normal(t.shape) * 3 if from_logits else rng.uniform(0.05, 1.0, t.shape)
    check_gradients(lambda a, b: ops.categorical_crossentropy(a, b, from_logits, axis),
                    [t, out])


@pytest.mark.parametrize("from_logits", [False, True])
@pytest.mark.parametrize("axis", [-1, 0])
def test_sparse_categorical_crossentropy_gradients(from_logits, axis):
    rng = np.random.default_rng(6)
    out = rng.standard_normal((4, 3, 5)) * 3 if from_logits else rng.uniform(0.05, 1, (4, 3, 5))
    labels = rng.integers(0, out.shape[axis], (3, 5) if axis == 0 else (4, 3))
    check_gradients(lambda b: ops.sparse_categorical_crossentropy(labels, b, from_logits, axis),
                    [out])


# -- behaviour cases ---------------------------------------------------------------------------
def test_c06_sparse_crossentropy_from_huge_logits():
    """C06: ln 2 for logits [1e8, 1e8], 1000 for [0, 1000] against class 0; finite gradients."""
    y, g = _value_and_grad(lambda o: ops.sparse_categorical_crossentropy(
        np.array([1]), o, from_logits=True), np.array([[1e8, 1e8]], "float32"))
    np.testing.assert_allclose(y, [0.693147], rtol=1e-6)
    np.testing.assert_allclose(g, [[0.5, -0.5]], rtol=1e-6)
    y, g = _value_and_grad(lambda o: ops.sparse_categorical_crossentropy(
        np.array([0]), o, from_logits=True), np.array([[0.0, 1000.0]], "float32"))
    np.testing.assert_allclose(y, [1000.0], rtol=1e-6)
    np.testing.assert_allclose(g, [[-1.0, 1.0]], atol=1e-6)


@pytest.mark.parametrize("logits", [[[1e4, -1e4, 0.0]], [[-1e4, 1e4, 1e4]]])
def test_logit_crossentropies_are_finite_for_logits_of_1e4(logits):
    logits = np.array(logits, "float32")
    onehot = np.array([[0.0, 1.0, 0.0]], "float32")
    for fn in (lambda o: ops.categorical_crossentropy(onehot, o, from_logits=True),
               lambda o: ops.sparse_categorical_crossentropy(np.array([1]), o, from_logits=True),
               lambda o: ops.binary_crossentropy(onehot, o, from_logits=True)):
        y, g = _value_and_grad(fn, logits)
        assert np.all(np.isfinite(y)) and np.all(np.isfinite(g)), (y, g)
    y = ops.binary_crossentropy(onehot, logits, from_logits=True).numpy()
    want = np.maximum(logits, 0) - logits * onehot + np.log1p(np.exp(-np.abs(logits)))
    np.testing.assert_allclose(y, want, rtol=1e-6)


def test_c08_probabilities_of_exactly_zero_and_one():
    """C08: Keras's clip gives -ln(1e-7) = 16.118095 at worst; an all-zero row is guarded."""
    target = np.array([[1.0, 0.0, 0.0]], "float32")
    y, g = _value_and_grad(lambda o: ops.categorical_crossentropy(target, o),
                           np.array([[0.0, 0.5, 0.5]], "float32"))
    np.testing.assert_allclose(y, [16.118095], rtol=1e-6)
    np.testing.assert_array_equal(g, np.zeros((1, 3)))
    y, g = _value_and_grad(lambda o: ops.categorical_crossentropy(target, o),
                           np.zeros((1, 3), "float32"))  # Keras gives NaN here (#23551)
    np.testing.assert_allclose(y, [16.118095], rtol=1e-6)
    assert np.all(np.isfinite(g)) and np.all(g == 0)
    for t, p, lo, hi in [(1.0, 1.0, 1.0e-7, 1.3e-7), (0.0, 0.0, 0.9e-7, 1.3e-7),
                         (1.0, 0.0, 16.1180, 16.1182)]:
        target = np.array([[t]], "float32")
        y, g = _value_and_grad(lambda o, target=target: ops.binary_crossentropy(target, o),
                               np.array([[p]], "float32"))
        assert lo <= y.item() <= hi, (t, p, y)
        assert np.isfinite(g).all() and g.item() == 0.0  # the clip is flat there
    y = ops.sparse_categorical_crossentropy(np.array([0]), np.zeros((1, 3), "float32"))
    np.testing.assert_allclose(y.numpy(), [16.118095], rtol=1e-6)


def test_rows_not_summing_to_zero_are_divided_by_their_own_sum_as_keras():
    """Unnormalized outputs (a missing softmax): each row divided by its raw sum, also a negative
    or a tiny one, then clipped (Keras on every backend); only an exact 0 sum is guarded."""
    out = np.array([[-1.0, 0.5, -0.3], [0.2, 0.3, 0.5], [1e-9, 2e-9, 1e-9]], "float32")
    labels = np.array([1, 2, 1])
    p = np.clip(out / out.sum(axis=1, keepdims=True), 1e-7, 1 - 1e-7)
    expected = -np.log(p[np.arange(3), labels])
    np.testing.assert_allclose(ops.sparse_categorical_crossentropy(labels, out).numpy(), expected,
                               rtol=1e-6)
    np.testing.assert_allclose(ops.categorical_crossentropy(np.eye(3)[labels], out).numpy(),
                               expected, rtol=1e-6)


def test_c18_sparse_labels_shaped_n_and_n_by_1_agree():
    y_pred = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.2, 0.6, 0.2]], "float32")
    a = ops.sparse_categorical_crossentropy(np.array([0, 1, 1]), y_pred)
    b = ops.sparse_categorical_crossentropy(np.array([[0], [1], [1]]), y_pred)
    assert a.shape == b.shape == (3,)
    np.testing.assert_allclose(a.numpy(), -np.log([0.7, 0.1, 0.6]), rtol=1e-6)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert float(np.mean(a.numpy())) == pytest.approx(1.056695, rel=1e-6)


def test_sparse_labels_may_be_integral_floats():
    p = np.array([[0.05, 0.05, 0.9], [0.9, 0.05, 0.05]])
    y = ops.sparse_categorical_crossentropy(np.array([2.0, 0.0]), p)
    np.testing.assert_allclose(y.numpy(), -np.log([0.9, 0.9]), rtol=1e-12)


# -- errors ------------------------------------------------------------------------------------
def test_shape_mismatch_errors_name_both_shapes():
    with pytest.raises(ValueError, match=r"binary_crossentropy: target and output must have the "
                                         r"same shape. Received: target shape \(2, 3\), output "
                                         r"shape \(2, 1\)"):
        ops.binary_crossentropy(np.ones((2, 3)), np.ones((2, 1)))
    with pytest.raises(ValueError, match=r"categorical_crossentropy: .*Received: target shape "
                                         r"\(2, 4\), output shape \(2, 3\)"):
        ops.categorical_crossentropy(np.ones((2, 4)), np.ones((2, 3)))


def test_sparse_errors_are_clear():
    with pytest.raises(ValueError, match=r"sparse_categorical_crossentropy: `target` must have the "
                                         r"shape of `output` without the class axis 1, i\.e\. "
                                         r"\(4,\). Received: target shape \(4, 3\), output "
                                         r"shape \(4, 3\)"):
        ops.sparse_categorical_crossentropy(np.zeros((4, 3), "int64"), np.ones((4, 3)))
    with pytest.raises(ValueError, match=r"labels must be in \[0, 3\). Received: labels from 0 "
                                         r"to 3"):
        ops.sparse_categorical_crossentropy(np.array([0, 3]), np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"labels must be in \[0, 3\). Received: labels from -1"):
        ops.sparse_categorical_crossentropy(np.array([-1, 2]), np.ones((2, 3)), from_logits=True)
    with pytest.raises(ValueError, match=r"`output` must be at least 1-D"):
        ops.sparse_categorical_crossentropy(np.array(0), np.float32(1.0))
    with pytest.raises(ValueError, match=r"axis 2 is out of bounds"):
        ops.sparse_categorical_crossentropy(np.array([0]), np.ones((1, 3)), axis=2)
