"""Customizing fit (Keras 3's "Customizing what happens in fit()" guide): ``train_step(data)``,
``test_step(data)``, ``predict_step(data)``, ``compute_loss``, ``compute_metrics``, ``metrics``,
``get_metrics_result``; and subclasses built like functional models, ``M(inputs, outputs)``."""

import numpy as np
import pytest

import kerasrs
from kerasrs import layers
from kerasrs.models.functional import Functional


@pytest.fixture(autouse=True)
def fresh_session():
    kerasrs.utils.clear_session()
    kerasrs.utils.set_random_seed(0)


def _data(n=16):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3)).astype("float32")
    return x, (x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3).astype("float32")


def _graph(units=1):
    inputs = layers.Input((3,))
    return inputs, layers.Dense(units, kernel_initializer="ones", bias_initializer="zeros")(inputs)


class GuideModel(kerasrs.Model):
    """The guide's first example, with a GradientTape (its TensorFlow version)."""

    def train_step(self, data):
        x, y = data
        with kerasrs.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def test_guide_train_step_on_a_functional_subclass_matches_the_default_fit():
    x, y = _data()
    custom = GuideModel(*_graph())
    plain = kerasrs.Model(*_graph())
    for model in (custom, plain):
        model.compile(kerasrs.optimizers.SGD(0.05), "mse", metrics=["mae"])
    h_custom = custom.fit(x, y, epochs=3, batch_size=4, shuffle=False, verbose=0).history
    h_plain = plain.fit(x, y, epochs=3, batch_size=4, shuffle=False, verbose=0).history
    assert sorted(h_custom) == ["loss", "mae"]
    # equal batches: the guide's unweighted mean of batch losses equals fit's weighted one
    np.testing.assert_allclose(h_custom["loss"], h_plain["loss"], rtol=1e-6)
    np.testing.assert_allclose(h_custom["mae"], h_plain["mae"], rtol=1e-6)
    for a, b in zip(custom.get_weights(), plain.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert h_custom["loss"][-1] < h_custom["loss"][0]


def test_returned_dict_becomes_the_logs_and_data_has_keras_structure():
    seen, batch_logs = [], []

    class Stub(kerasrs.Model):
        def train_step(self, data):
            seen.append(data)
            return {"loss": 123.0, "step_size": kerasrs.ops.convert_to_tensor(len(seen))}

    class BatchLogs(kerasrs.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            batch_logs.append(dict(logs))

    model = Stub(*_graph())
    model.compile("sgd", "mse")
    x, y = _data(8)
    history = model.fit(x, y, epochs=2, batch_size=4, shuffle=False, verbose=0,
                        callbacks=[BatchLogs()])
    assert history.history == {"loss": [123.0, 123.0], "step_size": [2.0, 4.0]}
    assert batch_logs[0] == {"loss": 123.0, "step_size": 1.0}
    assert all(type(v) is float for v in batch_logs[-1].values())
    assert isinstance(seen[0], tuple) and len(seen[0]) == 2
    assert all(isinstance(t, kerasrs.Tensor) for t in seen[0]) and seen[0][0].shape == (4, 3)
    np.testing.assert_array_equal(seen[0][1].numpy(), y[:4])

    seen.clear()
    model.fit(x, epochs=1, batch_size=8, verbose=0)  # x only: data is x itself
    assert isinstance(seen[0], kerasrs.Tensor) and seen[0].shape == (8, 3)
    seen.clear()
    model.fit(x, y, sample_weight=np.arange(8.0), epochs=1, batch_size=8, verbose=0)
    assert len(seen[0]) == 3 and sorted(seen[0][2].numpy().tolist()) == list(range(8))
    seen.clear()
    model.fit(x, (y > 0).astype("int64"), class_weight={0: 1.0, 1: 3.0}, batch_size=8,
              verbose=0)
    assert len(seen[0]) == 3 and set(seen[0][2].numpy().tolist()) <= {1.0, 3.0}
    seen.clear()
    assert model.train_on_batch(x, y) == pytest.approx([123.0, 1.0])
    assert model.train_on_batch(x, y, return_dict=True) == {"loss": 123.0, "step_size": 2.0}


def test_compute_loss_is_a_scalar_tensor_with_regularization_and_compute_metrics_a_dict():
    inputs = layers.Input((3,))
    outputs = layers.Dense(1, kernel_initializer="ones",
                           kernel_regularizer=kerasrs.regularizers.L2(0.1))(inputs)
    model = kerasrs.Model(inputs, outputs)
    model.compile("sgd", "mse", metrics=["mae"])
    x, y = _data(8)
    y_pred = model(x)
    loss = model.compute_loss(x=x, y=y, y_pred=y_pred)
    assert isinstance(loss, kerasrs.Tensor) and loss.shape == ()
    expected = np.mean((y_pred.numpy() - y) ** 2) + 0.1 * 3.0  # L2 of a kernel of ones
    assert float(loss) == pytest.approx(expected, rel=1e-6)
    assert [m.name for m in model.metrics] == ["loss", "compile_metrics"]
    logs = model.compute_metrics(x, y, y_pred, sample_weight=None)
    assert logs == {"loss": 0.0, "mae": pytest.approx(np.mean(np.abs(y_pred.numpy() - y)))}
    assert model.get_metrics_result() == logs
    model.metrics[0].update_state(loss)
    assert model.get_metrics_result()["loss"] == pytest.approx(expected, rel=1e-6)
    model.reset_metrics()
    assert model.get_metrics_result() == {"loss": 0.0, "mae": 0.0}


def test_super_train_step_returns_the_running_logs():
    calls = []

    class Counting(kerasrs.Model):
        def train_step(self, data):
            logs = super().train_step(data)
            calls.append(dict(logs))
            return logs

    x, y = _data()
    model = Counting(*_graph())
    plain = kerasrs.Model(*_graph())
    for m in (model, plain):
        m.compile(kerasrs.optimizers.SGD(0.05), "mse", metrics=["mae"])
    history = model.fit(x, y, epochs=2, batch_size=5, shuffle=False, verbose=0).history
    expected = plain.fit(x, y, epochs=2, batch_size=5, shuffle=False, verbose=0).history
    assert len(calls) == 8 and sorted(calls[0]) == ["loss", "mae"]
    np.testing.assert_allclose(history["loss"], expected["loss"], rtol=1e-6)  # short last batch
    assert history["loss"][-1] == calls[-1]["loss"]


def test_test_step_and_predict_step_overrides_are_used():
    class Custom(kerasrs.Model):
        def test_step(self, data):
            x, y = data
            y_pred = self(x, training=False)
            return {"loss": self.compute_loss(y=y, y_pred=y_pred), "custom": 7.0}

        def predict_step(self, data):
            x, _, _ = kerasrs.trainers.data_adapter.unpack_x_y_sample_weight(data)
            return self(x) * 2.0

    x, y = _data(8)
    model = Custom(*_graph())
    model.compile("sgd", "mse")
    logs = model.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
    assert logs["custom"] == 7.0
    assert logs["loss"] == pytest.approx(float(np.mean((x.sum(1, keepdims=True) - y) ** 2)))
    assert model.evaluate(x, y, batch_size=8, verbose=0) == pytest.approx([logs["loss"], 7.0])
    history = model.fit(x, y, validation_data=(x, y), epochs=1, verbose=0).history
    assert history["val_custom"] == [7.0]
    np.testing.assert_allclose(model.predict(x, verbose=0), 2 * model(x).numpy(), rtol=1e-6)
    np.testing.assert_allclose(model.predict_on_batch(x), 2 * model(x).numpy(), rtol=1e-6)
    assert model.test_on_batch(x, y, return_dict=True)["custom"] == 7.0


def test_guide_low_level_model_with_its_own_trackers_and_no_compiled_loss():
    class LowLevel(kerasrs.Model):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.loss_tracker = kerasrs.metrics.Mean(name="loss")
            self.mae_metric = kerasrs.metrics.MeanAbsoluteError(name="mae")
            self.loss_fn = kerasrs.losses.MeanSquaredError()

        def train_step(self, data):
            x, y = data
            with kerasrs.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.loss_fn(y, y_pred)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply(grads, self.trainable_variables)
            self.loss_tracker.update_state(loss)
            self.mae_metric.update_state(y, y_pred)
            return {"loss": self.loss_tracker.result(), "mae": self.mae_metric.result()}

        @property
        def metrics(self):
            return [self.loss_tracker, self.mae_metric]

    x, y = _data()
    model = LowLevel(*_graph())
    assert type(model) is LowLevel and model.weights  # the trackers are not weights
    model.compile(optimizer="sgd")
    history = model.fit(x, y, epochs=2, batch_size=4, verbose=0).history
    assert sorted(history) == ["loss", "mae"] and history["loss"][1] < history["loss"][0]
    assert float(model.loss_tracker.count.data) == 4  # reset at the start of each epoch
    assert len(model.weights) == 2


def test_metric_attributes_join_model_metrics():
    class WithTracker(kerasrs.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(1)
            self.extra = kerasrs.metrics.Mean(name="extra")

        def call(self, x):
            return self.dense(x)

    model = WithTracker()
    model.compile("sgd", "mse")
    assert [m.name for m in model.metrics] == ["loss", "extra"]


def test_loss_scale_factor_is_applied_to_the_loss_before_the_gradients():
    x, y = _data()
    results = []
    for factor in (None, 8.0):
        kerasrs.utils.clear_session()
        model = kerasrs.Model(*_graph())
        model.compile(kerasrs.optimizers.SGD(0.05, loss_scale_factor=factor), "mse")
        history = model.fit(x, y, epochs=2, batch_size=4, shuffle=False, verbose=0)
        results.append((history.history["loss"], model.get_weights()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-6)  # logs unscaled
    for a, b in zip(results[1][1], results[0][1]):
        np.testing.assert_allclose(a, b, rtol=1e-6)


# -- subclasses built like functional models ---------------------------------------------------
class Sub(kerasrs.Model):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.steps = 0

    def train_step(self, data):
        self.steps += 1
        return super().train_step(data)


def test_subclass_with_inputs_and_outputs_is_a_functional_model_of_that_class(tmp_path):
    x, y = _data(8)
    model = Sub(*_graph(), name="sub")
    assert type(model) is Sub and isinstance(model, Functional) and model.name == "sub"
    assert [layer.name for layer in model.layers] == ["input_layer", "dense"]
    assert model.output_shape == (None, 1) and model.steps == 0
    np.testing.assert_allclose(model.predict(x, verbose=0), x.sum(1, keepdims=True), rtol=1e-6)
    model.compile("sgd", "mse")
    model.fit(x, y, batch_size=4, verbose=0)
    assert model.steps == 2
    again = Sub(inputs=model.inputs, outputs=model.outputs)  # keyword form
    assert type(again) is Sub and again.layers[1] is model.layers[1]
    path = tmp_path / "sub.keras"
    model.save(path)
    loaded = kerasrs.models.load_model(path, custom_objects={"Sub": Sub})
    assert type(loaded) is Sub
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_from_config_rebuilds_a_subclass_not_yet_made_functional():
    class Fresh(kerasrs.Model):  # never constructed before from_config
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)

    config = kerasrs.Model(*_graph()).get_config()
    model = Fresh.from_config(config)
    assert type(model) is Fresh and isinstance(model, Functional) and len(model.layers) == 2


def test_subclass_without_functional_arguments_stays_a_subclassed_model():
    class Plain(kerasrs.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(2)

        def call(self, x):
            return self.dense(x)

    model = Plain()
    assert not isinstance(model, Functional)
    assert model(np.ones((1, 3))).shape == (1, 2)

    class Odd(kerasrs.Model):
        def __init__(self, units):
            super().__init__(units)

    with pytest.raises(TypeError, match="positional"):
        Odd(3)
