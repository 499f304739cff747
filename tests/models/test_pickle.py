"""A fitted model survives pickle and ``copy.deepcopy`` (as a Keras model does): the copy predicts
the same and trains on to the same weights. Before, pickling a fitted model failed on fit's lock,
and an unpickled model failed with "inputs live on different backends (numpy and numpy)"."""

import copy
import pickle

import numpy as np
import pytest

import kerasrs
from kerasrs import layers

rng = np.random.default_rng(0)
X = rng.normal(size=(16, 4))
Y = X[:, :2]


def _functional():
    i = layers.Input((4,))
    return kerasrs.Model(i, layers.Dense(2)(layers.Dense(3, activation="relu")(i)))


def _sequential():
    return kerasrs.Sequential([layers.Input((4,)), layers.Dense(3, activation="relu"),
                               layers.Dense(2)])


@pytest.mark.parametrize("make", [_functional, _sequential])
@pytest.mark.parametrize("jit_compile", [False, True])
@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_a_fitted_model_copies_predicts_and_trains_on_alike(make, jit_compile, how):
    model = make()
    model.compile(kerasrs.optimizers.AdamW(0.01), "mse", metrics=["mae"],
                  jit_compile=jit_compile)
    model.optimizer.exclude_from_weight_decay(var_list=[model.layers[-1].bias])
    model.fit(X, Y, batch_size=4, verbose=0)
    model.evaluate(X, Y, verbose=0)
    twin = pickle.loads(pickle.dumps(model)) if how == "pickle" else copy.deepcopy(model)
    np.testing.assert_array_equal(twin.predict(X, verbose=0), model.predict(X, verbose=0))
    for m in (model, twin):
        m.fit(X, Y, batch_size=4, shuffle=False, verbose=0)
    for a, b in zip(model.get_weights() + [v.numpy() for v in model.optimizer.variables],
                    twin.get_weights() + [v.numpy() for v in twin.optimizer.variables]):
        np.testing.assert_array_equal(b, a)
    assert (twin._jit is not None) == jit_compile


def test_a_backend_unpickles_as_the_process_backend():
    be = kerasrs.backend.get("numpy")
    assert pickle.loads(pickle.dumps(be)) is be
