"""More files written by real Keras 3.15 (tests/fixtures/keras_saving, made by the script
there): a model with Bidirectional, MultiHeadAttention, TimeDistributed, GRU and
BatchNormalization in all three formats, and a compiled Adam model whose checkpoint must resume
in kerasrs exactly as it resumes in Keras."""

import pathlib

import numpy as np
import pytest

import kerasrs

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "keras_saving"
NEEDED = ("Bidirectional", "LSTM", "MultiHeadAttention", "TimeDistributed", "GRU",
          "BatchNormalization")


def _require():
    missing = [n for n in NEEDED if not hasattr(kerasrs.layers, n)]
    if missing:
        pytest.skip(f"needs kerasrs.layers.{missing}, which do not exist yet")


@pytest.mark.parametrize("ext", [".h5", ".keras"])
def test_attention_model_loads_and_predicts(ext):
    _require()
    io = np.load(FIXTURES / "attn_io.npz")
    model = kerasrs.models.load_model(FIXTURES / f"attn{ext}")
    np.testing.assert_allclose(model.predict(io["x"], verbose=0), io["y"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ext", [".weights.h5", ".h5", ".keras"])
def test_attention_model_weights_load(ext):
    _require()
    io = np.load(FIXTURES / "attn_io.npz")
    model = kerasrs.models.load_model(FIXTURES / "attn.h5")
    for w in model.weights:
        w.assign(np.zeros(w.shape, w.dtype))
    model.load_weights(FIXTURES / f"attn{ext}")
    np.testing.assert_allclose(model.predict(io["x"], verbose=0), io["y"], rtol=1e-5, atol=1e-5)


def test_attention_model_written_by_kerasrs_has_keras_paths(tmp_path):
    import h5py

    _require()
    model = kerasrs.models.load_model(FIXTURES / "attn.h5")
    model.save_weights(tmp_path / "ours.weights.h5")
    datasets = []
    with h5py.File(FIXTURES / "attn.weights.h5", "r") as f:
        f.visititems(lambda name, obj: datasets.append((name, obj.shape))
                     if isinstance(obj, h5py.Dataset) else None)
    with h5py.File(tmp_path / "ours.weights.h5", "r") as f:
        for name, shape in datasets:  # every Keras dataset is there, at the same path
            assert f[name].shape == shape, name


@pytest.mark.parametrize("ext", [".keras", ".weights.h5"])
def test_keras_adam_checkpoint_resumes_like_keras(ext):
    io = np.load(FIXTURES / "adam_io.npz")
    if ext == ".keras":
        model = kerasrs.models.load_model(FIXTURES / "adam.keras")
    else:
        kerasrs.utils.clear_session()
        model = kerasrs.Sequential([kerasrs.Input((5,)),
                                    kerasrs.layers.Dense(8, activation="relu"),
                                    kerasrs.layers.Dense(3, activation="softmax")])
        model.compile(kerasrs.optimizers.Adam(0.01), "sparse_categorical_crossentropy")
        model.load_weights(FIXTURES / "adam.weights.h5")
    assert type(model.optimizer).__name__ == "Adam"
    assert int(model.optimizer.iterations.numpy()) == 8
    assert len(model.optimizer.variables) == 2 + 2 * len(model.trainable_weights)
    model.train_on_batch(io["x_step"], io["labels_step"])
    for i, w in enumerate(model.weights):
        np.testing.assert_allclose(w.numpy(), io[f"after_step/{i}"], rtol=1e-5, atol=1e-6)
