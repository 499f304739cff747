"""Every file real Keras 3.15 wrote (tests/fixtures/keras, see MANIFEST.md) loads in kerasrs
and reproduces the stored outputs; m1_fit_after.h5 brings back its SGD state."""

import pathlib

import numpy as np
import pytest

import kerasrs

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "keras"
TOL = dict(rtol=1e-5, atol=1e-5)
NEEDS = {"m1": ("Dense", "Dropout"), "m2": ("Conv2D", "MaxPooling2D", "GlobalAveragePooling2D"),
         "m4": ("Embedding", "LSTM")}


def _require_layers(name):
    missing = [cls for cls in NEEDS[name] if not hasattr(kerasrs.layers, cls)]
    if missing:
        pytest.skip(f"{name} needs kerasrs.layers.{missing}, which do not exist yet")


def _io(name):
    return np.load(FIXTURES / f"{name}_io.npz")


@pytest.mark.parametrize("name", ["m1", "m2", "m4"])
@pytest.mark.parametrize("ext", [".h5", ".keras"])
def test_keras_full_model_files_load_and_predict(name, ext):
    _require_layers(name)
    io = _io(name)
    model = kerasrs.models.load_model(FIXTURES / f"{name}{ext}")
    assert [layer.name for layer in model.layers] == list(io["layer_names"])
    assert [w.path for w in model.weights] == list(io["weight_paths"])
    for w in model.weights:
        np.testing.assert_array_equal(w.numpy(), io[f"weights/{w.path}"])
    np.testing.assert_allclose(model.predict(io["x"], verbose=0), io["y"], **TOL)
    assert not model.compiled  # the fixtures were saved uncompiled


@pytest.mark.parametrize("name", ["m1", "m2", "m4"])
@pytest.mark.parametrize("ext", [".weights.h5", ".h5", ".keras"])
def test_keras_weights_load_into_a_fresh_model(name, ext):
    _require_layers(name)
    io = _io(name)
    model = kerasrs.models.load_model(FIXTURES / f"{name}.h5", compile=False)
    for w in model.weights:  # scramble, so that the load has to restore every value
        w.assign(np.zeros(w.shape, w.dtype))
    model.load_weights(FIXTURES / f"{name}{ext}")
    for w in model.weights:
        np.testing.assert_array_equal(w.numpy(), io[f"weights/{w.path}"])
    np.testing.assert_allclose(model.predict(io["x"], verbose=0), io["y"], **TOL)


@pytest.mark.parametrize("name", ["m1", "m2", "m4"])
def test_keras_weights_load_by_name_from_legacy_file(name):
    _require_layers(name)
    io = _io(name)
    model = kerasrs.models.load_model(FIXTURES / f"{name}.h5", compile=False)
    for w in model.weights:
        w.assign(np.zeros(w.shape, w.dtype))
    model.load_weights(FIXTURES / f"{name}.h5", by_name=True)
    np.testing.assert_allclose(model.predict(io["x"], verbose=0), io["y"], **TOL)


def test_fit_after_file_restores_weights_sgd_state_and_compile_settings():
    fit = np.load(FIXTURES / "m1_fit.npz")
    model = kerasrs.models.load_model(FIXTURES / "m1_fit_after.h5")
    for w in model.weights:
        np.testing.assert_array_equal(w.numpy(), fit[f"after/{w.path}"])
    assert model.compiled
    assert type(model.optimizer).__name__ == "SGD"
    names = [v.path for v in model.optimizer.variables]
    assert names == ["sgd/iteration", "sgd/learning_rate"]
    assert int(model.optimizer.iterations.numpy()) == 8
    assert model.optimizer.variables[1].numpy() == np.float32(0.01)
    assert model.get_compile_config()["loss"] == "sparse_categorical_crossentropy"
    assert model.layers[1].rate == 0.0


def test_fit_after_file_continues_training_like_plain_sgd():
    """One more SGD step after loading equals w - lr * grad computed by hand."""
    fit = np.load(FIXTURES / "m1_fit.npz")
    model = kerasrs.models.load_model(FIXTURES / "m1_fit_after.h5")
    x = fit["x_uint8"][:32].astype("float32") / 255
    y = fit["labels"][:32]
    before = [w.numpy().copy() for w in model.trainable_weights]
    with kerasrs.GradientTape() as tape:
        loss = kerasrs.losses.SparseCategoricalCrossentropy()(y, model(x, training=True))
    grads = [g.numpy() for g in tape.gradient(loss, model.trainable_weights)]
    model.train_on_batch(x, y)
    for w, b, g in zip(model.trainable_weights, before, grads):
        np.testing.assert_allclose(w.numpy(), b - np.float32(0.01) * g, rtol=1e-5, atol=1e-7)
    assert int(model.optimizer.iterations.numpy()) == 9


