"""Round trips through every format: predictions, compile settings, optimizer state (training
resumes bit for bit), JSON configs, user objects, Lambda safety and .npz files."""

import json

import numpy as np
import pytest

import kerasrs
from kerasrs import layers, losses, metrics, optimizers

FORMATS = [".keras", ".h5"]


def _data(n=48, features=5, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, features)).astype("float32"), rng.integers(0, classes, n)


def _mlp(dropout=0.0, seed=0):
    kerasrs.utils.clear_session()
    kerasrs.utils.set_random_seed(seed)
    stack = [layers.Input((5,)), layers.Dense(8, activation="relu")]
    if dropout:
        stack.append(layers.Dropout(dropout))
    stack.append(layers.Dense(3, activation="softmax"))
    return kerasrs.Sequential(stack)


def _assert_same_weights(a, b):
    assert [w.path for w in a.weights] == [w.path for w in b.weights]
    for wa, wb in zip(a.weights, b.weights):
        np.testing.assert_array_equal(wa.numpy(), wb.numpy(), err_msg=wa.path)


# -- predictions ---------------------------------------------------------------------------------
@pytest.mark.parametrize("ext", FORMATS)
def test_sequential_round_trip_predicts_identically(ext, tmp_path):
    model = _mlp(dropout=0.3)
    x, _ = _data()
    model.save(tmp_path / f"m{ext}")
    loaded = kerasrs.models.load_model(tmp_path / f"m{ext}")
    assert type(loaded) is kerasrs.Sequential
    assert [type(layer).__name__ for layer in loaded.layers] == ["Dense", "Dropout", "Dense"]
    assert loaded.layers[1].rate == 0.3
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


@pytest.mark.parametrize("ext", FORMATS + [".weights.h5"])
def test_functional_two_inputs_with_batchnorm_round_trip(ext, tmp_path):
    if not hasattr(layers, "BatchNormalization"):
        pytest.skip("BatchNormalization does not exist yet")
    kerasrs.utils.clear_session()
    a, b = layers.Input((6,)), layers.Input((4,))
    h = layers.BatchNormalization()(layers.Concatenate()([a, b]))
    model = kerasrs.Model([a, b], layers.Dense(3)(h))
    rng = np.random.default_rng(1)
    xa, xb = rng.normal(size=(16, 6)).astype("float32"), rng.normal(size=(16, 4)).astype("f4")
    model.compile("adam", "mse")
    model.fit([xa, xb], rng.normal(size=(16, 3)).astype("float32"), epochs=2, verbose=0)
    assert not np.all(model.layers[3].moving_mean.numpy() == 0)  # moving stats were updated
    if ext == ".weights.h5":
        kerasrs.utils.clear_session()
        a2, b2 = layers.Input((6,)), layers.Input((4,))
        loaded = kerasrs.Model([a2, b2], layers.Dense(3)(
            layers.BatchNormalization()(layers.Concatenate()([a2, b2]))))
        model.save_weights(tmp_path / "f.weights.h5")
        loaded.load_weights(tmp_path / "f.weights.h5")
    else:
        model.save(tmp_path / f"f{ext}")
        loaded = kerasrs.models.load_model(tmp_path / f"f{ext}")
    _assert_same_weights(model, loaded)
    np.testing.assert_array_equal(loaded.predict([xa, xb], verbose=0),
                                  model.predict([xa, xb], verbose=0))


@pytest.mark.parametrize("ext", FORMATS)
def test_nested_model_round_trip(ext, tmp_path):
    kerasrs.utils.clear_session()
    inner = kerasrs.Sequential([layers.Input((4,)), layers.Dense(3, activation="tanh")],
                               name="inner")
    x = layers.Input((4,))
    model = kerasrs.Model(x, layers.Dense(2)(inner(x)))
    data = np.random.default_rng(2).normal(size=(5, 4)).astype("float32")
    model.save(tmp_path / f"n{ext}")
    loaded = kerasrs.models.load_model(tmp_path / f"n{ext}")
    np.testing.assert_array_equal(loaded.predict(data, verbose=0), model.predict(data, verbose=0))


