"""Behaviour cases C36 (changing `trainable` between fit calls) and C38 (clipnorm vs
global_clipnorm vs clipvalue), from ../shared/cases/behaviour.md."""

import numpy as np
import pytest

import kerasrs
from kerasrs import layers

X = np.array([[1.0], [2.0]], "float32")
Y = np.zeros((2, 1), "float32")


def _linear():
    return kerasrs.Sequential([layers.Input((1,)),
                               layers.Dense(1, use_bias=False, kernel_initializer="ones")])


def _w(model):
    return float(model.layers[0].kernel.numpy().ravel()[0])


def _fit(model):
    model.fit(X, Y, batch_size=2, epochs=1, shuffle=False, verbose=0)  # one step: w -> 0.5 w
    return _w(model)


@pytest.mark.parametrize("recompile", [False, True])
def test_c36_unfreezing_after_a_frozen_fit_trains_with_or_without_compile(recompile):
    """C36 (a) and (b): trainable is read at each step (Keras 3), so 1.0 then 0.5; (a) must
    not fail as Keras 3.15 on torch does ("Unknown variable")."""
    model = _linear()
    model.layers[0].trainable = False
    model.compile(kerasrs.optimizers.SGD(0.1), "mse")
    assert _fit(model) == pytest.approx(1.0)
    model.layers[0].trainable = True
    if recompile:
        model.compile(kerasrs.optimizers.SGD(0.1), "mse")
    assert _fit(model) == pytest.approx(0.5)


def test_c36_freezing_after_a_fit_stops_training_without_compile():
    """C36 (c): 0.5 then still 0.5 (Keras 2's compile-time state would go on to 0.25)."""
    model = _linear()
    model.compile(kerasrs.optimizers.SGD(0.1), "mse")
    assert _fit(model) == pytest.approx(0.5)
    model.layers[0].trainable = False
    assert _fit(model) == pytest.approx(0.5)


@pytest.mark.parametrize("clip, kernel, bias", [
    ({"clipnorm": 1.0}, [0.552786, 0.105573], 0.0),
    ({"global_clipnorm": 1.0}, [0.591752, 0.183503], 0.591752),
    ({"clipvalue": 1.0}, [0.0, 0.0], 0.0),
])
def test_c38_clipping_options(clip, kernel, bias):
    """C38: raw gradients kernel [8, 16], bias 8; per-variable, joint (norm sqrt(384)) and
    elementwise clipping give different updates with SGD(1)."""
    dense = layers.Dense(1)
    model = kerasrs.Sequential([layers.Input((2,)), dense])
    dense.set_weights([np.ones((2, 1)), np.ones(1)])
    model.compile(kerasrs.optimizers.SGD(1.0, **clip), "mse")
    model.train_on_batch(np.array([[1.0, 2.0]]), np.zeros((1, 1)))
    np.testing.assert_allclose(dense.kernel.numpy().ravel(), kernel, atol=1e-6)
    np.testing.assert_allclose(dense.bias.numpy(), [bias], atol=1e-6)


def test_c38_two_clipping_options_at_once_is_a_value_error():
    with pytest.raises(ValueError, match="only one of clipnorm, clipvalue and global_clipnorm"):
        kerasrs.optimizers.SGD(1.0, clipnorm=1.0, global_clipnorm=1.0)