def test_weights_only_load_keeps_compile_state_and_reads_keras_weights():
    model = kerasrs.models.load_model(FIXTURES / "m1_fit_after.h5")
    model.load_weights(FIXTURES / "m1.weights.h5")  # no optimizer group: state kept
    io = _io("m1")
    np.testing.assert_allclose(model.predict(io["x"], verbose=0), io["y"], **TOL)
    assert int(model.optimizer.iterations.numpy()) == 8


# -- Keras 2 style files (written here with h5py, as Keras 2 / h5py 2 wrote them) ------------------
def _keras2_dense(name, units, first=False):
    config = {"name": name, "trainable": True, "dtype": "float32", "units": units,
              "activation": "relu" if first else "linear", "use_bias": True,
              "kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": None}},
              "bias_initializer": {"class_name": "Zeros", "config": {}},
              "kernel_regularizer": None, "bias_regularizer": None,
              "activity_regularizer": None, "kernel_constraint": None, "bias_constraint": None}
    if first:
        config["batch_input_shape"] = [None, 4]
    return {"class_name": "Dense", "config": config}


def _write_keras2_weights(group, weights):
    group.attrs["layer_names"] = np.array([b"dense_1", b"dense_2"])  # fixed-length bytes
    group.attrs["backend"] = b"tensorflow"
    group.attrs["keras_version"] = b"2.4.0"
    for layer, (kernel, bias) in zip(("dense_1", "dense_2"), weights):
        sub = group.create_group(layer)
        sub.attrs["weight_names"] = np.array([f"{layer}/kernel:0".encode(),
                                              f"{layer}/bias:0".encode()])
        sub.create_dataset(f"{layer}/kernel:0", data=kernel)
        sub.create_dataset(f"{layer}/bias:0", data=bias)


def _keras2_weights():
    rng = np.random.default_rng(0)
    return [(rng.normal(size=(4, 3)).astype("f4"), rng.normal(size=3).astype("f4")),
            (rng.normal(size=(3, 2)).astype("f4"), rng.normal(size=2).astype("f4"))]


def _expected(weights, x):
    (k1, b1), (k2, b2) = weights
    return np.maximum(x @ k1 + b1, 0) @ k2 + b2


def test_keras2_full_model_h5_loads(tmp_path):
    import json

    import h5py

    weights = _keras2_weights()
    config = {"class_name": "Sequential", "config": {
        "name": "sequential", "layers": [_keras2_dense("dense_1", 3, first=True),
                                         _keras2_dense("dense_2", 2)]}}
    with h5py.File(tmp_path / "k2.h5", "w") as f:
        f.attrs["model_config"] = json.dumps(config).encode()
        f.attrs["keras_version"] = b"2.4.0"
        _write_keras2_weights(f.create_group("model_weights"), weights)
    model = kerasrs.models.load_model(tmp_path / "k2.h5")
    x = np.random.default_rng(1).normal(size=(5, 4)).astype("float32")
    np.testing.assert_allclose(model.predict(x, verbose=0), _expected(weights, x), rtol=1e-5,
                               atol=1e-5)


def test_keras2_weights_only_h5_loads_by_position_and_by_name(tmp_path):
    import h5py

    from kerasrs import layers

    weights = _keras2_weights()
    with h5py.File(tmp_path / "w.h5", "w") as f:
        _write_keras2_weights(f, weights)  # Keras 2 save_weights: layer_names at the root
    x = np.random.default_rng(1).normal(size=(5, 4)).astype("float32")
    for kwargs, names in (({}, ("a", "b")), ({"by_name": True}, ("dense_1", "dense_2"))):
        kerasrs.utils.clear_session()
        model = kerasrs.Sequential([layers.Input((4,)),
                                    layers.Dense(3, activation="relu", name=names[0]),
                                    layers.Dense(2, name=names[1])])
        model.load_weights(tmp_path / "w.h5", **kwargs)
        np.testing.assert_allclose(model.predict(x, verbose=0), _expected(weights, x),
                                   rtol=1e-5, atol=1e-5)
