"""Functional graphs as Keras builds and runs them (issue 27): models between intermediate
tensors, optional inputs, input rank standardization, ``training`` reaching every layer,
``operations`` and the layer getters. Every test runs with kerasrs and with Keras 3."""

import numpy as np  # noqa: F401 (the twin tests use np and pytest, here and in Keras)
import pytest  # noqa: F401
from keras_twin import helper, twin


@helper
def numpy(K, value):
    return np.asarray(K.ops.convert_to_numpy(value))


@helper
def three_dense(K):
    L = K.layers
    inp = L.Input((4,), name="inp")
    d1, d2, d3 = L.Dense(5, name="d1"), L.Dense(6, name="d2"), L.Dense(2, name="d3")
    out = d3(d2(d1(inp)))
    return K.Model(inp, out), (d1, d2, d3)


# -- models between intermediate tensors ----------------------------------------------------------
@twin
def test_a_model_from_an_intermediate_tensor_shares_the_layers(K, tmp):
    full, (d1, d2, d3) = three_dense(K)
    tail = K.Model(d2.output, full.output)
    assert [type(layer).__name__ for layer in tail.layers] == ["InputLayer", "Dense"]
    assert tail.layers[1] is d3 and tuple(tail.input.shape) == (None, 6)
    h = np.random.default_rng(0).normal(size=(3, 6)).astype("float32")
    np.testing.assert_allclose(numpy(K, tail(h)), numpy(K, d3(h)), rtol=1e-6)
    x = np.ones((2, 4), "float32")
    np.testing.assert_allclose(numpy(K, tail(d2(d1(x)))), numpy(K, full(x)), rtol=1e-6)
    assert [layer.name for layer in full.layers] == ["inp", "d1", "d2", "d3"]  # unchanged
    again = K.Model.from_config(tail.get_config())
    assert tuple(numpy(K, again(h)).shape) == (3, 2)


@twin
def test_a_model_between_two_intermediate_tensors(K, tmp):
    full, (d1, d2, d3) = three_dense(K)
    middle = K.Model(d1.output, d2.output)
    assert [layer.name for layer in middle.layers][1:] == ["d2"]
    h = np.ones((2, 5), "float32")
    np.testing.assert_allclose(numpy(K, middle(h)), numpy(K, d2(h)), rtol=1e-6)
    head = K.Model(full.input, d2.output)
    assert [layer.name for layer in head.layers] == ["inp", "d1", "d2"]


# -- optional inputs ------------------------------------------------------------------------------
@helper
def add_if_present(K):
    class AddIfPresent(K.layers.Layer):
        def call(self, x, y=None):
            return x if y is None else x + y

    return AddIfPresent()


@twin
def test_an_optional_input_takes_none(K, tmp):
    L = K.layers
    a, b = L.Input((2,), name="a"), L.Input((2,), name="b", optional=True)
    model = K.Model([a, b], add_if_present(K)(a, b))
    one = np.ones((1, 2), "float32")
    assert numpy(K, model([one, None])).tolist() == [[1.0, 1.0]]
    assert numpy(K, model([one, one])).tolist() == [[2.0, 2.0]]
    assert model.predict([np.ones((3, 2), "float32"), None], verbose=0).shape == (3, 2)
    assert model.get_config()["layers"][1]["config"]["optional"] is True
    c = L.Input((2,), name="c")
    strict = K.Model([a, c], L.Add()([a, c]))
    with pytest.raises(ValueError, match="The input 'c' is not optional, but None was passed"):
        strict([one, None])


# -- rank standardization -------------------------------------------------------------------------
@twin
def test_inputs_are_squeezed_or_expanded_by_one_axis_of_size_one(K, tmp):
    L = K.layers
    i = L.Input((3, 1), name="r")
    expand = K.Model(i, L.Flatten()(i))
    assert tuple(numpy(K, expand(np.ones((2, 3), "float32"))).shape) == (2, 3)
    j = L.Input((3,), name="r2")
    squeeze = K.Model(j, L.Dense(2)(j))
    assert tuple(numpy(K, squeeze(np.ones((2, 3, 1), "float32"))).shape) == (2, 2)
    assert squeeze.predict(np.ones((5, 3, 1), "float32"), verbose=0).shape == (5, 2)
    k = L.Input((1,), name="r3")
    column = K.Model(k, L.Dense(2)(k))
    assert tuple(numpy(K, column(np.ones((5,), "float32"))).shape) == (5, 2)
    for bad in (np.ones((2, 3, 2), "float32"), np.ones((3,), "float32")):
        with pytest.raises(ValueError):
            squeeze(bad)
    sequential = K.Sequential([L.Input((3,)), L.Dense(2)])
    assert tuple(numpy(K, sequential(np.ones((2, 3, 1), "float32"))).shape) == (2, 2)


