"""compile/fit/evaluate/predict: the numbers Keras reports, behaviour cases and bad input."""

import warnings

import numpy as np
import pytest

import kerasrs
from kerasrs import layers


@pytest.fixture(autouse=True)
def fresh_session():
    kerasrs.utils.clear_session()
    kerasrs.utils.set_random_seed(0)


def _regression_data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)).astype("float32")
    return x, (x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3).astype("float32")


def _linear(kernel=1.0, units=1, inputs=1):
    init = kerasrs.initializers.Constant(kernel)
    return kerasrs.Sequential([layers.Input((inputs,)),
                               layers.Dense(units, use_bias=False, kernel_initializer=init)])


def test_fit_reduces_loss_and_returns_history():
    x, y = _regression_data()
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(8, activation="tanh"),
                                layers.Dense(1)])
    model.compile(optimizer=kerasrs.optimizers.Adam(0.05), loss="mse", metrics=["mae"])
    history = model.fit(x, y, epochs=20, batch_size=16, verbose=0)
    assert history is model.history and history.epoch == list(range(20))
    assert sorted(history.history) == ["loss", "mae"]
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert isinstance(model(x), kerasrs.Tensor) and model(x).shape == (64, 1)


def test_partial_last_batch_and_single_sample_predict_c01():
    kerasrs.utils.set_random_seed(1)
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(2), layers.Dense(1)])
    x = np.arange(15, dtype="float32").reshape(5, 3) / 10
    y = np.zeros((5, 1), "float32")
    p2, p5 = model.predict(x, batch_size=2, verbose=0), model.predict(x, batch_size=5, verbose=0)
    assert p2.shape == (5, 1) and isinstance(p2, np.ndarray)
    np.testing.assert_allclose(p2, p5, atol=1e-6)
    model.compile("sgd", "mse")
    assert model.evaluate(x, y, batch_size=2, verbose=0) == pytest.approx(
        model.evaluate(x, y, batch_size=5, verbose=0), rel=1e-6)
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    assert int(model.optimizer.iterations.numpy()) == 2  # batches of 4 and 1
    with pytest.raises(ValueError,
                       match=r"expected shape \(None, 3\).*Received: input shape \(3,\)"):
        model.predict(x[0], verbose=0)
    assert model.predict(x[:1], verbose=0).shape == (1, 1)


def test_single_sample_batchnorm_step_c01():
    if not hasattr(layers, "BatchNormalization"):
        pytest.skip("BatchNormalization is built in another issue")
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(2), layers.BatchNormalization(),
                                layers.Dense(1)])
    x = np.arange(15, dtype="float32").reshape(5, 3) / 10
    model.compile("sgd", "mse")
    model.fit(x, np.zeros((5, 1)), batch_size=4, epochs=1, shuffle=False, verbose=0)
    bn = model.layers[1]
    out = bn(model.layers[0](x[4:5]), training=True).numpy()
    np.testing.assert_allclose(out, bn.beta.numpy()[None], atol=1e-6)


