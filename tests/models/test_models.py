"""Sequential, functional and subclassed models: building, graphs, configs and parity."""

import json

import numpy as np
import pytest

import kerasrs
from kerasrs import layers


@pytest.fixture(autouse=True)
def fresh_session():
    kerasrs.utils.clear_session()
    kerasrs.utils.set_random_seed(0)


def _x(n=6, d=4, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d)).astype("float32")


# -- Sequential ---------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["input", "input_shape", "build", "call"])
def test_sequential_build_modes_give_same_structure(how):
    if how == "input":
        model = kerasrs.Sequential([layers.Input((4,)), layers.Dense(3), layers.Dense(2)])
    elif how == "input_shape":
        model = kerasrs.Sequential([layers.Dense(3, input_shape=(4,)), layers.Dense(2)])
    else:
        model = kerasrs.Sequential([layers.Dense(3), layers.Dense(2)])
        assert not model.built
        if how == "build":
            model.build((None, 4))
        else:
            model(_x())
    assert model.built and model.output_shape == (None, 2)
    assert model.input_shape == (None, 4)
    assert [w.path for w in model.weights] == ["sequential/dense/kernel", "sequential/dense/bias",
                                               "sequential/dense_1/kernel",
                                               "sequential/dense_1/bias"]
    assert model.count_params() == 4 * 3 + 3 + 3 * 2 + 2


def test_sequential_builds_on_fit_and_add_pop_get_layer():
    model = kerasrs.Sequential()
    model.add(layers.Dense(3, name="hidden"))
    model.add(layers.Dense(1, name="out"))
    model.compile("sgd", "mse")
    model.fit(_x(), np.zeros((6, 1)), verbose=0)
    assert model.built and [layer.name for layer in model.layers] == ["hidden", "out"]
    assert model.get_layer("out") is model.layers[1] and model.get_layer(index=0).name == "hidden"
    with pytest.raises(ValueError, match="no layer named 'x'.*hidden"):
        model.get_layer("x")
    popped = model.pop()
    assert popped.name == "out" and model.output_shape == (None, 3)
    with pytest.raises(ValueError, match="unique names"):
        model.add(layers.Dense(1, name="hidden"))


def test_sequential_names_and_model_names_are_unique():
    assert kerasrs.Sequential().name == "sequential"
    assert kerasrs.Sequential().name == "sequential_1"
    x = layers.Input((2,))
    assert kerasrs.Model(x, layers.Dense(1)(x)).name == "functional"


def test_sequential_config_matches_keras_structure_and_round_trips():
    model = kerasrs.Sequential([layers.Input((4,)), layers.Dense(3, activation="relu"),
                                layers.Dropout(0.2), layers.Dense(2, activation="softmax")])
    config = json.loads(json.dumps(model.get_config()))
    assert config["name"] == "sequential" and config["build_input_shape"] == [None, 4]
    entries = config["layers"]
    assert [e["class_name"] for e in entries] == ["InputLayer", "Dense", "Dropout", "Dense"]
    assert entries[0]["config"]["batch_shape"] == [None, 4]
    dense = entries[1]["config"]
    assert dense["activation"] == "relu" and dense["units"] == 3
    assert dense["kernel_initializer"]["class_name"] == "GlorotUniform"
    assert dense["dtype"]["config"]["name"] == "float32"
    clone = kerasrs.Sequential.from_config(config)
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone.predict(_x(), verbose=0), model.predict(_x(), verbose=0))
    assert [w.path for w in clone.weights][0] == "sequential/dense/kernel"


# -- functional ---------------------------------------------------------------------------------
def _two_in_two_out():
    a, b = layers.Input((4,), name="a"), layers.Input((3,), name="b")
    shared = layers.Dense(5, activation="tanh", name="shared")
    h = layers.Concatenate(name="cat")([shared(layers.Dense(3, name="pre")(a)), shared(b)])
    reg = layers.Dense(1, name="reg")(h)
    cls = layers.Dense(3, activation="softmax", name="cls")(h)
    return kerasrs.Model([a, b], [reg, cls])


def test_functional_graph_layers_shared_layer_and_paths():
    model = _two_in_two_out()
    assert [layer.name for layer in model.layers] == ["a", "pre", "b", "shared", "cat", "reg",
                                                      "cls"]
    assert model.input_names == ["a", "b"] and model.output_names == ["reg", "cls"]
    assert [w.path for w in model.weights][:2] == ["pre/kernel", "pre/bias"]
    assert len(model.get_layer("shared")._inbound_nodes) == 2
    out = model([_x(2, 4), _x(2, 3)])
    assert [o.shape for o in out] == [(2, 1), (2, 3)]
    same = model({"a": _x(2, 4), "b": _x(2, 3)})
    np.testing.assert_array_equal(same[1].numpy(), out[1].numpy())


