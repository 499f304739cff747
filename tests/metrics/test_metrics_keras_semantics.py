"""Metrics and losses as Keras 3 has them (issue 27): dtypes, configs and attributes, IoU's class
ids, broadcast sample weights, AUC's PR and PR-gain curves, ``add_variable`` and ``get(None)``.

Every case runs on kerasrs and, in one reference process, on Keras 3 (see `keras_twin`).
"""

import pytest
from keras_twin import case_id, check, helper, kerasrs_only, np, twin


@helper
def value(K, x):
    """A metric result or op output as a float64 NumPy array."""
    return np.asarray(K.ops.convert_to_numpy(x), dtype="float64")


@helper
def dtype_of(K, x):
    return str(K.ops.convert_to_numpy(x).dtype)


@helper
def scores(seed=0, shape=(6, 3)):
    """Probabilities, 0/1 labels of the same shape, one-hot and integer labels."""
    rng = np.random.default_rng(seed)
    prob = rng.random(shape).astype("float32")
    binary = (rng.random(shape) > 0.5).astype("float32")
    ids = rng.integers(0, shape[-1], shape[:-1])
    onehot = np.eye(shape[-1], dtype="float32")[ids]
    return prob, binary, onehot, ids


# -- float32 in, float32 out ------------------------------------------------------------------------
@twin
def metric_functions_return_float32(K):
    prob, binary, onehot, ids = scores()
    M = K.metrics
    for out in (M.binary_accuracy(binary, prob), M.categorical_accuracy(onehot, prob),
                M.sparse_categorical_accuracy(ids, prob),
                M.top_k_categorical_accuracy(onehot, prob, k=2),
                M.sparse_top_k_categorical_accuracy(ids, prob, k=2),
                M.mean_squared_error(binary, prob), M.mean_absolute_error(binary, prob)):
        assert dtype_of(K, out) == "float32", dtype_of(K, out)


@twin
def weighted_and_masked_metric_results_are_float32(K):
    prob, binary, onehot, ids = scores()
    weights = np.array([1.0, 0.5, 2.0, 0.0, 1.0, 3.0])  # float64 weights
    mean = K.metrics.Mean()
    mean.update_state(prob, sample_weight=weights)
    assert dtype_of(K, mean.result()) == "float32"
    for metric, target in ((K.metrics.BinaryAccuracy(), binary),
                           (K.metrics.MeanSquaredError(), binary),
                           (K.metrics.RootMeanSquaredError(), binary), (K.metrics.AUC(), binary),
                           (K.metrics.Precision(), binary),
                           (K.metrics.CategoricalCrossentropy(), onehot)):
        metric.update_state(target, prob, sample_weight=weights)
        assert dtype_of(K, metric.result()) == "float32", type(metric).__name__
    masked = K.metrics.SparseCategoricalCrossentropy(ignore_class=1)  # a mask from the values
    masked.update_state(ids, prob, sample_weight=weights)
    assert dtype_of(K, masked.result()) == "float32"
    iou = K.metrics.MeanIoU(num_classes=3)  # integer counts, float32 result
    iou.update_state(ids, prob.argmax(-1))
    assert dtype_of(K, iou.result()) == "float32"


@twin
def weighted_and_masked_losses_are_float32(K):
    prob, binary, onehot, ids = scores()
    weights = np.array([1.0, 0.5, 2.0, 0.0, 1.0, 3.0])
    for loss in (K.losses.MeanSquaredError(), K.losses.BinaryCrossentropy(),
                 K.losses.Huber(reduction="sum"),
                 K.losses.MeanAbsoluteError(reduction="mean_with_sample_weight"),
                 K.losses.CategoricalCrossentropy(reduction=None)):
        target = onehot if "Categorical" in type(loss).__name__ else binary
        assert dtype_of(K, loss(target, prob, sample_weight=weights)) == "float32"
    masked = K.losses.SparseCategoricalCrossentropy(ignore_class=1)
    assert dtype_of(K, masked(ids, prob)) == "float32"
    assert dtype_of(K, masked(ids, prob, sample_weight=weights)) == "float32"


DTYPE_CASES = [metric_functions_return_float32, weighted_and_masked_metric_results_are_float32,
               weighted_and_masked_losses_are_float32]


@pytest.mark.parametrize("case", DTYPE_CASES, ids=case_id)
def test_losses_and_metrics_keep_float32(case):
    check(case)


