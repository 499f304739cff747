"""`kerasrs.remat` (gradient checkpointing on the tape) and `kerasrs.RematScope` on layers."""

import weakref

import numpy as np
import pytest

import kerasrs
from kerasrs import layers, ops
from kerasrs.autodiff import GradientTape, Tensor, Variable
from kerasrs.layers import remat as remat_module


def _f64(values):
    return Variable(np.asarray(values, dtype="float64"), dtype="float64")


def _two_outputs(w):
    def f(a, scale=2.0):  # a keyword argument passed through, a closure Variable
        h = ops.tanh(a * w)
        return ops.sin(h) * a, {"h": h * scale}
    return f


def _loss(fn, x):
    y1, y2 = fn(x)
    return ops.sum(y1 * y1) + ops.sum(ops.exp(y2["h"]))


def test_remat_gradients_match_finite_differences_in_float64():
    x, w = _f64([0.3, -1.2, 2.0]), _f64([1.5, 0.5, -0.7])
    fn = kerasrs.remat(_two_outputs(w))
    with GradientTape() as tape:
        loss = _loss(fn, x)
    gx, gw = tape.gradient(loss, [x, w])
    plain = _two_outputs(w)
    eps = 1e-6
    for var, grad in ((x, gx), (w, gw)):
        base = var.numpy().copy()
        numeric = np.zeros_like(base)
        for i in range(base.size):
            for sign in (1, -1):
                shifted = base.copy()
                shifted[i] += sign * eps
                var.assign(shifted)
                numeric[i] += sign * float(_loss(plain, x).numpy()) / (2 * eps)
        var.assign(base)
        np.testing.assert_allclose(grad.numpy(), numeric, rtol=1e-7, atol=1e-9)


def test_remat_gives_the_plain_functions_values_and_gradients():
    x, w = _f64([0.1, 0.7]), _f64([2.0, -1.0])
    results = []
    for fn in (_two_outputs(w), kerasrs.remat(_two_outputs(w))):
        with GradientTape() as tape:
            loss = _loss(fn, x)
        results.append([loss.numpy()] + [g.numpy() for g in tape.gradient(loss, [x, w])])
    for plain, rematted in zip(*results):
        np.testing.assert_allclose(rematted, plain, rtol=1e-12)


def test_the_tape_keeps_one_node_and_no_intermediate_values():
    x = _f64(np.linspace(-1.0, 1.0, 6))
    kept = []

    def f(a):
        h = a
        for _ in range(10):
            h = ops.tanh(h) * 1.5
            kept.append(weakref.ref(h))
        return h

    with GradientTape() as plain_tape:
        ops.sum(f(x))
    assert len(plain_tape._records) == 21  # 10 x (tanh, multiply) + the sum
    assert sum(r() is not None for r in kept) == 10  # the tape holds the intermediates
    del plain_tape
    kept.clear()
    with GradientTape() as tape:
        y = ops.sum(kerasrs.remat(f)(x))
    assert len(tape._records) == 3  # the token node, the output node, the sum
    assert kept[-1]() is not None  # the output
    assert all(r() is None for r in kept[:-1])  # intermediates were freed after the forward run
    g = tape.gradient(y, x)
    with GradientTape() as check:
        y2 = ops.sum(f(x))
    np.testing.assert_allclose(g.numpy(), check.gradient(y2, x).numpy(), rtol=1e-12)


def test_the_function_runs_again_only_in_the_backward_pass():
    calls = []

    def f(a):
        calls.append(1)
        return ops.square(a)

    x = _f64([1.0, 2.0])
    fn = kerasrs.remat(f)
    fn(x)  # no tape: plain call
    assert len(calls) == 1
    with GradientTape() as tape:
        y = ops.sum(fn(x))
    assert len(calls) == 2
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [2.0, 4.0])
    assert len(calls) == 3


def test_watched_tensors_from_the_closure_get_gradients():
    x = Tensor(np.array([1.0, 3.0]))
    c = Tensor(np.array([2.0, 5.0]))
    fn = kerasrs.remat(lambda a: a * c * c)
    with GradientTape() as tape:
        tape.watch([x, c])
        y = ops.sum(fn(x))
    gx, gc = tape.gradient(y, [x, c])
    np.testing.assert_allclose(gx.numpy(), [4.0, 25.0])
    np.testing.assert_allclose(gc.numpy(), [4.0, 30.0])


@pytest.mark.parametrize("seed", ["generator", None])
def test_the_recomputation_draws_the_same_random_numbers(seed):
    gen = kerasrs.random.SeedGenerator(7) if seed else None
    masks = []

    def f(a):
        mask = ops.cast(kerasrs.random.uniform(a.shape, seed=gen) > 0.5, a.dtype)
        masks.append(mask.numpy())
        return a * a * mask

    x = _f64(np.linspace(0.5, 3.0, 16))
    with GradientTape() as tape:
        y = ops.sum(kerasrs.remat(f)(x))
    g = tape.gradient(y, x).numpy()
    assert len(masks) == 2 and np.array_equal(masks[0], masks[1])
    np.testing.assert_allclose(g, 2 * x.numpy() * masks[0])
    if gen is not None:
        assert int(gen.state.numpy()[1]) == 1  # the recomputation did not advance it


