"""ReLU, LeakyReLU, PReLU and ELU layers: values (from Keras 3.15), shapes, configs, gradients."""

import json

import numpy as np
import pytest

import kerasrs
from kerasrs import layers
from kerasrs.saving import deserialize_keras_object, serialize_keras_object
from kerasrs.testing import check_gradients

X = np.array([[-10.0, -5.0, -1.0, 0.0, 0.5, 1.0, 2.0, 5.0, 10.0]], "float32")

# Outputs of the Keras 3.15 layers (torch backend) on X.
KERAS = {
    "relu_default": (lambda: layers.ReLU(), [0, 0, 0, 0, 0.5, 1, 2, 5, 10]),
    "relu_options": (lambda: layers.ReLU(max_value=6.0, negative_slope=0.5, threshold=1.0),
                     [-5.5, -3.0, -1.0, -0.5, -0.25, 0.0, 2.0, 5.0, 6.0]),
    "relu_max": (lambda: layers.ReLU(max_value=2.0), [0, 0, 0, 0, 0.5, 1, 2, 2, 2]),
    "leaky_default": (lambda: layers.LeakyReLU(), [-3.0, -1.5, -0.3, 0, 0.5, 1, 2, 5, 10]),
    "leaky_0.1": (lambda: layers.LeakyReLU(negative_slope=0.1),
                  [-1.0, -0.5, -0.1, 0, 0.5, 1, 2, 5, 10]),
    "elu_default": (lambda: layers.ELU(),
                    [-0.999955, -0.993262, -0.632121, 0, 0.5, 1, 2, 5, 10]),
    "elu_2": (lambda: layers.ELU(alpha=2.0),
              [-1.999909, -1.986524, -1.264241, 0, 0.5, 1, 2, 5, 10]),
    "prelu_0.25": (lambda: layers.PReLU(alpha_initializer=kerasrs.initializers.Constant(0.25)),
                   [-2.5, -1.25, -0.25, 0, 0.5, 1, 2, 5, 10]),
}


@pytest.mark.parametrize("case", sorted(KERAS))
def test_activation_layers_match_keras(case):
    make, want = KERAS[case]
    layer = make()
    y = layer(X)
    assert y.shape == X.shape and y.dtype == np.float32
    np.testing.assert_allclose(y.numpy()[0], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", sorted(KERAS))
def test_activation_layer_configs_round_trip(case):
    layer = KERAS[case][0]()
    layer(X)
    config = json.loads(json.dumps(serialize_keras_object(layer)))
    again = deserialize_keras_object(config)
    assert type(again) is type(layer) and again.get_config() == layer.get_config()
    if again.weights:
        again(X)
        again.set_weights(layer.get_weights())
    np.testing.assert_allclose(again(X).numpy(), layer(X).numpy(), rtol=1e-6)


def test_defaults_names_and_keras_2_alpha():
    assert layers.LeakyReLU().negative_slope == 0.3
    assert layers.LeakyReLU(alpha=0.05).negative_slope == 0.05  # Keras 2 configs
    assert layers.ELU().alpha == 1.0
    assert layers.PReLU().name.startswith("p_re_lu")
    relu = layers.ReLU()
    assert relu.get_config()["max_value"] is None and relu.count_params() == 0


@pytest.mark.parametrize("make,match", [
    (lambda: layers.ReLU(max_value=-1.0), "max_value"),
    (lambda: layers.ReLU(negative_slope=None), "negative_slope"),
    (lambda: layers.ReLU(threshold=-0.5), "threshold"),
    (lambda: layers.LeakyReLU(negative_slope=-0.1), "negative_slope"),
    (lambda: layers.ELU(alpha="big"), "alpha"),
])
def test_bad_arguments_are_refused(make, match):
    with pytest.raises(ValueError, match=rf"`{match}` must be a number.*Received: {match}="):
        make()


def test_prelu_weights_shapes_and_shared_axes():
    images = np.random.default_rng(0).standard_normal((2, 4, 5, 3)).astype("float32")
    per_channel = layers.PReLU(shared_axes=[1, 2])
    y = per_channel(images)
    assert y.shape == images.shape and per_channel.alpha.shape == (1, 1, 3)
    assert [w.path for w in per_channel.weights] == [f"{per_channel.name}/alpha"]
    full = layers.PReLU()
    full(images)
    assert full.alpha.shape == (4, 5, 3) and full.count_params() == 60
    per_channel.alpha.assign(np.array([0.1, 0.2, 0.3]).reshape(1, 1, 3))
    want = np.where(images >= 0, images, images * np.array([0.1, 0.2, 0.3], "float32"))
    np.testing.assert_allclose(per_channel(images).numpy(), want, rtol=1e-6)
    with pytest.raises(ValueError, match="last dimension must be 3"):
        per_channel(np.ones((2, 4, 5, 2), "float32"))
    with pytest.raises(ValueError, match="shared_axes"):
        layers.PReLU(shared_axes=[0])(images)
    with pytest.raises(ValueError, match="known size"):
        layers.PReLU()(layers.Input((None, 3)))


def test_activation_layers_in_a_model_keep_masks_and_shapes():
    ids = layers.Input((4,), dtype="int32")
    h = layers.Embedding(5, 3, mask_zero=True)(ids)
    for layer in (layers.ReLU(), layers.LeakyReLU(), layers.ELU(), layers.PReLU()):
        h = layer(h)
        assert h.shape == (None, 4, 3)
    out = layers.LSTM(2)(h)
    model = kerasrs.Model(ids, out)
    assert model.predict(np.array([[1, 2, 0, 0]]), verbose=0).shape == (1, 2)
    emb = model.layers[1](np.array([[1, 2, 0, 0]]))
    assert emb._keras_mask.numpy().tolist() == [[True, True, False, False]]
    assert layers.ReLU()(emb)._keras_mask.numpy().tolist() == [[True, True, False, False]]


@pytest.mark.parametrize("make", [
    lambda: layers.ReLU(max_value=1.5, negative_slope=0.2, threshold=0.3),
    lambda: layers.LeakyReLU(negative_slope=0.2),
    lambda: layers.ELU(alpha=0.7),
    lambda: layers.PReLU(alpha_initializer=kerasrs.initializers.Constant(0.3),
                         shared_axes=[1], dtype="float64"),
], ids=["relu", "leaky_relu", "elu", "prelu"])
def test_activation_layer_gradients(make):
    rng = np.random.default_rng(3)
    x = rng.uniform(0.05, 1.0, (3, 2, 4)) * rng.choice([-2.0, 2.0], (3, 2, 4))  # no kinks
    layer = make()
    if layer.dtype != "float64":
        layer = type(layer).from_config({**layer.get_config(), "dtype": "float64"})
    layer(x)
    check_gradients(lambda t: layer(t), [x])
    if layer.weights:  # PReLU: the gradient reaches alpha too
        with kerasrs.GradientTape() as tape:
            loss = kerasrs.ops.sum(layer(x))
        grad = tape.gradient(loss, layer.alpha).numpy()
        assert grad.shape == (1, 4)  # shared over axis 1
        np.testing.assert_allclose(grad[0], np.minimum(x, 0).sum(axis=(0, 1)), rtol=1e-12)