# -- configs and attributes -------------------------------------------------------------------------
@twin
def top_k_accuracies_expose_k(K):
    top = K.metrics.TopKCategoricalAccuracy(k=3)
    sparse = K.metrics.SparseTopKCategoricalAccuracy(k=2)
    assert top.k == 3 and sparse.k == 2 and sparse.from_sorted_ids is False
    assert top.get_config() == {"name": "top_k_categorical_accuracy", "dtype": "float32", "k": 3}
    assert sparse.get_config() == {"name": "sparse_top_k_categorical_accuracy",
                                   "dtype": "float32", "k": 2}


@twin
def sparse_top_k_reads_sorted_ids(K):
    metric = K.metrics.SparseTopKCategoricalAccuracy(k=2, from_sorted_ids=True)
    assert metric.from_sorted_ids is True and metric.get_config()["from_sorted_ids"] is True
    sorted_ids = np.array([[3, 1, 0], [0, 2, 1], [2, 3, 1]])  # best class first
    metric.update_state(np.array([1, 1, 2]), sorted_ids)
    assert abs(float(metric.result()) - 2 / 3) < 1e-6
    again = K.metrics.SparseTopKCategoricalAccuracy.from_config(metric.get_config())
    assert again.from_sorted_ids is True and again.k == 2


@twin
def operating_point_metrics_name_their_value(K):
    M = K.metrics
    for cls, attr in ((M.PrecisionAtRecall, "recall"), (M.RecallAtPrecision, "precision"),
                      (M.SensitivityAtSpecificity, "specificity"),
                      (M.SpecificityAtSensitivity, "sensitivity")):
        metric = cls(0.6, num_thresholds=50, class_id=1)
        assert getattr(metric, attr) == 0.6, attr
        assert metric.num_thresholds == 50 and metric.class_id == 1
        config = metric.get_config()
        assert config[attr] == 0.6 and config["num_thresholds"] == 50, config
        assert getattr(cls.from_config(config), attr) == 0.6


@twin
def sparse_crossentropy_metric_ignores_a_class(K):
    prob, _, _, _ = scores()
    labels = np.array([0, 1, 2, 1, 0, 2])
    metric = K.metrics.SparseCategoricalCrossentropy(ignore_class=1)
    assert metric.ignore_class == 1 and metric.from_logits is False and metric.axis == -1
    assert metric.get_config() == {"name": "sparse_categorical_crossentropy", "dtype": "float32",
                                   "from_logits": False, "ignore_class": 1, "axis": -1}
    metric.update_state(labels, prob, sample_weight=np.ones(6))
    keep = labels != 1
    expected = -np.log(np.clip(prob / prob.sum(-1, keepdims=True), 1e-7, 1)[
        np.arange(6), labels])[keep].mean()
    assert abs(float(metric.result()) - expected) < 1e-5


@twin
def crossentropy_and_threshold_metrics_expose_arguments(K):
    M = K.metrics
    bce = M.BinaryCrossentropy(from_logits=True, label_smoothing=0.1)
    cce = M.CategoricalCrossentropy(label_smoothing=0.2, axis=-1)
    assert (bce.from_logits, bce.label_smoothing) == (True, 0.1)
    assert (cce.from_logits, cce.label_smoothing, cce.axis) == (False, 0.2, -1)
    assert M.BinaryAccuracy(threshold=0.3).threshold == 0.3
    assert M.BinaryIoU(threshold=0.3).threshold == 0.3


@twin
def auc_config_lists_thresholds_only_when_given(K):
    assert "thresholds" not in K.metrics.AUC(num_thresholds=7).get_config()
    config = K.metrics.AUC(thresholds=[0.7, 0.2, 0.4]).get_config()
    assert [float(t) for t in config["thresholds"]] == [0.2, 0.4, 0.7]
    assert config["num_thresholds"] == 5
    again = K.metrics.AUC.from_config(config)
    assert [float(t) for t in again.thresholds][1:-1] == [0.2, 0.4, 0.7]


@twin
def iou_metrics_count_in_int32(K):
    for metric in (K.metrics.IoU(3, [0, 1]), K.metrics.MeanIoU(3), K.metrics.BinaryIoU(),
                   K.metrics.OneHotMeanIoU(3)):
        assert metric.get_config()["dtype"] == "int32", type(metric).__name__
    assert K.metrics.MeanIoU(3, dtype="float32").get_config()["dtype"] == "float32"


CONFIG_CASES = [top_k_accuracies_expose_k, sparse_top_k_reads_sorted_ids,
                operating_point_metrics_name_their_value,
                sparse_crossentropy_metric_ignores_a_class,
                crossentropy_and_threshold_metrics_expose_arguments,
                auc_config_lists_thresholds_only_when_given, iou_metrics_count_in_int32]


