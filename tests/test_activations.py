"""Activations by name: values against NumPy formulas, gradients, get/serialize."""

import math

import numpy as np
import pytest

from kerasrs import activations
from kerasrs.testing import check_gradients

X = np.array([-3.5, -1.2, -0.3, 0.4, 1.7, 6.5])
_sig = 1 / (1 + np.exp(-X))
_softplus = np.log1p(np.exp(X))
_erf = np.vectorize(math.erf)
EXPECTED = {
    "relu": np.maximum(X, 0), "sigmoid": _sig, "tanh": np.tanh(X),
    "gelu": 0.5 * X * (1 + _erf(X / np.sqrt(2))), "silu": X * _sig, "swish": X * _sig,
    "elu": np.where(X > 0, X, np.expm1(X)),
    "selu": 1.0507009873554805 * np.where(X > 0, X, 1.6732632423543772 * np.expm1(X)),
    "softplus": _softplus, "softsign": X / (1 + np.abs(X)),
    "leaky_relu": np.where(X > 0, X, 0.2 * X), "relu6": np.clip(X, 0, 6),
    "hard_sigmoid": np.clip(X + 3, 0, 6) / 6, "exponential": np.exp(X), "linear": X,
    "mish": X * np.tanh(_softplus), "softmax": np.exp(X) / np.exp(X).sum(),
    "log_softmax": X - np.log(np.exp(X).sum()),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_values_match_formulas(name):
    got = activations.get(name)(X)
    got = got.numpy() if hasattr(got, "numpy") else got
    np.testing.assert_allclose(got, EXPECTED[name], rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("name", sorted(set(EXPECTED) - {"linear"}))
def test_gradients(name):
    check_gradients(activations.get(name), [X + 0.05])  # off the kinks at 0, 6, +-3


def test_relu_options_and_get_serialize():
    np.testing.assert_allclose(activations.relu(X, negative_slope=0.1, max_value=2.0,
                                                threshold=0.5).numpy(),
                               np.where(X > 0.5, np.minimum(X, 2.0), 0.1 * (X - 0.5)))
    assert activations.get(None) is activations.linear
    assert activations.serialize(activations.get("swish")) == "silu"
    assert activations.serialize(None) == "linear"
    assert activations.get(np.tanh) is np.tanh
    with pytest.raises(ValueError, match="Unknown activation 'rellu'"):
        activations.get("rellu")
