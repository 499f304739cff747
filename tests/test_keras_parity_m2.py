"""The m2 CNN against real Keras 3.15: outputs, every layer's activation, loss and gradients.

m2 = ``Sequential([Input((28, 28, 1)), Conv2D(8, 3, relu), MaxPooling2D(), Conv2D(16, 3, relu),
GlobalAveragePooling2D(), Dense(10)])``. Fixtures (copied from ../shared/fixtures/keras, see
MANIFEST.md there): ``m2.h5`` (weights read here with h5py directly, through the legacy
``weight_names``) and ``m2_io.npz`` (input, outputs, activations, loss and gradients).
"""

import pathlib

import h5py
import numpy as np
import pytest

import kerasrs
from kerasrs import layers

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures" / "keras"
TOL = dict(rtol=1e-5, atol=1e-6)


def _decode(name):
    return name.decode() if isinstance(name, bytes) else str(name)


def _h5_weights():
    """``[(weight path, array)]`` of m2.h5 in the file's layer and weight order."""
    out = []
    with h5py.File(FIXTURES / "m2.h5", "r") as f:
        group = f["model_weights"]
        for layer_name in group.attrs["layer_names"]:
            layer_group = group[_decode(layer_name)]
            for weight_name in layer_group.attrs["weight_names"]:
                out.append((_decode(weight_name), layer_group[_decode(weight_name)][()]))
    return out


def _m2():
    kerasrs.utils.clear_session()
    model = kerasrs.Sequential([
        layers.Input((28, 28, 1)),
        layers.Conv2D(8, 3, activation="relu"),
        layers.MaxPooling2D(),
        layers.Conv2D(16, 3, activation="relu"),
        layers.GlobalAveragePooling2D(),
        layers.Dense(10),
    ])
    model.set_weights([value for _, value in _h5_weights()])
    return model


@pytest.fixture(scope="module")
def io():
    return np.load(FIXTURES / "m2_io.npz")


def test_m2_names_paths_and_weight_layouts_match_keras(io):
    model = _m2()
    assert [layer.name for layer in model.layers] == list(io["layer_names"])
    assert [w.path for w in model.weights] == list(io["weight_paths"])
    assert [w.path for w in model.trainable_weights] == list(io["trainable_weight_paths"])
    assert [name for name, _ in _h5_weights()] == list(io["weight_paths"])
    for w in model.weights:
        np.testing.assert_array_equal(w.numpy(), io[f"weights/{w.path}"])


def test_m2_outputs_and_every_activation_match_keras(io):
    model = _m2()
    np.testing.assert_allclose(model(io["x"], training=False).numpy(), io["y"], **TOL)
    np.testing.assert_allclose(model.predict(io["x"], verbose=0), io["y"], **TOL)
    h = io["x"]
    for layer in model.layers:
        h = layer(h, training=False)
        np.testing.assert_allclose(h.numpy(), io[f"acts/{layer.name}"], err_msg=layer.name, **TOL)


def test_m2_loss_and_gradients_match_keras(io):
    model = _m2()
    assert str(io["loss_name"]) == "categorical_crossentropy"
    loss_fn = kerasrs.losses.CategoricalCrossentropy(from_logits=True)
    with kerasrs.GradientTape() as tape:
        loss = loss_fn(io["labels"], model(io["x"], training=False))
    grads = tape.gradient(loss, model.trainable_weights)
    assert float(loss) == pytest.approx(float(io["loss_value"]), rel=1e-5)
    for w, g in zip(model.trainable_weights, grads):
        np.testing.assert_allclose(g.numpy(), io[f"grads/{w.path}"], err_msg=w.path, **TOL)
