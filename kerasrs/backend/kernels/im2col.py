"""im2col / col2im, the column matrix of a channels-last convolution and its adjoint: the NumPy
twin, the numba kernels (2-D) and the CUDA launcher of ``im2col.cu`` (1 to 3 spatial axes)."""

import itertools
import math

import numpy as np

from kerasrs.backend import cpu_threads, memory
from kerasrs.backend.kernels import cuda
from kerasrs.backend.kernels.cpu import into, kernel, usable
from kerasrs.backend.kernels.cuda import check, float_type, fusable

CUDA = cuda.each_float("im2col", "col2im")


def window_out(padded, window, strides, dilation):
    """Output size per spatial axis of a sliding window over a padded input."""
    return tuple((n - ((k - 1) * d + 1)) // s + 1
                 for n, k, s, d in zip(padded, window, strides, dilation))


def padded_window_out(x_shape, window, strides, dilation, padding):
    """`window_out` of the 2-D input of shape ``x_shape`` (n, h, w, c) padded by ``padding``."""
    return window_out([n + b + a for n, (b, a) in zip(x_shape[1:3], padding)], window, strides,
                      dilation)


class Twin:
    """The reference versions (methods of `kerasrs.backend.base.Backend`)."""

    def im2col(self, x, window, strides, dilation, padding, out=None):
        """Column matrix of all windows of a zero-padded channels-last input.

        Args:
            x: ``(n, *spatial, c)`` array (1, 2 or 3 spatial axes; 1-D convolutions may pass
                ``H = 1``).
            window, strides, dilation: tuples with one int per spatial axis.
            padding: tuple of ``(before, after)`` zero-padding pairs, one per spatial axis.
            out: optional reused buffer of the result's shape and dtype.

        Returns:
            ``(n * prod(out_spatial), prod(window) * c)``: row ``(b, *o)`` holds the window at
            output position ``o`` of sample ``b``, window positions row-major, channels fastest
            (so it multiplies a kernel ``(*window, c, filters)`` reshaped to 2-D). The output size
            per axis is ``(n_pad - ((k - 1) * d + 1)) // s + 1``.
        """
        xp = self.xp
        xpad = xp.pad(x, ((0, 0), *padding, (0, 0)))
        outs = window_out(xpad.shape[1:-1], window, strides, dilation)
        cols = xp.empty((x.shape[0], *outs, *window, x.shape[-1]), x.dtype)
        for pos in itertools.product(*(range(k) for k in window)):
            src = tuple(slice(p * d, p * d + s * (o - 1) + 1, s)
                        for p, d, s, o in zip(pos, dilation, strides, outs))
            cols[(slice(None),) * (1 + len(window)) + pos] = xpad[(slice(None), *src)]
        cols = cols.reshape(-1, math.prod(window) * x.shape[-1])
        if out is None:
            return cols
        out[...] = cols
        return out

    def col2im(self, cols, x_shape, window, strides, dilation, padding):
        """Adjoint of `im2col`: each column entry is added back to the input element it came
        from (entries that came from padding are dropped).

        Args:
            cols: ``(n * prod(out_spatial), prod(window) * c)``, laid out as `im2col` writes.
            x_shape: ``(n, *spatial, c)``, the unpadded input's shape.
            window, strides, dilation, padding: as in `im2col`.

        Returns:
            ``(n, *spatial, c)`` array of ``cols``'s dtype.
        """
        xp = self.xp
        padded = tuple(n + b + a for n, (b, a) in zip(x_shape[1:-1], padding))
        outs = window_out(padded, window, strides, dilation)
        c6 = cols.reshape(x_shape[0], *outs, *window, x_shape[-1])
        gx = xp.zeros((x_shape[0], *padded, x_shape[-1]), cols.dtype)
        for pos in itertools.product(*(range(k) for k in window)):
            dst = tuple(slice(p * d, p * d + s * (o - 1) + 1, s)
                        for p, d, s, o in zip(pos, dilation, strides, outs))
            gx[(slice(None), *dst)] += c6[(slice(None),) * (1 + len(window)) + pos]
        inner = tuple(slice(b, b + n) for n, (b, _) in zip(x_shape[1:-1], padding))
        return gx[(slice(None), *inner)]


