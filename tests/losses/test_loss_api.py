"""Loss objects: get/serialize/deserialize, names, configs, wrappers and subclassing."""

import numpy as np
import pytest

import kerasrs
from kerasrs import losses


@pytest.mark.parametrize("identifier, fn", [
    ("mse", losses.mean_squared_error), ("MSE", losses.mean_squared_error),
    ("mean_absolute_error", losses.mean_absolute_error),
    ("mape", losses.mean_absolute_percentage_error),
    ("msle", losses.mean_squared_logarithmic_error), ("huber", losses.huber),
    ("log_cosh", losses.log_cosh), ("kld", losses.kl_divergence), ("poisson", losses.poisson),
    ("hinge", losses.hinge), ("squared_hinge", losses.squared_hinge),
    ("categorical_hinge", losses.categorical_hinge),
    ("cosine_similarity", losses.cosine_similarity), ("bce", losses.binary_crossentropy),
    ("categorical_crossentropy", losses.categorical_crossentropy),
    ("sparse_categorical_crossentropy", losses.sparse_categorical_crossentropy),
])
def test_get_resolves_function_names_to_the_functions(identifier, fn):
    assert losses.get(identifier) is fn  # as Keras 3: the function, not a Loss object


@pytest.mark.parametrize("identifier, cls, name", [
    ("MeanSquaredError", losses.MeanSquaredError, "mean_squared_error"),
    ("Huber", losses.Huber, "huber_loss"),
    ("SparseCategoricalCrossentropy", losses.SparseCategoricalCrossentropy,
     "sparse_categorical_crossentropy"),
])
def test_get_resolves_class_names_to_loss_objects(identifier, cls, name):
    loss = losses.get(identifier)
    assert type(loss) is cls and loss.name == name
    assert loss.reduction == "sum_over_batch_size"


def test_get_passes_objects_and_functions():
    loss = losses.CategoricalCrossentropy(from_logits=True)
    assert losses.get(loss) is loss
    assert losses.get(losses.mean_squared_error) is losses.mean_squared_error
    assert type(losses.get(losses.Hinge)) is losses.Hinge

    def my_loss(y_true, y_pred):
        return kerasrs.ops.sum(kerasrs.ops.abs(y_pred - y_true), axis=-1)

    assert losses.get(my_loss) is my_loss
    wrapped = losses.LossFunctionWrapper(my_loss)
    assert isinstance(wrapped, losses.Loss) and wrapped.name == "my_loss"
    value = wrapped(np.zeros((2, 3)), np.ones((2, 3), "float32"), sample_weight=[1.0, 0.0])
    assert float(value) == pytest.approx(1.5)
    assert losses.get(None) is None
    with pytest.raises(ValueError, match="Could not interpret loss identifier: 'nope'"):
        losses.get("nope")


def test_serialize_round_trip_keeps_the_config():
    loss = losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1,
                                          reduction="sum", name="cce")
    config = losses.serialize(loss)
    assert config == {"module": "keras.losses", "class_name": "CategoricalCrossentropy",
                      "config": {"name": "cce", "reduction": "sum", "from_logits": True,
                                 "label_smoothing": 0.1, "axis": -1},
                      "registered_name": None}
    again = losses.deserialize(config)
    assert type(again) is losses.CategoricalCrossentropy
    assert again.get_config() == loss.get_config()
    keras_fn = {"module": "builtins", "class_name": "function", "config": "mean_squared_error",
                "registered_name": "function"}  # what Keras writes for loss="mse"
    assert losses.deserialize(keras_fn) is losses.mean_squared_error


def test_huber_and_cosine_configs_round_trip():
    for loss in (losses.Huber(delta=0.3), losses.CosineSimilarity(axis=1),
                 losses.SparseCategoricalCrossentropy(ignore_class=0)):
        again = type(loss).from_config(loss.get_config())
        assert again.get_config() == loss.get_config()


def test_subclass_implementing_call():
    class Scaled(losses.Loss):
        def call(self, y_true, y_pred):
            return kerasrs.ops.mean(3.0 * kerasrs.ops.square(y_pred - y_true), axis=-1)

    loss = Scaled()
    assert loss.name == "scaled"
    assert float(loss(np.zeros((2, 2)), np.ones((2, 2), "float32"))) == pytest.approx(3.0)


def test_loss_result_is_differentiable_and_reduction_none_keeps_batch():
    w = kerasrs.Variable(np.ones((2, 1), "float32"))
    with kerasrs.GradientTape() as tape:
        value = losses.MeanSquaredError()(np.zeros((2, 1)), w * 2.0)
    np.testing.assert_allclose(tape.gradient(value, w).numpy(), [[4.0], [4.0]])
    none = losses.MeanSquaredError(reduction=None)(np.zeros((4, 3)), np.ones((4, 3), "float32"))
    assert none.shape == (4,)


@pytest.mark.gpu
@pytest.mark.parametrize("loss", [losses.SparseCategoricalCrossentropy(from_logits=True),
                                  losses.CategoricalCrossentropy(label_smoothing=0.1),
                                  losses.Huber(), losses.CosineSimilarity()])
def test_loss_and_gradient_on_cupy_match_numpy(loss, rng):
    if not kerasrs.backend.is_available("cupy"):
        pytest.skip("cupy backend not available")
    logits = rng.normal(size=(6, 4)).astype("float32")
    labels = rng.integers(0, 4, 6)
    y_true = labels if isinstance(loss, losses.SparseCategoricalCrossentropy) else \
        np.eye(4, dtype="float32")[labels]
    y_pred = logits if loss.name != "categorical_crossentropy" else \
        np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    results = []
    for be in ("numpy", "cupy"):
        with kerasrs.backend.using(be) as backend:
            x = kerasrs.Tensor(backend.asarray(y_pred))
            with kerasrs.GradientTape() as tape:
                tape.watch(x)
                value = loss(y_true, x)
            results.append((float(value), tape.gradient(value, x).numpy()))
    assert results[1][0] == pytest.approx(results[0][0], rel=1e-5)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-4, atol=1e-6)
