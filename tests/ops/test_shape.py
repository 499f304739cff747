"""Shape, layout, gather and creation ops: values against NumPy, float64 gradients against
finite differences, and errors naming the op and the shapes."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis.extra import numpy as hnp

import kerasrs
from kerasrs import ops
from kerasrs.testing import check_gradients

GRADIENT_TESTED = {"reshape", "transpose", "expand_dims", "squeeze", "broadcast_to",
                   "concatenate", "stack", "split", "tile", "repeat", "pad", "take",
                   "take_along_axis", "sort"}
NON_DIFFERENTIABLE = {
    "argsort": "integer result", "nonzero": "integer indices",
    "zeros": "constant", "ones": "constant", "full": "constant", "arange": "constant",
    "eye": "constant", "zeros_like": "constant: ignores the values of x",
    "ones_like": "constant: ignores the values of x",
    "full_like": "constant: ignores the values of x",
    "one_hot": "integer class ids in, constant out",
    "shape": "static Python ints", "ndim": "static Python int", "size": "static Python int",
}

FAST = settings(max_examples=15, deadline=None, derandomize=True)  # fast and repeatable


def _rand(shape, seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, shape)


# -- reshape, transpose, expand_dims, squeeze, broadcast_to ------------------------------------
@pytest.mark.parametrize("shape,new", [((2, 3, 4), (6, 4)), ((2, 3, 4), (-1,)),
                                       ((2, 3, 4), (4, -1)), ((6,), (1, 2, 1, 3)), ((), (1, 1)),
                                       ((1,), ())])
def test_reshape_values_and_gradients(backend, shape, new):
    x = _rand(shape, 1)
    np.testing.assert_allclose(ops.reshape(x, new).numpy(), x.reshape(new))
    check_gradients(lambda t: ops.reshape(t, new), [x])


def test_reshape_size_mismatch_error():
    with pytest.raises(ValueError, match=r"reshape: cannot reshape a tensor of shape \(2, 3\) "
                                         r"\(6 values\) into shape \(4, 2\)"):
        ops.reshape(np.ones((2, 3)), (4, 2))
    with pytest.raises(ValueError, match="reshape"):
        ops.reshape(np.ones((2, 3)), (-1, 4))


@pytest.mark.parametrize("axes", [None, (1, 0, 2), (2, 0, 1), (-1, 0, 1)])
def test_transpose_values_and_gradients(backend, axes):
    x = _rand((2, 3, 4), 2)
    np.testing.assert_allclose(ops.transpose(x, axes).numpy(), np.transpose(x, axes))
    check_gradients(lambda t: ops.transpose(t, axes), [x])


def test_transpose_rejects_bad_axes():
    with pytest.raises(ValueError, match=r"transpose: axes .* not a permutation.*shape \(2, 3\)"):
        ops.transpose(np.ones((2, 3)), (0, 2))
    with pytest.raises(ValueError, match="transpose"):
        ops.transpose(np.ones((2, 3)), (0, 0))


@pytest.mark.parametrize("axis", [0, 1, -1, (0, 2)])
def test_expand_dims_values_and_gradients(backend, axis):
    x = _rand((2, 3), 3)
    np.testing.assert_allclose(ops.expand_dims(x, axis).numpy(), np.expand_dims(x, axis))
    check_gradients(lambda t: ops.expand_dims(t, axis), [x])


def test_expand_dims_bad_axis_names_the_op():
    with pytest.raises(ValueError, match=r"expand_dims: .*Received: shape \(2, 3\), axis=5"):
        ops.expand_dims(np.ones((2, 3)), 5)


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
def test_squeeze_values_and_gradients(backend, axis):
    x = _rand((1, 3, 1), 4)
    np.testing.assert_allclose(ops.squeeze(x, axis).numpy(), np.squeeze(x, axis))
    check_gradients(lambda t: ops.squeeze(t, axis), [x])
    with pytest.raises(ValueError, match="squeeze"):
        ops.squeeze(x, 1)


@FAST
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=1, min_dims=0, max_dims=3, max_side=3))
def test_broadcast_to_values_and_gradients(shapes):
    (shape,), target = shapes.input_shapes, shapes.result_shape
    x = _rand(shape, 5)
    np.testing.assert_allclose(ops.broadcast_to(x, target).numpy(), np.broadcast_to(x, target))
    check_gradients(lambda t: ops.broadcast_to(t, target), [x])


def test_broadcast_to_error():
    with pytest.raises(ValueError, match=r"broadcast_to: cannot broadcast shape \(3,\) to \(4,\)"):
        ops.broadcast_to(np.ones(3), (4,))


# -- concatenate, stack, split -----------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concatenate_values_and_gradients(backend, axis):
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    for s, n in zip(shapes, (1, 2, 3)):
        s[axis] = n
    xs = [_rand(s, i) for i, s in enumerate(shapes)]
    np.testing.assert_allclose(ops.concatenate(xs, axis).numpy(), np.concatenate(xs, axis))
    check_gradients(lambda *ts: ops.concatenate(list(ts), axis), xs)


def test_concatenate_errors_name_the_op_and_shapes():
    with pytest.raises(ValueError, match=r"concatenate: all inputs must have the same rank.*"
                                         r"Received: shapes \[\(2, 3\), \(3,\)\]"):
        ops.concatenate([np.ones((2, 3)), np.ones(3)])
    with pytest.raises(ValueError, match=r"concatenate: inputs must match.*\[\(2, 3\), \(3, 3\)\]"):
        ops.concatenate([np.ones((2, 3)), np.ones((3, 3))], axis=1)
    with pytest.raises(ValueError, match=r"concatenate: axis 2 is out of bounds .* rank 2"):
        ops.concatenate([np.ones((2, 3)), np.ones((2, 3))], axis=2)
    with pytest.raises(ValueError, match="concatenate: needs at least one"):
        ops.concatenate([])


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_stack_values_and_gradients(backend, axis):
    xs = [_rand((2, 3), i) for i in range(3)]
    np.testing.assert_allclose(ops.stack(xs, axis).numpy(), np.stack(xs, axis))
    check_gradients(lambda *ts: ops.stack(list(ts), axis), xs)


def test_stack_errors():
    with pytest.raises(ValueError, match=r"stack: inputs must all have the same shape"):
        ops.stack([np.ones(2), np.ones(3)])
    with pytest.raises(ValueError, match=r"stack: axis 3 is out of bounds"):
        ops.stack([np.ones(2), np.ones(2)], axis=3)


@pytest.mark.parametrize("sections,axis", [(2, 0), (3, 1), ([1, 3], 1), ([2], -1), (1, 0)])
def test_split_values_and_gradients(backend, sections, axis):
    x = _rand((4, 6), 6)
    parts = ops.split(x, sections, axis)
    want = np.split(x, sections, axis)
    assert isinstance(parts, list) and len(parts) == len(want)
    for p, w in zip(parts, want):
        np.testing.assert_allclose(p.numpy(), w)
    check_gradients(lambda t: ops.split(t, sections, axis), [x])
    # one piece alone: the other slots get zero gradient
    check_gradients(lambda t: ops.split(t, sections, axis)[-1], [x])


def test_split_unequal_error():
    with pytest.raises(ValueError, match=r"split: axis 0 of size 5 cannot be split into 2"):
        ops.split(np.ones((5, 2)), 2)


# -- tile, repeat, pad -------------------------------------------------------------------------
@pytest.mark.parametrize("shape,reps", [((3,), 2), ((2, 3), (2, 1)), ((2, 3), (2, 1, 3)),
                                        ((2, 1, 3), (2,)), ((), (3,))])
def test_tile_values_and_gradients(backend, shape, reps):
    x = _rand(shape, 7)
    np.testing.assert_allclose(ops.tile(x, reps).numpy(), np.tile(x, reps))
    check_gradients(lambda t: ops.tile(t, reps), [x])


@pytest.mark.parametrize("repeats,axis", [(2, None), (3, 0), (2, -1), ([1, 0, 2], 1),
                                          ([2, 1], 0), ([3], 1)])
def test_repeat_values_and_gradients(backend, repeats, axis):
    x = _rand((2, 3), 8)
    np.testing.assert_allclose(ops.repeat(x, repeats, axis).numpy(), np.repeat(x, repeats, axis))
    check_gradients(lambda t: ops.repeat(t, repeats, axis), [x])


def test_repeat_error():
    with pytest.raises(ValueError, match="repeat: repeats must be >= 0"):
        ops.repeat(np.ones((2, 3)), [1, 2], axis=1)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap"])
@pytest.mark.parametrize("pad_width", [1, (1, 2), ((0, 1), (2, 1))])
def test_pad_values_and_gradients(backend, mode, pad_width):
    x = _rand((3, 4), 9)
    kwargs = {"constant_values": 1.5} if mode == "constant" else {}
    np.testing.assert_allclose(ops.pad(x, pad_width, mode, **kwargs).numpy(),
                               np.pad(x, pad_width, mode, **kwargs))
    check_gradients(lambda t: ops.pad(t, pad_width, mode, **kwargs), [x])


def test_pad_errors():
    with pytest.raises(ValueError, match="pad: widths must be >= 0"):
        ops.pad(np.ones(3), (-1, 0))
    with pytest.raises(ValueError, match="pad: widths must be >= 0 and mode one of"):
        ops.pad(np.ones(3), 1, mode="median")
    with pytest.raises(ValueError, match="pad: pad_width must be"):
        ops.pad(np.ones((2, 2)), ((1, 1), (1, 1), (1, 1)))


# -- take, take_along_axis, sort ---------------------------------------------------------------
@pytest.mark.parametrize("indices,axis", [([0, 2, 2, -1], 1), ([[0, 5], [5, 11]], None),
                                          (1, 0), ([[1, 0], [1, 1]], 0), ([3, 0], -1)])
def test_take_values_and_gradients(backend, indices, axis):
    x = _rand((3, 4), 10)
    np.testing.assert_allclose(ops.take(x, indices, axis).numpy(), np.take(x, indices, axis))
    check_gradients(lambda t: ops.take(t, indices, axis), [x])


def test_take_errors():
    with pytest.raises(IndexError, match=r"take: indices must be in \[-3, 3\)"):
        ops.take(np.ones((3, 2)), [3], axis=0)
    with pytest.raises(TypeError, match="take: indices must be integers"):
        ops.take(np.ones(3), [0.5])


@pytest.mark.parametrize("indices,axis", [
    (np.array([[0, 0, 2]] * 3), 1), (np.array([[0, 2, 1, 1]]), 0), (np.array([[1], [0], [3]]), -1),
    (np.array([[2, -1, 0]]), 1), (np.array([5, 0, 11]), None)])
def test_take_along_axis_values_and_gradients(backend, indices, axis):
    x = _rand((3, 4), 11)
    want = np.take_along_axis(x, indices, axis)
    np.testing.assert_allclose(ops.take_along_axis(x, indices, axis).numpy(), want)
    check_gradients(lambda t: ops.take_along_axis(t, indices, axis), [x])


def test_take_along_axis_errors():
    with pytest.raises(ValueError, match="take_along_axis: indices must have the rank of x"):
        ops.take_along_axis(np.ones((3, 4)), np.array([0, 1]), axis=1)
    with pytest.raises(IndexError, match=r"take_along_axis: indices must be in \[-4, 4\)"):
        ops.take_along_axis(np.ones((3, 4)), np.array([[4]]), axis=1)


@pytest.mark.parametrize("axis", [-1, 0, None])
def test_sort_values_and_gradients(backend, axis):
    x = _rand((3, 4), 12)
    np.testing.assert_allclose(ops.sort(x, axis).numpy(), np.sort(x, axis))
    check_gradients(lambda t: ops.sort(t, axis) * np.arange(12.0).reshape(
        np.sort(x, axis).shape), [x])
    np.testing.assert_array_equal(ops.argsort(x, axis).numpy(),
                                  np.argsort(x, axis, kind="stable"))


def test_nonzero_gives_index_tensors():
    idx = ops.nonzero(np.array([[0, 3], [2, 0]]))
    assert len(idx) == 2
    np.testing.assert_array_equal(idx[0].numpy(), [0, 1])
    np.testing.assert_array_equal(idx[1].numpy(), [1, 0])


# -- creation ----------------------------------------------------------------------------------
def test_creation_ops_match_numpy_and_default_to_float32(backend):
    np.testing.assert_array_equal(ops.zeros((2, 3)).numpy(), np.zeros((2, 3)))
    assert ops.zeros(3).dtype == np.float32 and ops.ones((2,), "int32").dtype == np.int32
    np.testing.assert_array_equal(ops.ones((2, 1)).numpy(), np.ones((2, 1)))
    np.testing.assert_array_equal(ops.full((2,), 7.0).numpy(), [7.0, 7.0])
    # Keras: full defaults to floatx whatever the value; arange of Python ints is int32
    assert ops.full((2,), 7.0).dtype == np.float32 and ops.full((2,), 7).dtype == np.float32
    x = kerasrs.Tensor(np.arange(6, dtype="int32").reshape(2, 3))
    assert ops.zeros_like(x).dtype == np.int32 and ops.ones_like(x, "float64").dtype == np.float64
    np.testing.assert_array_equal(ops.zeros_like(x).numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(ops.ones_like(x).numpy(), np.ones((2, 3)))
    np.testing.assert_array_equal(ops.full_like(x, 4).numpy(), np.full((2, 3), 4))
    np.testing.assert_array_equal(ops.arange(5).numpy(), np.arange(5))
    assert ops.arange(5).dtype == np.int32 and ops.arange(0.0, 1.0, 0.25).dtype == np.float32
    np.testing.assert_allclose(ops.arange(1, 2, 0.25).numpy(), [1.0, 1.25, 1.5, 1.75])
    np.testing.assert_array_equal(ops.eye(3).numpy(), np.eye(3))
    np.testing.assert_array_equal(ops.eye(2, 3, k=1).numpy(), np.eye(2, 3, k=1))
    assert ops.eye(2).dtype == np.float32
    with pytest.raises(ValueError, match="zeros: shape must be non-negative"):
        ops.zeros((2, -1))
    with pytest.raises(ValueError, match="arange: step must not be 0"):
        ops.arange(0, 3, 0)


def test_creation_ops_are_constants_under_a_tape():
    x = kerasrs.Tensor(np.ones(3))
    with kerasrs.GradientTape() as tape:
        tape.watch(x)
        y = ops.zeros_like(x) + ops.ones_like(x) * 2.0 + ops.full_like(x, 1.0)
    assert tape.gradient(y, x) is None


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot(backend, axis):
    ids = np.array([[0, 2], [1, -1]])  # -1 (padding) gives an all-zero vector
    y = ops.one_hot(ids, 3, axis=axis)
    want = np.moveaxis((ids[..., None] == np.arange(3)).astype("float32"), -1, axis)
    assert y.dtype == np.float32 and y.shape == want.shape
    np.testing.assert_array_equal(y.numpy(), want)
    assert ops.one_hot(np.array([1]), 2, dtype="int32").dtype == np.int32
    # float class ids are cast to int (truncated), as Keras does (issue 12)
    np.testing.assert_array_equal(ops.one_hot(np.array([0.5, 1.7]), 2).numpy(),
                                  [[1, 0], [0, 1]])
    with pytest.raises(TypeError, match="one_hot: class ids must be numbers"):
        ops.one_hot(np.array([True]), 2)
    with pytest.raises(ValueError, match="one_hot: needs num_classes >= 1"):
        ops.one_hot(ids, 0)


def test_shape_ndim_size_are_python_ints():
    x = kerasrs.Tensor(np.ones((2, 3, 4)))
    assert ops.shape(x) == (2, 3, 4) and ops.ndim(x) == 3 and ops.size(x) == 24
    assert all(type(n) is int for n in ops.shape(x)) and type(ops.size(x)) is int
    assert ops.shape(np.ones(5)) == (5,) and ops.size(3.0) == 1
    assert callable(kerasrs.ops.shape)  # the function, not the shape module


# -- Tensor methods ----------------------------------------------------------------------------
def test_tensor_shape_methods_delegate_to_ops():
    x = _rand((2, 3, 4), 13)
    t = kerasrs.Tensor(x)
    np.testing.assert_allclose(t.T.numpy(), x.T)
    np.testing.assert_allclose(t.reshape(6, 4).numpy(), x.reshape(6, 4))
    np.testing.assert_allclose(t.reshape((4, -1)).numpy(), x.reshape(4, -1))
    np.testing.assert_allclose(t.transpose(1, 0, 2).numpy(), x.transpose(1, 0, 2))
    np.testing.assert_allclose(t.transpose().numpy(), x.transpose())
    np.testing.assert_allclose(kerasrs.Tensor(np.ones((1, 3))).squeeze().numpy(), np.ones(3))
    check_gradients(lambda a: a.T.reshape(-1) * a.transpose((1, 0, 2)).reshape(24), [x])