# -- numba (2-D, channels last) -------------------------------------------------------------------
@kernel
def im2col_rows(x, kh, kw, sh, sw, dh, dw, top, left, oh, ow, cols, start, stop):
    """Rows of ``cols`` for the (sample, output row) pairs ``start:stop`` of ``n * oh``."""
    _, hh, ww, ch = x.shape
    if ch == 1:
        _im2col_one_channel(x, kh, kw, sh, sw, dh, dw, top, left, oh, ow, cols, start, stop)
        return
    for b in range(start, stop):
        s, r = b // oh, b % oh
        for q in range(ow):
            row_out = (s * oh + r) * ow + q
            for p in range(kh):
                row = r * sh + p * dh - top
                for t in range(kw):
                    col = q * sw + t * dw - left
                    base = (p * kw + t) * ch
                    if row < 0 or row >= hh or col < 0 or col >= ww:
                        for k in range(ch):
                            cols[row_out, base + k] = 0
                    else:
                        for k in range(ch):
                            cols[row_out, base + k] = x[s, row, col, k]


@kernel
def _im2col_one_channel(x, kh, kw, sh, sw, dh, dw, top, left, oh, ow, cols, start, stop):
    """`im2col_rows` of a one-channel input (an image network's first layer), one window
    position at a time across the output row: 2.7x faster than pixel by pixel with a 1-long
    inner loop."""
    _, hh, ww, _ = x.shape
    for b in range(start, stop):
        s, r = b // oh, b % oh
        first = (s * oh + r) * ow
        for p in range(kh):
            row = r * sh + p * dh - top
            inside = 0 <= row < hh
            for t in range(kw):
                j = p * kw + t
                for q in range(ow):
                    col = q * sw + t * dw - left
                    cols[first + q, j] = x[s, row, col, 0] if inside and 0 <= col < ww else 0


@kernel
def col2im_samples(cols, kh, kw, sh, sw, dh, dw, top, left, oh, ow, gx, start, stop):
    """Zero samples ``start:stop`` of ``gx (n, h, w, ch)`` and add their ``cols`` back in."""
    _, hh, ww, ch = gx.shape
    for s in range(start, stop):
        gx[s] = 0
        for r in range(oh):
            for q in range(ow):
                row_out = (s * oh + r) * ow + q
                for p in range(kh):
                    row = r * sh + p * dh - top
                    if row < 0 or row >= hh:
                        continue
                    for t in range(kw):
                        col = q * sw + t * dw - left
                        if col < 0 or col >= ww:
                            continue
                        base = (p * kw + t) * ch
                        for k in range(ch):
                            gx[s, row, col, k] += cols[row_out, base + k]


