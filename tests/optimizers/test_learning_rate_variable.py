"""``optimizer.learning_rate`` as Keras 3 has it: the ``learning_rate`` Variable (or, with a
schedule, the current rate as a Tensor), assignable, readable, saved; bad rates rejected."""

import math

import numpy as np
import pytest

import kerasrs
from kerasrs import layers, optimizers

EXTRA = {"AdamW": {"weight_decay": 0.1}, "SGD": {"momentum": 0.5}}


def _var(value, name="kernel"):
    v = kerasrs.Variable(np.array(value, "float32"), name=name)
    v.path = f"sequential/dense/{name}"
    return v


def _train(opt, steps=3):
    w = _var([[1.0, -2.0], [0.5, 3.0]])
    for _ in range(steps):
        opt.apply([np.asarray(2.0 * w.data - 0.1, "float32")], [w])
    return w.numpy()


@pytest.mark.parametrize("cls", optimizers.ALL_OBJECTS, ids=lambda c: c.__name__)
def test_learning_rate_is_the_variable_and_assign_changes_the_updates(cls):
    extra = EXTRA.get(cls.__name__, {})
    opt = cls(learning_rate=0.01, **extra)
    lr = opt.learning_rate
    assert isinstance(lr, kerasrs.Variable) and lr is opt.variables[1]
    assert lr.path == f"{opt.name}/learning_rate" and not lr.trainable and lr.dtype == "float32"
    assert float(lr) == pytest.approx(0.01) and lr.numpy() == np.float32(0.01)
    lr.assign(0.03)
    assert float(opt.learning_rate) == pytest.approx(0.03)
    reference = _train(cls(learning_rate=0.03, **extra))
    np.testing.assert_array_equal(_train(opt), reference)
    again = cls(learning_rate=0.01, **extra)
    again.learning_rate = 0.03  # the setter assigns into the same variable
    assert again.learning_rate is again.variables[1]
    np.testing.assert_array_equal(_train(again), reference)
    assert again.get_config()["learning_rate"] == pytest.approx(0.03)
    assert [v.path for v in again.variables][:2] == [f"{again.name}/iteration",
                                                     f"{again.name}/learning_rate"]


@pytest.mark.parametrize("name", sorted(optimizers.schedules.ALL_SCHEDULES))
def test_schedules_give_the_current_rate_as_a_tensor(name):
    configs = {"ExponentialDecay": (0.1, 2, 0.5), "InverseTimeDecay": (0.1, 2, 0.5),
               "PolynomialDecay": (0.1, 4), "CosineDecay": (0.1, 4),
               "CosineDecayRestarts": (0.1, 4), "PiecewiseConstantDecay": ([2], [0.1, 0.01])}
    schedule = optimizers.schedules.ALL_SCHEDULES[name](*configs[name])
    opt = optimizers.SGD(schedule)
    assert [v.path for v in opt.variables] == ["sgd/iteration"]
    w = _var([1.0, 2.0])
    for step in range(4):
        lr = opt.learning_rate
        assert isinstance(lr, kerasrs.Tensor) and not isinstance(lr, kerasrs.Variable)
        assert float(lr) == pytest.approx(schedule(step), rel=1e-6)
        before = w.numpy().copy()
        opt.apply([np.ones(2, "float32")], [w])
        np.testing.assert_allclose(before - w.numpy(), float(lr), rtol=1e-5)
    with pytest.raises(TypeError, match="not settable"):
        opt.learning_rate = 0.1


def test_callable_learning_rate_reads_as_a_tensor():
    opt = optimizers.SGD(lambda: 0.25)
    assert float(opt.learning_rate) == 0.25 and opt.learning_rate.numpy() == np.float32(0.25)


@pytest.mark.parametrize("bad", [-0.001, math.nan, math.inf, -math.inf])
def test_negative_or_non_finite_learning_rates_are_rejected(bad):
    for cls in optimizers.ALL_OBJECTS:
        with pytest.raises(ValueError, match=r"learning_rate must be a finite number >= 0"):
            cls(learning_rate=bad, **EXTRA.get(cls.__name__, {}))
    opt = optimizers.Adam(0.01)
    with pytest.raises(ValueError, match="finite number >= 0"):
        opt.learning_rate = bad
    assert float(opt.learning_rate) == pytest.approx(0.01)
    assert optimizers.SGD(0.0).get_config()["learning_rate"] == 0.0


def test_learning_rate_from_another_optimizer_and_repr():
    first = optimizers.Adam(0.02)
    second = optimizers.Adam(first.learning_rate)
    assert second.learning_rate is not first.learning_rate
    assert float(second.learning_rate) == pytest.approx(0.02)
    assert repr(second) == "<Adam name=adam learning_rate=0.02>"


def test_assigned_rate_and_iterations_survive_save_and_load(tmp_path):
    kerasrs.utils.clear_session()
    model = kerasrs.Sequential([layers.Input((2,)), layers.Dense(1)])
    model.compile(optimizers.Adam(0.01), "mse")
    x, y = np.ones((4, 2), "float32"), np.zeros((4, 1), "float32")
    model.fit(x, y, batch_size=2, verbose=0)
    model.optimizer.learning_rate.assign(0.005)
    model.save(tmp_path / "m.keras")
    loaded = kerasrs.models.load_model(tmp_path / "m.keras")
    assert float(loaded.optimizer.learning_rate) == pytest.approx(0.005)
    assert int(loaded.optimizer.iterations.numpy()) == 2
    model.fit(x, y, batch_size=2, verbose=0, shuffle=False)
    loaded.fit(x, y, batch_size=2, verbose=0, shuffle=False)
    for a, b in zip(model.get_weights(), loaded.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6)