def test_subclassed_model_weights_round_trip(tmp_path):
    class TwoLayer(kerasrs.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.hidden = layers.Dense(4, activation="relu")
            self.out = layers.Dense(2)

        def call(self, inputs):
            return self.out(self.hidden(inputs))

    x = np.random.default_rng(3).normal(size=(6, 3)).astype("float32")
    kerasrs.utils.clear_session()
    first = TwoLayer()
    first(x)
    first.save_weights(tmp_path / "s.weights.h5")
    second = TwoLayer()
    second(x)
    second.load_weights(tmp_path / "s.weights.h5")
    np.testing.assert_array_equal(second.predict(x, verbose=0), first.predict(x, verbose=0))
    import h5py

    with h5py.File(tmp_path / "s.weights.h5", "r") as f:
        # As Keras 3.15 writes it (checked with Keras): attributes in sorted order, and the
        # `layers` list comes before `out`, so `out` is stored as the list's second Dense.
        assert f["hidden/vars/0"].shape == (3, 4) and f["layers/dense_1/vars/0"].shape == (4, 2)
        assert "out" not in f


@pytest.mark.parametrize("ext", FORMATS)
def test_subclassed_model_full_save_rebuilds_from_its_first_call_shape(ext, tmp_path):
    class Tiny(kerasrs.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.inner = layers.Dense(3, activation="tanh")

        def call(self, inputs):
            return self.inner(inputs) * 2.0

    x = np.random.default_rng(5).normal(size=(4, 6)).astype("float32")
    kerasrs.utils.clear_session()
    model = Tiny()
    model.compile("adam", "mse")
    model.fit(x, np.zeros((4, 3), "float32"), epochs=2, verbose=0)
    model.save(tmp_path / f"t{ext}")
    loaded = kerasrs.models.load_model(tmp_path / f"t{ext}")
    assert isinstance(loaded, Tiny)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert int(loaded.optimizer.iterations.numpy()) == 2


# -- resuming: optimizer state round-trips exactly -------------------------------------------------
OPTIMIZERS = {
    "sgd_nesterov": lambda: optimizers.SGD(0.05, momentum=0.9, nesterov=True),
    "adam": lambda: optimizers.Adam(0.01),
    "adamw": lambda: optimizers.AdamW(0.01, weight_decay=0.01),
    "rmsprop": lambda: optimizers.RMSprop(0.01, momentum=0.5),
    "adagrad": lambda: optimizers.Adagrad(0.05),
    "nadam": lambda: optimizers.Nadam(0.01),
}


def _compiled(opt, dropout=0.0):
    model = _mlp(dropout)
    model.compile(OPTIMIZERS[opt](), "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


@pytest.mark.parametrize("ext", FORMATS)
@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_resuming_from_a_saved_model_is_bit_for_bit(opt, ext, tmp_path):
    x, y = _data()
    straight = _compiled(opt)
    straight.fit(x, y, batch_size=16, epochs=4, shuffle=False, verbose=0)

    first = _compiled(opt)
    first.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    first.save(tmp_path / f"ckpt{ext}")
    resumed = kerasrs.models.load_model(tmp_path / f"ckpt{ext}")
    assert type(resumed.optimizer) is type(first.optimizer)
    assert int(resumed.optimizer.iterations.numpy()) == 6
    for va, vb in zip(first.optimizer.variables, resumed.optimizer.variables):
        assert va.path == vb.path
        np.testing.assert_array_equal(va.numpy(), vb.numpy())
    resumed.fit(x, y, batch_size=16, epochs=4, initial_epoch=2, shuffle=False, verbose=0)
    _assert_same_weights(straight, resumed)
    np.testing.assert_array_equal(straight.optimizer.variables[-1].numpy(),
                                  resumed.optimizer.variables[-1].numpy())


@pytest.mark.parametrize("ext", [".keras", ".weights.h5"])
def test_resuming_with_dropout_in_the_same_process_is_bit_for_bit(ext, tmp_path):
    x, y = _data()
    straight = _compiled("adam", dropout=0.25)
    straight.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    first = _compiled("adam", dropout=0.25)
    first.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    if ext == ".keras":
        first.save(tmp_path / "d.keras")
        resumed = kerasrs.models.load_model(tmp_path / "d.keras")
    else:  # weights-only checkpoint into a freshly compiled model: weights + optimizer state
        first.save_weights(tmp_path / "d.weights.h5")
        kerasrs.utils.clear_session()  # no re-seeding: the dropout RNG runs on
        resumed = kerasrs.Sequential([layers.Input((5,)), layers.Dense(8, activation="relu"),
                                      layers.Dropout(0.25), layers.Dense(3, activation="softmax")])
        resumed.compile(OPTIMIZERS["adam"](), "sparse_categorical_crossentropy",
                        metrics=["accuracy"])
        resumed.load_weights(tmp_path / "d.weights.h5")
        assert int(resumed.optimizer.iterations.numpy()) == 3
    resumed.fit(x, y, batch_size=16, epochs=3, initial_epoch=1, shuffle=False, verbose=0)
    _assert_same_weights(straight, resumed)


@pytest.mark.parametrize("ext", FORMATS)
def test_compile_settings_with_objects_come_back(ext, tmp_path):
    model = _mlp()
    model.compile(optimizers.RMSprop(0.002, rho=0.8),
                  losses.SparseCategoricalCrossentropy(from_logits=False, name="scce"),
                  metrics=[metrics.SparseCategoricalAccuracy(name="acc"),
                           "sparse_categorical_crossentropy"])
    x, y = _data()
    model.fit(x, y, epochs=1, verbose=0)
    model.save(tmp_path / f"c{ext}")
    loaded = kerasrs.models.load_model(tmp_path / f"c{ext}")
    config = loaded.get_compile_config()
    assert isinstance(config["loss"], losses.SparseCategoricalCrossentropy)
    assert config["loss"].name == "scce"
    assert loaded.optimizer.get_config()["rho"] == 0.8
    assert isinstance(config["metrics"][0], metrics.SparseCategoricalAccuracy)
    assert config["metrics"][1] == "sparse_categorical_crossentropy"
    np.testing.assert_allclose(loaded.evaluate(x, y, verbose=0), model.evaluate(x, y, verbose=0))


@pytest.mark.parametrize("ext", FORMATS)
def test_load_with_compile_false_gives_an_uncompiled_model(ext, tmp_path):
    model = _compiled("adam")
    model.save(tmp_path / f"u{ext}")
    loaded = kerasrs.models.load_model(tmp_path / f"u{ext}", compile=False)
    assert not loaded.compiled
    with pytest.raises(ValueError, match="compile"):
        loaded.fit(*_data(), verbose=0)


# -- JSON ----------------------------------------------------------------------------------------
def test_to_json_and_model_from_json():
    model = _mlp(dropout=0.1)
    text = model.to_json()
    config = json.loads(text)
    assert config["class_name"] == "Sequential" and config["module"] == "keras"
    rebuilt = kerasrs.models.model_from_json(text)
    assert [w.shape for w in rebuilt.weights] == [w.shape for w in model.weights]
    assert json.loads(rebuilt.to_json())["config"]["layers"][2]["config"]["rate"] == 0.1


def test_model_from_json_reads_a_keras2_style_config():
    config = {"class_name": "Model", "config": {
        "name": "old", "layers": [
            {"class_name": "InputLayer", "name": "input_1", "inbound_nodes": [],
             "config": {"batch_input_shape": [None, 3], "dtype": "float32", "name": "input_1"}},
            {"class_name": "Dense", "name": "dense", "inbound_nodes": [[["input_1", 0, 0, {}]]],
             "config": {"name": "dense", "units": 2, "activation": "linear", "dtype": "float32",
                        "kernel_initializer": {"class_name": "GlorotUniform",
                                               "config": {"seed": None}}}}],
        "input_layers": [["input_1", 0, 0]], "output_layers": [["dense", 0, 0]]}}
    model = kerasrs.models.model_from_json(json.dumps(config))
    out = model.predict(np.ones((2, 3), "float32"), verbose=0)
    assert np.asarray(out[0] if isinstance(out, list) else out).shape == (2, 2)


# -- user objects --------------------------------------------------------------------------------
@kerasrs.saving.register_keras_serializable(package="test_saving")
class ScaleBy(layers.Layer):
    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.offset = self.add_weight((input_shape[-1],), "ones", name="offset")

    def call(self, inputs):
        return inputs * self.factor + self.offset

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


@kerasrs.saving.register_keras_serializable(package="test_saving")
def halve_relu(x):
    return kerasrs.ops.relu(x) * 0.5


@kerasrs.saving.register_keras_serializable(package="test_saving")
def double_mse(y_true, y_pred):
    return kerasrs.losses.mean_squared_error(y_true, y_pred) * 2.0


@pytest.mark.parametrize("ext", FORMATS)
def test_registered_layer_activation_and_loss_round_trip(ext, tmp_path):
    kerasrs.utils.clear_session()
    model = kerasrs.Sequential([layers.Input((3,)), ScaleBy(3.0),
                                layers.Dense(2, activation=halve_relu)])
    model.compile("sgd", double_mse)
    x = np.random.default_rng(4).normal(size=(4, 3)).astype("float32")
    model.save(tmp_path / f"r{ext}")
    loaded = kerasrs.models.load_model(tmp_path / f"r{ext}")
    assert isinstance(loaded.layers[0], ScaleBy) and loaded.layers[0].factor == 3.0
    assert loaded.layers[1].activation is halve_relu
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    loss = loaded.get_compile_config()["loss"]
    assert loss is double_mse or getattr(loss, "fn", None) is double_mse
    assert kerasrs.saving.get_registered_name(ScaleBy) == "test_saving>ScaleBy"
    assert kerasrs.saving.get_registered_object("test_saving>ScaleBy") is ScaleBy


def test_registered_name_is_written_to_the_config(tmp_path):
    kerasrs.utils.clear_session()
    model = kerasrs.Sequential([layers.Input((3,)), ScaleBy()])
    entry = json.loads(model.to_json())["config"]["layers"][1]
    assert entry["registered_name"] == "test_saving>ScaleBy"
    assert entry["class_name"] == "ScaleBy"


def test_unknown_class_names_the_class_and_how_to_register_it(tmp_path, monkeypatch):
    from kerasrs.layers import base

    class Unlisted(layers.Layer):
        def call(self, inputs):
            return inputs + 1.0

    kerasrs.utils.clear_session()
    model = kerasrs.Sequential([layers.Input((2,)), Unlisted(), layers.Dense(1)])
    model.save(tmp_path / "u.keras")
    monkeypatch.delitem(base._LAYER_CLASSES, "Unlisted")  # as in a fresh process
    with pytest.raises(ValueError, match=r"Unlisted.*register_keras_serializable.*custom_objects"):
        kerasrs.models.load_model(tmp_path / "u.keras")
    loaded = kerasrs.models.load_model(tmp_path / "u.keras", custom_objects={"Unlisted": Unlisted})
    assert isinstance(loaded.layers[0], Unlisted)
    with kerasrs.saving.custom_object_scope({"Unlisted": Unlisted}):
        assert isinstance(kerasrs.models.load_model(tmp_path / "u.keras").layers[0], Unlisted)


def test_serialize_and_deserialize_keras_object():
    for obj in (optimizers.Adam(0.003), losses.Huber(delta=2.0), metrics.AUC(num_thresholds=50),
                kerasrs.initializers.HeNormal(seed=3), kerasrs.regularizers.L1L2(0.1, 0.2),
                layers.Dense(4, activation="tanh")):
        config = kerasrs.saving.serialize_keras_object(obj)
        json.dumps(config)
        again = kerasrs.saving.deserialize_keras_object(config)
        assert type(again) is type(obj)
        assert again.get_config() == obj.get_config()
    fn = kerasrs.saving.serialize_keras_object(losses.mean_squared_error)
    assert fn["class_name"] == "function" and fn["module"] == "keras.losses"
    assert kerasrs.saving.deserialize_keras_object(fn) is losses.mean_squared_error


# -- Lambda and safe mode ------------------------------------------------------------------------
def _double(x):
    return x * 2.0


@pytest.mark.parametrize("ext", FORMATS)
def test_lambda_bytecode_is_refused_in_safe_mode(ext, tmp_path):
    kerasrs.utils.clear_session()
    model = kerasrs.Sequential([layers.Input((2,)), layers.Lambda(lambda t: t * 3.0)])
    model.save(tmp_path / f"l{ext}")
    with pytest.raises(ValueError, match="safe_mode=False"):
        kerasrs.models.load_model(tmp_path / f"l{ext}")
    loaded = kerasrs.models.load_model(tmp_path / f"l{ext}", safe_mode=False)
    np.testing.assert_array_equal(loaded.predict(np.ones((1, 2), "float32"), verbose=0),
                                  [[3.0, 3.0]])


def test_lambda_with_an_unregistered_module_function_needs_custom_objects(tmp_path):
    kerasrs.utils.clear_session()
    model = kerasrs.Sequential([layers.Input((2,)), layers.Lambda(_double)])
    model.save(tmp_path / "f.keras")
    with pytest.raises(ValueError, match="_double"):
        kerasrs.models.load_model(tmp_path / "f.keras")
    loaded = kerasrs.models.load_model(tmp_path / "f.keras", custom_objects={"_double": _double})
    np.testing.assert_array_equal(loaded.predict(np.ones((1, 2), "float32"), verbose=0),
                                  [[2.0, 2.0]])


@pytest.mark.parametrize("module, name", [("builtins", "exec"), ("os", "system"),
                                          ("kerasrs.saving", "save_npz")])
def test_safe_mode_never_imports_functions_a_file_names(module, name):
    function = {"module": module, "class_name": "function", "config": name,
                "registered_name": name}
    config = {"module": "keras", "class_name": "Sequential", "config": {"name": "s", "layers": [
        {"class_name": "InputLayer", "config": {"batch_shape": [None, 2], "name": "i"}},
        {"class_name": "Lambda", "config": {"name": "l", "function": function,
                                             "arguments": {}}}]}}
    with pytest.raises(ValueError, match=f"{name}.*safe_mode=False"):
        kerasrs.models.model_from_json(json.dumps(config))


# -- npz -----------------------------------------------------------------------------------------
def test_npz_round_trip_and_plain_numpy_reading(tmp_path):
    model = _mlp()
    kerasrs.saving.save_npz(model, tmp_path / "w.npz")
    with np.load(tmp_path / "w.npz", allow_pickle=False) as data:
        assert list(data.keys()) == [w.path for w in model.weights]
        np.testing.assert_array_equal(data["sequential/dense/kernel"],
                                      model.weights[0].numpy())
    other = _mlp(seed=9)  # same names after clear_session, different values
    kerasrs.saving.load_npz(other, tmp_path / "w.npz")
    _assert_same_weights(model, other)


def test_npz_loads_by_position_when_names_differ_and_refuses_wrong_shapes(tmp_path):
    model = _mlp()
    kerasrs.saving.save_npz(model, tmp_path / "w.npz")
    renamed = kerasrs.Sequential([layers.Input((5,)), layers.Dense(8, activation="relu"),
                                  layers.Dense(3, activation="softmax")])  # sequential_1/...
    kerasrs.saving.load_npz(renamed, tmp_path / "w.npz")
    for a, b in zip(model.weights, renamed.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    wrong = kerasrs.Sequential([layers.Input((5,)), layers.Dense(7), layers.Dense(3)])
    before = [w.numpy().copy() for w in wrong.weights]
    with pytest.raises(ValueError, match="does not fit"):
        kerasrs.saving.load_npz(wrong, tmp_path / "w.npz")
    for w, b in zip(wrong.weights, before):
        np.testing.assert_array_equal(w.numpy(), b)


# -- backends ------------------------------------------------------------------------------------
@pytest.mark.parametrize("ext", FORMATS)
def test_round_trip_and_resume_on_each_backend(backend, ext, tmp_path):
    """On the CPU bit for bit (asserted above); on a GPU the same up to float32 rounding, and
    the loaded weights and optimizer state live on the backend that loaded them."""
    x, y = _data()
    straight = _compiled("adam")
    straight.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    first = _compiled("adam")
    first.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    first.save(tmp_path / f"b{ext}")
    resumed = kerasrs.models.load_model(tmp_path / f"b{ext}")
    assert {w.backend.name for w in resumed.weights} == {backend.name}
    # (the iteration count and learning rate stay on the host, where the step reads them)
    assert {v.backend.name for v in resumed.optimizer.variables if v.shape} == {backend.name}
    resumed.fit(x, y, batch_size=16, epochs=2, initial_epoch=1, shuffle=False, verbose=0)
    for a, b in zip(straight.weights, resumed.weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
