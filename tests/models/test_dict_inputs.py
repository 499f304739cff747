"""A dict keyed by the input's name fed to a one-input model (issue 27): Keras 3 accepts it in
``fit``/``evaluate``/``predict`` and calls, for Sequential and functional models alike, ignores
other keys, and refuses a dict without the input's name. The twin tests run with kerasrs and
with Keras 3 (`keras_twin`)."""

import numpy as np  # noqa: F401 (the twin tests use np and pytest, here and in Keras)
import pytest
from keras_twin import helper, twin

import kerasrs
from kerasrs import layers


@helper
def one_input_models(K):
    L = K.layers
    sequential = K.Sequential([L.Input((3,), name="x"), L.Dense(1, name="d")])
    i = L.Input((3,), name="x")
    functional = K.Model(i, L.Dense(1, name="d")(i))
    return sequential, functional


@twin
def test_a_dict_keyed_by_the_input_name_is_the_input(K, tmp):
    x = np.random.default_rng(0).random((8, 3)).astype("float32")
    y = np.ones((8, 1), "float32")
    for model in one_input_models(K):
        model.compile("sgd", "mse")
        want = K.ops.convert_to_numpy(model(x))
        for data in ({"x": x}, {"x": x, "other": x}):  # other keys are ignored
            np.testing.assert_allclose(model.predict(data, verbose=0), want, rtol=1e-6)
            np.testing.assert_allclose(K.ops.convert_to_numpy(model(data)), want, rtol=1e-6)
            model.evaluate(data, y, verbose=0)
        model.fit({"x": x}, y, epochs=1, batch_size=4, verbose=0)


@twin
def test_a_dict_without_the_input_name_is_refused(K, tmp):
    x = np.ones((8, 3), "float32")
    for model in one_input_models(K):
        model.compile("sgd", "mse")
        for run in (lambda: model.predict({"z": x}, verbose=0),
                    lambda: model.fit({"z": x}, np.ones((8, 1)), verbose=0), lambda: model({"z": x})):
            with pytest.raises(ValueError, match="x"):
                run()


def test_the_error_for_a_wrong_key_names_the_expected_keys():
    x = np.ones((8, 3), "float32")
    model = kerasrs.Sequential([layers.Input((3,), name="x"), layers.Dense(1)])
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match=r"sequential\w*.fit: missing data for input 'x'. You "
                                         r"passed a data dictionary with keys \['z'\]. Expected "
                                         r"the following keys: \['x'\]"):
        model.fit({"z": x}, np.ones((8, 1)), verbose=0)


def test_a_dict_to_a_sequential_model_without_input_says_why():
    model = kerasrs.Sequential([layers.Dense(1)])  # Keras fails with "KeyError: -1" here
    with pytest.raises(ValueError, match=r"this model has no Input yet.*keys \['x'\]"):
        model.predict({"x": np.ones((8, 3))}, verbose=0)
