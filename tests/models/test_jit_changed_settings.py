"""`compile(jit_compile=True)` while a callback changes the optimizer's settings: the replayed
steps follow the change as the eager steps do (a setting that the traced update holds as a
constant gets a new program)."""

import numpy as np
import pytest

import kerasrs
from kerasrs import layers


class _Change(kerasrs.callbacks.Callback):
    def __init__(self, name, value):
        super().__init__()
        self.name, self.value = name, value

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == 1:
            setattr(self.model.optimizer, self.name, self.value)


def _with(optimizer, **settings):
    for name, value in settings.items():
        setattr(optimizer, name, value)
    return optimizer


def _assert_same(replayed, eager):
    """Equal weights (lists of arrays) bit for bit; or equal ``(losses, weights)`` pairs."""
    if isinstance(replayed, tuple):
        assert replayed[0] == eager[0]
        replayed, eager = replayed[1], eager[1]
    for a, b in zip(replayed, eager, strict=True):
        np.testing.assert_array_equal(a, b)


def _train(optimizer, name, value, jit_compile):
    kerasrs.utils.set_random_seed(0)
    model = kerasrs.Sequential([layers.Input((6,)), layers.Dense(8, activation="tanh"),
                                layers.Dense(1)])
    model.compile(optimizer(), "mse", jit_compile=jit_compile)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(32, 6)).astype("float32"), rng.normal(size=(32, 1)).astype("float32")
    history = model.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False,
                        callbacks=[_Change(name, value)])
    return history.history["loss"], model.get_weights()


@pytest.mark.parametrize("optimizer,name,value", [
    (lambda: kerasrs.optimizers.Adam(0.01), "beta_1", 0.0),
    (lambda: kerasrs.optimizers.Adam(0.01), "epsilon", 1.0),
    (lambda: _with(kerasrs.optimizers.SGD(0.05, momentum=0.5), momentum=np.float32(0.5)),
     "momentum", np.float32(0.9)),
    (lambda: kerasrs.optimizers.SGD(0.05, momentum=0.5), "momentum", 0.0),
    (lambda: kerasrs.optimizers.SGD(0.05, clipnorm=10.0), "clipnorm", 1e-3),
    (lambda: kerasrs.optimizers.SGD(0.05, clipvalue=10.0), "clipvalue", 1e-4),
])
def test_a_setting_changed_by_a_callback_reaches_the_replayed_update(optimizer, name, value):
    _assert_same(_train(optimizer, name, value, True), _train(optimizer, name, value, False))


class _ChangeInner(kerasrs.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        if epoch == 1:
            self.model.optimizer.inner_optimizer.beta_1 = 0.0


def _train_scaled(jit_compile, change):
    kerasrs.utils.set_random_seed(0)
    model = kerasrs.Sequential([layers.Input((6,)), layers.Dense(8, activation="tanh"),
                                layers.Dense(1)])
    model.compile(kerasrs.optimizers.LossScaleOptimizer(kerasrs.optimizers.Adam(0.01)), "mse",
                  jit_compile=jit_compile)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(32, 6)).astype("float32"), rng.normal(size=(32, 1)).astype("float32")
    model.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False,
              callbacks=[_ChangeInner()] if change else [])
    return model.get_weights()


def test_a_setting_of_the_loss_scale_optimizers_inner_optimizer_reaches_the_replay():
    """The wrapped optimizer's settings are part of the step's key too."""
    eager, replayed = _train_scaled(False, True), _train_scaled(True, True)
    _assert_same(replayed, eager)
    unchanged = _train_scaled(False, False)
    assert any(not np.array_equal(a, b) for a, b in zip(eager, unchanged))


class _EveryBatch(kerasrs.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        self.model.optimizer.momentum = 0.5 + 0.01 * (batch % 25)


def _fit_every_batch(stack, optimizer, callback, jit_compile):
    """A model of ``stack()`` on 6 features trained for 30 batches of 2 with ``callback``."""
    kerasrs.utils.set_random_seed(0)
    model = kerasrs.Sequential([layers.Input((6,))] + stack())
    model.compile(optimizer, "mse", jit_compile=jit_compile)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(60, 6)).astype("float32"), rng.normal(size=(60, 1)).astype("float32")
    model.fit(x, y, batch_size=2, epochs=1, verbose=0, shuffle=False, callbacks=[callback])
    return model


def test_a_setting_changed_every_batch_keeps_a_bounded_number_of_programs():
    """Each value is its own program; the oldest are dropped past MAX_PROGRAMS, with one
    warning, and the numbers stay the eager ones."""
    from kerasrs.trainers import jit

    def train(jit_compile):
        return _fit_every_batch(lambda: [layers.Dense(1)],
                                kerasrs.optimizers.SGD(0.05, momentum=0.5), _EveryBatch(),
                                jit_compile)

    eager = train(False)
    with pytest.warns(UserWarning, match="more than 16 step programs") as seen:
        replayed = train(True)
    assert sum("step programs" in str(w.message) for w in seen) == 1
    assert len(replayed._jit.entries) == jit.MAX_PROGRAMS
    _assert_same(replayed.get_weights(), eager.get_weights())


