"""Masks carried by a model's output weight the loss, metrics and gradient (C29); masked
steps stay out of BatchNormalization's statistics (C40)."""

import numpy as np
import pytest

import kerasrs
from kerasrs import layers

TABLE = np.array([[100.0], [1.0], [2.0], [3.0]], "float32")
TOKENS = np.array([[1, 2, 0], [3, 0, 0]])


@pytest.fixture(autouse=True)
def fresh_session():
    kerasrs.utils.clear_session()


def _masked_model(*tail):
    embedding = layers.Embedding(4, 1, mask_zero=True)
    model = kerasrs.Sequential([layers.Input((3,), dtype="int64"), embedding, *tail])
    embedding.set_weights([TABLE])
    return model, embedding


def test_c29_mask_reaches_loss_metrics_and_gradient():
    dense = layers.Dense(1, use_bias=False, kernel_initializer="ones")
    model, embedding = _masked_model(dense)
    model.compile(kerasrs.optimizers.SGD(0.1), "mse", metrics=["mae"])
    y = np.zeros((2, 3, 1), "float32")
    loss, mae = model.evaluate(TOKENS, y, batch_size=2, verbose=0)
    assert loss == pytest.approx(14 / 3, rel=1e-6) and mae == pytest.approx(2.0, rel=1e-6)
    model.train_on_batch(TOKENS, y)
    # d/dk of (1 + 4 + 9) k^2 / 3 at k = 1 is 28/3; one SGD step of 0.1
    np.testing.assert_allclose(dense.get_weights()[0], [[1 - 0.1 * 28 / 3]], rtol=1e-6)
    assert embedding.get_weights()[0][0, 0] == 100.0  # the padding row gets no gradient


def test_c29_mask_combines_with_sample_weight_and_unmasked_models_are_unchanged():
    dense = layers.Dense(1, use_bias=False, kernel_initializer="ones")
    model, _ = _masked_model(dense)
    model.compile("sgd", "mse", weighted_metrics=["mae"])
    y = np.zeros((2, 3, 1), "float32")
    weights = np.array([1.0, 2.0], "float32")  # the second sample's step 3 counts twice
    loss, mae = model.evaluate(TOKENS, y, sample_weight=weights, verbose=0)
    assert loss == pytest.approx((1 + 4 + 2 * 9) / 3, rel=1e-6)
    assert mae == pytest.approx((1 + 2 + 2 * 3) / (1 + 1 + 2), rel=1e-6)
    plain = kerasrs.Sequential([layers.Input((3, 1)),
                                layers.Dense(1, use_bias=False, kernel_initializer="ones")])
    plain.compile("sgd", "mse")
    values = TABLE[TOKENS]
    assert plain.evaluate(values, y, verbose=0) == pytest.approx(
        float((values ** 2).mean()), rel=1e-6)


def test_c40_batch_normalization_uses_only_unmasked_steps():
    x = np.zeros((2, 3, 2), "float32")
    x[..., 0] = [[1, 2, 100], [3, 100, 100]]
    x[..., 1] = [[-1, -2, 50], [-3, 50, 50]]
    mask = np.array([[True, True, False], [True, False, False]])
    bn = layers.BatchNormalization(momentum=0.5, epsilon=1e-3)
    out = bn(x, training=True, mask=mask).numpy()
    z = 1 / np.sqrt(2 / 3 + 1e-3)
    np.testing.assert_allclose(out[..., 0][mask], [-z, 0, z], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[..., 1][mask], [z, 0, -z], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.moving_mean.numpy(), [1, -1], rtol=1e-6)
    np.testing.assert_allclose(bn.moving_variance.numpy(), [5 / 6, 5 / 6], rtol=1e-6)


def test_c40_one_feature_mask_from_an_embedding():
    bn = layers.BatchNormalization(momentum=0.5, epsilon=1e-3)
    model, _ = _masked_model(bn)
    out = model(TOKENS, training=True).numpy()[..., 0]
    z = 1 / np.sqrt(2 / 3 + 1e-3)
    np.testing.assert_allclose(out[TOKENS != 0], [-z, 0, z], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.moving_mean.numpy(), [1.0], rtol=1e-6)
    np.testing.assert_allclose(bn.moving_variance.numpy(), [5 / 6], rtol=1e-6)
