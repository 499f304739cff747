"""Parity with Keras 3.15 on the m4 reference model (Embedding + LSTM + Dense).

``tests/fixtures/keras/m4.h5`` and ``m4_io.npz`` were written by real Keras (see
``tests/fixtures/keras/MANIFEST.md``). The weights are read here with h5py directly (the
model_weights group of the legacy .h5 file), so this test does not depend on kerasrs's loader.
"""

import os

import numpy as np
import pytest

import kerasrs
from kerasrs import layers

h5py = pytest.importorskip("h5py")
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "keras")


def keras_weights(path):
    """{layer name: [arrays in the layer's weight_names order]} from a legacy Keras .h5 file."""
    with h5py.File(path, "r") as f:
        group = f["model_weights"]
        names = [n.decode() if isinstance(n, bytes) else n for n in group.attrs["layer_names"]]
        return {name: [group[name][w.decode() if isinstance(w, bytes) else w][()]
                       for w in group[name].attrs["weight_names"]] for name in names}


@pytest.fixture
def m4():
    kerasrs.utils.clear_session()
    model = kerasrs.Sequential([layers.Input((12,), dtype="int32"), layers.Embedding(50, 8),
                                layers.LSTM(16), layers.Dense(1, activation="sigmoid")])
    weights = keras_weights(os.path.join(FIXTURES, "m4.h5"))
    for layer in model.layers:
        layer.set_weights(weights[layer.name])
    return model


def test_m4_weight_paths_and_shapes_match_keras(m4):
    io = np.load(os.path.join(FIXTURES, "m4_io.npz"))
    assert [w.path for w in m4.weights] == list(io["weight_paths"])
    for w in m4.weights:
        np.testing.assert_array_equal(w.numpy(), io[f"weights/{w.path}"])


def test_m4_outputs_and_activations_match_keras(m4):
    io = np.load(os.path.join(FIXTURES, "m4_io.npz"))
    x = io["x"]
    np.testing.assert_allclose(m4(x).numpy(), io["y"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(m4.predict(x, verbose=0), io["y"], rtol=1e-5, atol=1e-5)
    h = x
    for layer in m4.layers:
        h = layer(h)
        np.testing.assert_allclose(h.numpy(), io[f"acts/{layer.name}"], rtol=1e-5, atol=1e-5,
                                   err_msg=layer.name)