# -- training reaches every layer -----------------------------------------------------------------
@helper
def recording_layers(K, seen):
    class Rec(K.layers.Layer):
        def call(self, x, training=None):
            seen.append((self.name, training))
            return x

    class Outer(K.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.sub = Rec(name="sub")

        def call(self, x):
            return self.sub(x)

    return Rec, Outer


@twin
def test_training_reaches_every_layer(K, tmp):
    L, seen = K.layers, []
    Rec, Outer = recording_layers(K, seen)
    inner_in = L.Input((2,))
    inner = K.Model(inner_in, Rec(name="inner_rec")(inner_in), name="inner")
    i = L.Input((2,), name="i")
    y = Outer(name="outer")(Rec(name="r1")(i))
    y = K.Sequential([Rec(name="seq_rec")], name="seq")(inner(y))
    y = Rec(name="fixed")(y, training=True)  # recorded in the graph: held unless overridden
    model = K.Model(i, y)
    names = ["r1", "sub", "inner_rec", "seq_rec"]  # r1, Outer's sublayer, nested models
    x = np.ones((2, 2), "float32")
    for training in (True, False):
        seen.clear()
        model(x, training=training)
        assert seen == [(name, training) for name in names + ["fixed"]]
    seen.clear()
    model(x)
    assert seen == [(name, None) for name in names] + [("fixed", True)]
    seen.clear()
    model.predict(x, verbose=0)
    assert seen == [(name, False) for name in names + ["fixed"]]
    model.compile("sgd", "mse")
    seen.clear()
    model.train_on_batch(x, x)
    assert seen[-5:] == [(name, True) for name in names + ["fixed"]]
    node = model.get_config()["layers"][-1]["inbound_nodes"][0]
    assert node["kwargs"] == {"training": True}
    again = K.Model.from_config(model.get_config(), custom_objects={"Rec": Rec, "Outer": Outer})
    seen.clear()
    again(x)
    assert seen[-1] == ("fixed", True)


# -- operations and the layer getters -----------------------------------------------------------
@twin
def test_ops_are_operations_not_layers(K, tmp):
    i = K.layers.Input((3,), name="i")
    y = K.layers.Dense(3, name="dd")(i) * 2.0 + 1.0
    model = K.Model(i, y)
    assert [type(op).__name__ for op in model.operations] == [
        "InputLayer", "Dense", "Multiply", "Add"]
    assert [type(layer).__name__ for layer in model.layers] == ["InputLayer", "Dense"]
    assert model.get_layer(index=-1).name == "dd" and model.get_layer(index=0).name == "i"
    for bad in ({"index": 2}, {"name": "multiply"}):
        with pytest.raises(ValueError):
            model.get_layer(**bad)


@twin
def test_layer_counts_of_shared_and_nested_layers(K, tmp):
    L = K.layers
    shared = L.Dense(2, name="sh")
    i = L.Input((2,), name="i")
    model = K.Model(i, shared(shared(i)))
    assert [layer.name for layer in model.layers] == ["i", "sh"]
    assert [op.name for op in model.operations] == ["i", "sh"]
    inner = K.Sequential([L.Input((2,)), L.Dense(2, name="in_d")], name="inner")
    j = L.Input((2,), name="j")
    outer = K.Model(j, L.Dense(1, name="top")(inner(j)))
    assert [layer.name for layer in outer.layers] == ["j", "inner", "top"]
    assert len(outer.layers) == 3 and outer.get_layer("inner") is inner
    assert [layer.name for layer in inner.layers] == ["in_d"]
    with pytest.raises(ValueError):
        outer.get_layer("in_d")
