"""The fused 2-D convolution ``activation(im2col(x) @ kernel + bias)`` and its gradients: the
twin composes the `im2col`, `bias_act` and `col2im` kernels around GEMMs (so on CUDA it runs
their launchers); on the CPU it runs in blocks of samples through the same numba kernels."""

import numpy as np

from kerasrs.backend import cpu_threads, memory
from kerasrs.backend.kernels.activations import (BIAS_ACT, CODES, LINEAR, RELU, SIGMOID, TANH,
                                                 act, act_grad)
from kerasrs.backend.kernels.bias_act import bias_act_grad_rows, bias_act_inplace
from kerasrs.backend.kernels.cpu import contracting_kernel, usable
from kerasrs.backend.kernels.cpu import kernel as numba_kernel
from kerasrs.backend.kernels.im2col import col2im_samples, im2col_rows, padded_window_out

# Column block of a blocked CPU conv2d. On one thread, about one core's L2: on an Intel Xeon
# (2 MB L2) the GEMMs of 8 MB blocks ran at 90 GFLOP/s against 115-130 for 2 MB, and a 26x26x32
# -> 64 conv's forward and backward (batch 128) took 101 -> 86 ms. With BLAS threads, each GEMM
# call is a hand-over to them, and on a loaded machine every hand-over waited for a time slice:
# there 2 MB blocks (4x the calls) took 3.4x as long as 8 MB ones, so they keep 8 MB (on an idle
# AMD Zen 4, 1 MB L2, 2-8 MB measured alike).
CHUNK_BYTES = 1 << 23
SERIAL_CHUNK_BYTES = 1 << 21  # on one thread


class Twin:
    """The reference versions (methods of `kerasrs.backend.base.Backend`)."""

    def conv2d(self, x, kernel, bias, activation, window, strides, dilation, padding):
        """``activation(im2col(x) @ kernel + bias)``: a 2-D convolution, channels last.

        Args:
            x: ``(n, h, w, c)``. kernel: ``(kh * kw * c, filters)`` (the 4-D kernel reshaped).
            bias: ``(filters,)`` or None. activation: "linear", "relu", "sigmoid" or "tanh".
            window, strides, dilation, padding: as in `im2col` (two spatial axes).

        Returns:
            ``(n * oh * ow, filters)``, rows in `im2col`'s order.
        """
        cols = self.im2col(x, window, strides, dilation, padding)
        y = cols @ kernel
        if bias is not None or activation != "linear":
            self.bias_act(y, bias, activation, out=y)
        return y

    def conv2d_grad(self, x, kernel, y, gy, activation, window, strides, dilation, padding,
                    need_x=True, need_kernel=True, need_bias=True):
        """Gradients of `conv2d` from its output ``y`` and the output gradient ``gy`` (both
        ``(n * oh * ow, filters)``; ``y`` is used only for a non-linear activation).

        Returns:
            ``(gx (n, h, w, c) or None, gkernel (kh * kw * c, filters) or None,
            gbias (filters,) or None)``.
        """
        gb = None
        if activation != "linear":
            gy, gb = self.bias_act_grad(y, gy, activation, need_bias)
        elif need_bias:
            gb = gy.sum(axis=0)
        gk = self.im2col(x, window, strides, dilation, padding).T @ gy if need_kernel else None
        gx = self.col2im(gy @ kernel.T, x.shape, window, strides, dilation, padding) \
            if need_x else None
        return gx, gk, gb if need_bias else None


