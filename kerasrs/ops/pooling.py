"""Pooling ops (Keras's ``keras.ops.nn``): max_pool and average_pool for 1-D, 2-D and 3-D inputs.

Pooling is separable, so it runs one spatial axis at a time: a 2x2 max is the max of row pairs,
then of column pairs (each stage reads long contiguous runs; no Python loop over pixels).

* Max pooling pads with -inf ("same"), so padding never wins. Each stage keeps which of its k
  slices won (a bool for k = 2, else uint8), and backward routes the gradient through those
  indices, stage by stage in reverse; no mask of the full input is compared against the output.
  Ties go to the earlier slice of each stage (for 2x2: the first row of the winning column, the
  first column among equal column maxima); exactly one element per window gets the gradient.
* Average pooling with "same" padding divides each output by the number of real (unpadded)
  elements in its window, as TensorFlow and Keras define it (PyTorch's
  ``count_include_pad=False``). Keras 3.15's torch backend differs for an odd total padding: it
  pads by replicating edge values.

The window geometry (TensorFlow's "same" split, the extra pixel at the end) is `conv.Geometry`.
"""

import math

import numpy as np

from kerasrs.autodiff import Function
from kerasrs.ops.convolution import (
    Geometry,
    _channels_last_shape,
    _data_format,
    _from_last,
    _padding,
    _shape,
    _to_last,
    _tuple,
    pad,
    unpad,
)
from kerasrs.ops.dispatch import op


def _along(ndim, axis, start, step, count):
    """Index taking ``count`` entries from ``start`` every ``step`` along ``axis``."""
    index = [slice(None)] * ndim
    index[axis] = slice(start, start + step * (count - 1) + 1, step)
    return tuple(index)


def _pool_stages(geometry):
    """The 1-D stages of a separable pooling: ``(axis, k, stride, out)`` for each spatial axis
    that changes (a window of 1 with stride 1 is skipped)."""
    return [(axis, k, s, o) for axis, (k, s, o) in
            enumerate(zip(geometry.window, geometry.strides, geometry.out), 1)
            if (k, s) != (1, 1)]


def _spread(xp, g, axis, size, k, s, o, share):
    """Backward of one pooling stage: ``share(j, g)`` is window slice j's part of ``g``; the
    slices are written (disjoint windows) or added (overlapping ones) into a gradient of
    ``size`` along ``axis``."""
    shape = list(g.shape)
    shape[axis] = size
    exact = s == k and k * o == size
    gx = xp.empty(shape, g.dtype) if exact else xp.zeros(shape, g.dtype)
    for j in reversed(range(k)):
        dst = gx[_along(gx.ndim, axis, j, s, o)]
        if s >= k:
            share(j, g, dst)
        else:
            dst += share(j, g, None)
    return gx


class MaxPool(Function):
    """Max over windows. 1-D and 2-D float inputs: the backend kernel ``max_pool``, which keeps
    each window's winner as an index (backward scatters through it). Otherwise one spatial axis
    at a time (a 2x2 max is a max of row pairs, then of column pairs); each stage keeps which
    of its k slices won (bool for k=2, else uint8)."""

    half_in_float32 = "always"  # exact (a max is one of its inputs); NumPy lacks bfloat16 max

    def __init__(self, geometry, channels_first):
        self.geometry, self.channels_first = geometry, channels_first

    def forward(self, x):
        xp, geo = self.xp, self.geometry
        x = _to_last(xp, x, self.channels_first)
        self.argmax = None
        if x.ndim in (3, 4) and x.dtype.kind == "f":  # 1-D/2-D: the backend kernel with argmax
            one = x.ndim == 3  # 1-D pooling as 2-D with a height of 1
            x4 = x[:, None] if one else x
            lead = (1,) if one else ()
            pads = (((0, 0),) if one else ()) + tuple(zip(geo.before, geo.after))
            y, self.argmax = self.backend.max_pool(x4, lead + geo.window, lead + geo.strides,
                                                   pads)
            self.x4_shape = x4.shape
            return _from_last(xp, y[:, 0] if one else y, self.channels_first)
        lowest = -np.inf if x.dtype.kind == "f" else False if x.dtype.kind == "b" else \
            np.iinfo(x.dtype).min  # (the max of booleans is their OR)
        y = pad(xp, x, geo, fill=lowest)
        self.winners = []
        for axis, k, s, o in _pool_stages(geo):
            parts = [y[_along(y.ndim, axis, j, s, o)] for j in range(k)]
            if k == 1:
                y, winner = parts[0], None
            elif k == 2:
                y, winner = xp.maximum(parts[0], parts[1]), parts[1] > parts[0]
            else:
                y = parts[0].copy()
                winner = xp.zeros(y.shape, np.uint8 if k < 256 else np.int32)
                for j, part in enumerate(parts[1:], 1):
                    xp.copyto(winner, winner.dtype.type(j), where=part > y)
                    xp.maximum(y, part, out=y)
            self.winners.append(winner)
        if y.base is not None or y is x:  # only views so far: return a new array
            y = y.copy()
        return _from_last(xp, y, self.channels_first)

    def backward(self, gy):
        xp, geo = self.xp, self.geometry
        g = _to_last(xp, gy, self.channels_first)
        if self.argmax is not None:
            gx = self.backend.max_pool_grad(g.reshape(self.argmax.shape), self.argmax,
                                            self.x4_shape)
            gx = gx.reshape(geo.in_shape)
            return (_from_last(xp, gx, self.channels_first),)
        stages = _pool_stages(geo)
        sizes = [geo.padded[axis - 1] for axis, _, _, _ in stages]
        for (axis, k, s, o), size, winner in reversed(list(zip(stages, sizes, self.winners))):
            g = _spread(xp, g, axis, size, k, s, o, _max_share(xp, k, winner))
        return (_from_last(xp, unpad(g, geo), self.channels_first),)