class Cpu:
    """`NumpyBackend`'s compiled versions (2-D), falling back to `Twin` for other ranks."""

    def im2col(self, x, window, strides, dilation, padding, out=None):
        if x.ndim != 4 or not usable(x):
            return super().im2col(x, window, strides, dilation, padding, out)
        x = np.ascontiguousarray(x)
        outs = padded_window_out(x.shape, window, strides, dilation, padding)
        shape = (x.shape[0] * outs[0] * outs[1], window[0] * window[1] * x.shape[3])
        target = out if out is not None and out.flags.c_contiguous else memory.empty(shape, x.dtype)
        cpu_threads.split(im2col_rows.compiled(), x.shape[0] * outs[0], x, *window, *strides,
                          *dilation, padding[0][0], padding[1][0], *outs, target,
                          work_per_item=outs[1] * shape[1])
        return into(out, target)

    def col2im(self, cols, x_shape, window, strides, dilation, padding):
        if len(x_shape) != 4 or not usable(cols):
            return super().col2im(cols, x_shape, window, strides, dilation, padding)
        outs = padded_window_out(x_shape, window, strides, dilation, padding)
        gx = memory.empty(x_shape, cols.dtype)  # zeroed by the kernel
        cpu_threads.split(col2im_samples.compiled(), x_shape[0], np.ascontiguousarray(cols),
                          *window, *strides, *dilation, padding[0][0], padding[1][0], *outs, gx,
                          work_per_item=cols.size // max(x_shape[0], 1))
        return gx


# -- CUDA ---------------------------------------------------------------------------------------
def geometry(op, x_shape, window, strides, dilation, padding):
    """Sizes of a channels-last window operation, padded to three spatial axes."""
    spatial = tuple(x_shape[1:-1])
    r = len(spatial)
    if not 1 <= r <= 3 or not all(len(v) == r for v in (window, strides, dilation, padding)):
        raise ValueError(f"{op}: x of shape {tuple(x_shape)} needs 1 to 3 spatial axes and one "
                         f"window/stride/dilation/padding entry per axis. Received "
                         f"window={window}, strides={strides}, dilation={dilation}, "
                         f"padding={padding}.")
    g = {"c": int(x_shape[-1])}
    for a in range(3):
        d, k, s, dl, (pb, pa) = ((spatial[a], window[a], strides[a], dilation[a], padding[a])
                                 if a < r else (1, 1, 1, 1, (0, 0)))
        o = (d + pb + pa - ((k - 1) * dl + 1)) // s + 1
        if k < 1 or s < 1 or dl < 1 or pb < 0 or pa < 0 or o < 0:
            raise ValueError(f"{op}: bad window geometry on spatial axis {a}: size {d}, window "
                             f"{k}, stride {s}, dilation {dl}, padding {(pb, pa)}.")
        g.update({f"d{a + 1}": d, f"k{a + 1}": k, f"s{a + 1}": s, f"dl{a + 1}": dl,
                  f"p{a + 1}": pb, f"o{a + 1}": o})
    return g


GEOMETRY_ARGS = ("d1", "d2", "d3", "c", "k1", "k2", "k3", "s1", "s2", "s3", "dl1", "dl2", "dl3",
                 "p1", "p2", "p3", "o1", "o2", "o3")


def geometry_ints(g, names=GEOMETRY_ARGS):
    """The kernels' geometry arguments, in their parameter order, as int32."""
    return [np.int32(g[k]) for k in names]


class Launch:
    """The launchers of ``im2col.cu`` (methods of `kerasrs.backend.kernels.Launcher`)."""

    def im2col(self, x, window, strides, dilation, padding, out=None):
        op = "im2col"
        check(op, "x", x)
        t = float_type(op, "x", x)
        g = geometry(op, x.shape, window, strides, dilation, padding)
        rows = x.shape[0] * g["o1"] * g["o2"] * g["o3"]
        shape = (rows, g["k1"] * g["k2"] * g["k3"] * g["c"])
        cols = self.xp.empty(shape, x.dtype) if out is None else out
        check(op, "out", cols, dtype=x.dtype, shape=shape)
        if cols.size:
            grid, block = self._grid(cols.size)
            self.launch("im2col", f"im2col<{t}>", grid, block,
                        (x, cols, np.int64(cols.size), *geometry_ints(g)))
        return cols

    def col2im(self, cols, x_shape, window, strides, dilation, padding):
        op = "col2im"
        check(op, "cols", cols, ndim=2)
        t = float_type(op, "cols", cols)
        g = geometry(op, x_shape, window, strides, dilation, padding)
        rows = x_shape[0] * g["o1"] * g["o2"] * g["o3"]
        check(op, "cols", cols, shape=(rows, g["k1"] * g["k2"] * g["k3"] * g["c"]))
        x = self.xp.empty(tuple(x_shape), cols.dtype)
        if x.size:
            grid, block = self._grid(x.size)
            self.launch("im2col", f"col2im<{t}>", grid, block,
                        (cols, x, np.int64(x.size), *geometry_ints(g)))
        return x


class Cuda:
    """`CupyBackend`'s versions (1 to 3 spatial axes), falling back to `Twin` otherwise."""

    def im2col(self, x, window, strides, dilation, padding, out=None):
        if not fusable(x) or x.ndim - 2 > 3:
            return super().im2col(x, window, strides, dilation, padding, out)
        direct = out if out is not None and out.flags.c_contiguous else None
        cols = self.kernels.im2col(self._c(x), window, strides, dilation, padding, out=direct)
        return into(out, cols)

    def col2im(self, cols, x_shape, window, strides, dilation, padding):
        if not fusable(cols) or len(x_shape) - 2 > 3:
            return super().col2im(cols, x_shape, window, strides, dilation, padding)
        return self.kernels.col2im(self._c(cols), x_shape, window, strides, dilation, padding)
