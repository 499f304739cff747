"""Max pooling over channels-last inputs and its backward: the NumPy twin, the numba kernels
(2-D) and the CUDA launcher of ``max_pool.cu`` (1 to 3 spatial axes)."""

import itertools
import math

import numpy as np

from kerasrs.backend import cpu_threads, memory
from kerasrs.backend.kernels import cuda
from kerasrs.backend.kernels.cpu import kernel, usable
from kerasrs.backend.kernels.cuda import check, float_type, fusable
from kerasrs.backend.kernels.im2col import (GEOMETRY_ARGS, geometry, geometry_ints,
                                            padded_window_out, window_out)

CUDA = cuda.each_float("max_pool", "max_pool_grad")


class Twin:
    """The reference versions (methods of `kerasrs.backend.base.Backend`)."""

    def max_pool(self, x, pool_size, strides, padding):
        """Max over windows of a channels-last input; padding never wins.

        Args:
            x: ``(n, *spatial, c)`` float array.
            pool_size, strides: tuples, one int per spatial axis.
            padding: tuple of ``(before, after)`` pairs, one per spatial axis.

        Returns:
            ``(y, argmax)``: ``y (n, *out_spatial, c)``; ``argmax`` int32 of ``y``'s shape, the
            winner's flat index into ``x[b].ravel()`` (within its sample ``b``). Ties go to the
            first window position in row-major order (so a window of ``-inf`` picks its first
            element); a NaN beats any number (the first NaN of the window wins: NaN propagates
            as in ``np.maximum``). A window entirely in the padding gives ``-inf`` and -1.
        """
        xp = self.xp
        n, c = x.shape[0], x.shape[-1]
        xpad = xp.pad(x, ((0, 0), *padding, (0, 0)), constant_values=-xp.inf)
        flat = xp.arange(math.prod(x.shape[1:]), dtype=np.int32).reshape(x.shape[1:])
        fpad = xp.pad(flat, (*padding, (0, 0)), constant_values=-1)
        outs = window_out(xpad.shape[1:-1], pool_size, strides, (1,) * len(pool_size))
        y = xp.full((n, *outs, c), -xp.inf, x.dtype)
        argmax = xp.full((n, *outs, c), -1, np.int32)  # -1: no valid element seen yet
        for pos in itertools.product(*(range(k) for k in pool_size)):
            src = tuple(slice(p, p + s * (o - 1) + 1, s) for p, s, o in zip(pos, strides, outs))
            part, index = xpad[(slice(None), *src)], fpad[src]
            # the first valid element; later, one that is larger or NaN while y is not NaN
            better = (index >= 0) & ((argmax < 0) | (~(part <= y) & (y == y)))
            y = xp.where(better, part, y)
            argmax = xp.where(better, index, argmax)
        return y, argmax.astype(np.int32)

    def max_pool_grad(self, gy, argmax, x_shape):
        """Backward of `max_pool`: each ``gy`` element is added to its window's winner.

        Args:
            gy: ``(n, *out_spatial, c)`` gradient of the pooled output.
            argmax: int32 indices from `max_pool`.
            x_shape: the pooled input's shape ``(n, *spatial, c)``.

        Returns:
            ``(n, *spatial, c)`` array of ``gy``'s dtype (overlapping windows add up; an
            argmax of -1, a window entirely in the padding, adds nothing).
        """
        xp = self.xp
        n = x_shape[0]
        gx = xp.zeros((n, math.prod(x_shape[1:])), gy.dtype)
        per_out = math.prod(argmax.shape[1:])  # (reshape(n, -1) fails for an empty batch)
        rows = xp.broadcast_to(xp.arange(n)[:, None], (n, per_out))
        index = argmax.reshape(n, per_out)
        valid = index >= 0
        self.scatter_add(gx, (rows[valid], index[valid]), gy.reshape(n, per_out)[valid])
        return gx.reshape(x_shape)


# -- numba (2-D, channels last; argmax a flat index within the sample) ---------------------------
@kernel
def max_pool2d_rows(x, kh, kw, sh, sw, top, left, y, argmax, start, stop):
    """Output rows ``start:stop`` of the ``n * oh`` (sample, row) pairs. The first valid
    element of a window wins ties; a NaN wins over numbers (the first NaN; NaN propagates as in
    ``np.maximum``). The channel loop is innermost, so it runs on SIMD lanes."""
    _, hh, ww, ch = x.shape
    _, oh, ow, _ = y.shape
    for b in range(start, stop):
        s, r = b // oh, b % oh
        for q in range(ow):
            best, arg = y[s, r, q], argmax[s, r, q]
            first = True
            for p in range(kh):
                row = r * sh + p - top
                if row < 0 or row >= hh:
                    continue
                for t in range(kw):
                    col = q * sw + t - left
                    if col < 0 or col >= ww:
                        continue
                    v, base = x[s, row, col], (row * ww + col) * ch
                    if first:
                        for k in range(ch):
                            best[k] = v[k]
                            arg[k] = base + k
                        first = False
                    else:
                        for k in range(ch):  # v > best, or v NaN while best is not
                            if not v[k] <= best[k] and best[k] == best[k]:
                                best[k] = v[k]
                                arg[k] = base + k
            if first:  # an all-padding window
                for k in range(ch):
                    best[k] = -np.inf
                    arg[k] = -1


