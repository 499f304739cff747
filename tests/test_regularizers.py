"""Weight regularizers: values, gradients, defaults, get/serialize."""

import numpy as np
import pytest

import kerasrs
from kerasrs import regularizers
from kerasrs.testing import check_gradients

W = np.array([[0.5, -1.5], [2.0, -0.25]])


@pytest.mark.parametrize("regularizer, expected", [
    (regularizers.L1(), 0.01 * 4.25),
    (regularizers.L2(), 0.01 * (0.25 + 2.25 + 4.0 + 0.0625)),
    (regularizers.L1L2(l1=0.1, l2=0.2), 0.1 * 4.25 + 0.2 * 6.5625),
    (regularizers.L1L2(), 0.0),
    (regularizers.get("l1_l2"), 0.01 * 4.25 + 0.01 * 6.5625),
])
def test_penalty_values(regularizer, expected):
    value = regularizer(kerasrs.Tensor(W.astype("float32")))
    assert value.shape == () and value.dtype == np.float32
    assert float(value) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("regularizer", [regularizers.L1(0.3), regularizers.L2(0.3),
                                         regularizers.L1L2(0.2, 0.4)])
def test_penalty_gradients_float64(regularizer):
    check_gradients(regularizer, [W])


def test_l1_gradient_at_zero_is_zero_and_penalty_trains_a_variable():
    w = kerasrs.Variable(np.array([0.0, 2.0], "float32"))
    with kerasrs.GradientTape() as tape:
        penalty = regularizers.L1L2(l1=1.0, l2=1.0)(w)
    np.testing.assert_allclose(tape.gradient(penalty, w).numpy(), [0.0, 5.0])


def test_keras_defaults_and_names():
    assert regularizers.L1().get_config() == {"l1": 0.01}
    assert regularizers.L2().get_config() == {"l2": 0.01}
    assert regularizers.L1L2().get_config() == {"l1": 0.0, "l2": 0.0}
    assert type(regularizers.get("l2")) is regularizers.L2
    assert type(regularizers.get("L1")) is regularizers.L1
    assert regularizers.get(None) is None


def test_serialize_round_trip_in_keras_form():
    config = regularizers.serialize(regularizers.L2(0.5))
    assert config == {"module": "keras.regularizers", "class_name": "L2",
                      "config": {"l2": 0.5}, "registered_name": None}
    again = regularizers.deserialize(config)
    assert type(again) is regularizers.L2 and again.l2 == 0.5
    assert regularizers.get({"class_name": "L1L2", "config": {"l1": 0.1, "l2": 0.0}}).l1 == 0.1


def test_argument_errors():
    with pytest.raises(ValueError, match=r"Received: l1=-0\.1"):
        regularizers.L1(-0.1)
    with pytest.raises(ValueError, match="l2"):
        regularizers.L2("big")
    with pytest.raises(ValueError, match="Received: 'l3'"):
        regularizers.get("l3")
