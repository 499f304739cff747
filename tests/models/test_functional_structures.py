"""Functional models over nested structures, and compile's losses and metrics laid over them
(issue 27). Every test runs with kerasrs and with Keras 3 (`keras_twin`)."""

import numpy as np  # noqa: F401 (the twin tests use np and pytest, here and in Keras)
import pytest  # noqa: F401
from keras_twin import helper, twin


@helper
def two_input_model(K, outputs="dict"):
    """Inputs a (3,), b (2,); Dense layers with weights of ones: o1 = 3a + 2b... exact values."""
    L = K.layers
    a, b = L.Input((3,), name="a"), L.Input((2,), name="b")
    h = L.Concatenate(name="cat")([a, b])
    o1 = L.Dense(1, name="o1", kernel_initializer="ones")(h)
    o2 = L.Dense(2, name="o2", kernel_initializer="ones")(h)
    if outputs == "dict":
        return K.Model({"a": a, "b": b}, {"x": o1, "y": o2})
    if outputs == "list":
        return K.Model([a, b], [o1, o2])
    if outputs == "tuple":
        return K.Model((a, b), (o1, o2))
    return K.Model([a, b], (o1, [o2, (o1,)]))  # nested


@helper
def kinds(K, value):
    """The structure of ``value`` with its container types: 'tuple(T,list(T))'."""
    if isinstance(value, dict):
        return {k: kinds(K, v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__}({','.join(str(kinds(K, v)) for v in value)})"
    return tuple(value.shape)


@helper
def data():
    return {"a": np.ones((4, 3), "float32"), "b": np.full((4, 2), 0.5, "float32")}


@helper
def rounded(logs):
    return {k: round(float(v), 4) for k, v in sorted(logs.items())}


# -- structures in, structures out --------------------------------------------------------------
@twin
def test_dict_inputs_and_dict_outputs(K, tmp):
    model = two_input_model(K, "dict")
    x = data()
    assert kinds(K, model(x)) == {"x": (4, 1), "y": (4, 2)}
    assert kinds(K, model.predict(x, verbose=0)) == {"x": (4, 1), "y": (4, 2)}
    assert sorted(model.input) == ["a", "b"] and sorted(model.output) == ["x", "y"]
    assert model.output_names == ["o1", "o2"]  # the output layers' names, as Keras
    model.compile("sgd", loss="mse")
    history = model.fit(x, {"x": np.zeros((4, 1)), "y": np.zeros((4, 2))}, verbose=0)
    assert sorted(history.history) == ["loss", "x_loss", "y_loss"]


@twin
def test_list_tuple_and_nested_outputs_keep_their_types(K, tmp):
    x = data()
    xl = [x["a"], x["b"]]
    assert kinds(K, two_input_model(K, "list")(xl)) == "list((4, 1),(4, 2))"
    assert kinds(K, two_input_model(K, "tuple")(tuple(xl))) == "tuple((4, 1),(4, 2))"
    nested = two_input_model(K, "nested")
    want = "tuple((4, 1),list((4, 2),tuple((4, 1))))"
    assert kinds(K, nested(xl)) == want
    assert kinds(K, nested.predict(xl, verbose=0)) == want
    assert kinds(K, nested.output) == "tuple((None, 1),list((None, 2),tuple((None, 1))))"
    assert nested.output_names == ["o1", "o2", "o1"]
    assert [tuple(t.shape) for t in nested.outputs] == [(None, 1), (None, 2), (None, 1)]
    i = K.layers.Input((3,), name="i")
    one = K.Model([i], [K.layers.Dense(2, name="o")(i)])  # a one-element list comes out bare
    assert kinds(K, one(xl[0])) == (4, 2) and kinds(K, one.predict(xl[0], verbose=0)) == (4, 2)


# -- compile over the structure -----------------------------------------------------------------
@twin
def test_dict_of_losses_weights_and_metrics_per_output(K, tmp):
    # o1 = 3 * 1 + 2 * 0.5 = 4 and o2 = (4, 4) against zeros: mse 16, mae 4
    x, y = data(), {"x": np.zeros((4, 1)), "y": np.zeros((4, 2))}
    model = two_input_model(K, "dict")
    model.compile("sgd", loss={"x": "mse", "y": ["mae"]}, loss_weights={"x": 1.0, "y": 0.5},
                  metrics={"x": ["mae"], "y": "mse"})
    logs = rounded(model.evaluate(x, y, verbose=0, return_dict=True))
    assert logs == {"loss": 18.0, "x_loss": 16.0, "x_mae": 4.0, "y_loss": 4.0, "y_mse": 16.0}


@twin
def test_a_list_of_losses_for_one_output_sums_them_with_their_weights(K, tmp):
    x, y = data(), {"x": np.zeros((4, 1)), "y": np.zeros((4, 2))}
    model = two_input_model(K, "dict")
    model.compile("sgd", loss={"x": "mse", "y": ["mse", "mae"]},
                  loss_weights={"x": 1.0, "y": [0.5, 0.25]})
    logs = rounded(model.evaluate(x, y, verbose=0, return_dict=True))
    assert logs["loss"] == 16.0 + 0.5 * 16.0 + 0.25 * 4.0
    model.compile("sgd", loss={"x": "mse", "y": ["mse", "mae"]})
    assert rounded(model.evaluate(x, y, verbose=0, return_dict=True))["loss"] == 36.0
    with pytest.raises(ValueError, match="must match the number of losses"):
        model.compile("sgd", loss={"x": "mse", "y": ["mse", "mae"]},
                      loss_weights={"x": 1.0, "y": 0.5})
        model.evaluate(x, y, verbose=0)


@twin
def test_list_outputs_take_losses_by_position_or_by_output_name(K, tmp):
    x, y = data(), [np.zeros((4, 1)), np.zeros((4, 2))]
    xl = [x["a"], x["b"]]
    model = two_input_model(K, "list")
    model.compile("sgd", loss=["mse", "mae"], loss_weights=[1.0, 0.5],
                  metrics=[["mae"], ["mse"]])
    assert rounded(model.evaluate(xl, y, verbose=0, return_dict=True)) == {
        "loss": 18.0, "o1_loss": 16.0, "o1_mae": 4.0, "o2_loss": 4.0, "o2_mse": 16.0}
    model.compile("sgd", loss={"o1": "mse", "o2": "mae"}, metrics={"o1": "mae"})
    assert rounded(model.evaluate(xl, {"o1": y[0], "o2": y[1]}, verbose=0,
                                  return_dict=True)) == {
        "loss": 20.0, "o1_loss": 16.0, "o1_mae": 4.0, "o2_loss": 4.0}
    model.compile("sgd", loss=["mse", ["mae", "mse"]])  # two losses on the second output
    assert rounded(model.evaluate(xl, tuple(y), verbose=0, return_dict=True))["loss"] == 36.0


@twin
def test_nested_outputs_take_nested_losses_named_by_path(K, tmp):
    x = data()
    xl, y = [x["a"], x["b"]], (np.zeros((4, 1)), [np.zeros((4, 2)), (np.zeros((4, 1)),)])
    model = two_input_model(K, "nested")
    model.compile("sgd", loss=("mse", ["mae", ("mse",)]), loss_weights=(1.0, [0.5, (2.0,)]))
    logs = rounded(model.evaluate(xl, y, verbose=0, return_dict=True))
    assert logs == {"loss": 16.0 + 2.0 + 32.0, "o1_loss": 16.0, "1/o2_loss": 4.0,
                    "1/1/o1_loss": 16.0}
    model.compile("sgd", loss="mse")
    logs = rounded(model.evaluate(xl, y, verbose=0, return_dict=True))
    assert logs["loss"] == 48.0 and logs["1/o2_loss"] == 16.0


@twin
def test_one_loss_in_a_dict_logs_no_per_output_loss(K, tmp):
    model = two_input_model(K, "dict")
    model.compile("sgd", loss={"x": "mse"})
    logs = model.evaluate(data(), {"x": np.zeros((4, 1))}, verbose=0, return_dict=True)
    assert rounded(logs) == {"loss": 16.0}


# -- configs and files keep the structure ---------------------------------------------------------
@twin
def test_from_config_keeps_structures_and_tuples(K, tmp):
    x = data()
    xl = [x["a"], x["b"]]
    for kind, inputs, want in [
            ("tuple", tuple(xl), "tuple((4, 1),(4, 2))"),
            ("nested", xl, "tuple((4, 1),list((4, 2),tuple((4, 1))))"),
            ("dict", x, {"x": (4, 1), "y": (4, 2)})]:
        model = two_input_model(K, kind)
        config = model.get_config()
        again = K.Model.from_config(config)
        assert kinds(K, again(inputs)) == want, kind
        assert again.output_names == model.output_names
    tuple_model = two_input_model(K, "tuple")
    assert tuple_model.get_config()["output_layers"] == (["o1", 0, 0], ["o2", 0, 0])


@twin
def test_keras_and_h5_files_keep_the_nesting(K, tmp):
    # JSON has no tuples: after a file round trip a tuple is a list, in Keras as in kerasrs
    x = data()
    xl = [x["a"], x["b"]]
    nested = two_input_model(K, "nested")
    dict_model = two_input_model(K, "dict")
    for ext in ("keras", "h5"):
        path = f"{tmp}/nested.{ext}"
        nested.save(path)
        again = K.models.load_model(path)
        assert kinds(K, again(xl)) == "list((4, 1),list((4, 2),list((4, 1))))", ext
        np.testing.assert_allclose(K.ops.convert_to_numpy(again(xl)[1][0]),
                                   K.ops.convert_to_numpy(nested(xl)[1][0]))
        path = f"{tmp}/dict.{ext}"
        dict_model.save(path)
        assert kinds(K, K.models.load_model(path)(x)) == {"x": (4, 1), "y": (4, 2)}, ext
