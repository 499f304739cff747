"""``losses.get`` and the loss names ``compile`` understands, as Keras 3 (issue 27). Every test
runs with kerasrs and with Keras 3 (`keras_twin`)."""

import numpy as np  # noqa: F401 (the twin tests use np and pytest, here and in Keras)
import pytest  # noqa: F401
from keras_twin import helper, twin


@twin
def test_get_returns_keras_functions_for_function_names(K, tmp):
    get, losses = K.losses.get, K.losses
    for name, fn in [("mse", losses.mean_squared_error), ("MSE", losses.mean_squared_error),
                     ("mean_squared_error", losses.mean_squared_error),
                     ("mae", losses.mean_absolute_error), ("bce", losses.binary_crossentropy),
                     ("kld", losses.kl_divergence), ("huber", losses.huber),
                     ("log_cosh", losses.log_cosh),
                     ("sparse_categorical_crossentropy",
                      losses.sparse_categorical_crossentropy)]:
        assert get(name) is fn, name
    values = K.ops.convert_to_numpy(get("mse")(np.ones((2, 3)), np.zeros((2, 3))))
    assert np.asarray(values).tolist() == [1.0, 1.0]  # per sample, not reduced


@twin
def test_get_passes_callables_and_instantiates_classes(K, tmp):
    get = K.losses.get
    assert type(get("MeanSquaredError")) is K.losses.MeanSquaredError
    assert type(get(K.losses.Huber)) is K.losses.Huber
    loss = K.losses.CategoricalCrossentropy(from_logits=True)
    assert get(loss) is loss

    def my_loss(y_true, y_pred):
        return K.ops.mean(K.ops.abs(y_true - y_pred), axis=-1)

    assert get(my_loss) is my_loss
    assert get(K.losses.mean_squared_error) is K.losses.mean_squared_error
    assert type(get({"class_name": "MeanSquaredError", "config": {}})) is \
        K.losses.MeanSquaredError


@twin
def test_get_none_and_unknown_identifiers(K, tmp):
    assert K.losses.get(None) is None
    for bad in ("nope", "Mse", "", "logcosh", "huber_loss", "crossentropy", 3):
        with pytest.raises(ValueError, match="Could not interpret loss identifier"):
            K.losses.get(bad)


@twin
def test_an_unknown_loss_name_in_compile_is_refused(K, tmp):
    i = K.layers.Input((3,))
    model = K.Model(i, K.layers.Dense(2)(i))
    with pytest.raises(ValueError, match="Could not interpret loss identifier"):
        model.compile("sgd", loss="nope")  # kerasrs refuses here, Keras at the first batch
        model.evaluate(np.ones((2, 3)), np.ones((2, 2)), verbose=0)


# -- "crossentropy" in compile ------------------------------------------------------------------
@helper
def crossentropy_case(K, units, activation, y, loss):
    i = K.layers.Input((3,))
    model = K.Model(i, K.layers.Dense(units, activation=activation,
                                      kernel_initializer="glorot_uniform")(i))
    x = np.random.default_rng(1).normal(size=(len(y), 3)).astype("float32")
    model.compile("sgd", loss=loss)
    return model.evaluate(x, y, verbose=0), model, x


@twin
def test_crossentropy_picks_the_loss_from_the_shapes(K, tmp):
    ce = K.losses
    labels = np.array([0, 2, 1, 2])
    cases = [  # (units, activation, y, what Keras picks)
        (1, "sigmoid", np.array([[1.0], [0.0], [1.0], [0.0]]), ce.BinaryCrossentropy()),
        (3, "softmax", labels, ce.SparseCategoricalCrossentropy()),  # lower rank
        (3, "softmax", labels[:, None], ce.SparseCategoricalCrossentropy()),  # last axis 1
        (3, "softmax", np.eye(3)[labels], ce.CategoricalCrossentropy())]
    for name in ("crossentropy", "ce", "CrossEntropy"):
        for units, activation, y, want in cases:
            value, model, x = crossentropy_case(K, units, activation, y, name)
            expected = float(K.ops.convert_to_numpy(want(y, model(x))))
            assert abs(value - expected) < 1e-5, (name, units, y.shape)


@twin
def test_crossentropy_per_output_in_a_dict(K, tmp):
    L = K.layers
    i = L.Input((3,))
    p = L.Dense(1, activation="sigmoid", kernel_initializer="zeros", name="p")(i)
    q = L.Dense(3, activation="softmax", kernel_initializer="zeros", name="q")(i)
    model = K.Model(i, [p, q])
    model.compile("sgd", loss={"p": "ce", "q": "crossentropy"})
    logs = model.evaluate(np.ones((4, 3)), [np.ones((4, 1)), np.ones((4,))], verbose=0,
                          return_dict=True)
    assert abs(logs["p_loss"] - np.log(2)) < 1e-5 and abs(logs["q_loss"] - np.log(3)) < 1e-5