def test_functional_multi_input_multi_output_trains():
    model = _two_in_two_out()
    xa, xb = _x(64, 4), _x(64, 3, 1)
    y_reg = (xa[:, :1] - xb[:, 1:2]).astype("float32")
    y_cls = (xa[:, 0] > 0).astype("int64") + (xb[:, 0] > 0.5)
    model.compile(kerasrs.optimizers.Adam(0.02), loss={"reg": "mse",
                                                      "cls": "sparse_categorical_crossentropy"},
                  loss_weights=[1.0, 0.5], metrics={"cls": ["accuracy"]})
    history = model.fit([xa, xb], {"reg": y_reg, "cls": y_cls}, epochs=15, batch_size=16,
                        verbose=0, validation_split=0.25)
    h = history.history
    assert sorted(h) == ["cls_accuracy", "cls_loss", "loss", "reg_loss", "val_cls_accuracy",
                         "val_cls_loss", "val_loss", "val_reg_loss"]
    assert h["loss"][-1] < 0.6 * h["loss"][0]
    np.testing.assert_allclose(h["loss"][-1], h["reg_loss"][-1] + 0.5 * h["cls_loss"][-1],
                               rtol=1e-4)
    result = model.evaluate([xa, xb], [y_reg, y_cls], verbose=0, return_dict=True)
    assert set(result) == {"loss", "reg_loss", "cls_loss", "cls_accuracy"}
    preds = model.predict([xa, xb], verbose=0, batch_size=10)
    assert isinstance(preds, list) and preds[0].shape == (64, 1) and preds[1].shape == (64, 3)


def test_functional_dict_inputs_and_outputs():
    x1, x2 = layers.Input((2,), name="left"), layers.Input((2,), name="right")
    s = layers.Add()([x1, x2])
    model = kerasrs.Model({"left": x1, "right": x2}, {"sum": s, "double": layers.Rescaling(2)(s)})
    out = model.predict({"left": np.ones((3, 2)), "right": np.ones((3, 2))}, verbose=0)
    assert sorted(out) == ["double", "sum"] and out["double"].tolist() == [[4.0, 4.0]] * 3


def test_nested_models_as_layers():
    inner = kerasrs.Sequential([layers.Input((4,)), layers.Dense(3)], name="inner")
    x = layers.Input((4,))
    outer = kerasrs.Model(x, layers.Dense(1)(inner(x)))
    assert inner in outer.layers and len(outer.weights) == 4
    assert outer.weights[0].path == "inner/dense/kernel"
    np.testing.assert_allclose(outer(_x()).numpy(), outer.layers[-1](inner(_x())).numpy(),
                               rtol=1e-6)
    wrapper = kerasrs.Sequential([layers.Input((4,)), outer, layers.Dense(2)])
    assert wrapper.output_shape == (None, 2) and wrapper.count_params() == 15 + 4 + 4


def test_graph_disconnected_and_bad_inputs():
    a, b = layers.Input((2,)), layers.Input((2,))
    out = layers.Add()([a, b])
    with pytest.raises(ValueError, match="graph disconnected"):
        kerasrs.Model(a, out)
    with pytest.raises(ValueError, match="symbolic tensors"):
        kerasrs.Model(a, np.ones(2))
    with pytest.raises(ValueError, match=r"unique name.*\['twin'\]"):
        kerasrs.Model(a, layers.Dense(1, name="twin")(layers.Dense(2, name="twin")(a)))
    model = kerasrs.Model([a, b], out)
    with pytest.raises(ValueError, match=r"expected 2 inputs"):
        model(np.ones((1, 2)))
    with pytest.raises(ValueError, match=r"input 1 .*expected shape \(None, 2\).*\(1, 3\)"):
        model([np.ones((1, 2)), np.ones((1, 3))])


