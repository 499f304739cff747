"""Metric values: against Keras 3 (fixture) and the behaviour cases C02 and C18."""

import json
import pathlib

import numpy as np
import pytest

import kerasrs
from kerasrs import losses, metrics

REF = np.load(pathlib.Path(__file__).parents[1] / "fixtures" / "keras_reference.npz")
CONFIGS = json.loads(str(REF["metric/configs"]))
Y_TRUE, Y_SCORE = REF["metric/in/y_true"], REF["metric/in/y_score"]
WEIGHTS = REF["metric/in/weights"]


@pytest.mark.parametrize("key", sorted(CONFIGS))
def test_confusion_metrics_match_keras_3_over_two_batches(key):
    class_name, kwargs = CONFIGS[key]
    m = getattr(metrics, class_name)(**kwargs)
    m.update_state(Y_TRUE[:30], Y_SCORE[:30])
    m.update_state(kerasrs.Tensor(Y_TRUE[30:]), kerasrs.Tensor(Y_SCORE[30:]))
    result = m.result()
    assert isinstance(result, kerasrs.Tensor) and result.shape == () and \
        result.dtype == "float32"  # as Keras: a float32 scalar tensor
    assert float(result) == pytest.approx(float(REF[f"metric/{key}"]), rel=1e-6)


@pytest.mark.parametrize("key", sorted(CONFIGS))
def test_confusion_metrics_match_keras_3_with_sample_weight(key):
    class_name, kwargs = CONFIGS[key]
    m = getattr(metrics, class_name)(**kwargs)
    m.update_state(Y_TRUE, Y_SCORE, sample_weight=WEIGHTS)
    assert m.result() == pytest.approx(float(REF[f"metric/{key}_weighted"]), rel=1e-6)


@pytest.mark.parametrize("key, metric", [
    ("precision_class2", metrics.Precision(class_id=2)),
    ("recall_class2", metrics.Recall(class_id=2)),
    ("precision_top1", metrics.Precision(top_k=1)),
    ("recall_top2", metrics.Recall(top_k=2)),
])
def test_class_id_and_top_k_match_keras_3(key, metric):
    metric.update_state(REF["loss/in/onehot"], REF["loss/in/probs"])
    assert metric.result() == pytest.approx(float(REF[f"metric/{key}"]), rel=1e-6)


def test_top_k_and_rmse_match_keras_3():
    onehot, probs, labels = REF["loss/in/onehot"], REF["loss/in/probs"], REF["loss/in/labels"]
    top2 = metrics.TopKCategoricalAccuracy(k=2)
    top2.update_state(onehot, probs)
    assert top2.result() == pytest.approx(float(REF["metric/top2"]))
    sparse_top2 = metrics.SparseTopKCategoricalAccuracy(k=2)
    sparse_top2.update_state(labels[:, None], probs)
    assert sparse_top2.result() == pytest.approx(float(REF["metric/top2"]))
    rmse = metrics.RootMeanSquaredError()
    rmse.update_state(REF["loss/in/yt_reg"], REF["loss/in/yp_reg"],
                      sample_weight=REF["loss/sample_weight"])
    assert rmse.result() == pytest.approx(float(REF["metric/rmse_weighted"]), rel=1e-6)


def test_auc_docstring_example_and_weights():
    m = metrics.AUC(num_thresholds=3)
    m.update_state([0, 0, 1, 1], [0, 0.5, 0.3, 0.9])
    assert m.result() == 0.75
    m.reset_state()
    m.update_state([0, 0, 1, 1], [0, 0.5, 0.3, 0.9], sample_weight=[1, 0, 0, 1])
    assert m.result() == 1.0
    assert m.thresholds[0] == -1e-7 and m.thresholds[-1] == 1 + 1e-7


C02_PROBS = np.array([[0.880797, 0.119203]] * 4 + [[0.119203, 0.880797]], "float32")
C02_LABELS = np.array([0, 0, 1, 1, 1])


@pytest.mark.parametrize("batch_size", [1, 2, 4, 5])
def test_c02_epoch_results_do_not_depend_on_batch_size(batch_size):
    acc = metrics.resolve("accuracy", loss="sparse_categorical_crossentropy",
                          output_shape=(None, 2))
    loss_mean = metrics.MeanMetricWrapper(losses.sparse_categorical_crossentropy)
    batch_losses = metrics.Mean()
    for start in range(0, 5, batch_size):
        y, p = C02_LABELS[start:start + batch_size], C02_PROBS[start:start + batch_size]
        acc.update_state(y, p)
        loss_mean.update_state(y, p)
        batch_loss = losses.SparseCategoricalCrossentropy()(y, p)  # what fit sees per batch
        batch_losses.update_state(batch_loss, sample_weight=len(y))
    assert acc.result() == pytest.approx(0.6)
    assert loss_mean.result() == pytest.approx(0.926928, abs=1e-6)
    assert batch_losses.result() == pytest.approx(0.926928, abs=1e-6)


@pytest.mark.parametrize("y_true", [[0, 1, 1], [[0], [1], [1]]], ids=["(N,)", "(N,1)"])
def test_c18_sparse_accuracy_for_n_and_n_by_1_labels(y_true):
    y_pred = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.2, 0.6, 0.2]], "float32")
    np.testing.assert_array_equal(metrics.sparse_categorical_accuracy(y_true, y_pred), [1, 0, 1])
    m = metrics.SparseCategoricalAccuracy()
    m.update_state(y_true, y_pred)
    assert m.result() == pytest.approx(0.666667, abs=1e-6)


def test_mean_and_sum_follow_keras_weighting():
    mean = metrics.Mean()
    mean.update_state([1, 3, 5, 7], sample_weight=[1, 1, 0, 0])
    assert mean.result() == 2.0
    mean.update_state(np.array([[1.0, 3.0], [5.0, 7.0]]))  # rows are samples: means 2 and 6
    assert mean.result() == pytest.approx((1 + 3 + 2 + 6) / 4)
    total = metrics.Sum()
    total.update_state([1, 3, 5, 7], sample_weight=[1, 1, 0, 0])
    assert total.result() == 4.0
    assert metrics.Mean().result() == 0.0


def test_binary_and_categorical_accuracy_values():
    b = metrics.BinaryAccuracy(threshold=0.5)
    b.update_state([[1], [0], [1], [0]], [[0.6], [0.5], [0.4], [0.1]])
    assert b.result() == 0.75  # 0.5 is not above the threshold: predicted 0, a hit
    c = metrics.CategoricalAccuracy()
    c.update_state([[0, 1], [1, 0]], [[0.3, 0.7], [0.2, 0.8]], sample_weight=[3.0, 1.0])
    assert c.result() == 0.75
    a = metrics.Accuracy()
    a.update_state([[1], [2], [3]], [[1], [2], [4]])
    assert a.result() == pytest.approx(2 / 3)


def test_ignore_class_mask_removes_samples_from_loss_metric():
    m = metrics.get(losses.SparseCategoricalCrossentropy(ignore_class=1))
    m.update_state([0, 1], np.array([[0.5, 0.5], [0.9, 0.1]], "float32"))
    assert m.result() == pytest.approx(np.log(2.0), rel=1e-6)
