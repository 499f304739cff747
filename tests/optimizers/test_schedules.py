"""Learning-rate schedules: values against Keras 3, config round trips, argument checks."""

import json
import pathlib

import numpy as np
import pytest

import kerasrs
from kerasrs.optimizers import schedules

REF = np.load(pathlib.Path(__file__).parents[1] / "fixtures" / "keras_reference.npz")
CONFIGS = json.loads(str(REF["sched/configs"]))


@pytest.mark.parametrize("key", sorted(CONFIGS))
def test_schedule_values_match_keras_3(key):
    class_name, config = CONFIGS[key]
    schedule = getattr(schedules, class_name)(**config)
    got = [schedule(step) for step in range(13)]
    assert all(isinstance(v, float) for v in got)
    np.testing.assert_allclose(got, REF[f"sched/{key}"], rtol=1e-6, atol=1e-9)


def test_schedules_accept_a_step_variable():
    step = kerasrs.Variable(np.int64(4), dtype="int64")
    assert schedules.ExponentialDecay(1.0, 2, 0.5)(step) == pytest.approx(0.25)


def test_piecewise_boundaries_are_inclusive_on_the_left_value():
    s = schedules.PiecewiseConstantDecay([2, 5], [1.0, 0.5, 0.1])
    assert [s(i) for i in (0, 2, 3, 5, 6)] == [1.0, 1.0, 0.5, 0.5, 0.1]


def test_cosine_warmup_rises_linearly_then_decays_to_alpha():
    s = schedules.CosineDecay(0.0, 10, alpha=0.1, warmup_target=1.0, warmup_steps=4)
    assert [s(i) for i in range(5)] == pytest.approx([0.0, 0.25, 0.5, 0.75, 1.0])
    assert s(14) == pytest.approx(0.1) and s(100) == pytest.approx(0.1)


@pytest.mark.parametrize("schedule", [
    schedules.ExponentialDecay(0.1, 3, 0.5, staircase=True),
    schedules.PiecewiseConstantDecay([10], [0.1, 0.01]),
    schedules.InverseTimeDecay(0.1, 2, 0.5),
    schedules.PolynomialDecay(0.1, 8, cycle=True),
    schedules.CosineDecay(0.1, 8, warmup_target=0.2, warmup_steps=2),
])
def test_serialize_round_trip(schedule):
    again = schedules.deserialize(schedules.serialize(schedule))
    assert type(again) is type(schedule) and again.get_config() == schedule.get_config()
    assert [again(i) for i in range(10)] == [schedule(i) for i in range(10)]
    assert schedules.get(schedules.serialize(schedule)).get_config() == schedule.get_config()


def test_argument_checks():
    with pytest.raises(ValueError, match="decay_steps=0"):
        schedules.ExponentialDecay(0.1, 0, 0.5)
    with pytest.raises(ValueError, match="one more value"):
        schedules.PiecewiseConstantDecay([1, 2], [0.1])
    with pytest.raises(ValueError, match="strictly increasing"):
        schedules.PiecewiseConstantDecay([2, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="unknown schedule"):
        schedules.deserialize({"class_name": "Nope", "config": {}})
