"""Ops on symbolic tensors whose shapes a probe on zeros cannot find (kerasrs.layers.op_shapes):
broadcasting against unknown axes, splits, linear algebra on singular zeros, value-dependent
sizes. Expected shapes are Keras 3's (``compute_output_spec``)."""

import numpy as np
import pytest

from kerasrs import layers, models, ops
from kerasrs.layers.node import SymbolicTensor as K


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "power", "maximum",
                                  "fmod", "arctan2", "greater", "not_equal", "logical_and",
                                  "logical_xor", "isclose", "divide_no_nan", "gcd", "bitwise_and",
                                  "bitwise_left_shift"])
def test_broadcast_against_unknown_axes(name):
    out = getattr(ops, name)(K((None, 3)), K((2, None)))
    assert out.shape == (2, 3)


def test_broadcast_dtypes_and_errors():
    assert ops.greater(K((None, 3)), K((2, None))).dtype == "bool"
    assert ops.add(K((None, 3), "int32"), K((2, None), "int32")).dtype == "int32"
    assert ops.bitwise_and(K((None, 3)), K((2, None))).dtype == "float32"  # as Keras
    assert ops.allclose(K((None, 3)), K((2, None))).shape == ()
    assert (K((None, 3)) + K((2, None))).shape == (2, 3)
    assert ops.where(K((2, None, 1)), K((None, 1)), K((None, 3))).shape == (2, None, 3)
    with pytest.raises(ValueError, match=r"add: .*Cannot broadcast shape.*\[2, 3\] and \[2, 3, 4"):
        ops.add(K((2, 3)), K((2, 3, 4)))


def test_splits():
    assert [t.shape for t in ops.split(K((None, 3, 3)), [1, 3], axis=1)] == \
        [(None, 1, 3), (None, 2, 3), (None, 0, 3)]
    assert [t.shape for t in ops.split(K((None, 3, 3)), 2)] == [(None, 3, 3)] * 2
    assert [t.shape for t in ops.array_split(K((8, 4)), 3)] == [(3, 4), (3, 4), (2, 4)]
    assert [t.shape for t in ops.hsplit(K((3, None, 3)), 3)] == [(3, None, 3)] * 3
    with pytest.raises(ValueError, match="equal sections"):
        ops.split(K((2, 3)), 2, axis=1)


def test_linalg_on_symbolic_matrices():
    assert ops.inv(K((None, 20, 20))).shape == (None, 20, 20)
    assert ops.cholesky(K((4, 3, 3))).shape == (4, 3, 3)
    assert ops.solve(K((None, 20, 20)), K((None, 20, 5))).shape == (None, 20, 5)
    assert ops.linalg.solve_triangular(K((4, 3, 3)), K((4, 3, 5))).shape == (4, 3, 5)
    assert [t.shape for t in ops.linalg.lu_factor(K((None, 4, 3)))] == [(None, 4, 3), (None, 3)]
    with pytest.raises(ValueError, match="square matrix"):
        ops.inv(K((None, 3, 4)))


def test_shapes_from_arguments():
    assert ops.segment_sum(K((None, 4)), K((10,), "int32")).shape == (None, 4)
    assert ops.segment_sum(K((None, 4)), K((10,), "int32"), num_segments=5).shape == (5, 4)
    assert ops.reshape(K((None, 20)), K((2,), "int32")).shape == (None, None)
    assert ops.take(K((None, 3, None, 5)), K((6, 7), "int32"), axis=2).shape == \
        (None, 3, 6, 7, 5)
    assert ops.take_along_axis(K((None, 3)), K((1, 3), "int32"), axis=0).shape == (1, 3)
    assert ops.one_hot(K((None, 3, 1), "int32"), 5, axis=1).shape == (None, 5, 3, 1)
    assert ops.concatenate([K((None, 3)), K((None, None))], axis=0).shape == (None, 3)
    assert ops.linspace(K((None, 3, 4)), K((2, 3, 4)), 10, axis=1).shape == (2, 10, 3, 4)
    assert ops.matmul(K((None, 3, 4)), K((4,))).shape == (None, 3)


def test_error_phrases():
    with pytest.raises(ValueError, match=r"valid permutation.*axes=\[0, 0, 0\]"):
        ops.transpose(K((2, 3, 4)), axes=[0, 0, 0])
    with pytest.raises(ValueError, match=r"must be an integer in \[-3, 3\)"):
        ops.transpose(K((2, 3, 4)), axes=[0, 1, 5])
    for fn in (lambda x: ops.sort(x, axis=10), lambda x: ops.softmax(x, axis=10),
               lambda x: ops.unstack(x, axis=10)):
        for x in (K((3, 4)), np.zeros((3, 4))):
            with pytest.raises(ValueError, match="axis 10 is out of bounds"):
                fn(x)