@pytest.mark.parametrize("case", CONFIG_CASES, ids=case_id)
def test_metric_configs_and_attributes(case):
    check(case)


# -- IoU and class ids outside [0, num_classes) -----------------------------------------------------
@helper
def confusion(K, metric):
    return value(K, metric.variables[0]).astype(int).tolist()


@twin
def iou_skips_labels_out_of_range(K):
    metric = K.metrics.MeanIoU(num_classes=3)
    metric.update_state(np.array([0, 1, 2, 5, 3]), np.array([0, 1, 1, 1, 0]))
    assert confusion(K, metric) == [[1, 0, 0], [0, 1, 0], [0, 1, 0]]
    assert abs(float(metric.result()) - 0.5) < 1e-6


@twin
def iou_skips_negative_labels_and_predictions(K):
    metric = K.metrics.IoU(num_classes=3, target_class_ids=[0, 1])
    metric.update_state(np.array([0, 1, -1, 2, 1]), np.array([0, -1, 1, 2, 1]))
    assert confusion(K, metric) == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    assert abs(float(metric.result()) - 1.0) < 1e-6


@twin
def iou_skips_predictions_out_of_range_with_ignore_class(K):
    metric = K.metrics.MeanIoU(num_classes=3, ignore_class=0)
    metric.update_state(np.array([[0, 1], [1, 2]]), np.array([[2, 1], [7, 2]]))
    assert confusion(K, metric) == [[0, 0, 0], [0, 1, 0], [0, 0, 1]]
    assert abs(float(metric.result()) - 1.0) < 1e-6


@twin
def binary_iou_thresholds_predictions_at_or_above(K):
    metric = K.metrics.BinaryIoU(threshold=0.5)
    metric.update_state(np.array([1, 0, 1, 0]), np.array([0.5, 0.49, 0.9, 0.5]))
    assert confusion(K, metric) == [[1, 1], [0, 2]]


IOU_CASES = [iou_skips_labels_out_of_range, iou_skips_negative_labels_and_predictions,
             iou_skips_predictions_out_of_range_with_ignore_class,
             binary_iou_thresholds_predictions_at_or_above]


@pytest.mark.parametrize("case", IOU_CASES, ids=case_id)
def test_iou_ignores_class_ids_out_of_range(case):
    check(case)


# -- sample weights of any broadcastable shape ----------------------------------------------------
@helper
def weighted_metrics(K):
    """``(name, make, y_true, y_pred)`` for metrics of per-element or per-sample values."""
    prob, binary, onehot, ids = scores(seed=1)
    M = K.metrics
    return [
        ("BinaryAccuracy", M.BinaryAccuracy, binary, prob),
        ("CategoricalAccuracy", M.CategoricalAccuracy, onehot, prob),
        ("SparseCategoricalAccuracy", M.SparseCategoricalAccuracy, ids, prob),
        ("TopK", lambda: M.TopKCategoricalAccuracy(k=2), onehot, prob),
        ("MeanSquaredError", M.MeanSquaredError, binary, prob),
        ("RootMeanSquaredError", M.RootMeanSquaredError, binary, prob),
        ("CategoricalCrossentropy", M.CategoricalCrossentropy, onehot, prob),
        ("Hinge", M.Hinge, binary, prob), ("CosineSimilarity", M.CosineSimilarity, binary, prob),
        ("Precision", M.Precision, binary, prob), ("Recall", M.Recall, binary, prob),
        ("AUC", M.AUC, binary, prob), ("AUC multi-label", lambda: M.AUC(multi_label=True),
                                       binary, prob),
        ("TruePositives", M.TruePositives, binary, prob),
        ("PrecisionAtRecall", lambda: M.PrecisionAtRecall(0.5), binary, prob),
        ("R2Score", M.R2Score, binary, prob),
        ("MeanIoU", lambda: M.MeanIoU(3), ids, prob.argmax(-1)),
        ("F1Score", lambda: M.F1Score(average="macro"), onehot, prob),
    ]


@helper
def result_with(K, make, y_true, y_pred, sample_weight=None):
    metric = make()
    metric.update_state(y_true, y_pred, sample_weight=sample_weight)
    return value(K, metric.result())