@pytest.mark.parametrize("batch_size", [1, 2, 4, 5])
def test_evaluate_weights_batches_by_size_c02(batch_size):
    model = kerasrs.Sequential([layers.Input((2,)),
                                layers.Dense(2, use_bias=False, kernel_initializer="identity"),
                                layers.Softmax()])
    model.compile(loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x = np.array([[2, 0], [2, 0], [2, 0], [2, 0], [0, 2]], "float32")
    y = np.array([0, 0, 1, 1, 1])
    loss, accuracy = model.evaluate(x, y, batch_size=batch_size, verbose=0)
    assert accuracy == pytest.approx(0.6, abs=1e-6)
    assert loss == pytest.approx(0.926928, abs=1e-5)


def _recording_model(seen):
    def record(t, training=None):
        if training:
            seen.append(t.numpy()[:, 0].astype(int).tolist())
        return t

    model = kerasrs.Sequential([layers.Input((1,)), layers.Lambda(record), layers.Dense(1)])
    model.compile("sgd", "mse")
    return model


@pytest.mark.parametrize("shuffle", [True, False])
def test_validation_split_takes_last_fraction_before_shuffling_c05(shuffle):
    seen = []
    x = np.arange(10, dtype="float32").reshape(10, 1)
    model = _recording_model(seen)
    history = model.fit(x, x, validation_split=0.2, shuffle=shuffle, batch_size=4, epochs=3,
                        verbose=0)
    assert [len(b) for b in seen] == [4, 4] * 3
    for epoch in range(3):
        ids = seen[2 * epoch] + seen[2 * epoch + 1]
        assert sorted(ids) == list(range(8))
        if not shuffle:
            assert ids == list(range(8))
    assert len(history.history["val_loss"]) == 3
    model_val = kerasrs.Sequential([layers.Input((1,)), layers.Dense(1)])
    model_val.set_weights(model.get_weights())
    model_val.compile("sgd", "mse")
    assert history.history["val_loss"][-1] == pytest.approx(
        model_val.evaluate(x[8:], x[8:], verbose=0), rel=1e-5)


def test_validation_split_edge_n5_half_c05():
    seen = []
    x = np.arange(5, dtype="float32").reshape(5, 1)
    history = _recording_model(seen).fit(x, x, validation_split=0.5, shuffle=False,
                                         batch_size=4, epochs=1, verbose=0)
    assert seen == [[0, 1]] and "val_loss" in history.history


@pytest.mark.parametrize("rate", [0.0, 0.999])
def test_dropout_active_in_fit_only_c15(rate):
    model = kerasrs.Sequential([layers.Input((1000,)), layers.Dropout(rate),
                                layers.Dense(1, use_bias=False, kernel_initializer=
                                             kerasrs.initializers.Constant(0.001))])
    model.compile(kerasrs.optimizers.SGD(0.0), "mse")
    x, y = np.ones((32, 1000), "float32"), np.ones((32, 1), "float32")
    loss = model.fit(x, y, batch_size=32, epochs=1, verbose=0).history["loss"][0]
    assert loss <= 1e-6 if rate == 0.0 else loss >= 1 / 32
    assert model.evaluate(x, y, verbose=0) <= 1e-6


@pytest.mark.parametrize("labels", [np.array([0, 1, 1]), np.array([[0], [1], [1]])])
def test_sparse_labels_n_and_n1_through_evaluate_c18(labels):
    y_pred = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.2, 0.6, 0.2]], "float32")
    model = kerasrs.Sequential([layers.Input((3,)), layers.Identity()])
    model.compile(loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    loss, accuracy = model.evaluate(y_pred, labels, verbose=0)
    assert accuracy == pytest.approx(2 / 3, abs=1e-6)
    assert loss == pytest.approx(1.056695, abs=1e-5)


def test_recompile_keeps_weights_and_starts_new_optimizer_c22():
    model = _linear(1.0)
    model.compile(kerasrs.optimizers.Adam(0.1), "mse")
    model.fit(np.array([[1.0]]), np.array([[0.0]]), epochs=3, batch_size=1, verbose=0)
    before = float(model.get_weights()[0][0, 0])
    assert before == pytest.approx(0.701587, abs=1e-5)
    model.compile(kerasrs.optimizers.Adam(0.1), "mse")
    assert float(model.get_weights()[0][0, 0]) == before
    assert int(model.optimizer.iterations.numpy()) == 0
    model.fit(np.array([[1.0]]), np.array([[0.0]]), epochs=1, batch_size=1, verbose=0)
    assert float(model.get_weights()[0][0, 0]) == pytest.approx(0.601587, abs=1e-5)


def test_sample_weight_and_class_weight_weight_the_loss():
    x, y = _regression_data(20)
    labels = (y[:, 0] > 0).astype("int64")
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(2, activation="softmax")])
    model.compile(kerasrs.optimizers.SGD(0.0), "sparse_categorical_crossentropy")
    weights = np.linspace(0.1, 2.0, 20).astype("float32")
    expected = model.evaluate(x, labels, sample_weight=weights, batch_size=8, verbose=0)
    fitted = model.fit(x, labels, sample_weight=weights, batch_size=8, shuffle=False,
                       verbose=0).history["loss"][0]
    assert fitted == pytest.approx(expected, rel=1e-5)
    class_weight = {0: 0.5, 1: 3.0}
    per_sample = np.where(labels == 1, 3.0, 0.5).astype("float32")
    expected = model.evaluate(x, labels, sample_weight=per_sample, batch_size=8, verbose=0)
    fitted = model.fit(x, labels, class_weight=class_weight, batch_size=8, verbose=0)
    assert fitted.history["loss"][0] == pytest.approx(expected, rel=1e-5)


