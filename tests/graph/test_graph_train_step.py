"""A whole training step built with kerasrs.graph (forward, loss, gradients, the optimizer's
update as graph nodes from its rule in kerasrs.optimizers.graph_rules), replayed for 20 steps,
gives the weights and optimizer state of eager training with fit: float64 within 1e-12,
float32 within 1e-6 relative (the arithmetic is the same, so in practice they agree to the last
bit or nearly). Every optimizer with a rule and every option of the base class is covered."""

import numpy as np
import pytest

import kerasrs
from kerasrs import graph, layers, losses, optimizers

STEPS, BATCH = 20, 32
schedules = optimizers.schedules

OPTIMIZERS = {
    "sgd": lambda: optimizers.SGD(0.1),
    "sgd_nesterov": lambda: optimizers.SGD(0.05, momentum=0.9, nesterov=True),
    "adam": lambda: optimizers.Adam(0.01),
    "adam_amsgrad": lambda: optimizers.Adam(0.02, beta_1=0.8, amsgrad=True),
    "adamw": lambda: optimizers.AdamW(0.01, weight_decay=0.05),
    "rmsprop": lambda: optimizers.RMSprop(0.01),
    "rmsprop_centered_momentum": lambda: optimizers.RMSprop(0.01, momentum=0.5, centered=True),
    "adagrad": lambda: optimizers.Adagrad(0.1),
    "adamax": lambda: optimizers.Adamax(0.01),
    "lion": lambda: optimizers.Lion(0.003),
    "nadam": lambda: optimizers.Nadam(0.01),
    "sgd_weight_decay_clipnorm": lambda: optimizers.SGD(0.1, weight_decay=0.01, clipnorm=0.5),
    "adam_global_clipnorm": lambda: optimizers.Adam(0.01, global_clipnorm=0.3),
    "rmsprop_clipvalue": lambda: optimizers.RMSprop(0.01, clipvalue=0.01),
    "sgd_loss_scale_factor": lambda: optimizers.SGD(0.1, loss_scale_factor=128.0),
    "adam_ema": lambda: optimizers.Adam(0.01, use_ema=True, ema_momentum=0.9,
                                        ema_overwrite_frequency=7),
    "adam_schedule": lambda: optimizers.Adam(schedules.ExponentialDecay(0.02, 5, 0.5)),
    "sgd_cosine_schedule": lambda: optimizers.SGD(schedules.CosineDecay(0.1, 20)),
}


def _mlp(dtype):
    return kerasrs.Sequential([
        layers.Input((20,), dtype=dtype), layers.Dense(32, activation="relu", dtype=dtype),
        layers.Dense(16, activation="tanh", dtype=dtype), layers.Dense(5, dtype=dtype)])


def _twins(dtype):
    eager, replayed = _mlp(dtype), _mlp(dtype)
    for a, b in zip(eager.weights, replayed.weights):
        b.assign(a.numpy())
    return eager, replayed


def _data(dtype, one_hot=False):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(STEPS * BATCH, 20)).astype(dtype)
    y = rng.integers(0, 5, STEPS * BATCH)
    return x, (np.eye(5, dtype=dtype)[y] if one_hot else y)


def _replay(model, optimizer, loss, x, y):
    program = graph.compile(graph.trace_train_step(model, optimizer, loss,
                                                   (x[:BATCH], y[:BATCH])))
    step_losses = [program(x=x[k * BATCH:(k + 1) * BATCH], y=y[k * BATCH:(k + 1) * BATCH],
                           **graph.hyper_feeds(optimizer))["loss"].numpy()
                   for k in range(STEPS)]
    optimizer.finalize_variable_values(model.trainable_weights)  # as fit ends (EMA)
    return program, step_losses


def _assert_same_state(eager, replayed, opt_eager, opt_replayed, dtype):
    tolerance = {"rtol": 1e-12, "atol": 1e-12} if dtype == "float64" else \
        {"rtol": 1e-6, "atol": 1e-7}
    pairs = list(zip(eager.weights, replayed.weights)) + \
        list(zip(opt_eager.variables, opt_replayed.variables))
    for a, b in pairs:
        np.testing.assert_allclose(b.numpy(), a.numpy(), err_msg=a.path, **tolerance)
    assert int(opt_replayed.iterations.numpy()) == STEPS


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_replayed_training_matches_fit(name, dtype):
    eager, replayed = _twins(dtype)
    opt_eager, opt_replayed = OPTIMIZERS[name](), OPTIMIZERS[name]()
    loss = losses.SparseCategoricalCrossentropy(from_logits=True)
    x, y = _data(dtype)
    eager.compile(opt_eager, loss)
    history = eager.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    _, step_losses = _replay(replayed, opt_replayed, loss, x, y)
    _assert_same_state(eager, replayed, opt_eager, opt_replayed, dtype)
    np.testing.assert_allclose(np.mean(step_losses), history.history["loss"][0], rtol=1e-6)
    assert not np.allclose(replayed.weights[0].numpy(), _mlp(dtype).weights[0].numpy())


def test_the_adam_step_updates_every_variable_in_place_with_fused_kernels():
    _, model = _twins("float32")
    optimizer = optimizers.Adam(0.01)
    x, y = _data("float32")
    program, _ = _replay(model, optimizer, losses.SparseCategoricalCrossentropy(True), x, y)
    plan = program.plan_for(x=x[:BATCH], y=y[:BATCH], **graph.hyper_feeds(optimizer))
    in_place = {program.graph.nodes[i].op for g in plan.groups for i in g.outputs
                if plan.storage[i][0] == "param"}
    written = [s[1] for g in plan.groups for i, s in ((i, plan.storage[i]) for i in g.outputs)
               if s[0] == "param"]
    trained = {v.path for v in model.trainable_weights}
    slots = {v.path for v in optimizer.variables} - {"adam/iteration", "adam/learning_rate"}
    assert set(written) == trained | slots
    assert in_place == {"subtract", "add"}
    assert all(len(g.members) == 12 for g in plan.groups)  # m, v and w of one variable


def test_categorical_crossentropy_on_one_hot_targets_matches_too():
    eager, replayed = _twins("float64")
    opt_eager, opt_replayed = optimizers.Adam(0.01), optimizers.Adam(0.01)
    loss = losses.CategoricalCrossentropy(from_logits=True)
    x, y = _data("float64", one_hot=True)
    eager.compile(opt_eager, loss)
    eager.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    _replay(replayed, opt_replayed, loss, x, y)
    _assert_same_state(eager, replayed, opt_eager, opt_replayed, "float64")


def test_a_schedule_is_an_input_not_a_constant():
    model = _mlp("float32")
    optimizer = optimizers.SGD(schedules.ExponentialDecay(0.1, 10, 0.5))
    traced = graph.trace_train_step(model, optimizer, losses.MeanSquaredError(),
                                    (((BATCH, 20), "float32"), ((BATCH, 5), "float32")))
    assert "hyper/learning_rate" in traced.input_ids()
    assert graph.hyper_feeds(optimizer)["hyper/learning_rate"] == np.float64(0.1)


def test_optimizers_without_a_graph_rule_are_refused_by_name():
    model = _mlp("float32")
    with pytest.raises(NotImplementedError, match="no graph update rule for optimizer Ftrl"):
        graph.trace_train_step(model, optimizers.Ftrl(0.01), losses.MeanSquaredError(),
                               (((BATCH, 20), "float32"), ((BATCH, 5), "float32")))