def test_nested_remat_functions():
    x = _f64([0.2, -0.4])
    inner = kerasrs.remat(lambda a: ops.sin(a) * a)
    outer = kerasrs.remat(lambda a: ops.exp(inner(a)) + inner(a * 2.0))
    plain = lambda a: ops.exp(ops.sin(a) * a) + ops.sin(a * 2.0) * a * 2.0  # noqa: E731
    grads = []
    for fn in (outer, plain):
        with GradientTape() as tape:
            y = ops.sum(fn(x))
        grads.append(tape.gradient(y, x).numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


# -- RematScope on layers ----------------------------------------------------------------------
class _Counting:
    """Replaces `kerasrs.layers.remat.remat` (the name layers call) and records what it wraps."""

    def __init__(self, monkeypatch):
        self.wrapped = []
        original = remat_module.remat

        def counting(f):
            self.wrapped.append(f)
            return original(f)

        monkeypatch.setattr(remat_module, "remat", counting)


def test_remat_scope_modes_choose_the_calls_to_rematerialize(monkeypatch):
    counting = _Counting(monkeypatch)
    x = np.ones((4, 8), "float32")
    with kerasrs.RematScope(mode="list_of_layers", layer_names=["big"]):
        big, small = layers.Dense(3, name="big"), layers.Dense(3, name="small")
    with kerasrs.RematScope(mode="larger_than", output_size_threshold=20):
        wide, narrow = layers.Dense(6), layers.Dense(5)  # 24 and 20 output values
    with kerasrs.RematScope(mode="activations"):
        relu, linear = layers.Dense(2, activation="relu"), layers.Dense(2)
    with kerasrs.RematScope(mode="full"):
        with kerasrs.RematScope(mode=None):
            off = layers.Dense(2)
        full = layers.Dense(2)
    for layer in (big, small, wide, narrow, relu, linear, off, full):
        layer(x)
    names = [getattr(f, "__self__", None) for f in counting.wrapped]
    assert names == [big, wide, None, None, full]
    # the activations of `relu` and `linear` (Keras's `linear` for None) are wrapped alone
    assert counting.wrapped[2:4] == [relu.activation, linear.activation]
    assert full._remat_mode == kerasrs.layers.remat.RematMode("full", 1024, [])
    assert layers.Dense(2)._remat_mode is None


def test_rematerialized_call_outside_a_scope_is_the_call_itself():
    layer = layers.Dense(2)
    assert layer.rematerialized_call(layer.call, ops.ones((1, 3))) == layer.call


def test_invalid_remat_mode():
    with pytest.raises(ValueError, match="Invalid mode 'sometimes'"):
        kerasrs.RematScope(mode="sometimes")


def test_one_layer_name_as_a_string_is_that_name_not_its_letters():
    with kerasrs.RematScope(mode="list_of_layers", layer_names="dense"):
        dense, d = layers.Dense(2, name="dense"), layers.Dense(2, name="d")
    calls = []
    x = ops.ones((1, 3))
    for layer in (dense, d):
        wrapped = layer.rematerialized_call(layer.call, x)
        calls.append(wrapped != layer.call)
    assert calls == [True, False]


@pytest.mark.parametrize("kwargs,error,message", [
    ({"mode": "larger_than", "output_size_threshold": "big"}, ValueError, "int >= 0"),
    ({"mode": "larger_than", "output_size_threshold": -1}, ValueError, "int >= 0"),
    ({"mode": "list_of_layers", "layer_names": [layers.Dense]}, TypeError, "strings"),
])
def test_remat_scope_arguments_are_checked_when_made(kwargs, error, message):
    with pytest.raises(error, match=message):
        kerasrs.RematScope(**kwargs)


def test_remat_of_something_not_callable():
    with pytest.raises(TypeError, match="remat: `f` must be a function"):
        kerasrs.remat(None)


def _trained_weights(scope):
    kerasrs.utils.set_random_seed(3)
    with scope:
        model = kerasrs.Sequential([layers.Input((5,)), layers.Dense(8, activation="tanh"),
                                    layers.Dropout(0.3, seed=1), layers.BatchNormalization(),
                                    layers.Dense(1, activity_regularizer="l2")])
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(16, 5)).astype("float32"), rng.normal(size=(16, 1)).astype("float32")
    history = model.fit(x, y, batch_size=4, epochs=2, verbose=0, shuffle=False)
    return model.get_weights(), history.history["loss"]


def test_a_model_trains_alike_with_every_layer_rematerialized():
    """Dropout draws the same mask when recomputed, BatchNormalization's moving statistics and
    the activity regularizer's loss are updated once per step (not again by the recomputation)."""
    import contextlib

    plain_weights, plain_loss = _trained_weights(contextlib.nullcontext())
    remat_weights, remat_loss = _trained_weights(kerasrs.RematScope(mode="full"))
    np.testing.assert_allclose(remat_loss, plain_loss, rtol=1e-5)
    for a, b in zip(remat_weights, plain_weights):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