def test_initial_epoch_steps_per_epoch_validation_freq():
    x, y = _regression_data(10)
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(1)])
    model.compile("sgd", "mse")
    history = model.fit(x, y, epochs=4, initial_epoch=2, verbose=0, batch_size=4)
    assert history.epoch == [2, 3]
    model.compile("sgd", "mse")
    with pytest.warns(UserWarning, match="ran out"):
        model.fit(x, y, epochs=3, steps_per_epoch=2, batch_size=4, shuffle=False, verbose=0)
    assert int(model.optimizer.iterations.numpy()) == 2 + 1 + 2
    history = model.fit(x, y, epochs=4, validation_data=(x[:4], y[:4]), validation_freq=2,
                        verbose=0)
    assert len(history.history["loss"]) == 4 and len(history.history["val_loss"]) == 2


def test_stop_training_ends_the_loop():
    x, y = _regression_data(64)
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(1)])
    model.compile("sgd", "mse")

    class Stop(kerasrs.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 1:
                self.model.stop_training = True

    history = model.fit(x, y, epochs=5, batch_size=8, callbacks=[Stop()], verbose=0)
    assert history.epoch == [0] and int(model.optimizer.iterations.numpy()) == 2


def test_on_batch_methods_and_evaluate_return_forms():
    x, y = _regression_data(16)
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(1)])
    model.compile(kerasrs.optimizers.SGD(0.01), "mse", metrics=["mae"])
    before = model.evaluate(x, y, verbose=0, return_dict=True)
    assert sorted(before) == ["loss", "mae"]
    loss, mae = model.evaluate(x, y, verbose=0)
    assert (loss, mae) == (pytest.approx(before["loss"]), pytest.approx(before["mae"]))
    assert model.test_on_batch(x, y) == pytest.approx([loss, mae], rel=1e-6)
    trained = model.train_on_batch(x, y, return_dict=True)
    assert trained["loss"] == pytest.approx(loss, rel=1e-6)  # computed before the update
    assert model.evaluate(x, y, verbose=0)[0] < loss
    np.testing.assert_allclose(model.predict_on_batch(x), model(x).numpy(), rtol=1e-6)
    model.compile("sgd", "mse")
    assert isinstance(model.evaluate(x, y, verbose=0), float)


def test_layer_losses_join_the_training_loss():
    x, y = _regression_data(8)
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(
        1, kernel_initializer="ones", kernel_regularizer=kerasrs.regularizers.L2(0.5))])
    model.compile(kerasrs.optimizers.SGD(0.0), "mse")
    plain = float(np.mean((x.sum(1, keepdims=True) - y) ** 2))
    assert model.evaluate(x, y, verbose=0) == pytest.approx(plain + 0.5 * 3, rel=1e-5)


def test_fit_before_compile_is_a_value_error_as_in_keras():
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(1)])
    with pytest.raises(ValueError, match=r"compile\(optimizer, loss\)"):
        model.fit(np.ones((2, 3)), np.ones((2, 1)), verbose=0)
    with pytest.raises(ValueError, match="compile"):
        model.evaluate(np.ones((2, 3)), np.ones((2, 1)), verbose=0)


def test_x_and_y_of_different_lengths():
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(1)])
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match="x has 10 samples, y has 9 samples"):
        model.fit(np.ones((10, 3)), np.ones((9, 1)), verbose=0)


def test_label_shape_that_does_not_fit_the_loss():
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(4, activation="softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match=r"sparse_categorical_crossentropy.*\(8, 2\).*\(8, 4\)"):
        model.fit(np.ones((8, 3)), np.zeros((8, 2)), verbose=0)


def test_input_shape_that_does_not_fit_the_model():
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(1)])
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match=r"sequential: input 0 .*expected shape \(None, 3\).*"
                                         r"Received: input shape \(8, 4\)"):
        model.fit(np.ones((8, 4)), np.ones((8, 1)), verbose=0)


