"""`projection` and `packed_projection` (the fused Dense/EinsumDense op): values against plain
ops, float64 finite-difference gradients, and errors."""

import numpy as np
import pytest

from kerasrs import ops
from kerasrs.autodiff import GradientTape, Tensor, Variable
from kerasrs.ops import projection as projection_ops
from kerasrs.testing import check_gradients


@pytest.mark.parametrize("act", ["linear", "relu", "tanh"])
def test_projection_gradients(rng, act):
    x = rng.standard_normal((2, 3, 4))
    k = rng.standard_normal((4, 5))
    b = rng.standard_normal(5)
    check_gradients(lambda x, k, b: projection_ops.projection(x, k, b, activation=act), [x, k, b])
    check_gradients(lambda x, k: projection_ops.projection(x, k, activation=act), [x, k])


def test_projection_two_contracted_axes_gradients(rng):
    x, k = rng.standard_normal((3, 2, 4)), rng.standard_normal((2, 4, 5))
    check_gradients(lambda x, k: projection_ops.projection(x, k, n_in=2), [x, k])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("with_bias", [True, False])
def test_packed_projection_matches_separate_projections(rng, dtype, with_bias):
    x = rng.standard_normal((3, 5, 4)).astype(dtype)
    kernels = [rng.standard_normal(s).astype(dtype) for s in ((4, 2, 3), (4, 1), (4, 2, 2))]
    biases = [rng.standard_normal(s[1:]).astype(dtype) for s in ((4, 2, 3), (4, 1), (4, 2, 2))]
    got = projection_ops.packed_projection(x, kernels, biases if with_bias else None)
    parts = [ops.reshape(projection_ops.projection(x, k, b if with_bias else None),
                         (3, 5, -1)) for k, b in zip(kernels, biases)]
    expect = ops.concatenate(parts, axis=-1)
    assert got.shape == (3, 5, 11) and got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got.numpy(), expect.numpy(), rtol=1e-5, atol=1e-5)


def test_packed_projection_gradients(rng):
    x = rng.standard_normal((2, 3, 4))
    k1, k2 = rng.standard_normal((4, 2, 3)), rng.standard_normal((4, 5))
    b1, b2 = rng.standard_normal((2, 3)), rng.standard_normal(5)
    check_gradients(lambda x, k1, k2, b1, b2: projection_ops.packed_projection(
        x, [k1, k2], [b1, b2]), [x, k1, k2, b1, b2])
    check_gradients(lambda x, k1, k2: projection_ops.packed_projection(x, [k1, k2]), [x, k1, k2])


def test_packed_projection_gradients_only_where_asked(rng):
    x = Tensor(rng.standard_normal((3, 4)))
    k1, k2 = Variable(rng.standard_normal((4, 2))), Variable(rng.standard_normal((4, 3)),
                                                             trainable=False)
    with GradientTape() as tape:
        y = projection_ops.packed_projection(x, [k1, k2])
    g1, g2, gx = tape.gradient(y, [k1, k2, x])
    assert g2 is None and gx is None
    np.testing.assert_allclose(g1.numpy(), x.numpy().T @ np.ones((3, 2)))


def test_packed_projection_errors(rng):
    x = rng.standard_normal((3, 4))
    with pytest.raises(ValueError, match=r"input's last axis 4.*kernel shape \(5, 2\)"):
        projection_ops.packed_projection(x, [np.ones((4, 2)), np.ones((5, 2))])
    with pytest.raises(ValueError, match=r"width \[2, 3\]"):
        projection_ops.packed_projection(x, [np.ones((4, 2)), np.ones((4, 3))],
                                         [np.ones(2), np.ones(2)])
