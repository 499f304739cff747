"""Initializers: Keras names, formulas, fans, defaults, seeding and serialization."""

import numpy as np
import pytest

import kerasrs
from kerasrs import initializers


@pytest.mark.parametrize("shape, fans", [
    ((), (1, 1)), ((7,), (7, 7)), ((3, 5), (3, 5)),
    ((3, 3, 4, 8), (3 * 3 * 4, 3 * 3 * 8)),  # Conv2D kernel: receptive field 9
    ((5, 2, 6), (10, 30)),  # Conv1D kernel
])
def test_fans_as_keras_computes_them(shape, fans):
    assert initializers.compute_fans(shape) == fans


def test_constant_family():
    assert initializers.get("zeros")((2, 2)).sum() == 0
    assert initializers.get("ones")((2, 3)).sum() == 6
    assert initializers.Constant(2.5)((3,), dtype="float64").tolist() == [2.5] * 3
    assert initializers.get("ones")((2,)).dtype == np.float32


@pytest.mark.parametrize("name, scale, mode, dist", [
    ("glorot_uniform", 1.0, "fan_avg", "uniform"), ("glorot_normal", 1.0, "fan_avg", "tn"),
    ("he_uniform", 2.0, "fan_in", "uniform"), ("he_normal", 2.0, "fan_in", "tn"),
    ("lecun_uniform", 1.0, "fan_in", "uniform"), ("lecun_normal", 1.0, "fan_in", "tn"),
])
def test_variance_scaling_presets_have_keras_variance(name, scale, mode, dist):
    shape = (400, 300)
    fan_in, fan_out = shape
    n = {"fan_in": fan_in, "fan_avg": (fan_in + fan_out) / 2}[mode]
    w = initializers.get(name)(shape, dtype="float64")
    assert w.var() == pytest.approx(scale / n, rel=0.03)
    if dist == "uniform":
        limit = np.sqrt(3 * scale / n)
        assert np.abs(w).max() <= limit and np.abs(w).max() > 0.99 * limit
    else:  # truncated at two (pre-correction) standard deviations
        assert np.abs(w).max() <= 2 * np.sqrt(scale / n) / 0.87962566103423978


def test_variance_scaling_untruncated_and_conv_fans():
    w = initializers.VarianceScaling(2.0, "fan_out", "untruncated_normal", seed=3)((3, 3, 16, 64))
    assert w.var() == pytest.approx(2.0 / (9 * 64), rel=0.05)


def test_random_defaults_match_keras():
    w = initializers.get("random_normal")((200, 200), dtype="float64")
    assert w.std() == pytest.approx(0.05, rel=0.02) and abs(w.mean()) < 0.002
    u = initializers.get("random_uniform")((200, 200))
    assert u.min() >= -0.05 and u.max() <= 0.05
    t = initializers.TruncatedNormal(mean=1.0, stddev=0.1, seed=0)((1000,))
    assert t.min() >= 0.8 and t.max() <= 1.2


def test_seeded_initializers_repeat_and_global_seed_reproduces():
    init = initializers.GlorotUniform(seed=7)
    assert np.array_equal(init((3, 4)), init((3, 4)))
    kerasrs.utils.set_random_seed(11)
    a = kerasrs.layers.Dense(4)
    a.build((None, 3))
    first = initializers.get("glorot_uniform")((3, 4))
    kerasrs.utils.set_random_seed(11)
    b = kerasrs.layers.Dense(4)
    b.build((None, 3))
    assert np.array_equal(a.kernel.numpy(), b.kernel.numpy())
    assert np.array_equal(first, initializers.get("glorot_uniform")((3, 4)))
    assert not np.array_equal(first, initializers.get("glorot_uniform")((3, 4)))


def test_orthogonal_and_identity():
    q = initializers.Orthogonal(gain=2.0, seed=1)((6, 4), dtype="float64")
    np.testing.assert_allclose(q.T @ q, 4.0 * np.eye(4), atol=1e-12)
    q = initializers.Orthogonal(seed=1)((3, 5), dtype="float64")
    np.testing.assert_allclose(q @ q.T, np.eye(3), atol=1e-12)
    assert initializers.get("identity")((2, 3)).tolist() == [[1, 0, 0], [0, 1, 0]]
    with pytest.raises(ValueError, match="2-D"):
        initializers.Identity()((2, 2, 2))


def test_get_serialize_deserialize():
    init = initializers.VarianceScaling(scale=2.0, mode="fan_out", distribution="uniform", seed=3)
    config = initializers.serialize(init)
    assert config == {"module": "keras.initializers", "class_name": "VarianceScaling",
                      "config": {"scale": 2.0, "mode": "fan_out", "distribution": "uniform",
                                 "seed": 3, "input_axes": None, "output_axes": None},
                      "registered_name": None}  # Keras 3.15's keys
    clone = initializers.get(config)
    assert np.array_equal(clone((4, 4)), init((4, 4)))
    assert initializers.serialize(initializers.get("glorot_uniform"))["class_name"] == \
        "GlorotUniform"
    assert isinstance(initializers.get("GlorotUniform"), initializers.GlorotUniform)
    assert isinstance(initializers.get({"class_name": "Zeros", "config": {}}), initializers.Zeros)
    with pytest.raises(ValueError, match="Unknown initializer 'glorot'"):
        initializers.get("glorot")
    with pytest.raises(ValueError, match="mode"):
        initializers.VarianceScaling(mode="fan_sum")