def test_predict_over_many_batch_sizes_keeps_a_bounded_number_of_programs():
    from kerasrs.trainers import jit

    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(2)])
    model.compile("sgd", "mse", jit_compile=True)
    x = np.ones((40, 3), "float32")
    with pytest.warns(UserWarning, match="least recently used"):
        for n in range(1, 41):
            np.testing.assert_allclose(model.predict(x[:n], verbose=0),
                                       model(x[:n]).numpy(), rtol=1e-6)
    assert len(model._jit.entries) <= jit.MAX_PROGRAMS


class _Freeze(kerasrs.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        if epoch == 1:
            self.model.layers[0].trainable = False


def test_a_layer_frozen_by_a_callback_stops_training_in_the_replay_too():
    """Eagerly the tape watches trainable variables only: the frozen layer gets no gradient
    and is left unchanged (with a warning); the replay kept training it, silently."""
    def train(jit_compile):
        kerasrs.utils.set_random_seed(0)
        model = kerasrs.Sequential([layers.Input((6,)), layers.Dense(8, activation="tanh"),
                                    layers.Dense(1)])
        model.compile(kerasrs.optimizers.Adam(0.01), "mse", jit_compile=jit_compile)
        rng = np.random.default_rng(0)
        x = rng.normal(size=(32, 6)).astype("float32")
        y = rng.normal(size=(32, 1)).astype("float32")
        with pytest.warns(UserWarning, match="gradients do not exist"):
            history = model.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False,
                                callbacks=[_Freeze()])
        return history.history["loss"], model.get_weights()

    _assert_same(train(True), train(False))


def test_an_optimizer_built_for_another_model_is_refused_naming_the_variables():
    """As eagerly (it was a KeyError naming a number, from deep inside the traced update)."""
    def model():
        return kerasrs.Sequential([layers.Input((6,)), layers.Dense(1)])

    x, y = np.ones((8, 6), "float32"), np.ones((8, 1), "float32")
    optimizer = kerasrs.optimizers.Adam()
    first = model()
    first.compile(optimizer, "mse", jit_compile=True)
    first.fit(x, y, verbose=0)
    second = model()
    second.compile(optimizer, "mse", jit_compile=True)
    with pytest.raises(ValueError, match="an optimizer only updates the variables it was built "
                                         r"with.*Received: unknown variables \['sequential_\d+/"):
        second.fit(x, y, verbose=0)


class _SetLayer(kerasrs.callbacks.Callback):
    def __init__(self, index, name, value):
        super().__init__()
        self.index, self.name, self.value = index, name, value

    def on_epoch_end(self, epoch, logs=None):
        setattr(self.model.layers[self.index], self.name, self.value)


@pytest.mark.parametrize("index,name,value", [(1, "rate", 0.0), (2, "momentum", 0.5),
                                              (2, "epsilon", 0.5)])
@pytest.mark.parametrize("batch_size", [25, 30])  # no short last batch, and one
def test_a_layer_setting_changed_by_a_callback_reaches_the_replayed_step(index, name, value,
                                                                         batch_size):
    """Dropout's rate, BatchNormalization's momentum and epsilon: the replay held the traced
    value (silently, or a TraceError blaming host random numbers with a short last batch)."""
    def train(jit_compile):
        kerasrs.utils.set_random_seed(3)
        model = kerasrs.Sequential([layers.Input((8,)), layers.Dense(16, activation="relu"),
                                    layers.Dropout(0.3), layers.BatchNormalization(),
                                    layers.Dense(3)])
        model.compile(kerasrs.optimizers.Adam(0.01),
                      kerasrs.losses.SparseCategoricalCrossentropy(from_logits=True),
                      jit_compile=jit_compile)
        rng = np.random.default_rng(0)
        x, y = rng.normal(size=(100, 8)).astype("float32"), rng.integers(0, 3, 100)
        history = model.fit(x, y, batch_size=batch_size, epochs=3, verbose=0,
                            callbacks=[_SetLayer(index, name, value)])
        return history.history["loss"], model.get_weights()

    _assert_same(train(True), train(False))


def test_a_layer_setting_changed_every_batch_keeps_bounded_state_and_the_eager_numbers():
    class EveryBatch(kerasrs.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            self.model.layers[1].rate = 0.1 + 0.01 * batch

    def train(jit_compile):
        return _fit_every_batch(lambda: [layers.Dense(4), layers.Dropout(0.1), layers.Dense(1)],
                                "sgd", EveryBatch(), jit_compile)

    from kerasrs.trainers import jit
    eager = train(False)
    with pytest.warns(UserWarning, match="step programs"):
        replayed = train(True)
    assert len(replayed._jit._readings) <= jit.MAX_PROGRAMS
    assert len(replayed._jit.entries) <= jit.MAX_PROGRAMS
    _assert_same(replayed.get_weights(), eager.get_weights())


def test_a_setting_replaced_by_an_equal_number_of_another_type_retraces():
    """``momentum = np.float64(0.99)`` over the float 0.99 changes the eager numbers (a NumPy
    float64 scalar promotes a float32 array under NEP 50): the replay follows."""
    def train(jit_compile):
        return _fit_every_batch(lambda: [layers.Dense(4), layers.BatchNormalization(),
                                         layers.Dense(1)], "sgd", _NumpyMomentum(), jit_compile)

    _assert_same(train(True).get_weights(), train(False).get_weights())


class _NumpyMomentum(kerasrs.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        if batch == 10:
            self.model.layers[1].momentum = np.float64(self.model.layers[1].momentum)
