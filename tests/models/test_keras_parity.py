"""The m1 model against real Keras 3.15: outputs, per-weight gradients, one epoch of SGD.

Fixtures (from ../shared/fixtures/keras, see MANIFEST.md): ``m1.h5`` (weights read here with h5py
directly), ``m1_io.npz`` (inputs, outputs, gradients) and ``m1_fit.npz`` (an SGD epoch).
"""

import pathlib

import h5py
import numpy as np
import pytest

import kerasrs
from kerasrs import layers

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "keras"


def _m1(dropout=0.2):
    kerasrs.utils.clear_session()
    return kerasrs.Sequential([layers.Input((784,)), layers.Dense(64, activation="relu"),
                               layers.Dropout(dropout), layers.Dense(10, activation="softmax")])


def _h5_weights():
    """The weights of m1.h5 in legacy layer order, read through ``weight_names``."""
    out = []
    with h5py.File(FIXTURES / "m1.h5", "r") as f:
        group = f["model_weights"]
        for layer_name in group.attrs["layer_names"]:
            layer_name = layer_name.decode() if isinstance(layer_name, bytes) else layer_name
            for weight_name in group[layer_name].attrs["weight_names"]:
                if isinstance(weight_name, bytes):
                    weight_name = weight_name.decode()
                out.append((weight_name, group[layer_name][weight_name][()]))
    return out


def test_m1_names_paths_and_outputs_match_keras():
    io = np.load(FIXTURES / "m1_io.npz")
    model = _m1()
    assert [layer.name for layer in model.layers] == list(io["layer_names"])
    assert [w.path for w in model.weights] == list(io["weight_paths"])
    assert [w.path for w in model.trainable_weights] == list(io["trainable_weight_paths"])
    weights = _h5_weights()
    assert [name for name, _ in weights] == list(io["weight_paths"])
    model.set_weights([value for _, value in weights])
    np.testing.assert_allclose(model.predict(io["x"], verbose=0), io["y"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model(io["x"], training=False).numpy(), io["y"], rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(model.layers[0](io["x"]).numpy(), io["acts/dense"], rtol=1e-5,
                               atol=1e-6)


def test_m1_loss_and_per_weight_gradients_match_keras():
    io = np.load(FIXTURES / "m1_io.npz")
    model = _m1()
    model.set_weights([value for _, value in _h5_weights()])
    loss_fn = kerasrs.losses.LossFunctionWrapper(kerasrs.losses.get(str(io["loss_name"])))
    with kerasrs.GradientTape() as tape:
        loss = loss_fn(io["labels"], model(io["x"], training=False))
    grads = tape.gradient(loss, model.trainable_weights)
    assert float(loss) == pytest.approx(float(io["loss_value"]), rel=1e-5)
    for w, g in zip(model.trainable_weights, grads):
        np.testing.assert_allclose(g.numpy(), io[f"grads/{w.path}"], rtol=1e-5, atol=1e-6,
                                   err_msg=w.path)


@pytest.mark.parametrize("samples, after, history", [
    (256, "after", "history_loss"), (250, "after_partial250", "history_loss_partial250")])
def test_m1_one_sgd_epoch_matches_keras(samples, after, history):
    fit = np.load(FIXTURES / "m1_fit.npz")
    paths = list(fit["weight_paths"])
    model = _m1(dropout=0.0)
    model.set_weights([fit[f"before/{p}"] for p in paths])
    model.compile(optimizer=kerasrs.optimizers.SGD(learning_rate=0.01),
                  loss="sparse_categorical_crossentropy")

    class BatchLogs(kerasrs.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.losses = []

        def on_train_batch_end(self, batch, logs=None):
            self.losses.append(logs["loss"])

    record = BatchLogs()
    x = fit["x_uint8"].astype("float32") / 255
    hist = model.fit(x[:samples], fit["labels"][:samples], batch_size=32, epochs=1,
                     shuffle=False, verbose=0, callbacks=[record])
    assert hist.history["loss"][0] == pytest.approx(float(fit[history].reshape(-1)[0]), abs=1e-5)
    for w, p in zip(model.get_weights(), paths):
        np.testing.assert_allclose(w, fit[f"{after}/{p}"], rtol=1e-5, atol=1e-6, err_msg=p)
    assert int(model.optimizer.iterations.numpy()) == -(-samples // 32)
    if samples == 256:
        np.testing.assert_allclose(record.losses, fit["batch_end_logs_loss"], rtol=1e-5)


def test_keras_model_configs_rebuild_m1_from_h5_and_keras_archive():
    import json
    import zipfile

    with h5py.File(FIXTURES / "m1.h5", "r") as f:
        legacy = json.loads(f.attrs["model_config"])
    model = kerasrs.models.model_from_config(legacy)
    assert isinstance(model, kerasrs.Sequential) and model.output_shape == (None, 10)
    assert [layer.name for layer in model.layers] == ["dense", "dropout", "dense_1"]
    assert model.layers[1].rate == 0.2 and model.layers[2].get_config()["activation"] == "softmax"
    assert [w.path for w in model.weights][0] == "sequential/dense/kernel"
    archive = FIXTURES.parents[2].parent / "shared" / "fixtures" / "keras" / "m1.keras"
    if archive.exists():
        config = json.loads(zipfile.ZipFile(archive).read("config.json"))
        assert kerasrs.models.model_from_config(config).count_params() == 50890