def _max_share(xp, k, winner):
    """``share(j, g, out)`` for a max-pool stage: ``g`` where slice j won, else 0. `_spread`
    asks for the slices last to first, so for k = 2 the first slice's share is ``g`` minus the
    second's (one multiply instead of two)."""
    last = []

    def share(j, g, out):
        if k == 1:
            return _put(g, out)
        if k == 2:
            if j == 1:
                last[:] = [xp.multiply(g, winner, out=out)]
                return last[0]
            return xp.subtract(g, last[0], out=out)
        return xp.multiply(g, winner == j, out=out)

    return share


def _put(g, out):
    if out is None:
        return g
    out[...] = g
    return out


class AveragePool(Function):
    """Mean over windows, one spatial axis at a time; with "same" padding, divides by the count
    of real (unpadded) elements."""
    half_in_float32 = "always"

    def __init__(self, geometry, channels_first):
        self.geometry, self.channels_first = geometry, channels_first

    def _scale(self, dtype):
        """1 / (number of unpadded elements per window), broadcastable to the output."""
        geo = self.geometry
        if not geo.is_padded:
            return 1.0 / math.prod(geo.window)
        counts = 1
        for axis, (n, k, s, b, o) in enumerate(zip(geo.in_shape[1:-1], geo.window, geo.strides,
                                                   geo.before, geo.out)):
            start = np.arange(o) * s - b
            c = np.minimum(start + k, n) - np.maximum(start, 0)
            counts = np.multiply.outer(counts, c) if axis else c
        scale = (1.0 / counts).astype(dtype).reshape(1, *geo.out, 1)
        return self.xp.asarray(scale)

    def forward(self, x):
        xp, geo = self.xp, self.geometry
        y = pad(xp, _to_last(xp, x, self.channels_first), geo)
        for axis, k, s, o in _pool_stages(geo):
            parts = [y[_along(y.ndim, axis, j, s, o)] for j in range(k)]
            y = parts[0] if k == 1 else parts[0] + parts[1]
            for part in parts[2:]:
                y += part
        y = y * self._scale(y.dtype)
        return _from_last(xp, y, self.channels_first)

    def backward(self, gy):
        xp, geo = self.xp, self.geometry
        g = _to_last(xp, gy, self.channels_first) * self._scale(gy.dtype)
        stages = _pool_stages(geo)
        for axis, k, s, o in reversed(stages):
            g = _spread(xp, g, axis, geo.padded[axis - 1], k, s, o,
                        lambda j, g, out: _put(g, out))
        return (_from_last(xp, unpad(g, geo), self.channels_first),)


def _pool_geometry(op, inputs, pool_size, strides, padding, data_format):
    x_shape = _shape(inputs)
    n = len(x_shape) - 2
    if n not in (1, 2, 3):
        raise ValueError(f"{op}: inputs must have rank 3, 4 or 5 (batch, 1 to 3 spatial axes, "
                         f"channels). Received: inputs shape {x_shape}")
    channels_first = _data_format(data_format, op) == "channels_first"
    pool_size = _tuple(pool_size, n, "pool_size", op)
    strides = pool_size if strides is None else _tuple(strides, n, "strides", op)
    last = _channels_last_shape(x_shape, channels_first)
    geometry = Geometry(op, last, pool_size, strides, (1,) * n, _padding(padding, op),
                        f"inputs shape {x_shape}, pool_size {pool_size}")
    return geometry, channels_first


@op
def max_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """Max pooling over 1-D, 2-D or 3-D windows.

    Padding never wins ("same" pads with -inf). Ties go to the first window position in
    row-major order, which alone receives the gradient (as TensorFlow and PyTorch).

    Args:
        inputs: Tensor, shape ``(batch, *spatial, channels)`` (or channels_first).
        pool_size: int or tuple of N ints.
        strides: int or tuple of N ints; None (default) means ``pool_size``.
        padding: "valid" or "same" (output ``ceil(n / stride)``, TensorFlow's split).
        data_format: "channels_last" (default) or "channels_first".

    Returns:
        Tensor of rank N + 2 in ``data_format``, same dtype.

    Raises:
        ValueError: for a rank other than 3 to 5, a window larger than a "valid" input, or
            malformed arguments.
    """
    geometry, channels_first = _pool_geometry("max_pool", inputs, pool_size, strides, padding,
                                              data_format)
    return MaxPool(geometry, channels_first).apply(inputs)


@op
def average_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """Average pooling over 1-D, 2-D or 3-D windows.

    With "same" padding each output is the mean of the real (unpadded) elements of its window,
    as TensorFlow and Keras compute it (PyTorch's ``count_include_pad=False``).

    Args:
        inputs: Tensor, float, shape ``(batch, *spatial, channels)`` (or channels_first).
        pool_size, strides, padding, data_format: as in `max_pool`.

    Returns:
        Tensor of rank N + 2 in ``data_format``, same dtype.

    Raises:
        ValueError: as in `max_pool`.
    """
    geometry, channels_first = _pool_geometry("average_pool", inputs, pool_size, strides,
                                              padding, data_format)
    return AveragePool(geometry, channels_first).apply(inputs)