def test_rule_ops_replay_in_a_model():
    a, b = layers.Input((3,)), layers.Input((1,))
    pieces = ops.split(ops.add(a, b), 3, axis=1)
    model = models.Model([a, b], pieces[2])
    x, y = np.arange(6, dtype="float32").reshape(2, 3), np.ones((2, 1), "float32")
    np.testing.assert_allclose(model.predict([x, y], verbose=0), x[:, 2:] + 1)


def test_contractions():
    x, y, z = K((None, 3)), K((3, 2)), K((None, None, 2))
    assert (ops.dot(x, y).shape, ops.dot(x, 2).shape, ops.dot(x, z).shape) == \
        ((None, 2), (None, 3), (None, None, 2))
    assert ops.inner(K((2, 3)), K((2, 3))).shape == (2, 2)
    assert ops.tensordot(K((2, 3, 3)), K((3, 3, 4)), axes=[[1, 2], [0, 1]]).shape == (2, 4)
    assert ops.einsum("ij,jk->ikj", x, K((3, 4))).shape == (None, 4, 3)
    assert ops.einsum("ii", x).shape == ()
    assert ops.einsum("...,...j->...j", K((None, 3, 4)), K((None, 4, 5))).shape == \
        (None, 3, 4, 5)
    assert ops.cross(K((1, 3, 2)), K((None, 1, 2))).shape == (None, 3)
    with pytest.raises(ValueError):
        ops.dot(K((2, 3)), K((2, 3)))


def test_more_families():
    x = K((None, 3))
    assert [ops.repeat(x, 2).shape, ops.repeat(x, [1, 2], axis=0).shape] == [(None,), (None, 3)]
    assert ops.broadcast_to(x, (2, 3, 3)).shape == (2, 3, 3)
    assert [t.shape for t in ops.meshgrid(K((2, 3)), K((2, 3, 4)))] == [(24, 6)] * 2
    assert ops.vstack([x, K((None, None))]).shape == (None, 3)
    assert ops.dstack([x, K((None, None))]).shape == (None, 3, 2)
    assert ops.nancumsum(x).shape == (None,)
    assert [t.shape for t in ops.unravel_index(K((None, 4), "int32"), (3, 4))] == [(None, 4)] * 2
    assert ops.average(x, axis=1, weights=K((3,))).shape == (None,)
    with pytest.raises(ValueError):
        ops.argpartition(x, (1, 3))
    with pytest.raises(ValueError):
        ops.repeat(K((2, 3)), [1, 1])


def test_tensor_after_a_left_out_default_goes_by_name():
    # average(x, axis=None, weights=w): the node must not pass w in axis's place
    a, w = layers.Input((3,)), layers.Input((3,))
    model = models.Model([a, w], ops.average(a, weights=w))
    x, weights = np.arange(6, dtype="float32").reshape(2, 3), np.ones((2, 3), "float32")
    np.testing.assert_allclose(ops.convert_to_numpy(model([x, weights])), x.mean(), rtol=1e-6)


def test_convolution_and_pooling_windows():
    assert ops.conv(K((None, 8, None, 8, 3)), K((3, 3, 3, 3, 2))).shape == (None, 6, None, 6, 2)
    assert ops.conv(K((2, 20, 3)), K((4, 3, 2)), (2,), dilation_rate=2).shape == (2, 7, 2)
    assert ops.separable_conv(K((None, 20, 3)), K((4, 3, 2)), K((1, 6, 5))).shape == \
        (None, 17, 5)
    assert ops.conv_transpose(K((None, 4, 3)), K((3, 5, 3)), 2, output_padding=1).shape == \
        (None, 10, 5)
    assert ops.average_pool(K((None, 8, None, 3)), (3, 3), 2, padding="same").shape == \
        (None, 4, None, 3)
    with pytest.raises(ValueError, match="input channels must match the kernel"):
        ops.conv(K((2, 10, 3)), K((3, 5, 4)))
    with pytest.raises(ValueError, match="input channels must match the kernel"):
        ops.conv_transpose(K((2, 4, 3)), K((2, 4, 5)), 2)
    assert ops.conv_transpose(K((2, 4, None)), K((2, 4, 5)), 2).shape == (2, 8, 4)


def test_normalization_and_attention():
    assert ops.layer_normalization(K((None, 8, 16)), K((None, 16)), K((None, 16))).shape == \
        (None, 8, 16)
    q, kv = K((None, None, 8, 16)), K((None, None, 6, 16))
    assert ops.dot_product_attention(q, kv, kv).shape == (None, None, 8, 16)
    with pytest.raises(ValueError, match="`offset` must be a vector of length"):
        ops.batch_normalization(K((None, 3, 4, 5)), K((5,)), K((5,)), axis=-1, offset=K((3,)))


