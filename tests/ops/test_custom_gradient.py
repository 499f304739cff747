"""ops.custom_gradient: the value is f's, the gradient grad_fn's (float64 finite differences,
broadcasting, several outputs), in Keras's three calling conventions, on the tape, inside a
layer and in fit."""

import numpy as np
import pytest

import kerasrs
from kerasrs import layers, ops
from kerasrs.testing import check_gradients


def _log1pexp_jax_style(x):
    e = ops.exp(x)

    def grad(upstream):
        return upstream * (1.0 - 1.0 / (1.0 + e))

    return ops.log(1.0 + e), grad


def _log1pexp_portable(x):
    e = ops.exp(x)

    def grad(*args, upstream=None):  # Keras's backend-agnostic form
        if upstream is None:
            (upstream,) = args
        return ops.multiply(upstream, 1.0 - 1.0 / ops.add(1, e))

    return ops.log(1 + e), grad


def _log1pexp_torch_style(x):
    e = ops.exp(x)

    def grad(*args, upstream):
        assert len(args) == 1 and args[0].shape == x.shape  # the inputs come first
        return ops.multiply(upstream, 1.0 - 1.0 / ops.add(1, e))

    return ops.log(1 + e), grad


@pytest.mark.filterwarnings("ignore:overflow encountered in exp")
@pytest.mark.parametrize("f", [_log1pexp_jax_style, _log1pexp_portable, _log1pexp_torch_style])
def test_value_and_stable_gradient(f):
    fn = ops.custom_gradient(f)
    x = kerasrs.Variable(np.array([-3.0, 0.0, 100.0], "float32"))
    with kerasrs.GradientTape() as tape:
        y = fn(x)
    g = tape.gradient(y, x).numpy()
    np.testing.assert_allclose(y.numpy()[:2], np.log1p(np.exp([-3.0, 0.0])), rtol=1e-6)
    assert y.numpy()[2] == np.inf  # the value is f's own (log(1 + e^100) overflows in float32)
    np.testing.assert_allclose(g, [1 / (1 + np.exp(3.0)), 0.5, 1.0], rtol=1e-6)  # no nan
    assert fn.__name__ == f.__name__


def test_the_custom_gradient_replaces_the_computed_one():
    @ops.custom_gradient
    def twice_the_gradient(x):
        return ops.sin(x), lambda upstream: 2.0 * upstream * ops.cos(x)

    x = kerasrs.Variable([0.3, 1.2])
    with kerasrs.GradientTape() as tape:
        y = ops.sum(twice_the_gradient(x))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 2 * np.cos([0.3, 1.2]), rtol=1e-6)


def test_float64_finite_differences_with_broadcasting():
    """f(x, b) = x * b + sin(x) with b broadcast over rows; grad_fn returns b's gradient at the
    broadcast shape (3, 4) and the tape sums it back to (4,)."""
    @ops.custom_gradient
    def scaled_sine(x, b):
        def grad(upstream):
            return upstream * (b + ops.cos(x)), upstream * x

        return x * b + ops.sin(x), grad

    rng = np.random.default_rng(0)
    check_gradients(scaled_sine, [rng.normal(size=(3, 4)), rng.normal(size=(4,))],
                    atol=1e-7, rtol=1e-6)


def test_float64_finite_differences_with_several_outputs_and_nested_arguments():
    @ops.custom_gradient
    def polar(pair, scale):
        r, theta = pair

        def grad(upstream):
            gx, gy = upstream
            return (scale * (gx * ops.cos(theta) + gy * ops.sin(theta)),
                    scale * r * (gy * ops.cos(theta) - gx * ops.sin(theta)),
                    ops.sum(r * (gx * ops.cos(theta) + gy * ops.sin(theta))))

        return [scale * r * ops.cos(theta), scale * r * ops.sin(theta)], grad

    rng = np.random.default_rng(1)
    outs = polar((np.ones(5), np.zeros(5)), 2.0)
    assert isinstance(outs, list) and [o.shape for o in outs] == [(5,), (5,)]
    check_gradients(lambda r, t, s: polar((r, t), s),
                    [rng.uniform(0.5, 2, 5), rng.uniform(-3, 3, 5), np.array(1.5)],
                    atol=1e-7, rtol=1e-6)


def test_a_wrong_gradient_is_caught_by_the_check():
    @ops.custom_gradient
    def wrong(x):
        return x * x, lambda upstream: upstream * x  # should be 2 x

    with pytest.raises(AssertionError, match="wrong gradient"):
        check_gradients(wrong, [np.array([1.0, 2.0])])


@kerasrs.saving.register_keras_serializable(package="test_custom_gradient")
class GradientReversal(layers.Layer):
    """The identity forward, the negated gradient backward (Ganin & Lempitsky, ICML 2015)."""

    def call(self, inputs):
        @ops.custom_gradient
        def reverse(x):
            return ops.convert_to_tensor(x) * 1.0, lambda upstream: -upstream

        return reverse(inputs)


def test_inside_a_layer_on_the_tape_and_in_fit():
    kerasrs.utils.set_random_seed(0)
    x = np.random.default_rng(0).normal(size=(16, 3)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    dense = layers.Dense(1)
    inputs = kerasrs.Input((3,))
    model = kerasrs.Model(inputs, GradientReversal()(dense(inputs)))
    plain = kerasrs.Model(inputs, dense(inputs))
    np.testing.assert_allclose(model.predict(x, verbose=0), plain.predict(x, verbose=0))
    grads = []
    for m in (model, plain):
        with kerasrs.GradientTape() as tape:
            loss = ops.mean((m(x) - y) ** 2)
        grads.append(tape.gradient(loss, dense.kernel).numpy())
    np.testing.assert_allclose(grads[0], -grads[1], rtol=1e-6)
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit(x, y, epochs=3, verbose=0).history["loss"]
    assert history[-1] > history[0]  # gradient ascent: the reversal reaches the optimizer


def test_errors_name_the_function():
    @ops.custom_gradient
    def no_pair(x):
        return x

    with pytest.raises(TypeError, match="no_pair must return a pair"):
        no_pair(np.ones(2))

    @ops.custom_gradient
    def too_many(x):
        return x * 2.0, lambda upstream: (upstream, upstream)

    v = kerasrs.Variable([1.0])
    with kerasrs.GradientTape() as tape:
        out = too_many(v)
    with pytest.raises(ValueError, match="returned 2 gradients for 1 tensor arguments"):
        tape.gradient(out, v)


def test_non_tensor_arguments_pass_through():
    @ops.custom_gradient
    def power(x, mode, exponent=2):
        assert mode == "square" and exponent == 3
        return x ** exponent, lambda upstream: upstream * exponent * x ** (exponent - 1)

    v = kerasrs.Variable([2.0])
    with kerasrs.GradientTape() as tape:
        out = power(v, "square", exponent=3)
    np.testing.assert_allclose(tape.gradient(out, v).numpy(), [12.0])


@pytest.mark.filterwarnings("ignore:overflow encountered in exp")
def test_docstring_example():
    import doctest
    import sys

    module = sys.modules["kerasrs.ops.custom_gradient"]  # the attribute is the decorator

    result = doctest.testmod(module, extraglobs={"kerasrs": kerasrs, "ops": ops,
                                                 "custom_gradient": ops.custom_gradient})
    assert result.attempted >= 4 and result.failed == 0
