"""Dropout masks come from Philox4x32-10 keyed by the layer's seed: NumpyBackend's compiled
version gives the twin's bits, a seed gives the same masks in every run (and so on CuPy, whose
kernel gives the same bits: tests/cuda/test_kernels_gpu.py), successive calls differ."""

import numpy as np
import pytest

import kerasrs
from kerasrs import layers
from kerasrs.backend import base
from kerasrs.backend.numpy_backend import NumpyBackend


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("shape", [(1,), (3, 5), (2, 3, 167)])
def test_numpy_backend_mask_is_the_twins_bits(dtype, shape):
    be = NumpyBackend()
    for rate, seed, offset in ((0.0, 0, 0), (0.3, 99, 1), (0.9, 2 ** 64 - 1, 2 ** 63 + 7)):
        got = be.dropout_mask(shape, rate, seed, offset, dtype)
        want = base.Backend.dropout_mask(be, shape, rate, seed, offset, dtype)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_mask_statistics():
    m = NumpyBackend().dropout_mask((200_000,), 0.3, 5, 0)
    assert set(np.unique(m)) == {0.0, np.float32(1 / 0.7)}
    assert abs((m == 0).mean() - 0.3) < 0.005


def _masks(seed, calls=2):
    layer = layers.Dropout(0.5, seed=seed)
    x = np.ones((4, 64), "float32")
    return [layer(x, training=True).numpy() for _ in range(calls)]


def test_a_seed_gives_the_same_masks_and_calls_differ():
    a, b = _masks(7), _masks(7)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], a[1])  # the counter moves on with each call
    assert not np.array_equal(a[0], _masks(8)[0])


def test_unseeded_layers_follow_set_random_seed():
    kerasrs.utils.set_random_seed(3)
    a = _masks(None)
    kerasrs.utils.set_random_seed(3)
    b = _masks(None)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
