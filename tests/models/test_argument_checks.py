"""Early, clear errors for what a new user gets wrong: compile arguments (checked at compile
time), data that is not numbers, None or the wrong structure, bad ``epochs``, NaN labels."""

import inspect
import warnings

import numpy as np
import pytest

import kerasrs
from kerasrs import layers


@pytest.fixture(autouse=True)
def fresh_session():
    kerasrs.utils.clear_session()
    kerasrs.utils.set_random_seed(0)


X = np.ones((8, 3), "float32")
Y = np.ones((8, 1), "float32")


def _model(units=1, activation=None):
    return kerasrs.Sequential([layers.Input((3,)), layers.Dense(units, activation=activation)])


def _two_outputs():
    inputs = layers.Input((3,))
    return kerasrs.Model(inputs, {"a": layers.Dense(1, name="a")(inputs),
                                  "b": layers.Dense(2, name="b")(inputs)})


# -- compile ---------------------------------------------------------------------------------------
def test_compile_argument_order_is_keras_3s():
    # keras.Model.compile in Keras 3.15.1 (checked with inspect.signature)
    assert list(inspect.signature(kerasrs.Model.compile).parameters)[1:] == [
        "optimizer", "loss", "loss_weights", "metrics", "weighted_metrics", "run_eagerly",
        "steps_per_execution", "jit_compile", "auto_scale_loss"]


def test_unknown_loss_raises_at_compile_listing_valid_names():
    model = _model()
    with pytest.raises(ValueError, match=r"unknown loss 'msee'.*'mean_squared_error'"):
        model.compile("sgd", "msee")
    with pytest.raises(ValueError, match="unknown loss 'nope'"):
        _two_outputs().compile("sgd", {"a": "mse", "b": "nope"})
    with pytest.raises(ValueError, match="unknown loss"):
        model.compile("sgd", loss=5)
    assert not model.compiled  # nothing half-configured


def test_unknown_metric_raises_at_compile_listing_valid_names():
    with pytest.raises(ValueError, match=r"unknown metric 'foo' in `metrics`.*'accuracy'"):
        _model().compile("sgd", "mse", metrics=["foo"])
    with pytest.raises(ValueError, match="unknown metric 'bar' in `weighted_metrics`"):
        _model().compile("sgd", "mse", weighted_metrics=["mae", "bar"])
    with pytest.raises(ValueError, match="unknown metric 'baz'"):
        _two_outputs().compile("sgd", "mse", metrics={"a": ["mae"], "b": "baz"})
    with pytest.raises(ValueError, match="must be a list, tuple or dict"):
        _model().compile("sgd", "mse", metrics="accuracy")


def test_valid_compile_arguments_still_pass():
    model = _model(2, "softmax")
    model.compile("adam", "sparse_categorical_crossentropy",
                  metrics=["acc", "crossentropy", kerasrs.metrics.AUC(), "mse",
                           kerasrs.metrics.SparseCategoricalAccuracy, "binary_crossentropy"])
    two = _two_outputs()
    two.compile("sgd", {"a": "mse", "b": kerasrs.losses.MeanAbsoluteError()},
                loss_weights={"a": 1, "b": np.float32(0.5)}, metrics={"a": "mae", "b": ["mse"]})
    two.compile("sgd", ["mse", "mae"], loss_weights=[1.0, 2.0], metrics=[["mae"], ["mse"]])
    history = two.fit(X, {"a": Y, "b": np.ones((8, 2))}, verbose=0).history
    assert "a_mae" in history and "b_mse" in history


def test_metrics_given_in_loss_weights_place_raise_a_clear_type_error():
    model = _model()
    with pytest.raises(TypeError, match=r"`loss_weights`.*metrics=\[\.\.\.\]"):
        model.compile("sgd", "mse", ["accuracy"])
    for bad in ("x", [1.0, "2"], {"a": None, "b": "heavy"}, [True]):
        with pytest.raises(TypeError, match="loss_weights"):
            model.compile("sgd", "mse", loss_weights=bad)


# -- data ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["fit", "evaluate", "predict", "train_on_batch",
                                    "test_on_batch"])
def test_non_numeric_data_names_the_argument_and_dtype(method):
    model = _model()
    model.compile("sgd", "mse")
    call = getattr(model, method)
    kwargs = {"verbose": 0} if method in ("fit", "evaluate", "predict") else {}
    args = (["a", "b"],) if method == "predict" else (["a", "b"], Y[:2])
    with pytest.raises(ValueError, match=rf"Model.{method}: `x` holds non-numeric data of "
                                         r"dtype <U1"):
        call(*args, **kwargs)
    if method != "predict":
        with pytest.raises(ValueError, match=r"`y` holds non-numeric data of dtype <U3"):
            call(X, np.array(["cat"] * 8), **kwargs)