def test_slice_and_unstack():
    assert ops.slice(K((None, 3)), (1, 1), (-1, -1)).shape == (None, 2)
    assert ops.slice(K((3, 3)), K((2,), "int32"), (-1, -1)).shape == (None, None)
    np.testing.assert_array_equal(
        ops.convert_to_numpy(ops.slice(np.arange(9).reshape(3, 3), (1, 1), (-1, -1))),
        [[4, 5], [7, 8]])
    with pytest.raises(ValueError, match="dimensions in `inputs` must match.* dimensions in"):
        ops.slice(K((3, 3)), (1, 1), (2, 2, 2))
    assert [t.shape for t in ops.unstack(K((2, None, None)), num=3, axis=1)] == [(2, None)] * 3
    with pytest.raises(ValueError, match="without `num`"):
        ops.unstack(K((None, 3)))


def test_fourier_and_qr_need_known_axes():
    assert [t.shape for t in ops.fft((K((None, 4)), K((None, 4))))] == [(None, 4)] * 2
    assert [t.shape for t in ops.linalg.qr(K((None, 5, 4)))] == [(None, 5, 4), (None, 4, 4)]
    with pytest.raises(ValueError, match="last dimension fully-defined"):
        ops.fft((K((None,)), K((None,))))
    with pytest.raises(ValueError, match="last 2 dimensions fully-defined"):
        ops.linalg.qr(K((None, 4)))
    with pytest.raises(ValueError, match="Input should have rank >= 2"):
        ops.linalg.qr(np.zeros(3))
    with pytest.raises(ValueError, match="Input should have rank >= 1"):
        ops.rfft(np.array(5.0))


def test_square_matrix_ops_need_known_square_axes():
    assert ops.linalg.solve(K((None, 20, 20)), K((None, 20))).shape == (None, 20)
    assert ops.linalg.matrix_rank(K((None, 4, 5))).shape == (None,)
    for call in (lambda: ops.linalg.inv(K((None, None, 20))),
                 lambda: ops.linalg.inv(K((None, 20, 15))),
                 lambda: ops.linalg.solve(K((None, 20, 20)), K((None, None, 5))),
                 lambda: ops.linalg.matrix_rank(K((None,)))):
        with pytest.raises(ValueError):
            call()


def test_control_flow_on_symbolic_inputs():
    assert ops.map(lambda x: {"a": x ** 2, "b": x * 10}, K((None, 5)))["b"].shape == (None, 5)
    assert ops.vectorized_map(lambda x: ops.sum(x), K((6, 5))).shape == (6,)
    assert ops.while_loop(lambda a: a[0] < 10, lambda a: a + 1, K((None,))).shape == (None,)
    out = ops.associative_scan(lambda x, y: (x[0] + y[0], x[1] + y[1]),
                               (K((5, None)), K((5, None))), axis=0)
    assert out[0].shape == (5, None)
    assert ops.ctc_loss(K((10, 3), "int32"), K((10, 3, 4)), K((10,), "int32"),
                        K((10,), "int32")).shape == (10,)
    i = layers.Input((5,))
    model = models.Model(i, ops.map(lambda x: x * 2, i))
    np.testing.assert_allclose(model.predict(np.ones((3, 5), "float32"), verbose=0), 2.0)


def test_basic_indexing_of_unknown_axes():
    x = K((None, 5, 16))
    assert ops.get_item(x, 5).shape == (5, 16)  # an index beyond the probe's size of 2
    assert x[:, np.newaxis, ...].shape == (None, 1, 5, 16)
    assert x[:5, 3:, 3:12:2].shape == (None, 2, 5)
    assert x[np.array([0, 1])].shape == (2, 5, 16)
    for key in (np.s_[:, 17, :], np.s_[..., 5, ...], np.s_[:, :, :, :]):
        with pytest.raises(ValueError):
            x[key]
        with pytest.raises(IndexError):
            x[key]


def test_outer_diag_roll_nonzero_and_refusals():
    assert ops.outer(K((2, 3)), K((4, 5))).shape == (6, 20)
    assert (ops.diag(K((None, 3))).shape, ops.diag(K((3, 5)), k=-2).shape) == ((None,), (1,))
    assert ops.roll(K((None, 3)), 1, axis=[0, 1]).shape == (None, 3)
    assert [t.shape for t in ops.nonzero(K((None, 5)))] == [(None,), (None,)]
    assert [t.shape for t in ops.hsplit(K((10,)), 2)] == [(5,), (5,)]
    for call in (lambda: ops.roll(K((None, 3)), 1, axis=2),
                 lambda: ops.concatenate([K((None, 3))] * 2, axis=None),
                 lambda: ops.take_along_axis(K((3, 4)), K((3, 2), "int32"), axis=10)):
        with pytest.raises(ValueError):
            call()


def test_size_of_symbolic_tensors():
    assert ops.size(K((2, 3))) == 6  # known: an int, from the shape
    out = ops.size(K((None, 3)))
    assert (out.shape, out.dtype) == ((), "int32")
