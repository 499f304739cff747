"""Ops raise Keras's exception types with the phrases Keras's own tests look for (our messages
add the op, the argument and the value around them)."""

import numpy as np
import pytest

from kerasrs import ops


@pytest.mark.parametrize("call, phrase", [
    (lambda: ops.pad(np.zeros(3), 1, mode="reflect", constant_values=0),
     r"Argument `constant_values` can only be provided when `mode == 'constant'`"),
    (lambda: ops.reshape(np.zeros(20), (-2, 5)), r"non-negative integer.*-1.*newshape=\(-2, 5\)"),
    (lambda: ops.reshape(np.zeros(20), (-1, -1, 5)), "at most one unknown dimension"),
    (lambda: ops.normalize(np.ones(3), order="a"), "Argument `order` must be an int >= 1"),
    (lambda: ops.linalg.qr(np.eye(2), mode="x"), r"Expected one of \{'reduced', 'complete'\}"),
    (lambda: ops.ctc_decode(np.ones((1, 2, 3)), np.array([2]), strategy="x"), "Invalid strategy"),
    (lambda: ops.fft(np.zeros(3)), "Input `x` should be a tuple of two tensors"),
    (lambda: ops.fft((np.zeros(3), np.zeros(2))),
     "Both the real and imaginary parts should have the same shape"),
    (lambda: ops.irfft((np.zeros(3),)), "Input `x` should be a tuple of two tensors"),
    (lambda: ops.stft(np.ones(4), 4, 1, 2), "`fft_length` must equal or"),
    (lambda: ops.stft(np.ones(4), 2, 1, 4, window="x"), "If a string is passed to"),
    (lambda: ops.stft(np.ones(4), 2, 1, 4, window=np.ones(3)),
     "The shape of `window` must be equal to"),
    (lambda: ops.segment_sum(np.ones((3, 2)), np.array([0, 1])),
     "Argument `segment_ids` and `data` should have same leading dimension"),
    (lambda: ops.segment_max(np.ones((3, 2), "int32"), np.array([[0, 1, 1]])),
     "Argument `segment_ids` should be an 1-D vector"),
    (lambda: ops.histogram(np.ones((3, 4))), "Input tensor must be 1-dimensional"),
    (lambda: ops.histogram(np.ones(8), bins=-5), "Argument `bins` should be a non-negative"),
    (lambda: ops.histogram(np.ones(8), range=(1,)), "Argument `range` must be a tuple of two"),
    (lambda: ops.histogram(np.ones(8), range=(5, 1)), "must be greater than the first"),
])
def test_keras_phrases(call, phrase):
    with pytest.raises(ValueError, match=phrase):
        call()


def test_segment_max_of_integers_runs():
    out = ops.segment_max(np.arange(6).reshape(3, 2), np.array([0, 0, 1]))
    np.testing.assert_array_equal(out.numpy(), [[2, 3], [4, 5]])
