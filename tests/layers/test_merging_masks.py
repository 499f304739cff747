"""Masks in the elementwise merges (Keras's rules): masked steps count as 1 in `Multiply` and
never win in `Maximum`/`Minimum`; steps masked in every input come out 0 / as the first input."""

import numpy as np
import pytest

from kerasrs import layers


def _masked(values):
    return layers.Masking()(np.array(values, "float32"))


A = [[[0, 0], [1, 2], [0, 0], [3, 4]]]
B = [[[0, 0], [0, 0], [1, 2], [3, 4]]]


def test_multiply_treats_masked_steps_as_one():
    out = layers.Multiply()([_masked(A), np.array(B, "float32")])
    np.testing.assert_allclose(out.numpy(), [[[0, 0], [0, 0], [1, 2], [9, 16]]])
    assert getattr(out, "_keras_mask", None) is None
    out = layers.Multiply()([_masked(A), _masked(B)])
    np.testing.assert_allclose(out.numpy(), [[[0, 0], [1, 2], [1, 2], [9, 16]]])
    np.testing.assert_array_equal(np.asarray(out._keras_mask), [[False, True, True, True]])


@pytest.mark.parametrize("layer, sign", [(layers.Maximum, -1.0), (layers.Minimum, 1.0)])
def test_extrema_ignore_masked_steps(layer, sign):
    a, b = np.array(A) * sign, np.array(B) * sign
    out = layer()([_masked(a), _masked(b)])
    np.testing.assert_allclose(out.numpy(), np.array([[[0, 0], [1, 2], [1, 2], [3, 4]]]) * sign)
    np.testing.assert_array_equal(np.asarray(out._keras_mask), [[False, True, True, True]])
