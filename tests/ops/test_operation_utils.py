"""Shape helpers of kerasrs.ops.operation_utils (Keras's keras.src.ops.operation_utils)."""

import pytest

from kerasrs import layers
from kerasrs.layers.node import SymbolicTensor as K
from kerasrs.ops import operation_utils as ou


def test_broadcast_shapes():
    assert ou.broadcast_shapes((5, 3), (1, 3)) == [5, 3]
    assert ou.broadcast_shapes((None, 3), (2, None)) == [2, 3]
    assert ou.broadcast_shapes((None, 1), (1,)) == [None, 1]
    assert ou.broadcast_shapes((3,), (4, 1, 3)) == [4, 1, 3]
    with pytest.raises(ValueError, match="Cannot broadcast shape"):
        ou.broadcast_shapes((2, 3), (2, 4))


def test_window_shapes():
    assert ou.compute_pooling_output_shape((None, 4, 4, 1), (2, 2), (2, 2)) == (None, 2, 2, 1)
    assert ou.compute_pooling_output_shape((1, 4, 4, 3), (2, 2), (1, 1), "same") == (1, 4, 4, 3)
    assert ou.compute_pooling_output_shape((1, 3, 5, 5), (2, 2), None,
                                           data_format="channels_first") == (1, 3, 2, 2)
    with pytest.raises(ValueError, match="Computed output size would be zero or negative"):
        ou.compute_pooling_output_shape((1, 5, 5, 3), (20, 20), (20, 20))
    assert ou.compute_conv_output_shape((None, 4, 4, 1), 1, (3, 3), (1, 1)) == (None, 2, 2, 1)
    assert ou.compute_conv_output_shape((1, 4, 4, 3), 3, (3, 3), (2, 2)) == (1, 1, 1, 3)
    assert ou.compute_conv_output_shape((1, 9, 3), 4, (3,), dilation_rate=2) == (1, 5, 4)


def test_reshape_transpose_reduce_expand():
    assert ou.compute_reshape_output_shape((1, 4, 4, 1), (16, -1), "shape") == (16, 1)
    assert ou.compute_reshape_output_shape((None, 4), (-1, 2), "shape") == (None, 2)
    assert ou.compute_reshape_output_shape((2, 10), K((2,), "int32"), "shape") == (None, None)
    with pytest.raises(ValueError, match="must be unchanged"):
        ou.compute_reshape_output_shape((2, 10), (3, 7), "shape")
    with pytest.raises(ValueError, match="non-negative integer"):
        ou.validate_reshape_shape((-2, 5))
    with pytest.raises(ValueError, match="at most one unknown dimension"):
        ou.validate_reshape_shape((-1, -1, 5))
    assert ou.compute_transpose_output_shape((None, 3, 4), (2, 0, 1)) == (4, None, 3)
    assert ou.reduce_shape((1, 4, 4, 1), [-2, -3]) == (1, 1)
    assert ou.reduce_shape((1, 4, 4, 1), [1], keepdims=True) == (1, 1, 4, 1)
    assert ou.reduce_shape((1, 4), keepdims=True) == (1, 1)
    assert ou.compute_expand_dims_output_shape((2, 3, 4), (1, -1)) == (2, 1, 3, 4, 1)
    assert ou.compute_matmul_output_shape((None, 3, 4), (4,)) == (None, 3)
    with pytest.raises(ValueError, match="axis 4 is out of bounds"):
        ou.reduce_shape((1, 2), 4)


def test_get_source_inputs():
    a, b = layers.Input((2,)), layers.Input((2,))
    assert ou.get_source_inputs((a + b) * 2) == [a, b]
    assert ou.get_source_inputs(a)[0] is a
