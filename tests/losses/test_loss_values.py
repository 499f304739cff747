"""Loss values against Keras 3 and the behaviour cases; gradients against finite differences."""

import json
import pathlib

import numpy as np
import pytest

import kerasrs
from kerasrs import losses
from kerasrs.testing import check_gradients

REF = np.load(pathlib.Path(__file__).parents[1] / "fixtures" / "keras_reference.npz")
CASES = json.loads(str(REF["loss/cases"]))


def _in(name):
    return REF[f"loss/in/{name}"]


def _fn(key):
    return getattr(losses, key.replace("_logits_smooth", "").replace("_logits", ""))


@pytest.mark.parametrize("key", sorted(CASES))
def test_loss_function_matches_keras_3(key):
    a, b, kwargs = CASES[key]
    got = _fn(key)(_in(a), _in(b), **kwargs)
    assert got.shape == (5,) and got.dtype == np.float32
    np.testing.assert_allclose(got.numpy(), REF[f"loss/fn/{key}"], rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("key", sorted(CASES))
def test_loss_function_gradient_wrt_y_pred_float64(key):
    a, b, kwargs = CASES[key]
    y_true, y_pred = _in(a), _in(b).astype("float64")
    if key in ("mean_absolute_error", "mean_absolute_percentage_error", "huber"):
        y_pred = y_pred + 0.05 * np.sign(y_pred - y_true)  # stay off the kinks
    if b == "probs":  # keep probabilities >= 0.03, where 1/p is tame for finite differences
        y_pred = (y_pred + 0.05) / (y_pred + 0.05).sum(-1, keepdims=True)
    check_gradients(lambda p: _fn(key)(y_true, p, **kwargs), [y_pred], atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("reduction", ["sum", "sum_over_batch_size", "mean",
                                       "mean_with_sample_weight", "none"])
def test_reductions_with_sample_weight_match_keras_3(reduction):
    loss = losses.MeanSquaredError(reduction=reduction)
    got = loss(_in("yt_reg"), _in("yp_reg"), sample_weight=REF["loss/sample_weight"])
    np.testing.assert_allclose(got.numpy(), REF[f"loss/mse_reduction/{reduction}"], rtol=1e-5)


def test_sample_weight_shaped_batch_by_one_equals_batch():
    loss = losses.MeanAbsoluteError()
    sw = REF["loss/sample_weight"]
    a = loss(_in("yt_reg"), _in("yp_reg"), sample_weight=sw)
    b = loss(_in("yt_reg"), _in("yp_reg"), sample_weight=sw[:, None])
    assert float(a) == pytest.approx(float(b))


def test_ignore_class_leaves_samples_out_of_the_mean_as_keras():
    labels, logits = _in("labels"), _in("logits")
    loss = losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=1)
    np.testing.assert_allclose(float(loss(labels, logits)), REF["loss/scce_ignore_class_1"],
                               rtol=1e-5)
    per_sample = losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=1,
                                                      reduction="none")(labels, logits)
    np.testing.assert_allclose(per_sample.numpy(), REF["loss/scce_ignore_class_1_none"],
                               rtol=1e-5, atol=1e-7)
    x = kerasrs.Tensor(logits.astype("float64"))
    check_gradients(lambda p: loss(labels, p), [x])


def test_c06_sparse_crossentropy_from_huge_logits():
    loss = losses.SparseCategoricalCrossentropy(from_logits=True)
    for labels, logits, value, grad in [([1], [[1e8, 1e8]], 0.693147, [0.5, -0.5]),
                                        ([0], [[0.0, 1000.0]], 1000.0, [-1.0, 1.0])]:
        x = kerasrs.Tensor(np.array(logits, "float32"))
        with kerasrs.GradientTape() as tape:
            tape.watch(x)
            y = loss(labels, x)
        assert float(y) == pytest.approx(value, rel=1e-6)
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), [grad], atol=1e-6)


def _value_and_grad(fn, y_true, y_pred):
    x = kerasrs.Tensor(np.array(y_pred, "float32"))
    with kerasrs.GradientTape() as tape:
        tape.watch(x)
        y = kerasrs.ops.sum(fn(y_true, x))
    g = tape.gradient(y, x).numpy()
    assert np.all(np.isfinite(g)), f"non-finite gradient {g}"
    return float(y), g


