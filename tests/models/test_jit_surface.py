"""`compile(jit_compile=True)` as a Keras user meets it: on a model that is not built yet (a
subclassed model, a Sequential without an Input) the first step runs eagerly and makes the
weights, later steps replay, and the numbers equal eager ones (the subclassed model was traced
with no weights to train and never learned, silently; the Sequential raised a TraceError about a
constant); and Keras's ``model.jit_compile`` attribute."""

import numpy as np
import pytest

import kerasrs
from kerasrs import layers


class _Subclassed(kerasrs.Model):
    def __init__(self):
        super().__init__()
        self.hidden, self.out = layers.Dense(8, activation="tanh"), layers.Dense(1)

    def call(self, x):
        return self.out(self.hidden(x))


def _sequential():
    return kerasrs.Sequential([layers.Dense(8, activation="tanh"), layers.Dense(1)])


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(40, 5)).astype("float32"), rng.normal(size=(40, 1)).astype("float32")


def _fit(make, jit_compile):
    kerasrs.utils.set_random_seed(0)
    model = make()
    model.compile("adam", "mse", jit_compile=jit_compile)
    x, y = _data()
    history = model.fit(x, y, batch_size=16, epochs=3, verbose=0, shuffle=False)
    return model, history.history["loss"]


def test_an_unbuilt_model_trains_under_jit_as_eagerly():
    for make in (_Subclassed, _sequential):
        eager, eager_losses = _fit(make, False)
        replayed, losses = _fit(make, True)
        assert losses == eager_losses and losses[-1] < losses[0]
        for a, b in zip(eager.get_weights(), replayed.get_weights()):
            np.testing.assert_array_equal(b, a)
        assert any(key[0] == "train" for key in replayed._jit.entries)  # later steps replay


def test_predict_and_evaluate_first_on_an_unbuilt_model():
    x, y = _data()
    results = []
    for jit_compile in (False, True):
        kerasrs.utils.set_random_seed(0)
        model = _sequential()
        model.compile("sgd", "mse", jit_compile=jit_compile)
        results.append((model.predict(x, batch_size=16, verbose=0),
                        model.evaluate(x, y, batch_size=16, verbose=0)))
    np.testing.assert_array_equal(results[1][0], results[0][0])
    assert results[1][1] == results[0][1]


def test_the_jit_compile_attribute_reads_and_switches_the_replay():
    model = _sequential()
    model.jit_compile = True  # Keras's way to predict through a graph without compile
    x, y = _data()
    np.testing.assert_array_equal(model.predict(x, verbose=0), model.predict(x, verbose=0))
    assert any(key[0] == "predict" for key in model._jit.entries)
    model.compile("sgd", "mse", jit_compile=True)
    assert model.jit_compile is True
    model.jit_compile = False
    assert model.jit_compile is False and model._jit is None
    assert model.get_compile_config()["jit_compile"] is False
    model.jit_compile = True
    model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    assert any(key[0] == "train" for key in model._jit.entries)
    model.run_eagerly = True
    assert model.jit_compile is False
    with pytest.raises(ValueError, match="must be True, False or 'auto'"):
        model.jit_compile = "yes"
