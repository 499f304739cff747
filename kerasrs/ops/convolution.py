"""Convolution ops (Keras's ``keras.ops.nn``): conv, depthwise_conv, separable_conv and
conv_transpose for 1-D, 2-D and 3-D inputs, plus the window geometry shared with pooling.

How they are computed (Chainer's and Caffe's im2col scheme, without Python loops over pixels):

* The input is padded once (TensorFlow's "same" rule: the odd pixel of padding goes at the end),
  then ``as_strided`` makes a no-copy view of every window, shaped
  ``(groups, batch, *out, *window, channels_per_group)``. One copy makes it the column matrix
  and one GEMM per group multiplies it by the kernel, whose Keras layout
  ``(*window, in_channels, out_channels)`` already is that matrix.
* Backward: the kernel gradient is one GEMM (columns transposed times the output gradient).
  The input gradient is col2im: for each of the ``prod(window)`` kernel positions, one GEMM
  ``gy @ kernel[position].T`` into a reused buffer, added into that position's strided slab of
  the padded input gradient (faster here than one big GEMM followed by a scatter of the full
  column matrix). Grouped convolutions use batched GEMMs and the plain col2im.
* conv_transpose is that input gradient run forward, and its backward is im2col + GEMMs.

Everything works on channels-last arrays; ``data_format="channels_first"`` is a transposed view
on the way in and on the way out. Groups (``in_channels = groups * kernel.shape[-2]``) are
inferred from the shapes, as Keras's backends do.

The module is named ``convolution`` so that ``kerasrs.ops.conv`` can be the op, as in Keras.
"""

import itertools
import math

import numpy as np

from kerasrs import backend as backend_module
from kerasrs.autodiff import Function, Tensor
from kerasrs.ops import core
from kerasrs.ops import layout as shape_ops
from kerasrs.ops.dispatch import op


# -- argument handling -------------------------------------------------------------------------
def _shape(x):
    return tuple(np.shape(x.data if isinstance(x, Tensor) else x))


def _tuple(value, n, name, op):
    """``value`` (int or sequence of n ints, all >= 1) as a tuple of n ints."""
    values = (value,) * n if isinstance(value, (int, np.integer)) else tuple(value)
    if len(values) != n or not all(isinstance(v, (int, np.integer)) and v >= 1 for v in values):
        raise ValueError(f"{op}: `{name}` must be a positive int or a tuple of {n} positive "
                         f"ints. Received: {name}={value!r}")
    return tuple(int(v) for v in values)


def _data_format(data_format, op):
    if data_format is None:
        get = getattr(backend_module, "image_data_format", None)
        data_format = get() if get else "channels_last"
    data_format = str(data_format).lower()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"{op}: `data_format` must be 'channels_last' or 'channels_first'. "
                         f"Received: data_format={data_format!r}")
    return data_format


def _padding(padding, op):
    value = str(padding).lower()
    if value not in ("valid", "same"):
        raise ValueError(f"{op}: `padding` must be 'valid' or 'same'. Received: "
                         f"padding={padding!r}")
    return value


def _channels_last_shape(shape, channels_first):
    return (shape[0], *shape[2:], shape[1]) if channels_first else tuple(shape)


def _to_last(xp, x, channels_first):
    return xp.moveaxis(x, 1, -1) if channels_first else x


def _from_last(xp, x, channels_first):
    return xp.moveaxis(x, -1, 1) if channels_first else x