@kernel
def max_pool_grad_samples(gy, argmax, gx, start, stop):
    """Zero ``gx (n, size)`` rows ``start:stop``, then scatter-add those samples' ``gy``
    (argmax -1, a window entirely in the padding, adds nothing)."""
    for s in range(start, stop):
        gx[s, :] = 0
        for i in range(gy.shape[1]):
            a = argmax[s, i]
            if a >= 0:
                gx[s, a] += gy[s, i]


class Cpu:
    """`NumpyBackend`'s compiled versions (2-D), falling back to `Twin` for other ranks."""

    def max_pool(self, x, pool_size, strides, padding):
        if x.ndim != 4 or not usable(x):
            return super().max_pool(x, pool_size, strides, padding)
        x = np.ascontiguousarray(x)
        outs = padded_window_out(x.shape, pool_size, strides, (1, 1), padding)
        y = memory.empty((x.shape[0], *outs, x.shape[3]), x.dtype)
        argmax = memory.empty(y.shape, np.int32)
        cpu_threads.split(max_pool2d_rows.compiled(), x.shape[0] * outs[0], x, *pool_size,
                          *strides, padding[0][0], padding[1][0], y, argmax,
                          work_per_item=outs[1] * x.shape[3] * pool_size[0] * pool_size[1])
        return y, argmax

    def max_pool_grad(self, gy, argmax, x_shape):
        if not usable(gy):
            return super().max_pool_grad(gy, argmax, x_shape)
        n, per_out = x_shape[0], math.prod(gy.shape[1:])
        gx = memory.empty((n, math.prod(x_shape[1:])), gy.dtype)  # zeroed by the kernel
        cpu_threads.split(max_pool_grad_samples.compiled(), n,
                          np.ascontiguousarray(gy).reshape(n, per_out),
                          np.ascontiguousarray(argmax).reshape(n, per_out), gx,
                          work_per_item=gx.shape[1])
        return gx.reshape(x_shape)


# -- CUDA ---------------------------------------------------------------------------------------
_POOL_ARGS = tuple(k for k in GEOMETRY_ARGS if not k.startswith("dl"))  # no dilation


class Launch:
    """The launchers of ``max_pool.cu`` (methods of `kerasrs.backend.kernels.Launcher`)."""

    def max_pool(self, x, pool_size, strides, padding):
        op = "max_pool"
        check(op, "x", x)
        t = float_type(op, "x", x)
        g = geometry(op, x.shape, pool_size, strides, (1,) * len(pool_size), padding)
        outs = tuple(g[f"o{a + 1}"] for a in range(len(pool_size)))
        y = self.xp.empty((x.shape[0], *outs, x.shape[-1]), x.dtype)
        argmax = self.xp.empty(y.shape, np.int32)
        if y.size:
            if np.prod(x.shape[1:]) >= 2 ** 31:
                raise ValueError(f"{op}: a sample of {x.shape[1:]} has too many elements for "
                                 "int32 argmax indices.")
            grid, block = self._grid(y.size)
            self.launch("max_pool", f"max_pool<{t}>", grid, block,
                        (x, y, argmax, np.int64(y.size), *geometry_ints(g, _POOL_ARGS)))
        return y, argmax

    def max_pool_grad(self, gy, argmax, x_shape):
        op = "max_pool_grad"
        check(op, "gy", gy)
        t = float_type(op, "gy", gy)
        check(op, "argmax", argmax, dtype=np.int32, shape=gy.shape)
        if len(x_shape) != gy.ndim or x_shape[0] != gy.shape[0]:
            raise ValueError(f"{op}: x_shape {tuple(x_shape)} does not match gy {gy.shape}.")
        gx = self.xp.zeros(tuple(x_shape), gy.dtype)
        if gy.size and gx.size:
            grid, block = self._grid(gy.size)
            self.launch("max_pool", f"max_pool_grad<{t}>", grid, block,
                        (gy, argmax, gx, np.int64(gy.size), np.int64(gy.size // gy.shape[0]),
                         np.int64(gx.size // gx.shape[0])))
        return gx


class Cuda:
    """`CupyBackend`'s versions (1 to 3 spatial axes), falling back to `Twin` otherwise."""

    def max_pool(self, x, pool_size, strides, padding):
        if not fusable(x) or x.ndim - 2 > 3:
            return super().max_pool(x, pool_size, strides, padding)
        return self.kernels.max_pool(self._c(x), pool_size, strides, padding)

    def max_pool_grad(self, gy, argmax, x_shape):
        if not fusable(gy) or len(x_shape) - 2 > 3:
            return super().max_pool_grad(gy, argmax, x_shape)
        argmax = self._c(argmax.astype(np.int32, copy=False))
        return self.kernels.max_pool_grad(self._c(gy), argmax, x_shape)