def _blocks(x, window, strides, dilation, padding, k_rows):
    """Output size, sample blocks and the column buffer (pooled memory, this call's own) of a
    blocked CPU `conv2d`."""
    outs = padded_window_out(x.shape, window, strides, dilation, padding)
    budget = CHUNK_BYTES if cpu_threads.threads() > 1 else SERIAL_CHUNK_BYTES
    per = max(1, budget // max(outs[0] * outs[1] * k_rows * x.itemsize, 1))
    chunks = [(s, min(s + per, x.shape[0])) for s in range(0, x.shape[0], per)]
    cols = memory.empty((min(per, x.shape[0]) * outs[0] * outs[1], k_rows), x.dtype)
    return outs, chunks, cols


# -- numba: one input channel, computed directly ---------------------------------------------
# An image network's first layer (c = 1) makes a poor GEMM: K = kh * kw (9) against a column
# matrix as long as the output. Computed tap by tap instead, with the bias and activation
# applied as each output pixel is finished, and the backward (activation derivative, bias and
# kernel gradients) in one pass over the output, without the columns or a gradient buffer.
# Each kernel calls its loop with a constant activation code, so LLVM inlines and vectorizes
# it (see `bias_act_rows`); multiply-adds are fused (1-2 ulp from the GEMM's rounding). The
# walk over the taps is written out in each kernel, as in `im2col_rows`: a shared helper that
# gathered a window's pixels first made both kernels 1.2-1.5x slower.
@numba_kernel
def one_channel_rows(x, kernel, bias, code, kh, kw, sh, sw, dh, dw, top, left, oh, ow, y,
                     start, stop):
    """Rows of ``y (n * oh * ow, filters) = act(conv(x) + bias)`` for the (sample, output row)
    pairs ``start:stop``; ``x (n, h, w, 1)``, ``kernel (kh * kw, filters)``."""
    if code == RELU:
        _one_channel_rows(x, kernel, bias, RELU, kh, kw, sh, sw, dh, dw, top, left, oh, ow, y,
                          start, stop)
    elif code == SIGMOID:
        _one_channel_rows(x, kernel, bias, SIGMOID, kh, kw, sh, sw, dh, dw, top, left, oh, ow,
                          y, start, stop)
    elif code == TANH:
        _one_channel_rows(x, kernel, bias, TANH, kh, kw, sh, sw, dh, dw, top, left, oh, ow, y,
                          start, stop)
    else:
        _one_channel_rows(x, kernel, bias, LINEAR, kh, kw, sh, sw, dh, dw, top, left, oh, ow,
                          y, start, stop)


@contracting_kernel
def _one_channel_rows(x, kernel, bias, code, kh, kw, sh, sw, dh, dw, top, left, oh, ow, y,
                      start, stop):
    _, hh, ww, _ = x.shape
    filters = kernel.shape[1]
    acc = np.empty(filters, y.dtype)
    for b in range(start, stop):
        s, r = b // oh, b % oh
        for q in range(ow):
            for f in range(filters):
                acc[f] = 0
            for p in range(kh):
                row = r * sh + p * dh - top
                if row < 0 or row >= hh:
                    continue
                for t in range(kw):
                    col = q * sw + t * dw - left
                    if col < 0 or col >= ww:
                        continue
                    v, j = x[s, row, col, 0], p * kw + t
                    for f in range(filters):
                        acc[f] += v * kernel[j, f]
            for f in range(filters):
                y[b * ow + q, f] = act(acc[f] + bias[f], code)


@numba_kernel
def one_channel_grad_rows(x, y, gy, code, kh, kw, sh, sw, dh, dw, top, left, oh, ow, g, gk, gb,
                          start, stop):
    """For the (sample, output row) pairs ``start:stop``: ``g = gy * act'(y)`` row by row (in
    the scratch row ``g (filters,)``), ``gb += g`` and ``gk[tap] += x[tap's pixel] * g``; ``gk
    (kh * kw, filters)`` and ``gb`` are this part's float64 sums."""
    if code == RELU:
        _one_channel_grad_rows(x, y, gy, RELU, kh, kw, sh, sw, dh, dw, top, left, oh, ow, g, gk,
                               gb, start, stop)
    elif code == SIGMOID:
        _one_channel_grad_rows(x, y, gy, SIGMOID, kh, kw, sh, sw, dh, dw, top, left, oh, ow, g,
                               gk, gb, start, stop)
    elif code == TANH:
        _one_channel_grad_rows(x, y, gy, TANH, kh, kw, sh, sw, dh, dw, top, left, oh, ow, g, gk,
                               gb, start, stop)
    else:
        _one_channel_grad_rows(x, y, gy, LINEAR, kh, kw, sh, sw, dh, dw, top, left, oh, ow, g,
                               gk, gb, start, stop)


@contracting_kernel
def _one_channel_grad_rows(x, y, gy, code, kh, kw, sh, sw, dh, dw, top, left, oh, ow, g, gk, gb,
                           start, stop):
    # Sums over one output row in the inputs' float type, added into the float64 totals after
    # each row (a float64 sum of every pixel's product costs 1.5x as much).
    _, hh, ww, _ = x.shape
    filters = gy.shape[1]
    row_gk = np.zeros((kh * kw, filters), gy.dtype)
    row_gb = np.zeros(filters, gy.dtype)
    for b in range(start, stop):
        s, r = b // oh, b % oh
        for q in range(ow):
            i = b * ow + q
            for f in range(filters):
                g[f] = gy[i, f] * act_grad(y[i, f], code)
                row_gb[f] += g[f]
            for p in range(kh):
                row = r * sh + p * dh - top
                if row < 0 or row >= hh:
                    continue
                for t in range(kw):
                    col = q * sw + t * dw - left
                    if col < 0 or col >= ww:
                        continue
                    v, j = x[s, row, col, 0], p * kw + t
                    for f in range(filters):
                        row_gk[j, f] += v * g[f]
        for j in range(kh * kw):
            for f in range(filters):
                gk[j, f] += row_gk[j, f]
                row_gk[j, f] = 0
        for f in range(filters):
            gb[f] += row_gb[f]
            row_gb[f] = 0


def _one_channel(x, kernel, bias, activation, window, strides, dilation, padding):
    """`Cpu.conv2d` of a one-channel input, split over the cores by output rows."""
    outs = padded_window_out(x.shape, window, strides, dilation, padding)
    filters = kernel.shape[1]
    y = memory.empty((x.shape[0] * outs[0] * outs[1], filters), x.dtype)
    cpu_threads.split(one_channel_rows.compiled(), x.shape[0] * outs[0], x, kernel, bias,
                      CODES[activation], *window, *strides, *dilation, padding[0][0],
                      padding[1][0], *outs, y, work_per_item=outs[1] * filters * kernel.shape[0])
    return y


def _one_channel_grad(x, y, gy, activation, window, strides, dilation, padding, filters):
    """Kernel and bias gradients of a one-channel `Cpu.conv2d`: one partial float64 sum per
    part of the output rows, added up here."""
    outs = padded_window_out(x.shape, window, strides, dilation, padding)
    taps = window[0] * window[1]
    args = (x, gy if y is None else y, gy, CODES[activation], *window, *strides, *dilation,
            padding[0][0], padding[1][0], *outs)
    parts = cpu_threads.bounds(x.shape[0] * outs[0], outs[1] * filters * (taps + 2))
    sums = [(np.zeros((taps, filters)), np.zeros(filters)) for _ in parts]
    grad_rows = one_channel_grad_rows.compiled()
    cpu_threads.run([(grad_rows, args + (np.empty(filters, x.dtype), gk, gb, start, stop))
                     for (gk, gb), (start, stop) in zip(sums, parts)])
    gk, gb = (sum(part) for part in zip(*sums))
    return gk.astype(x.dtype), gb.astype(x.dtype)


class Cpu:
    """`NumpyBackend`'s blocked versions: per block of samples whose column matrix fits in the
    cache (`CHUNK_BYTES`), the columns are written, multiplied and the bias and activation
    applied while they are still in L2, instead of an 85 MB column matrix going to DRAM and
    back."""

    def conv2d(self, x, kernel, bias, activation, window, strides, dilation, padding):
        if activation not in BIAS_ACT or x.dtype != kernel.dtype or not usable(x):
            return super().conv2d(x, kernel, bias, activation, window, strides, dilation,
                                  padding)
        x, kernel = np.ascontiguousarray(x), np.ascontiguousarray(kernel)
        fused = bias is not None or activation != "linear"
        bias = np.zeros(kernel.shape[1], x.dtype) if bias is None else \
            np.ascontiguousarray(bias, x.dtype)
        if x.shape[3] == 1:
            return _one_channel(x, kernel, bias, activation, window, strides, dilation, padding)
        outs, chunks, cols = _blocks(x, window, strides, dilation, padding, kernel.shape[0])
        rows = outs[0] * outs[1]
        y = memory.empty((x.shape[0] * rows, kernel.shape[1]), x.dtype)
        to_cols, epilogue = im2col_rows.compiled(), bias_act_inplace.compiled()
        for s0, s1 in chunks:
            c, yc = cols[:(s1 - s0) * rows], y[s0 * rows:s1 * rows]
            to_cols(x[s0:s1], *window, *strides, *dilation, padding[0][0], padding[1][0],
                    *outs, c, 0, (s1 - s0) * outs[0])
            np.matmul(c, kernel, out=yc)
            if fused:
                epilogue(yc, bias, CODES[activation], 0, yc.shape[0])
        return y

    def conv2d_grad(self, x, kernel, y, gy, activation, window, strides, dilation, padding,
                    need_x=True, need_kernel=True, need_bias=True):
        # The same blocks as `conv2d`: per block, the activation's derivative, the columns
        # (written again: cheaper than keeping 85 MB), the kernel gradient's share, and the
        # input gradient as one GEMM into the column buffer and the col2im kernel.
        if activation not in BIAS_ACT or not x.dtype == kernel.dtype == gy.dtype or \
                not usable(gy):
            return super().conv2d_grad(x, kernel, y, gy, activation, window, strides, dilation,
                                       padding, need_x, need_kernel, need_bias)
        x, kernel = np.ascontiguousarray(x), np.ascontiguousarray(kernel)
        gy = np.ascontiguousarray(gy)
        if x.shape[3] == 1 and not need_x:  # (an input image: its gradient is rarely asked)
            gk, gb = _one_channel_grad(x, None if y is None else np.ascontiguousarray(y), gy,
                                       activation, window, strides, dilation, padding,
                                       kernel.shape[1])
            return None, gk if need_kernel else None, gb if need_bias else None
        outs, chunks, cols = _blocks(x, window, strides, dilation, padding, kernel.shape[0])
        rows, filters = outs[0] * outs[1], kernel.shape[1]
        gk = np.zeros(kernel.shape, x.dtype) if need_kernel else None
        part = np.empty(kernel.shape, x.dtype)
        gb = np.zeros(filters)  # float64 sums
        gx = memory.empty(x.shape, x.dtype) if need_x else None
        g_buf = memory.empty((cols.shape[0], filters), x.dtype)
        geometry = (*window, *strides, *dilation, padding[0][0], padding[1][0], *outs)
        to_cols, from_cols = im2col_rows.compiled(), col2im_samples.compiled()
        act_grad = bias_act_grad_rows.compiled()
        for s0, s1 in chunks:
            m = (s1 - s0) * rows
            g, c = gy[s0 * rows:s1 * rows], cols[:m]
            if activation != "linear":
                act_grad(y[s0 * rows:s1 * rows], g, CODES[activation], g_buf[:m], gb, 0, m)
                g = g_buf[:m]
            elif need_bias:
                gb += g.sum(axis=0)
            if need_kernel:
                to_cols(x[s0:s1], *geometry, c, 0, (s1 - s0) * outs[0])
                gk += np.matmul(c.T, g, out=part)
            if need_x:
                np.matmul(g, kernel.T, out=c)
                from_cols(c, *geometry, gx[s0:s1], 0, s1 - s0)
        return gx, gk, gb.astype(x.dtype) if need_bias else None
