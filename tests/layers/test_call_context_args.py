"""Call-context arguments (`Layer._register_call_context_args`): values that flow from a layer's
call to the sublayers it calls, as ``training`` does."""

import numpy as np
import pytest

import kerasrs
from kerasrs import layers, ops


class Shift(layers.Layer):
    """Adds 10 in "shift" mode; registers the call-context argument ``mode``."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._register_call_context_args("mode")
        self.seen = []

    def call(self, x, mode=None):
        self.seen.append(mode)
        return x + (10.0 if mode == "shift" else 0.0)


class Passing(layers.Layer):
    """Calls its sublayer without passing ``mode`` and does not register it."""

    def __init__(self, inner, **kwargs):
        super().__init__(**kwargs)
        self.inner = inner

    def call(self, x):
        return self.inner(x)


def test_the_value_reaches_registered_sublayers_through_unregistered_ones():
    inner = Shift()
    outer = Passing(Passing(inner))
    outer._register_call_context_args("mode")
    x = np.zeros((1, 2), "float32")
    np.testing.assert_allclose(outer(x, mode="shift"), [[10.0, 10.0]])
    np.testing.assert_allclose(outer(x), [[0.0, 0.0]])
    assert inner.seen == ["shift", None]


def test_an_explicit_value_wins_over_the_enclosing_calls():
    inner = Shift()

    class Overriding(layers.Layer):
        def __init__(self):
            super().__init__()
            self._register_call_context_args("mode")
            self.inner = inner

        def call(self, x, mode=None):
            return self.inner(x, mode="plain")

    np.testing.assert_allclose(Overriding()(np.zeros((1,), "float32"), mode="shift"), [0.0])
    assert inner.seen == ["plain"]


def test_a_layer_that_did_not_register_the_argument_is_not_given_it():
    class Unregistered(layers.Layer):
        def call(self, x, mode=None):
            return x + (1.0 if mode else 0.0)

    outer = Passing(Unregistered())
    outer._register_call_context_args("mode")
    np.testing.assert_allclose(outer(np.zeros((1,), "float32"), mode="shift"), [0.0])


def test_the_signature_default_is_the_value_the_sublayers_see():
    inner = Shift()

    class Defaulting(layers.Layer):
        def __init__(self):
            super().__init__()
            self._register_call_context_args("mode")
            self.inner = inner

        def call(self, x, mode="shift"):
            return self.inner(x)

    np.testing.assert_allclose(Defaulting()(np.zeros((1,), "float32")), [10.0])
    assert inner.seen == ["shift"]


def test_models_propagate_a_registered_argument():
    x = np.array([[1.0], [2.0]], "float32")
    seq = kerasrs.Sequential([layers.Identity(), Passing(Shift())])
    seq._register_call_context_args("mode")
    np.testing.assert_allclose(seq(x, mode="shift"), x + 10.0)
    np.testing.assert_allclose(seq(x), x)
    inputs = layers.Input((1,))
    model = kerasrs.Model(inputs, Passing(Shift())(layers.Identity()(inputs)))
    model._register_call_context_args("mode")
    np.testing.assert_allclose(model(x, mode="shift"), x + 10.0)
    np.testing.assert_allclose(model(x), x)


def test_training_is_always_a_call_context_argument():
    layer = layers.Dense(2)
    assert layer._call_context_args == {"training"}
    layer._register_call_context_args("mode", "training")
    assert layer._call_context_args == {"training", "mode"}


def test_registering_after_the_first_call_is_refused():
    layer = layers.Identity()
    layer(ops.ones((1, 2)))
    with pytest.raises(RuntimeError, match="Cannot add call-context args after the layer has "
                                           "been called"):
        layer._register_call_context_args("mode")