@twin
def integer_weights_count_samples_again(K):
    weights = np.array([1, 2, 0, 1, 3, 1])
    repeat = np.repeat(np.arange(6), weights)
    for name, make, y_true, y_pred in weighted_metrics(K):
        weighted = result_with(K, make, y_true, y_pred, weights.astype("float32"))
        repeated = result_with(K, make, y_true[repeat], y_pred[repeat])
        assert np.allclose(weighted, repeated, atol=1e-5), (name, weighted, repeated)


@twin
def per_sample_weights_as_a_column(K):
    weights = np.array([1.0, 2.0, 0.5, 0.0, 3.0, 1.0], "float32")
    for name, make, y_true, y_pred in weighted_metrics(K):
        if name in ("F1Score", "MeanIoU"):  # Keras refuses a column here
            continue
        flat = result_with(K, make, y_true, y_pred, weights)
        column = result_with(K, make, y_true, y_pred, weights[:, None])
        assert np.allclose(flat, column, atol=1e-6), (name, flat, column)


@twin
def per_element_weights_on_elementwise_metrics(K):
    prob, binary, _, ids = scores(seed=2)
    weights = np.random.default_rng(5).integers(0, 3, prob.shape).astype("float32")
    M = K.metrics
    for make in (M.Precision, M.Recall, M.TruePositives, M.AUC, lambda: M.AUC(curve="PR")):
        weighted = result_with(K, make, binary, prob, weights)
        rows = np.repeat(np.arange(binary.size), weights.reshape(-1).astype(int))
        repeated = result_with(K, make, binary.reshape(-1)[rows], prob.reshape(-1)[rows])
        assert np.allclose(weighted, repeated, atol=1e-5), (make, weighted, repeated)
    # elementwise accuracy: each element weighted, then averaged per sample as Keras's Mean
    accuracy = result_with(K, M.BinaryAccuracy, binary, prob, weights)
    hits = (binary == (prob > 0.5)).astype("float64")
    expected = (hits * weights).mean(-1).sum() / weights.mean(-1).sum()
    assert abs(float(accuracy) - expected) < 1e-6
    r2 = result_with(K, M.R2Score, binary, prob, weights)
    assert np.isfinite(r2).all()
    iou = result_with(K, lambda: M.MeanIoU(3), ids[:, None].repeat(2, 1),
                      prob[:, :2].argmax(-1)[:, None].repeat(2, 1),
                      np.ones((ids.size, 2), "int32"))
    assert np.isfinite(iou).all()


@twin
def sum_adds_every_weighted_value(K):
    values = np.arange(12, dtype="float32").reshape(4, 3)
    total = K.metrics.Sum()
    total.update_state(values, sample_weight=np.array([1.0, 0.0, 2.0, 1.0]))
    assert float(total.result()) == float((values.sum(-1) * [1, 0, 2, 1]).sum())
    mean = K.metrics.Mean()
    mean.update_state(values, sample_weight=np.array([1.0, 0.0, 2.0, 1.0]))
    assert abs(float(mean.result()) - (values.mean(-1) * [1, 0, 2, 1]).sum() / 4) < 1e-6


@kerasrs_only("Keras's IoU flattens the labels and refuses weights of lower rank")
def iou_takes_one_weight_per_image(K):
    labels = np.array([[0, 1], [2, 2], [1, 1]])
    predictions = np.array([[0, 1], [1, 2], [0, 1]])
    per_image = result_with(K, lambda: K.metrics.MeanIoU(3), labels, predictions,
                            np.array([1, 2, 0]))
    per_pixel = result_with(K, lambda: K.metrics.MeanIoU(3), labels, predictions,
                            np.array([[1, 1], [2, 2], [0, 0]]))
    assert np.allclose(per_image, per_pixel)


@kerasrs_only("Keras's FBetaScore takes one weight per sample only")
def f_beta_takes_per_class_weights(K):
    prob, _, onehot, _ = scores(seed=3)
    column = np.array([1.0, 2.0, 0.0, 1.0, 1.0, 3.0], "float32")
    flat = result_with(K, K.metrics.F1Score, onehot, prob, column)
    full = result_with(K, K.metrics.F1Score, onehot, prob,
                       np.broadcast_to(column[:, None], prob.shape))
    assert np.allclose(flat, full)


WEIGHT_CASES = [integer_weights_count_samples_again, per_sample_weights_as_a_column,
                per_element_weights_on_elementwise_metrics, sum_adds_every_weighted_value,
                iou_takes_one_weight_per_image, f_beta_takes_per_class_weights]


@pytest.mark.parametrize("case", WEIGHT_CASES, ids=case_id)
def test_sample_weights_broadcast_in_every_metric(case):
    check(case)