def test_c08_crossentropy_on_probabilities_exactly_zero_and_one():
    cce, bce = losses.categorical_crossentropy, losses.binary_crossentropy
    assert _value_and_grad(cce, [[1, 0, 0]], [[0.0, 0.5, 0.5]])[0] == pytest.approx(16.118095)
    assert _value_and_grad(bce, [[1]], [[1.0]])[0] == pytest.approx(1.19e-7, rel=0.01)
    assert 0.9e-7 <= _value_and_grad(bce, [[0]], [[0.0]])[0] <= 1.3e-7
    assert _value_and_grad(bce, [[1]], [[0.0]])[0] == pytest.approx(16.118095)
    value, grad = _value_and_grad(cce, [[1, 0, 0]], [[0.0, 0.0, 0.0]])
    assert value == pytest.approx(16.118095)
    np.testing.assert_array_equal(grad, [[0.0, 0.0, 0.0]])


def test_c08_logits_of_1e4_give_finite_losses_and_gradients():
    logits = [[1e4, -1e4, 0.0]]
    for fn, y_true in [(losses.binary_crossentropy, [[1.0, 1.0, 0.0]]),
                       (losses.categorical_crossentropy, [[0.0, 1.0, 0.0]])]:
        value, _ = _value_and_grad(lambda t, p, f=fn: f(t, p, from_logits=True), y_true,
                                      logits)
        assert np.isfinite(value) and value > 1e3
    value, _ = _value_and_grad(
        lambda t, p: losses.sparse_categorical_crossentropy(t, p, from_logits=True), [1], logits)
    assert value == pytest.approx(2e4)


def test_c11_cosine_similarity_at_a_zero_vector():
    value, grad = _value_and_grad(losses.cosine_similarity, [[1.0, 2.0, 2.0]], [[0.0, 0.0, 0.0]])
    assert value == 0.0
    np.testing.assert_allclose(grad, -1e7 * np.array([[1.0, 2.0, 2.0]]) / 3, rtol=1e-5)


@pytest.mark.parametrize("y_true", [[0, 1, 1], [[0], [1], [1]]], ids=["(N,)", "(N,1)"])
def test_c18_sparse_labels_n_and_n_by_1_agree(y_true):
    y_pred = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.2, 0.6, 0.2]], "float32")
    per_sample = losses.SparseCategoricalCrossentropy(reduction="none")(y_true, y_pred)
    assert per_sample.shape == (3,)
    np.testing.assert_allclose(per_sample.numpy(), -np.log([0.7, 0.1, 0.6]), rtol=1e-6)
    loss = losses.get("SparseCategoricalCrossentropy")(np.array(y_true, "int32"), y_pred)
    assert float(loss) == pytest.approx(1.056695, abs=1e-6)


def test_integer_numpy_targets_are_cast_and_float64_predictions_stay_float64():
    y_pred = np.array([[0.5, 1.5]], "float64")
    value = losses.MeanSquaredError()(np.array([[1, 1]], "uint8"), y_pred)
    assert value.dtype == np.float64 and float(value) == pytest.approx(0.25)
    assert losses.MeanSquaredError(dtype="float32")(np.ones((1, 2)), y_pred).dtype == np.float32


def test_binary_crossentropy_aligns_n_labels_with_n_by_1_outputs():
    p = np.array([[0.9], [0.2]], "float32")
    a = losses.BinaryCrossentropy(reduction="none")(np.array([1, 0]), p)
    assert a.shape == (2,)
    np.testing.assert_allclose(a.numpy(), -np.log([0.9, 0.8]), rtol=1e-6)


def test_huber_branches_and_log_cosh_large_errors():
    got = losses.huber([[0.0, 0.0]], np.array([[0.5, 3.0]]), delta=1.0)
    assert float(got[0]) == pytest.approx((0.125 + 2.5) / 2)
    big = losses.log_cosh([[0.0]], np.array([[1000.0]], "float32"))
    assert float(big[0]) == pytest.approx(1000.0 - np.log(2.0))


def test_hinge_converts_zero_one_labels():
    a = losses.hinge([[0.0, 1.0]], np.array([[0.3, 0.3]]))
    b = losses.hinge([[-1.0, 1.0]], np.array([[0.3, 0.3]]))
    assert float(a[0]) == pytest.approx(float(b[0])) == pytest.approx((1.3 + 0.7) / 2)


def test_argument_errors_name_the_loss():
    with pytest.raises(ValueError, match="reduction"):
        losses.MeanSquaredError(reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing"):
        losses.BinaryCrossentropy(label_smoothing=1.5)
    with pytest.raises(ValueError, match="sparse_categorical_crossentropy"):
        losses.categorical_crossentropy([1, 0], np.ones((2, 3), "float32"))
    with pytest.raises(ValueError, match="delta"):
        losses.huber([0.0], [1.0], delta=0)
    with pytest.raises(ValueError, match=r"labels must be in \[0, 3\)"):
        losses.sparse_categorical_crossentropy([3], np.ones((1, 3), "float32"))
