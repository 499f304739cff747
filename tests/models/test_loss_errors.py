"""Errors from the compiled losses name the loss and the output, and show the shapes once."""

import numpy as np
import pytest

import kerasrs
from kerasrs import layers

X = np.random.default_rng(0).random((32, 4)).astype("float32")
LABELS = np.arange(32) % 3


def _model(loss):
    model = kerasrs.Sequential([layers.Input((4,)), layers.Dense(3, name="head")])
    model.compile("adam", loss)
    return model


def test_a_custom_loss_returning_a_non_tensor_is_a_type_error_naming_it():
    def my_loss(y_true, y_pred):
        return "oops"
    with pytest.raises(TypeError, match=r"the loss 'my_loss' failed for the output: loss "
                                        r"'my_loss' returned a str; a loss returns a tensor"):
        _model(my_loss).fit(X, LABELS, verbose=0)


def test_a_custom_loss_returning_a_python_float_evaluates():
    assert _model(lambda y_true, y_pred: 0.5).evaluate(X, LABELS, verbose=0) == \
        pytest.approx(0.5)


def test_a_loss_error_names_the_output_and_shows_the_shapes_once():
    with pytest.raises(ValueError) as info:
        _model("sparse_categorical_crossentropy").fit(X, np.eye(3)[LABELS], verbose=0)
    message = str(info.value)
    assert "failed for the output: sparse_categorical_crossentropy" in message
    assert message.count("(32, 3)") == 2, message  # target and output, once each


def test_missing_targets_name_the_output_and_its_loss():
    inputs = layers.Input((4,))
    model = kerasrs.Model(inputs, {"scores": layers.Dense(3, name="scores")(inputs)})
    model.compile("adam", {"scores": "mse"})
    with pytest.raises(ValueError, match=r"no targets were given for output 'scores', which has "
                                         r"the loss 'mse'"):
        model.fit(X, verbose=0)