# -- window geometry ---------------------------------------------------------------------------
class Geometry:
    """Sizes of one N-d sliding-window op on a channels-last input ``(batch, *spatial, ch)``.

    ``out`` is the output's spatial size; ``before``/``after`` the zero padding per axis
    (TensorFlow's "same": ``total = max((out - 1) * stride + (k - 1) * dilation + 1 - n, 0)``,
    ``before = total // 2``, so the extra pixel goes at the end).

    Raises:
        ValueError: for "valid" padding when a (dilated) window is larger than the input.
    """

    def __init__(self, op, in_shape, window, strides, dilation, padding, shapes_text):
        self.in_shape, self.window = tuple(in_shape), window
        self.strides, self.dilation = strides, dilation
        spatial = in_shape[1:-1]
        reach = [(k - 1) * d + 1 for k, d in zip(window, dilation)]
        if padding == "valid":
            for axis, (n, e) in enumerate(zip(spatial, reach)):
                if e > n:
                    raise ValueError(
                        f"{op}: the window (size {e} after dilation) is larger than the input "
                        f"along spatial axis {axis} (size {n}) with padding='valid'. "
                        f"Received: {shapes_text}")
            self.out = tuple((n - e) // s + 1 for n, e, s in zip(spatial, reach, strides))
            self.before = self.after = (0,) * len(spatial)
        else:
            self.out = tuple(-(-n // s) for n, s in zip(spatial, strides))
            total = [max((o - 1) * s + e - n, 0)
                     for o, s, e, n in zip(self.out, strides, reach, spatial)]
            self.before = tuple(t // 2 for t in total)
            self.after = tuple(t - t // 2 for t in total)
        self.padded = tuple(n + b + a for n, b, a in zip(spatial, self.before, self.after))
        self.out_shape = (in_shape[0], *self.out)

    @property
    def is_padded(self):
        return any(self.before) or any(self.after)

    def positions(self):
        """For each window position (row-major): the spatial slices of the padded input it reads."""
        ranges = [range(k) for k in self.window]
        for pos in itertools.product(*ranges):
            yield tuple(slice(p * d, p * d + s * (o - 1) + 1, s) for p, d, s, o in
                        zip(pos, self.dilation, self.strides, self.out))

    def no_overlap(self):
        return all(s >= (k - 1) * d + 1 for k, d, s in zip(self.window, self.dilation, self.strides))


def pad(xp, x, geometry, fill=0):
    """``x`` (channels-last) padded per ``geometry`` with ``fill``; ``x`` itself when unpadded."""
    if not geometry.is_padded:
        return x
    shape = (x.shape[0], *geometry.padded, x.shape[-1])
    out = xp.full(shape, fill, dtype=x.dtype) if fill else xp.zeros(shape, dtype=x.dtype)
    out[interior(geometry)] = x
    return out


def interior(geometry):
    """The index of the unpadded input inside the padded array."""
    return (slice(None), *(slice(b, b + n) for b, n in
                           zip(geometry.before, geometry.in_shape[1:-1])), slice(None))


def unpad(x, geometry):
    return x[interior(geometry)] if geometry.is_padded else x


def im2col(xp, xpad, geometry, groups=1):
    """Column matrix ``(groups, batch * prod(out), prod(window) * ch / groups)`` of ``xpad``.

    One strided no-copy view of all windows, then one contiguous copy.
    """
    n = len(geometry.window)
    channels = xpad.shape[-1]
    cg = channels // groups
    st = xpad.strides
    shape = (groups, xpad.shape[0], *geometry.out, *geometry.window, cg)
    strides = (cg * st[-1], st[0], *(st[1 + i] * geometry.strides[i] for i in range(n)),
               *(st[1 + i] * geometry.dilation[i] for i in range(n)), st[-1])
    view = xp.lib.stride_tricks.as_strided(xpad, shape, strides)
    if cg >= 8:
        cols = xp.ascontiguousarray(view)
    else:  # few channels: NumPy copies long runs faster one window position at a time
        cols = xp.empty(shape, xpad.dtype)
        for pos in itertools.product(*(range(k) for k in geometry.window)):
            index = (slice(None),) * (2 + n) + pos
            cols[index] = view[index]
    return cols.reshape(groups, -1, math.prod(geometry.window) * cg)


def col2im(xp, cols, geometry, channels, groups=1):
    """Inverse scatter of `im2col`: sums ``cols`` back into a zero padded input (channels-last).

    Loops over the ``prod(window)`` window positions; each step adds one strided slab.
    """
    n_batch = geometry.in_shape[0]
    cg = channels // groups
    k = math.prod(geometry.window)
    cols = cols.reshape(groups, n_batch, *geometry.out, k, cg)
    cols = xp.moveaxis(cols, 0, -2)  # (batch, *out, k, groups, cg): a view
    gx = xp.zeros((n_batch, *geometry.padded, groups, cg), dtype=cols.dtype)
    tiled = geometry.no_overlap()
    for p, sl in enumerate(geometry.positions()):
        dst = gx[(slice(None), *sl)]
        if tiled:
            dst[...] = cols[..., p, :, :]
        else:
            dst += cols[..., p, :, :]
    return gx.reshape(n_batch, *geometry.padded, channels)


def gemm_col2im(xp, gy2, w, geometry):
    """``col2im(gy2 @ w2.T)`` without the big column matrix: for each window position p,
    ``gy2 @ w[p].T`` (one GEMM into a reused buffer) is added into that position's strided
    slab of the padded input gradient. ``gy2``: ``(batch * prod(out), filters)``; ``w``:
    ``(*window, channels, filters)``. Returns ``(batch, *padded, channels)``."""
    channels = w.shape[-2]
    per_position = w.reshape(-1, channels, w.shape[-1])
    gx = xp.zeros((geometry.in_shape[0], *geometry.padded, channels), dtype=gy2.dtype)
    buffer = xp.empty((gy2.shape[0], channels), dtype=gy2.dtype)
    slab = buffer.reshape(*geometry.out_shape, channels)
    tiled = geometry.no_overlap()
    for p, sl in enumerate(geometry.positions()):
        xp.matmul(gy2, per_position[p].T, out=buffer)
        dst = gx[(slice(None), *sl)]
        if tiled:
            dst[...] = slab
        else:
            dst += slab
    return gx


# -- convolution -------------------------------------------------------------------------------
def _kernel_groups(w, groups):
    """Kernel ``(*window, cg, out)`` as per-group matrices ``(groups, prod(window) * cg, out/g)``."""
    out = w.shape[-1]
    w2 = w.reshape(-1, groups, out // groups)
    return w2.transpose(1, 0, 2)




class Conv(Function):
    """N-d cross-correlation (no kernel flip) by im2col + one GEMM per group, with an optional
    bias and activation applied to the GEMM's output in place (backend ``bias_act``).

    2-D convolutions without groups are the backend's fused ``conv2d``/``conv2d_grad`` (on the
    CPU: in blocks of samples whose column matrix stays in the cache)."""
    half_in_float32 = "cpu"

    def __init__(self, geometry, groups, channels_first, activation="linear"):
        self.geometry, self.groups, self.channels_first = geometry, groups, channels_first
        self.activation = activation

    def forward(self, x, w, *bias):
        xp, geo, g = self.xp, self.geometry, self.groups
        x, w = core.promote(x, w)  # integer inputs take the kernel's float dtype (Keras)
        self.w = w
        x = _to_last(xp, x, self.channels_first)
        self.x = None
        if g == 1 and x.ndim == 4:  # 2-D: the backend's conv2d (blocked through the cache)
            self.x = x
            y = self.backend.conv2d(x, w.reshape(-1, w.shape[-1]), bias[0] if bias else None,
                                    self.activation, geo.window, geo.strides, geo.dilation,
                                    self._padding())
            self.y2 = y if self.activation != "linear" else None
            return _from_last(xp, y.reshape(*geo.out_shape, w.shape[-1]), self.channels_first)
        self.cols = im2col(xp, pad(xp, x, geo), geo, g)
        if g == 1:
            y = self.cols[0] @ w.reshape(-1, w.shape[-1])
        else:
            y = xp.matmul(self.cols, _kernel_groups(w, g)).transpose(1, 0, 2)
            y = xp.ascontiguousarray(y).reshape(-1, w.shape[-1])
        self.y2 = None
        if bias or self.activation != "linear":
            self.backend.bias_act(y, bias[0] if bias else None, self.activation, out=y)
            self.y2 = y if self.activation != "linear" else None
        y = y.reshape(*geo.out_shape, w.shape[-1])
        return _from_last(xp, y, self.channels_first)

    def _padding(self):
        return tuple(zip(self.geometry.before, self.geometry.after))

    def backward(self, gy):
        xp, geo, g, w = self.xp, self.geometry, self.groups, self.w
        gy = _to_last(xp, gy, self.channels_first).reshape(-1, w.shape[-1])
        need_bias = len(self.needs_grad) == 3 and self.needs_grad[2]
        if self.x is not None:
            gx, gw, gb = self.backend.conv2d_grad(
                self.x, w.reshape(-1, w.shape[-1]), self.y2, gy, self.activation, geo.window,
                geo.strides, geo.dilation, self._padding(), self.needs_grad[0],
                self.needs_grad[1], need_bias)
            gx = None if gx is None else _from_last(xp, gx, self.channels_first)
            return self._grads(gx, None if gw is None else gw.reshape(w.shape), gb)
        gb = None
        if self.y2 is not None:  # gy * act'(y) and the bias gradient in one pass
            gy, gb = self.backend.bias_act_grad(self.y2, gy, self.activation, need_bias)
        elif need_bias:
            gb = gy.sum(axis=0)
        gy = gy.reshape(-1, g, w.shape[-1] // g)
        gx = gw = None
        if g == 1:
            gy2 = gy[:, 0, :]
            if self.needs_grad[1]:
                gw = (self.cols[0].T @ gy2).reshape(w.shape)
            if self.needs_grad[0]:
                gx = gemm_col2im(xp, gy2, w, geo)
        else:
            gyg = gy.transpose(1, 0, 2)  # (groups, M, out/g)
            if self.needs_grad[1]:
                gwg = xp.matmul(self.cols.transpose(0, 2, 1), gyg)  # (g, K*cg, out/g)
                gw = gwg.transpose(1, 0, 2).reshape(w.shape)
            if self.needs_grad[0]:
                gcols = xp.matmul(gyg, _kernel_groups(w, g).transpose(0, 2, 1))
                gx = col2im(xp, gcols, geo, geo.in_shape[-1], g)
        if gx is not None:
            gx = _from_last(xp, unpad(gx, geo), self.channels_first)
        return self._grads(gx, gw, gb)

    def _grads(self, gx, gw, gb):
        return (gx, gw) if len(self.needs_grad) == 2 else (gx, gw, gb)


def _check_conv_args(op, inputs, kernel, strides, padding, data_format, dilation_rate,
                     kernel_in_axis=-2, shapes_text=None):
    """Validate shapes and arguments; returns ``(geometry, groups, channels_first)``."""
    x_shape, k_shape = _shape(inputs), _shape(kernel)
    shapes_text = shapes_text or f"inputs shape {x_shape}, kernel shape {k_shape}"
    n = len(k_shape) - 2
    if n not in (1, 2, 3):
        raise ValueError(f"{op}: the kernel must have rank 3, 4 or 5 (spatial axes, then input "
                         f"and output channels). Received: {shapes_text}")
    if len(x_shape) != n + 2:
        raise ValueError(f"{op}: a kernel of rank {n + 2} makes a {n}-D convolution, which needs "
                         f"inputs of rank {n + 2} (batch, {n} spatial axes, channels). "
                         f"Received: {shapes_text}")
    channels_first = _data_format(data_format, op) == "channels_first"
    padding = _padding(padding, op)
    strides = _tuple(strides, n, "strides", op)
    dilation = _tuple(dilation_rate, n, "dilation_rate", op)
    last = _channels_last_shape(x_shape, channels_first)
    channels, k_in = last[-1], k_shape[kernel_in_axis]
    if k_in == 0 or channels % k_in:
        raise ValueError(f"{op}: the input has {channels} channels, which is not a multiple of "
                         f"the kernel's {k_in} input channels (data_format="
                         f"{'channels_first' if channels_first else 'channels_last'}). "
                         f"Received: {shapes_text}")
    groups = channels // k_in
    if k_shape[-1] % groups:
        raise ValueError(f"{op}: {channels} input channels for a kernel of {k_in} make "
                         f"{groups} groups, but the kernel's {k_shape[-1]} output channels are "
                         f"not a multiple of {groups}. Received: {shapes_text}")
    geometry = Geometry(op, last, k_shape[:n], strides, dilation, padding, shapes_text)
    return geometry, groups, channels_first


@op
def conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """N-D convolution (cross-correlation, as in Keras and TensorFlow) for N = 1, 2 or 3.

    Computed by im2col and one GEMM (see the module docstring); differentiable with respect
    to both ``inputs`` and ``kernel``.

    Args:
        inputs: Tensor, float, shape ``(batch, *spatial, channels)`` (channels_last) or
            ``(batch, channels, *spatial)`` (channels_first).
        kernel: Tensor, same dtype, shape ``(*window, channels / groups, filters)``, Keras's
            layout. ``groups = channels // kernel.shape[-2]`` is inferred, as Keras does.
        strides: int or tuple of N ints. Defaults to 1.
        padding: "valid" (no padding) or "same" (output size ``ceil(n / stride)``, zero padding
            split as TensorFlow does, the extra pixel at the end).
        data_format: "channels_last" (default when None) or "channels_first".
        dilation_rate: int or tuple of N ints: spacing of the kernel taps. Defaults to 1.

    Returns:
        Tensor of rank N + 2 with ``filters`` channels, in ``data_format``.

    Raises:
        ValueError: if the ranks do not fit (input rank must be kernel rank), the channels do
            not match the kernel, a window is larger than a "valid" input, or an argument is
            malformed. Each message names the op and both shapes.

    Example:
        >>> x = np.ones((1, 4, 4, 1), "float32")
        >>> ops.conv(x, np.ones((3, 3, 1, 1), "float32")).shape
        (1, 2, 2, 1)
    """
    geometry, groups, channels_first = _check_conv_args(
        "conv", inputs, kernel, strides, padding, data_format, dilation_rate)
    return Conv(geometry, groups, channels_first).apply(inputs, kernel)


def conv_bias_act(inputs, kernel, bias, strides=1, padding="valid", data_format=None,
                  dilation_rate=1, activation="linear"):
    """``activation(conv(inputs, kernel, ...) + bias)`` as one op: the convolution layers' fast
    path (bias and activation applied to the GEMM's output in place, their backward in one
    pass). Arguments as `conv`, plus ``bias`` (``(filters,)`` or None) and ``activation``
    ("linear", "relu", "sigmoid" or "tanh").

    Raises:
        ValueError: as `conv`, and for a bias that is not ``(filters,)``.
    """
    geometry, groups, channels_first = _check_conv_args(
        "conv", inputs, kernel, strides, padding, data_format, dilation_rate)
    if bias is None:
        return Conv(geometry, groups, channels_first, activation).apply(inputs, kernel)
    if tuple(_shape(bias)) != tuple(_shape(kernel)[-1:]):
        raise ValueError(f"conv: the bias must have shape {tuple(_shape(kernel)[-1:])}. "
                         f"Received: bias shape {tuple(_shape(bias))}")
    return Conv(geometry, groups, channels_first, activation).apply(inputs, kernel, bias)


@op
def depthwise_conv(inputs, kernel, strides=1, padding="valid", data_format=None,
                   dilation_rate=1):
    """Depthwise N-D convolution: each input channel is convolved with its own filters.

    Args:
        inputs: Tensor, shape ``(batch, *spatial, channels)`` (or channels_first).
        kernel: Tensor, shape ``(*window, channels, depth_multiplier)`` (Keras's layout).
        strides, padding, data_format, dilation_rate: as in `conv`.

    Returns:
        Tensor with ``channels * depth_multiplier`` channels; output channel
        ``c * depth_multiplier + m`` comes from input channel ``c`` and filter ``m``.

    Raises:
        ValueError: as in `conv`, and if ``kernel.shape[-2]`` differs from the input channels.
    """
    x_shape, k_shape = _shape(inputs), _shape(kernel)
    shapes_text = f"inputs shape {x_shape}, kernel shape {k_shape}"
    if len(k_shape) not in (3, 4, 5) or len(x_shape) != len(k_shape):
        raise ValueError("depthwise_conv: needs a kernel of rank 3, 4 or 5 (spatial axes, "
                         "channels, depth multiplier) and inputs of the same rank. "
                         f"Received: {shapes_text}")
    channels_first = _data_format(data_format, "depthwise_conv") == "channels_first"
    channels = x_shape[1] if channels_first else x_shape[-1]
    if channels != k_shape[-2]:
        raise ValueError(f"depthwise_conv: the input has {channels} channels but the kernel "
                         f"expects {k_shape[-2]}. Received: {shapes_text}")
    # (*window, C, M) -> (*window, 1, C*M): a grouped convolution with C groups
    kernel = shape_ops.reshape(kernel, (*k_shape[:-2], 1, k_shape[-2] * k_shape[-1]))
    geometry, groups, channels_first = _check_conv_args(
        "depthwise_conv", inputs, kernel, strides, padding, data_format, dilation_rate,
        shapes_text=shapes_text)
    return Conv(geometry, groups, channels_first).apply(inputs, kernel)


@op
def separable_conv(inputs, depthwise_kernel, pointwise_kernel, strides=1, padding="valid",
                   data_format=None, dilation_rate=1):
    """Depthwise convolution followed by a 1x1 (pointwise) convolution, as Keras's op.

    Args:
        inputs: Tensor, shape ``(batch, *spatial, channels)`` (or channels_first).
        depthwise_kernel: shape ``(*window, channels, depth_multiplier)``.
        pointwise_kernel: shape ``(1, ..., 1, channels * depth_multiplier, filters)``.
        strides, padding, data_format, dilation_rate: of the depthwise step, as in `conv`.

    Returns:
        Tensor with ``filters`` channels.

    Raises:
        ValueError: as in `depthwise_conv` and `conv`.
    """
    y = depthwise_conv(inputs, depthwise_kernel, strides, padding, data_format, dilation_rate)
    return conv(y, pointwise_kernel, 1, "valid", data_format, 1)


# -- transposed convolution --------------------------------------------------------------------
class ConvTranspose(Function):
    """Gradient of `Conv` with respect to its input, as a forward op (col2im of x @ kernel^T)."""
    half_in_float32 = "cpu"

    def __init__(self, geometry, out_spatial, crop, channels_first):
        self.geometry, self.out_spatial = geometry, out_spatial   # geometry: full -> input
        self.crop, self.channels_first = crop, channels_first

    def _window(self):
        """Index of the kept output region in the full scatter, and its place in the output."""
        full = self.geometry.in_shape[1:-1]
        ends = [min(f, c + o) for f, c, o in zip(full, self.crop, self.out_spatial)]
        src = (slice(None), *(slice(c, e) for c, e in zip(self.crop, ends)), slice(None))
        dst = (slice(None), *(slice(0, e - c) for c, e in zip(self.crop, ends)), slice(None))
        return src, dst

    def forward(self, x, w):
        xp, geo = self.xp, self.geometry
        x = _to_last(xp, x, self.channels_first)
        self.x2, self.w2 = x.reshape(-1, x.shape[-1]), w.reshape(-1, w.shape[-1])
        full = gemm_col2im(xp, self.x2, w, geo)
        src, dst = self._window()
        if full.shape[1:-1] == tuple(self.out_spatial) and not any(self.crop):
            y = full
        else:
            y = xp.zeros((x.shape[0], *self.out_spatial, w.shape[-2]), dtype=full.dtype)
            y[dst] = full[src]
        return _from_last(xp, y, self.channels_first)

    def backward(self, gy):
        xp, geo = self.xp, self.geometry
        gy = _to_last(xp, gy, self.channels_first)
        src, dst = self._window()
        if gy.shape[1:-1] == geo.in_shape[1:-1] and not any(self.crop):
            gfull = gy
        else:
            gfull = xp.zeros(geo.in_shape, dtype=gy.dtype)
            gfull[src] = gy[dst]
        gcols = im2col(xp, gfull, geo)[0]  # (batch * prod(in), K * filters)
        gx = gw = None
        if self.needs_grad[0]:
            gx = (gcols @ self.w2).reshape(*geo.out_shape, self.w2.shape[-1])
            gx = _from_last(xp, gx, self.channels_first)
        if self.needs_grad[1]:
            gw = (gcols.T @ self.x2).reshape(*geo.window, -1, self.w2.shape[-1])
        return gx, gw


def _transpose_pads(k, s, d, padding, output_padding):
    """Keras's (JAX-style) left/right padding of a transposed convolution along one axis."""
    reach = (k - 1) * d + 1
    if padding == "valid":
        output_padding = max(reach, s) - reach if output_padding is None else output_padding
        return reach - 1, reach - 1 + output_padding
    pad_len = s + reach - 2 if output_padding is None else reach + reach % 2 - 2 + output_padding
    left = min(pad_len // 2 + pad_len % 2, reach - 1)
    return left, pad_len - left


@op
def conv_transpose(inputs, kernel, strides=1, padding="valid", output_padding=None,
                   data_format=None, dilation_rate=1):
    """Transposed N-D convolution (the gradient of `conv` with respect to its input).

    Output size per axis, with ``k' = (k - 1) * dilation + 1``: "valid" gives
    ``(n - 1) * stride + max(k', stride)``, "same" gives ``n * stride``; with an
    ``output_padding`` p: ``(n - 1) * stride + k' + p`` ("valid") or
    ``(n - 1) * stride + k' % 2 + p`` ("same"), exactly as Keras.

    Args:
        inputs: Tensor, shape ``(batch, *spatial, in_channels)`` (or channels_first).
        kernel: Tensor, shape ``(*window, filters, in_channels)`` (Keras's Conv*Transpose layout).
        strides: int or tuple of N ints. Defaults to 1.
        padding: "valid" or "same".
        output_padding: None, int or tuple of N ints: extra size added at the end of each axis.
        data_format: "channels_last" (default) or "channels_first".
        dilation_rate: int or tuple of N ints.

    Returns:
        Tensor of rank N + 2 with ``filters`` channels.

    Raises:
        ValueError: for mismatched ranks or channels, or malformed arguments (the message names
            both shapes).
    """
    op = "conv_transpose"
    x_shape, k_shape = _shape(inputs), _shape(kernel)
    shapes_text = f"inputs shape {x_shape}, kernel shape {k_shape}"
    n = len(k_shape) - 2
    if n not in (1, 2, 3) or len(x_shape) != n + 2:
        raise ValueError(f"{op}: needs a kernel of rank 3, 4 or 5 and inputs of the same rank. "
                         f"Received: {shapes_text}")
    channels_first = _data_format(data_format, op) == "channels_first"
    padding = _padding(padding, op)
    strides = _tuple(strides, n, "strides", op)
    dilation = _tuple(dilation_rate, n, "dilation_rate", op)
    if output_padding is not None:
        output_padding = (output_padding,) * n if isinstance(output_padding, int) \
            else tuple(output_padding)
        if len(output_padding) != n or any(p < 0 for p in output_padding):
            raise ValueError(f"{op}: `output_padding` must be None or {n} ints >= 0. "
                             f"Received: output_padding={output_padding!r}")
    last = _channels_last_shape(x_shape, channels_first)
    if last[-1] != k_shape[-1]:
        raise ValueError(f"{op}: the input has {last[-1]} channels but the kernel (layout "
                         f"(*window, filters, in_channels)) expects {k_shape[-1]}. "
                         f"Received: {shapes_text}")
    full, out, crop = [], [], []
    for i in range(n):
        k, s, d = k_shape[i], strides[i], dilation[i]
        left, right = _transpose_pads(k, s, d, padding,
                                      None if output_padding is None else output_padding[i])
        reach = (k - 1) * d + 1
        full.append((last[1 + i] - 1) * s + reach)
        out.append((last[1 + i] - 1) * s + left + right - reach + 2)
        crop.append(reach - 1 - left)
    # The geometry of the forward conv that this op transposes: full-size output -> inputs.
    geometry = Geometry(op, (last[0], *full, k_shape[-2]), k_shape[:n], strides, dilation,
                        "valid", shapes_text)
    return ConvTranspose(geometry, tuple(out), tuple(crop), channels_first).apply(inputs, kernel)
