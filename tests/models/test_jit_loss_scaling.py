"""compile(jit_compile=True) under the 'mixed_float16' policy: the LossScaleOptimizer that
compile() adds replays its dynamic loss scaling in the graph (an all-finite reduction and
where() updates, no branch) and gives eager training's weights, loss scale, step counter and
iterations bit for bit, steps skipped for float16 overflow included."""

import warnings

import numpy as np
import pytest

import kerasrs
from kerasrs import graph, layers, losses, optimizers

rng = np.random.default_rng(1)
X = rng.normal(size=(96, 12)).astype("float32")
Y = rng.integers(0, 3, 96)
LOGITS = losses.SparseCategoricalCrossentropy(from_logits=True)


@pytest.fixture(autouse=True)
def mixed_float16():
    kerasrs.mixed_precision.set_global_policy("mixed_float16")
    yield
    kerasrs.dtype_policies.set_dtype_policy(None)


def _mlp():
    return kerasrs.Sequential([layers.Input((12,)), layers.Dense(16), layers.BatchNormalization(),
                               layers.Activation("relu"), layers.Dropout(0.3), layers.Dense(3)])


def _train(jit_compile, optimizer, x, epochs=2, make=_mlp):
    kerasrs.utils.set_random_seed(3)
    model = make()
    model.compile(optimizer(), LOGITS, jit_compile=jit_compile)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = model.fit(x, Y, batch_size=16, epochs=epochs, shuffle=False, verbose=0)
    return model, history.history, [str(w.message) for w in caught
                                     if issubclass(w.category, RuntimeWarning)]


def _assert_same(optimizer, x, epochs=2, make=_mlp):
    eager, want, eager_warned = _train(False, optimizer, x, epochs, make)
    replayed, got, warned = _train(True, optimizer, x, epochs, make)
    assert isinstance(replayed.optimizer, optimizers.LossScaleOptimizer)
    assert not replayed._jit.eager and any(k[0] == "train" for k in replayed._jit.entries)
    for a, b in zip(eager.weights + eager.optimizer.variables,
                    replayed.weights + replayed.optimizer.variables):
        np.testing.assert_array_equal(b.numpy(), a.numpy(), err_msg=a.path)
    np.testing.assert_array_equal(got["loss"], want["loss"])
    assert warned == eager_warned
    return replayed


def _overflowing(rows):
    """X with ``rows`` multiplied by 3000: finite float32 data whose float16 gradients overflow
    at a large loss scale (a data check would send a batch holding inf or NaN to eager)."""
    x = X.copy()
    x[rows] *= 3000.0
    return x


OPTIMIZERS = {
    "adam+schedule": lambda: optimizers.LossScaleOptimizer(
        optimizers.Adam(optimizers.schedules.ExponentialDecay(0.01, 3, 0.5)),
        dynamic_growth_steps=2),
    "sgd-momentum": lambda: optimizers.LossScaleOptimizer(
        optimizers.SGD(0.05, momentum=0.9, nesterov=True), initial_scale=2.0 ** 20,
        dynamic_growth_steps=3),
    "nadam-ema": lambda: optimizers.LossScaleOptimizer(
        optimizers.Nadam(0.01, use_ema=True, ema_overwrite_frequency=4),
        dynamic_growth_steps=2),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_skipped_steps_scale_and_iterations_replay_as_eagerly(name):
    """Batches 1, 2 and 4 of 6 overflow: they are skipped (the inner optimizer's iterations,
    its bias correction and schedule, its slots and EMA stay put), the scale halves on each
    and doubles after ``dynamic_growth_steps`` good steps in a row."""
    model = _assert_same(OPTIMIZERS[name], _overflowing([20, 40, 70]))
    opt = model.optimizer
    assert int(opt.iterations.numpy()) < 12  # some of the 12 steps were skipped
    assert float(opt.dynamic_scale.numpy()) != opt.initial_scale


def test_compile_wraps_the_optimizer_and_a_replay_matches_eager_without_overflow():
    model = _assert_same(lambda: "adam", X)
    assert int(model.optimizer.iterations.numpy()) == 12
    entry = next(e for k, e in model._jit.entries.items() if k[0] == "train")
    ops_used = {n.op for n in entry.traced.nodes}
    assert {"isfinite", "min", "where"} <= ops_used  # the skip as data, not as a branch


def test_every_step_skipped_at_the_floor_warns_as_eagerly():
    """All steps overflow (float16 activations): the scale falls to its floor and stays; the
    replayed fit gives the eager warning (from the host, one step later)."""
    x = X * 1e30
    model = _assert_same(lambda: optimizers.LossScaleOptimizer(optimizers.SGD(0.1),
                                                              initial_scale=4.0), x, epochs=1)
    assert int(model.optimizer.iterations.numpy()) == 0
    assert float(model.optimizer.dynamic_scale.numpy()) == 1.0


def test_updates_if_makes_a_blocks_updates_conditional():
    """`kerasrs.graph.updates_if`: ``where(condition, new, old)`` for each update declared in
    its block (`graph.assign` and ``Variable.assign``); updates outside it stay plain."""
    v, u = (kerasrs.Variable(np.zeros(3, "float32")) for _ in range(2))
    w = kerasrs.Variable(np.ones((), "float32"))

    def step(x):
        ok = kerasrs.ops.min(kerasrs.ops.isfinite(x))
        graph.assign(w, w * 3.0)
        with graph.updates_if(ok):
            graph.assign(v, v + x)
            u.assign_add(x)
        return {"ok": ok}

    program = graph.compile(graph.trace(step, np.zeros(3, "float32")))
    program(x=np.array([1, 2, 3], "float32"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        program(x=np.array([1, np.inf, 3], "float32"))
    for var in (v, u):
        np.testing.assert_array_equal(var.numpy(), [1, 2, 3])
    assert float(w.numpy()) == 9.0
    with pytest.raises(RuntimeError, match="only valid inside"):
        with graph.updates_if(True):
            pass


def test_auto_replays_loss_scaling_instead_of_falling_back():
    x = X.copy()
    x[16:32] *= 1e30  # batch 1: inf in float16, skipped
    kerasrs.config.enable_auto_jit_compile()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            model, _, _ = _train("auto", lambda: "adam", x, epochs=1)
    finally:
        kerasrs.config.disable_auto_jit_compile()
    assert not model._jit.eager and int(model.optimizer.iterations.numpy()) == 5
