"""Activations with parameters (leaky_relu's slope, elu's alpha...) are graph ops that keep their
parameters: a traced graph records them, its text gives them back, and a model using them trains
under ``jit_compile=True`` to the same weights as eagerly."""

import numpy as np
import pytest

import kerasrs
from kerasrs import graph, layers, ops
from kerasrs.ops import activations

CALLS = {  # name -> the public op called with parameters other than the defaults
    "leaky_relu": lambda x: ops.leaky_relu(x, negative_slope=0.3),
    "elu": lambda x: ops.elu(x, alpha=0.7), "selu": ops.selu,
    "celu": lambda x: ops.celu(x, alpha=1.5),
    "soft_shrink": lambda x: ops.soft_shrink(x, threshold=0.25),
    "hard_shrink": lambda x: ops.hard_shrink(x, threshold=0.25),
    "threshold": lambda x: ops.threshold(x, 0.1, -2.0),
    "squareplus": lambda x: ops.squareplus(x, b=2),
}
X = np.linspace(-2, 2, 12).reshape(3, 4)


def test_every_parametrized_activation_has_a_case():
    assert set(CALLS) == set(activations.PARAMETRIZED)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_traced_graph_keeps_the_parameters_through_its_text(name):
    traced = graph.trace(lambda x: {"y": CALLS[name](x)}, x=X)
    again = graph.parse(str(traced))
    assert again == traced
    got = graph.compile(again)(x=X)["y"]
    np.testing.assert_array_equal(got.numpy(), CALLS[name](X).numpy())


@pytest.mark.parametrize("activation", ["elu", "selu", "leaky_relu", "celu"])
def test_dense_with_the_activation_trains_under_jit_as_eagerly(activation):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype("float32")
    weights = {}
    for jit in (False, True):
        kerasrs.utils.set_random_seed(1)
        model = kerasrs.Sequential([layers.Input((4,)), layers.Dense(8, activation=activation),
                                    layers.Dense(1)])
        model.compile("sgd", "mse", jit_compile=jit)
        model.fit(x, x[:, :1], batch_size=16, epochs=2, shuffle=False, verbose=0)
        assert (model._jit is not None) == jit and (not jit or not model._jit.eager)
        weights[jit] = model.get_weights()
    for got, want in zip(weights[True], weights[False]):
        np.testing.assert_array_equal(got, want)
