"""Eager and replayed training agree: the four benchmark models (benchmarks/models.py) and the
Keras reference models m1, m2 and m4 (tests/fixtures/keras, their Keras weights) give the same
weights and optimizer state after 20 steps of ``fit`` with ``jit_compile=False`` and ``True``:
float64 within 1e-12, float32 within 1e-6 relative (in fact bit for bit: the replay runs the
same ops and the optimizers' eager arithmetic). On CuPy too when a GPU is there."""

import os
import sys

import numpy as np
import pytest

import kerasrs
from kerasrs import layers, losses, optimizers

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "keras")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import models as benchmark_models  # noqa: E402

STEPS, BATCH = 20, 8
TOLERANCE = {"float64": {"rtol": 1e-12, "atol": 1e-15}, "float32": {"rtol": 1e-6, "atol": 1e-9}}


def _benchmark(name):
    def make():
        model, loss = benchmark_models.kerasrs_network(name)
        return model, loss, optimizers.Adam(1e-3)

    def data(rng, dtype):
        x = rng.random((STEPS * BATCH,) + benchmark_models.INPUT_SHAPES[name]).astype(dtype)
        return x, rng.integers(0, 10, STEPS * BATCH)

    return make, data


def _keras(name):
    """A Keras reference model (MANIFEST.md) with its Keras weights, in ``floatx()``."""
    def make():
        if name == "m1":
            model = kerasrs.Sequential([layers.Input((784,)), layers.Dense(64, activation="relu"),
                                        layers.Dropout(0.2), layers.Dense(10,
                                                                          activation="softmax")])
            loss, optimizer = "sparse_categorical_crossentropy", optimizers.SGD(0.05, momentum=0.9)
        elif name == "m2":
            model = kerasrs.Sequential([
                layers.Input((28, 28, 1)), layers.Conv2D(8, 3, activation="relu"),
                layers.MaxPooling2D(), layers.Conv2D(16, 3, activation="relu"),
                layers.GlobalAveragePooling2D(), layers.Dense(10)])
            loss, optimizer = losses.CategoricalCrossentropy(from_logits=True), \
                optimizers.Adam(1e-2)
        else:
            model = kerasrs.Sequential([layers.Input((12,), dtype="int32"),
                                        layers.Embedding(50, 8), layers.LSTM(16),
                                        layers.Dense(1, activation="sigmoid")])
            loss, optimizer = "binary_crossentropy", optimizers.RMSprop(1e-2)
        reference = kerasrs.models.load_model(os.path.join(FIXTURES, f"{name}.h5"))
        model.set_weights([w.astype(kerasrs.backend.floatx()) for w in reference.get_weights()])
        return model, loss, optimizer

    def data(rng, dtype):
        n = STEPS * BATCH
        if name == "m1":
            return rng.random((n, 784)).astype(dtype), rng.integers(0, 10, n).astype("int32")
        if name == "m2":
            return rng.random((n, 28, 28, 1)).astype(dtype), \
                np.eye(10, dtype=dtype)[rng.integers(0, 10, n)]
        return rng.integers(0, 50, (n, 12)).astype("int32"), \
            rng.integers(0, 2, (n, 1)).astype(dtype)

    return make, data


MODELS = {**{name: _benchmark(name) for name in ("mlp", "cnn", "lstm", "transformer")},
          **{name: _keras(name) for name in ("m1", "m2", "m4")}}


def _train(name, dtype, jit_compile):
    make, data = MODELS[name]
    previous = kerasrs.backend.floatx()
    kerasrs.backend.set_floatx(dtype)
    try:
        kerasrs.utils.set_random_seed(7)
        model, loss, optimizer = make()
        x, y = data(np.random.default_rng(1), dtype)
        model.compile(optimizer, loss, jit_compile=jit_compile)
        history = model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    finally:
        kerasrs.backend.set_floatx(previous)
    return model, history.history["loss"]


SLOW = {("cnn", "float64"), ("transformer", "float64")}  # the two largest: ~20 s each
CASES = [pytest.param(name, dtype, marks=pytest.mark.slow) if (name, dtype) in SLOW else
         (name, dtype) for name in sorted(MODELS) for dtype in ("float64", "float32")]


@pytest.mark.parametrize("name,dtype", CASES)
def test_twenty_replayed_steps_give_the_eager_weights(name, dtype, backend):
    eager, eager_loss = _train(name, dtype, False)
    replayed, replayed_loss = _train(name, dtype, True)
    assert not replayed._jit.eager and len(replayed._jit.entries) == 1
    assert int(replayed.optimizer.iterations.numpy()) == STEPS
    pairs = list(zip(eager.weights, replayed.weights)) + \
        list(zip(eager.optimizer.variables, replayed.optimizer.variables))
    assert all(b.dtype == dtype for _, b in pairs if b.dtype.kind == "f" and b.ndim)
    for a, b in pairs:
        np.testing.assert_allclose(b.numpy(), a.numpy(), err_msg=a.path, **TOLERANCE[dtype])
    np.testing.assert_allclose(replayed_loss, eager_loss, **TOLERANCE[dtype])
