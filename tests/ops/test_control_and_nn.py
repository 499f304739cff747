"""Forward and float64 gradient checks for kerasrs/ops/control.py and the smaller ``ops.nn``
functions (sparsemax, multi_hot, psnr, depth/space rearrangements, rms_normalization...)."""

import numpy as np
import pytest

from kerasrs import ops
from kerasrs.ops import nn
from kerasrs.testing import check_gradients

RNG = np.random.default_rng(1)
X = RNG.normal(size=(3, 4))

GRADIENT_TESTED = {"cond", "switch", "fori_loop", "while_loop", "scan", "map", "vectorized_map",
                   "associative_scan", "slice", "slice_update", "scatter", "scatter_update",
                   "segment_sum", "segment_max", "segment_min", "segment_prod", "nan_to_num",
                   "sparsemax", "psnr", "depth_to_space", "space_to_depth", "rms_normalization",
                   "dot_product_attention", "batch_normalization", "layer_normalization",
                   "moments"}
NON_DIFFERENTIABLE = {"multi_hot": "0/1 encoding of integer ids"}


def test_control_flow_forward_and_gradients():
    check_gradients(lambda x: ops.cond(True, lambda: x * 2, lambda: x), [X])
    check_gradients(lambda x: ops.switch(1, [lambda v: v, lambda v: v * v], x), [X])
    check_gradients(lambda x: ops.fori_loop(0, 3, lambda i, v: v * x, x), [X])
    check_gradients(lambda x: ops.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, v * x),
                                             (0, x))[1], [X])
    carry, ys = ops.scan(lambda c, r: (c + r, c * r), np.zeros(4), X)
    np.testing.assert_allclose(carry.numpy(), X.sum(0))
    check_gradients(lambda x: ops.scan(lambda c, r: (c + r, c * r), x[0], x)[1], [X])
    np.testing.assert_allclose(ops.map(lambda r: ops.sum(r), X).numpy(), X.sum(1))
    check_gradients(lambda x: ops.map(lambda r: r * r, x), [X])
    check_gradients(lambda x: ops.vectorized_map(lambda r: ops.sum(r), x), [X])
    np.testing.assert_allclose(ops.associative_scan(ops.add, X, axis=1).numpy(), X.cumsum(1))
    check_gradients(lambda x: ops.associative_scan(ops.multiply, x), [X])


def test_structured_updates():
    np.testing.assert_allclose(ops.slice(X, (1, 1), (2, 2)).numpy(), X[1:3, 1:3])
    check_gradients(lambda x: ops.slice(x, (1, 1), (2, 2)), [X])
    want = X.copy()
    want[1:3, :2] = 7
    np.testing.assert_allclose(ops.slice_update(X, (1, 0), np.full((2, 2), 7.0)).numpy(), want)
    check_gradients(lambda x, u: ops.slice_update(x, (1, 0), u), [X, X[:2, :2]])
    np.testing.assert_allclose(ops.scatter([[0, 1], [2, 3], [0, 1]], [1.0, 2.0, 3.0],
                                           (3, 4)).numpy()[[0, 2], [1, 3]], [4.0, 2.0])
    check_gradients(lambda v: ops.scatter([[0], [2]], v, (3, 4)), [X[:2]])
    got = ops.scatter_update(X, [[0, 0], [2, 1]], [5.0, 6.0]).numpy()
    assert got[0, 0] == 5 and got[2, 1] == 6 and got[1, 1] == X[1, 1]
    check_gradients(lambda x, u: ops.scatter_update(x, [[0, 0], [2, 1]], u), [X, X[0, :2]])
    ids = [0, 0, 2]
    np.testing.assert_allclose(ops.segment_sum(X, ids).numpy(), [X[:2].sum(0), 0 * X[0], X[2]])
    np.testing.assert_allclose(ops.segment_max(X, ids).numpy()[0], X[:2].max(0))
    np.testing.assert_allclose(ops.segment_min(X, ids).numpy()[0], X[:2].min(0))
    np.testing.assert_allclose(ops.segment_prod(X, ids).numpy()[0], X[:2].prod(0))
    for fn in (ops.segment_sum, ops.segment_max, ops.segment_min, ops.segment_prod):
        check_gradients(lambda x: fn(x, [0, 0, 1], num_segments=2), [X])
    y = np.array([np.nan, np.inf, -np.inf, 1.5])
    np.testing.assert_allclose(ops.nan_to_num(y, posinf=9.0, neginf=-9.0).numpy(),
                               np.nan_to_num(y, posinf=9.0, neginf=-9.0))
    check_gradients(lambda x: ops.nan_to_num(x), [X])


def test_smaller_nn_ops():
    p = nn.sparsemax(np.array([[1.0, 2.0, 0.1], [0.5, 0.5, 0.5]])).numpy()
    np.testing.assert_allclose(p, [[0, 1, 0], [1 / 3, 1 / 3, 1 / 3]])
    check_gradients(lambda x: nn.sparsemax(x), [X * 0.3])
    np.testing.assert_array_equal(nn.multi_hot([[0, 2], [1, 1]], 3).numpy(), [[1, 0, 1], [0, 1, 0]])
    a, b = RNG.random((2, 4)), RNG.random((2, 4))
    np.testing.assert_allclose(nn.psnr(a, b, 1.0).numpy(), -10 * np.log10(((a - b) ** 2).mean()))
    check_gradients(lambda u: nn.psnr(u, b, 1.0), [a])
    img = RNG.normal(size=(1, 2, 2, 8))
    back = nn.space_to_depth(nn.depth_to_space(img, 2), 2).numpy()
    np.testing.assert_allclose(back, img)
    check_gradients(lambda u: nn.depth_to_space(u, 2), [img])
    check_gradients(lambda u: nn.space_to_depth(u, 2), [RNG.normal(size=(1, 4, 4, 1))])
    want = X / np.sqrt((X ** 2).mean(-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(nn.rms_normalization(X).numpy(), want)
    check_gradients(lambda u: nn.rms_normalization(u), [X])
    q = RNG.normal(size=(1, 3, 2, 4))
    check_gradients(lambda u: nn.dot_product_attention(u, u, u), [q])
    check_gradients(lambda u: nn.batch_normalization(u, 0.1, 2.0, -1), [X])
    check_gradients(lambda u: nn.layer_normalization(u), [X])
    check_gradients(lambda u: nn.moments(u, [0])[1], [X])


@pytest.mark.parametrize("op", [ops.segment_sum, ops.segment_max])
def test_segment_ops_reject_ids_of_the_wrong_length(op):
    with pytest.raises(ValueError, match=r"segment_ids.*data shape \(3,\), segment_ids shape \(2,\)"):
        op(np.ones(3), np.array([0, 1]), num_segments=2)


@pytest.mark.parametrize("op, shape", [("depth_to_space", (2, 3, 2, 8)),
                                       ("space_to_depth", (2, 4, 6, 3))])
def test_depth_space_channels_first_is_transposed_channels_last(op, shape):
    x = RNG.normal(size=shape)
    last = getattr(nn, op)(x, 2).numpy()
    first = getattr(nn, op)(x.transpose(0, 3, 1, 2), 2, data_format="channels_first").numpy()
    np.testing.assert_array_equal(first, last.transpose(0, 3, 1, 2))