def test_fit_hello_predict_strings_none_and_objects():
    model = _model()
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match=r"Model.fit: `x` holds non-numeric data of dtype <U5"):
        model.fit("hello", Y, verbose=0)
    with pytest.raises(ValueError, match=r"Model.predict: `x` holds non-numeric data of dtype "
                                         r"<U1.*shape \(1, 2\)"):
        model.predict([["a", "b"]], verbose=0)
    with pytest.raises(ValueError, match=r"Model.fit: `x` is None, and None is not data"):
        model.fit(None, Y, verbose=0)
    with pytest.raises(ValueError, match=r"Model.predict: `x` is None"):
        model.predict(None, verbose=0)
    with pytest.raises(ValueError, match=r"dtype \|O \(a ragged nested list"):
        model.predict(np.array([[1.0, None, 2.0]], dtype=object), verbose=0)


def test_dict_or_several_inputs_to_a_sequential_model_name_its_input():
    model = _model()
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match=r"sequential.fit: missing data for input 'input_layer'"
                                         r".*keys \['a'\]. Expected the following keys: "
                                         r"\['input_layer'\]"):
        model.fit({"a": X}, Y, verbose=0)
    with pytest.raises(ValueError, match=r"sequential.predict: `x` is a list of 2 arrays"):
        model.predict([X, X], verbose=0)


def test_none_inside_the_inputs_of_a_multi_input_model():
    a, b = layers.Input((3,), name="a"), layers.Input((3,), name="b")
    model = kerasrs.Model([a, b], layers.Add()([a, b]))
    model.compile("sgd", "mse")
    # None is data for an optional input (Keras 3): for another input the model names it
    with pytest.raises(ValueError, match=r"The input 'b' is not optional, but None was passed"):
        model.fit([X, None], np.ones((8, 3)), verbose=0)
    with pytest.raises(ValueError, match=r"The input 'b' is not optional, but None was passed"):
        model.predict({"a": X, "b": None}, verbose=0)
    with pytest.raises(ValueError, match=r"`x` holds None at \[0, 1\]"):
        model.predict([None, None], verbose=0)


def test_numeric_dtypes_are_all_accepted():
    import ml_dtypes

    model = _model()
    model.compile("sgd", "mse")
    for dtype in ("float64", "int32", "uint8", "bool", ml_dtypes.bfloat16):
        assert model.predict(np.ones((2, 3), dtype), verbose=0).shape == (2, 1)


# -- epochs ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("epochs", [-1, 1.5, "3", True, None])
def test_epochs_must_be_a_non_negative_int(epochs):
    model = _model()
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match=r"`epochs` must be an int >= 0"):
        model.fit(X, Y, epochs=epochs, verbose=0)


def test_zero_epochs_and_numpy_ints_are_fine():
    model = _model()
    model.compile("sgd", "mse")
    assert model.fit(X, Y, epochs=0, verbose=0).history == {}
    assert len(model.fit(X, Y, epochs=np.int64(2), verbose=0).history["loss"]) == 2
    with pytest.raises(ValueError, match="initial_epoch"):
        model.fit(X, Y, epochs=2, initial_epoch=-1, verbose=0)


# -- NaN labels ------------------------------------------------------------------------------------
def test_nan_in_sparse_labels_is_a_clear_error_without_a_cast_warning():
    model = _model(3, "softmax")
    model.compile("sgd", "sparse_categorical_crossentropy")
    labels = np.array([0, 1, np.nan, 2, 0, 1, 2, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "invalid value encountered in cast" fails here
        with pytest.raises(ValueError, match="labels contain NaN"):
            model.fit(X, labels, verbose=0)
        with pytest.raises(ValueError, match="labels contain NaN"):
            kerasrs.ops.sparse_categorical_crossentropy(np.array([np.nan, 1.0]),
                                                        np.full((2, 3), 1 / 3, "float32"))
        with pytest.raises(ValueError, match="labels contain infinity"):
            kerasrs.losses.sparse_categorical_crossentropy(np.array([np.inf, 1.0]),
                                                           np.full((2, 3), 1 / 3, "float32"))
    with pytest.raises(ValueError, match=r"labels must be in \[0, 3\). Received: labels from 0 "
                                         r"to 5"):
        model.fit(X, np.array([0, 1, 5, 2, 0, 1, 2, 0]), verbose=0)
    loss = kerasrs.ops.sparse_categorical_crossentropy(np.array([0.0, 2.0]),
                                                       np.full((2, 3), 1 / 3, "float32"))
    np.testing.assert_allclose(loss.numpy(), [np.log(3)] * 2, rtol=1e-6)