# -- AUC: PR interpolation and the PR-gain curve ----------------------------------------------------
@helper
def auc_after_two_batches(K, **kwargs):
    rng = np.random.default_rng(3)
    y_true = (rng.random((40, 2)) > 0.6).astype("float32")
    y_pred = np.clip(y_true * 0.3 + rng.random((40, 2)) * 0.7, 0, 1).astype("float32")
    metric = K.metrics.AUC(**kwargs)
    metric.update_state(y_true, y_pred, sample_weight=rng.integers(0, 3, 40).astype("float32"))
    metric.update_state(y_true[:10], y_pred[:10])
    return float(metric.result()), metric


@twin
def pr_auc_interpolates_davis_goadrich(K):
    assert abs(auc_after_two_batches(K, curve="PR")[0] - 0.86138743) < 1e-6
    assert abs(auc_after_two_batches(K, curve="PR", num_thresholds=7)[0] - 0.82465863) < 1e-6
    result, metric = auc_after_two_batches(K, curve="pr", num_thresholds=7, multi_label=True,
                                           label_weights=[1.0, 3.0])
    assert abs(result - 0.82990855) < 1e-6 and metric.get_config()["curve"] == "PR"


@twin
def pr_gain_auc_as_keras(K):
    result, metric = auc_after_two_batches(K, curve="PRGAIN")
    assert abs(result - 0.80621910) < 1e-6
    assert metric.get_config()["curve"] == "PRGAIN"
    assert abs(auc_after_two_batches(K, curve="PRGAIN", summation_method="minoring",
                                     num_thresholds=9)[0] - 0.74556917) < 1e-6
    assert abs(auc_after_two_batches(K, curve="prgain", summation_method="majoring",
                                     num_thresholds=9)[0] - 0.91827011) < 1e-6
    assert abs(auc_after_two_batches(K, curve="PRGAIN", multi_label=True,
                                     num_thresholds=11)[0] - 0.83669668) < 1e-6


@twin
def pr_gain_without_true_positives_is_finite(K):
    metric = K.metrics.AUC(curve="PRGAIN", num_thresholds=5)
    metric.update_state(np.array([0.0, 0.0, 1.0]), np.array([0.9, 0.8, 0.1]))
    assert np.isfinite(float(metric.result()))
    with pytest_raises(ValueError):
        K.metrics.AUC(curve="gain")


@helper
def pytest_raises(error):
    """A tiny ``pytest.raises`` for the reference process."""
    class Raises:
        def __enter__(self):
            return self

        def __exit__(self, kind, exc, tb):
            assert kind is not None and issubclass(kind, error), f"expected {error.__name__}"
            return True
    return Raises()


AUC_CASES = [pr_auc_interpolates_davis_goadrich, pr_gain_auc_as_keras,
             pr_gain_without_true_positives_is_finite]


@pytest.mark.parametrize("case", AUC_CASES, ids=case_id)
def test_auc_pr_interpolation_and_pr_gain(case):
    check(case)


# -- add_variable with initializers, and get(None) -------------------------------------------------
@twin
def custom_metric_adds_variables_with_initializers(K):
    class Counter(K.metrics.Metric):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.total = self.add_variable(shape=(), name="total", initializer="ones")
            self.scale = self.add_variable(shape=(2,), name="scale",
                                           initializer=K.initializers.Constant(2.0))
            self.hits = self.add_variable((3,), "zeros", dtype="int32", name="hits")
            self.extra = self.add_weight(name="extra", initializer="zeros")

        def update_state(self, values):
            self.total.assign(self.total + float(np.sum(values)))

        def result(self):
            return self.total * 1.0

    metric = Counter(name="counter")
    assert value(K, metric.total) == 1.0 and value(K, metric.scale).tolist() == [2.0, 2.0]
    assert dtype_of(K, metric.hits) == "int32" and dtype_of(K, metric.total) == "float32"
    assert len(metric.variables) == 4
    metric.update_state([1.0, 2.0])
    assert float(metric.result()) == 4.0
    metric.reset_state()
    assert value(K, metric.total) == 0.0 and value(K, metric.scale).tolist() == [0.0, 0.0]


@twin
def metrics_get_none_is_none(K):
    assert K.metrics.get(None) is None
    assert isinstance(K.metrics.get("AUC"), K.metrics.AUC)


ADD_VARIABLE_CASES = [custom_metric_adds_variables_with_initializers, metrics_get_none_is_none]


@pytest.mark.parametrize("case", ADD_VARIABLE_CASES, ids=case_id)
def test_metric_add_variable_and_get_none(case):
    check(case)