def test_functional_config_matches_keras_structure_and_round_trips():
    model = _two_in_two_out()
    config = json.loads(json.dumps(model.get_config()))
    assert config["input_layers"] == [["a", 0, 0], ["b", 0, 0]]
    assert config["output_layers"] == [["reg", 0, 0], ["cls", 0, 0]]
    entry = next(e for e in config["layers"] if e["name"] == "cat")
    args = entry["inbound_nodes"][0]["args"][0]
    assert [t["config"]["keras_history"] for t in args] == [["shared", 0, 0], ["shared", 1, 0]]
    assert args[0]["class_name"] == "__keras_tensor__" and args[0]["config"]["shape"] == [None, 5]
    clone = kerasrs.Model.from_config(config)
    assert [layer.name for layer in clone.layers] == [layer.name for layer in model.layers]
    clone.set_weights(model.get_weights())
    data = [_x(3, 4), _x(3, 3)]
    for got, want in zip(clone.predict(data, verbose=0), model.predict(data, verbose=0)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_functional_single_io_config_uses_flat_triples_and_keras2_nodes_load():
    x = layers.Input((3,), name="inp")
    model = kerasrs.Model(x, layers.Dense(2, name="d")(x))
    config = model.get_config()
    assert config["input_layers"] == ["inp", 0, 0] and config["output_layers"] == ["d", 0, 0]
    legacy = {"name": "old", "layers": [
        {"class_name": "InputLayer", "config": {"batch_input_shape": [None, 3], "dtype": "float32",
                                                "name": "input_1"},
         "name": "input_1", "inbound_nodes": []},
        {"class_name": "Dense", "config": {"name": "dense_9", "units": 2, "dtype": "float32"},
         "name": "dense_9", "inbound_nodes": [[["input_1", 0, 0, {}]]]}],
        "input_layers": [["input_1", 0, 0]], "output_layers": [["dense_9", 0, 0]]}
    old = kerasrs.Model.from_config(legacy)
    assert old.name == "old" and old.output_shape == (None, 2)


# -- subclassed ---------------------------------------------------------------------------------
class TwoLayer(kerasrs.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hidden = layers.Dense(5, activation="relu")
        self.dropout = layers.Dropout(0.5)
        self.out = layers.Dense(2)

    def call(self, inputs, training=None):
        return self.out(self.dropout(self.hidden(inputs), training=training))


def test_subclassed_model_tracks_layers_and_trains():
    model = TwoLayer()
    assert model.name == "two_layer" and [layer.name for layer in model.layers] == [
        "dense", "dropout", "dense_1"]
    model.compile("adam", "mse")
    model.fit(_x(16), np.zeros((16, 2)), epochs=2, verbose=0)
    assert [w.path for w in model.weights] == ["two_layer/dense/kernel", "two_layer/dense/bias",
                                               "two_layer/dense_1/kernel", "two_layer/dense_1/bias"]
    explicit = TwoLayer()
    explicit.build((None, 4))
    assert explicit.built and explicit.count_params() == 4 * 5 + 5 + 5 * 2 + 2


def test_sequential_functional_subclassed_parity():
    x, y = _x(32, 4), _x(32, 2, 1)
    seq = kerasrs.Sequential([layers.Input((4,)), layers.Dense(5, activation="relu"),
                              layers.Dropout(0.5), layers.Dense(2)])
    inp = layers.Input((4,))
    h = layers.Dense(5, activation="relu")(inp)
    fun = kerasrs.Model(inp, layers.Dense(2)(layers.Dropout(0.5)(h)))
    sub = TwoLayer()
    sub.build((None, 4))
    weights = seq.get_weights()
    fun.set_weights(weights)
    sub.set_weights(weights)
    outs = [m.predict(x, verbose=0) for m in (seq, fun, sub)]
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-6)
    np.testing.assert_allclose(outs[2], outs[0], rtol=1e-6)
    for model in (seq, fun, sub):
        model.compile(kerasrs.optimizers.SGD(0.1), "mse")
    results = []
    for model in (seq, fun, sub):
        kerasrs.utils.set_random_seed(5)  # same dropout masks
        results.append(model.fit(x, y, epochs=2, batch_size=8, shuffle=False,
                                 verbose=0).history["loss"])
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5)
    np.testing.assert_allclose(results[2], results[0], rtol=1e-5)
    for a, b in zip(sub.get_weights(), seq.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_subclassed_model_with_custom_train_step_uses_compute_loss():
    class Custom(kerasrs.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(1)
            self.steps = 0

        def call(self, x):
            return self.dense(x)

        def train_step(self, data):
            self.steps += 1
            return super().train_step(data)

    model = Custom()
    model.compile("sgd", "mse")
    model.fit(_x(8), np.zeros((8, 1)), batch_size=4, verbose=0)
    assert model.steps == 2
