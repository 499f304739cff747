"""Metric objects: resolve (compile's rule), get, state variables, configs, no tape."""

import numpy as np
import pytest

import kerasrs
from kerasrs import losses, metrics


@pytest.mark.parametrize("identifier, loss, output_shape, y_true_shape, cls", [
    ("accuracy", "sparse_categorical_crossentropy", (None, 10), None,
     metrics.SparseCategoricalAccuracy),
    ("acc", losses.SparseCategoricalCrossentropy(from_logits=True), (None, 10), None,
     metrics.SparseCategoricalAccuracy),
    ("accuracy", "categorical_crossentropy", (None, 10), None, metrics.CategoricalAccuracy),
    ("accuracy", "binary_crossentropy", (None, 1), None, metrics.BinaryAccuracy),
    ("accuracy", losses.BinaryCrossentropy(), (None, 5), None, metrics.BinaryAccuracy),
    ("accuracy", "mse", (None, 1), None, metrics.BinaryAccuracy),
    ("accuracy", "mse", (None, 3), (None,), metrics.SparseCategoricalAccuracy),
    ("accuracy", None, (None, 3), (None, 3), metrics.CategoricalAccuracy),
])
def test_resolve_accuracy_like_keras_compile(identifier, loss, output_shape, y_true_shape, cls):
    metric = metrics.resolve(identifier, loss=loss, output_shape=output_shape,
                             y_true_shape=y_true_shape)
    assert type(metric) is cls and metric.name == identifier


def test_resolve_crossentropy_uses_the_loss_from_logits():
    loss = losses.SparseCategoricalCrossentropy(from_logits=True)
    metric = metrics.resolve("ce", loss=loss, output_shape=(None, 2))
    assert metric.name == "ce"
    metric.update_state([1], np.array([[0.0, 0.0]], "float32"))
    assert metric.result() == pytest.approx(np.log(2.0))


def test_resolve_keeps_the_users_string_as_name_and_passes_objects():
    assert metrics.resolve("mse").name == "mse"
    assert type(metrics.resolve("mse")) is metrics.MeanSquaredError
    auc = metrics.AUC()
    assert metrics.resolve(auc) is auc
    assert metrics.resolve(None) is None


@pytest.mark.parametrize("identifier, cls", [
    ("mae", metrics.MeanAbsoluteError), ("rmse", metrics.RootMeanSquaredError),
    ("auc", metrics.AUC), ("precision", metrics.Precision), ("Recall", metrics.Recall),
    ("top_k_categorical_accuracy", metrics.TopKCategoricalAccuracy), ("mean", metrics.Mean),
])
def test_get_names(identifier, cls):
    assert type(metrics.get(identifier)) is cls


def test_get_wraps_loss_names_and_functions():
    m = metrics.get("binary_crossentropy")
    assert isinstance(m, metrics.MeanMetricWrapper) and m.name == "binary_crossentropy"
    m.update_state([[1.0]], np.array([[0.5]], "float32"))
    assert m.result() == pytest.approx(np.log(2.0), rel=1e-6)
    custom = metrics.get(lambda y_true, y_pred: np.abs(np.asarray(y_pred) - y_true)[:, 0])
    custom.update_state([[1.0], [0.0]], [[0.5], [0.0]])
    assert custom.result() == 0.25
    with pytest.raises(ValueError, match="Received: 'nope'"):
        metrics.get("nope")


def test_state_lives_in_non_trainable_variables_and_resets():
    m = metrics.AUC(num_thresholds=5)
    assert [v.name for v in m.variables] == ["true_positives", "false_positives",
                                             "true_negatives", "false_negatives"]
    assert all(isinstance(v, kerasrs.Variable) and not v.trainable for v in m.variables)
    m.update_state([0, 1], [0.2, 0.8])
    assert float(m.variables[0].numpy().sum()) > 0
    m.reset_state()
    assert all(float(np.abs(v.numpy()).sum()) == 0 for v in m.variables)
    mean = metrics.Mean()
    assert [v.path for v in mean.variables] == ["mean/total", "mean/count"]


def test_metrics_do_not_record_on_the_tape():
    w = kerasrs.Variable(np.array([[0.2, 0.8]], "float32"))
    with kerasrs.GradientTape() as tape:
        y = w * 1.0
        n = len(tape._records)
        for m in (metrics.get("mse"), metrics.SparseCategoricalAccuracy(),
                  metrics.get("sparse_categorical_crossentropy"), metrics.AUC()):
            m.update_state(np.array([1]), y) if "sparse" in m.name else \
                m.update_state(np.array([[0.0, 1.0]]), y)
        assert len(tape._records) == n


@pytest.mark.parametrize("metric", [
    metrics.BinaryAccuracy(threshold=0.3), metrics.TopKCategoricalAccuracy(k=3),
    metrics.Precision(thresholds=[0.2, 0.6], class_id=1), metrics.AUC(curve="PR"),
    metrics.MeanSquaredError(name="m"), metrics.MeanMetricWrapper(losses.poisson),
])
def test_config_round_trip(metric):
    again = metrics.deserialize(metrics.serialize(metric))
    assert type(again) is type(metric) and again.get_config() == metric.get_config()


def test_precision_with_several_thresholds_has_one_value_per_threshold():
    m = metrics.Precision(thresholds=[0.2, 0.6])
    m.update_state([0, 1, 1], [0.5, 0.5, 0.9])
    assert m.result().numpy() == pytest.approx([2 / 3, 1.0])


def test_argument_errors():
    with pytest.raises(ValueError, match="num_thresholds"):
        metrics.AUC(num_thresholds=1)
    with pytest.raises(ValueError, match="curve"):
        metrics.AUC(curve="XY")
    with pytest.raises(ValueError, match=r"thresholds must be in \[0, 1\]"):
        metrics.Precision(thresholds=1.5)
    with pytest.raises(ValueError, match="Received: y_true shape"):
        metrics.SparseCategoricalAccuracy().update_state(np.zeros((2, 3)), np.zeros((2, 3)))


@pytest.mark.gpu
def test_metrics_on_cupy_arrays_match_numpy(rng):
    if not kerasrs.backend.is_available("cupy"):
        pytest.skip("cupy backend not available")
    y_true = rng.integers(0, 2, 40).astype("float32")
    y_score = rng.uniform(size=40).astype("float32")
    labels, probs = rng.integers(0, 3, 40), rng.dirichlet(np.ones(3), 40).astype("float32")
    results = []
    for be in ("numpy", "cupy"):
        with kerasrs.backend.using(be) as backend:
            auc, acc = metrics.AUC(curve="PR"), metrics.SparseCategoricalAccuracy()
            mse = metrics.get("mse")
            auc.update_state(backend.asarray(y_true), kerasrs.Tensor(backend.asarray(y_score)))
            acc.update_state(backend.asarray(labels), backend.asarray(probs))
            mse.update_state(backend.asarray(probs), backend.asarray(probs[::-1].copy()))
            results.append([auc.result(), acc.result(), mse.result()])
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)