def test_empty_dataset_is_a_clear_error():
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(1)])
    model.compile("sgd", "mse")
    for call in (lambda: model.fit(np.ones((0, 3)), np.ones((0, 1)), verbose=0),
                 lambda: model.evaluate(np.ones((0, 3)), np.ones((0, 1)), verbose=0),
                 lambda: model.predict(np.ones((0, 3)), verbose=0)):
        with pytest.raises(ValueError, match=r"no samples.*\(0, 3\)"):
            call()


def test_nan_in_data_shows_nan_loss_without_crashing():
    x, y = _regression_data(16)
    x[3, 1] = np.nan
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(1)])
    model.compile("sgd", "mse")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        history = model.fit(x, y, epochs=2, batch_size=4, verbose=2)
    assert all(np.isnan(v) for v in history.history["loss"])


def test_validation_split_that_leaves_nothing_and_bad_arguments():
    model = kerasrs.Sequential([layers.Input((1,)), layers.Dense(1)])
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match="validation_split=0.9"):
        model.fit(np.ones((5, 1)), np.ones((5, 1)), validation_split=0.9, verbose=0)
    with pytest.raises(ValueError, match="batch_size=0"):
        model.fit(np.ones((5, 1)), np.ones((5, 1)), batch_size=0, verbose=0)
    with pytest.raises(ValueError, match="verbose=3"):
        model.fit(np.ones((5, 1)), np.ones((5, 1)), verbose=3)


def test_verbose_two_prints_one_line_per_epoch(capsys):
    x, y = _regression_data(16)
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(1)])
    model.compile("sgd", "mse", metrics=["mae"])
    model.fit(x, y, epochs=3, batch_size=8, validation_split=0.25, verbose=2)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("Epoch")]
    assert len(lines) == 3 and lines[0].startswith("Epoch 1/3 - ")
    assert " - loss: " in lines[0] and " - mae: " in lines[0] and " - val_loss: " in lines[0]


def test_verbose_one_draws_a_tqdm_bar_per_epoch(capsys, monkeypatch):
    import io
    import sys

    class TTY(io.StringIO):
        def isatty(self):
            return True

    x, y = _regression_data(16)
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(1)])
    model.compile("sgd", "mse")
    tty = TTY()
    with monkeypatch.context() as patch:
        patch.setattr(sys, "stdout", tty)
        model.fit(x, y, epochs=2, batch_size=8, verbose=1)
    out = tty.getvalue()
    assert "Epoch 1/2" in out and "Epoch 2/2" in out and "2/2" in out and "loss: " in out
    assert "\r" in out
    model.fit(x, y, epochs=2, batch_size=8, verbose=1)  # captured: not a terminal
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[1].startswith("Epoch 2/2 - ") and "loss: " in lines[1]
    model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    assert capsys.readouterr().out == ""


def test_python_lists_and_integer_data_train_in_float32():
    model = _linear(1.0)
    model.compile(kerasrs.optimizers.SGD(1.5), "mse")
    history = model.fit([[1]], [[0]], epochs=2, batch_size=1, verbose=0)
    assert history.history["loss"] == pytest.approx([1.0, 4.0])  # w: 1 -> -2 -> 4
    assert model.weights[0].dtype == np.float32 and model.predict([[1]], verbose=0).dtype == \
        np.float32


def test_run_eagerly_is_keras_attribute_and_switches_traced_steps():
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(1)])
    assert model.run_eagerly is False
    model.compile("sgd", "mse", jit_compile=True)
    assert model.run_eagerly is False and model._jit is not None
    model.run_eagerly = True
    assert model.run_eagerly is True and model._jit is None
    model.fit(np.ones((4, 3)), np.ones((4, 1)), verbose=0)
    model.run_eagerly = False
    assert model._jit is not None
    model.compile("sgd", "mse", run_eagerly=True, jit_compile=True)
    assert model.run_eagerly is True and model._jit is None
