"""Empty inputs to reductions and joins (issue 23, empty arrays): NumPy's answers where NumPy has
one (the mean of nothing is nan), otherwise an error naming the op and the shapes, not NumPy's
internals or an internal op name; and top_k ranks NaN first, as max and argmax do."""

import warnings

import numpy as np
import pytest

import kerasrs
from kerasrs import ops


@pytest.mark.parametrize("x, axis, want", [
    ([], None, np.float32("nan")),
    (np.empty((0, 3), "float32"), 0, np.full(3, np.nan, "float32")),
    (np.empty((0, 3), "float32"), 1, np.empty(0, "float32")),
    (np.empty((2, 0), "float64"), None, np.float64("nan")),
])
def test_empty_arrays_mean_is_nan_like_numpy(x, axis, want):
    # before: ops.mean([]) was 0.0 (and std([]) nan): a count floored at 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no division warnings on the way
        got = ops.mean(x, axis=axis).numpy()
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.asarray(want).dtype


def test_empty_arrays_mean_gradient_of_an_empty_input_is_empty():
    x = kerasrs.Variable(np.empty((0, 3), "float32"))
    with kerasrs.GradientTape() as tape:
        y = ops.sum(ops.mean(x, axis=1))
    assert tape.gradient(y, x).shape == (0, 3)


@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("shape, axis", [((0,), None), ((3, 0), 1), ((0, 2), None),
                                         ((0, 2), 0)])
def test_empty_arrays_max_and_argmax_of_nothing_name_the_op_and_shape(op, shape, axis):
    # before: "attempt to get argmax of an empty sequence" (NumPy's words) and "maxminreduce:
    # zero-size array to reduction operation maximum which has no identity"
    with pytest.raises(ValueError) as info:
        getattr(ops, op)(np.empty(shape, "float32"), axis=axis)
    message = str(info.value)
    assert message.startswith(f"{op}: the input is empty") and f"shape {shape}" in message
    assert "maxminreduce" not in message and "identity" not in message
    got = getattr(ops, op)(np.empty((0, 2), "float32"), axis=1)  # reducing a non-empty axis
    assert got.shape == (0,)


@pytest.mark.parametrize("op", ["stack", "concatenate"])
def test_empty_arrays_stack_and_concatenate_of_no_tensors_name_the_op(op):
    # before: stack([]) said "inputs must all have the same shape. Received: shapes []"
    with pytest.raises(ValueError, match=rf"^{op}: needs at least one tensor\. Received: an "
                                         "empty list"):
        getattr(ops, op)([])


def test_empty_arrays_top_k_ranks_nan_as_the_largest_value():
    # before: NaN sorted last, so top_k disagreed with max and argmax
    x = np.array([[1.0, np.nan, 3.0, np.inf, np.nan], [2.0, 1.0, 0.0, -1.0, 5.0]], "float32")
    values, indices = ops.top_k(x, k=4)
    assert indices.numpy().tolist() == [[1, 4, 3, 2], [4, 0, 1, 2]]
    np.testing.assert_array_equal(values.numpy(), [[np.nan, np.nan, np.inf, 3.0],
                                                   [5.0, 2.0, 1.0, 0.0]])
    assert int(ops.argmax(x[0])) == indices.numpy()[0, 0]
    assert ops.top_k(np.array([3, 1, 2]), k=2)[1].numpy().tolist() == [0, 2]  # ints unchanged
