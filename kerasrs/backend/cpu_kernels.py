"""Compiled CPU kernels (numba) behind `NumpyBackend`'s fused methods.

Imported on the first fused call, never by ``import kerasrs``. Each kernel is one pass over its
arrays (NumPy makes one pass per operation). Compiled code is cached on disk (``cache=True``):
numba writes it to ``__pycache__`` beside this file, or, where that is read-only (a system
site-packages), to the user's cache directory, so a second process loads it instead of
compiling. No environment variable or numba setting is changed.

The kernels run on the calling thread (``parallel = njit`` without ``parallel=True``; the loops
are written with ``prange`` and blocks so that turning it back on is one line). Measured on the
2-core project machine under load: with numba's default OpenMP threading layer the MLP trained
at 0.27-0.61x of plain NumPy, because idle OpenMP threads spin between kernels and take the
cores from OpenBLAS's GEMM threads; single-threaded fused kernels trained at 1.03-1.66x. Using
both cores without that contention needs threads that block when idle (e.g. a small pool of
our own over ``nogil`` kernels), which is future work.

Every kernel has a reference twin in `kerasrs.backend.base.Backend`; tests compare them. Where a
twin measured faster (Adam's in-place passes; the LSTM gate step, 5x), there is no kernel here.
Activation codes: 0 linear, 1 relu, 2 sigmoid, 3 tanh.
"""

import math

import numba
import numpy as np
from numba import prange

ACTIVATION_CODES = {"linear": 0, "relu": 1, "sigmoid": 2, "tanh": 3}

parallel = numba.njit(cache=True, nogil=True)  # see the module docstring: no numba threads
serial = numba.njit(cache=True, nogil=True)


@serial
def _act(x, code):
    if code == 1:
        return x if x > 0 else x * 0
    if code == 2:  # logistic without overflow
        if x >= 0:
            return 1 / (1 + math.exp(-x))
        e = math.exp(x)
        return e / (1 + e)
    if code == 3:
        return math.tanh(x)
    return x


@serial
def _dact(y, code):
    """The activation's derivative from its output ``y``."""
    if code == 1:
        return 1 if y > 0 else 0
    if code == 2:
        return y * (1 - y)
    if code == 3:
        return 1 - y * y
    return 1


def chunks(n):
    """How many row blocks a reduction is split into (one per thread, at most one per row)."""
    return max(1, min(numba.get_num_threads(), n))


# -- bias + activation ------------------------------------------------------------------------------
@parallel
def bias_act(x, bias, code, out):
    n, c = x.shape
    for i in prange(n):
        for j in range(c):
            out[i, j] = _act(x[i, j] + bias[j], code)


@parallel
def bias_act_grad(y, gy, code, out, partial):
    """``out = gy * act'(y)``; ``partial[k]`` the column sums of ``out`` over row block k."""
    n, c = y.shape
    blocks = partial.shape[0]
    for k in prange(blocks):
        acc = partial[k]
        for i in range(k * n // blocks, (k + 1) * n // blocks):
            for j in range(c):
                g = gy[i, j] * _dact(y[i, j], code)
                out[i, j] = g
                acc[j] += g


@parallel
def relu_grad(y, gy, out):
    for i in prange(y.size):
        out[i] = gy[i] if y[i] > 0 else gy[i] * 0


@parallel
def relu(x, out):
    for i in prange(x.size):
        out[i] = x[i] if x[i] > 0 else x[i] * 0


# -- optimizers -------------------------------------------------------------------------------------
@serial
def sgd_range(w, g, v, lr, momentum, nesterov, decay, start, stop):
    for i in range(start, stop):
        wi = w[i] - w[i] * decay
        step = lr * g[i]
        if momentum == 0:
            w[i] = wi - step
        else:
            vi = momentum * v[i] - step
            v[i] = vi
            w[i] = wi + (momentum * vi - step if nesterov else vi)


@parallel
def sgd(w, g, v, lr, momentum, nesterov, decay, blocks):
    n = w.size
    for k in prange(blocks):
        sgd_range(w, g, v, lr, momentum, nesterov, decay, k * n // blocks,
                  (k + 1) * n // blocks)


# -- layer normalization ----------------------------------------------------------------------------
@parallel
def layer_norm(x, gamma, beta, epsilon, y, mean, rstd):
    n, d = x.shape
    for i in prange(n):
        s = 0.0
        for j in range(d):
            s += x[i, j]
        mu = s / d
        q = 0.0
        for j in range(d):
            t = x[i, j] - mu
            q += t * t
        r = 1 / math.sqrt(q / d + epsilon)
        mean[i] = mu
        rstd[i] = r
        for j in range(d):
            y[i, j] = (x[i, j] - mu) * r * gamma[j] + beta[j]


@parallel
def layer_norm_grad(gy, x, gamma, mean, rstd, gx, partial):
    """``gx``; ``partial[k, 0]``/``partial[k, 1]``: gamma/beta gradients over row block k."""
    n, d = x.shape
    blocks = partial.shape[0]
    for k in prange(blocks):
        pg, pb = partial[k, 0], partial[k, 1]
        for i in range(k * n // blocks, (k + 1) * n // blocks):
            mu, r = mean[i], rstd[i]
            s1 = 0.0
            s2 = 0.0
            for j in range(d):
                xhat = (x[i, j] - mu) * r
                g = gy[i, j] * gamma[j]
                s1 += g
                s2 += g * xhat
                pg[j] += gy[i, j] * xhat
                pb[j] += gy[i, j]
            s1 /= d
            s2 /= d
            for j in range(d):
                xhat = (x[i, j] - mu) * r
                gx[i, j] = r * (gy[i, j] * gamma[j] - s1 - xhat * s2)


# -- max pooling (2-D, channels last), argmax as a flat index within the sample --------------------
@parallel
def max_pool2d(x, kh, kw, sh, sw, top, left, y, argmax):
    n, hh, ww, ch = x.shape
    _, oh, ow, _ = y.shape
    for b in prange(n * oh):
        s, r = b // oh, b % oh
        for q in range(ow):
            for k in range(ch):
                best = -np.inf
                arg = -1
                for p in range(kh):
                    row = r * sh + p - top
                    if row < 0 or row >= hh:
                        continue
                    for t in range(kw):
                        col = q * sw + t - left
                        if col < 0 or col >= ww:
                            continue
                        v = x[s, row, col, k]
                        if v > best or arg < 0:
                            best = v
                            arg = (row * ww + col) * ch + k
                y[s, r, q, k] = best
                argmax[s, r, q, k] = arg


@parallel
def max_pool_grad(gy, argmax, gx):
    """``gx`` (n, size) zeroed; each sample's scatter runs on one thread (no write races)."""
    n = gy.shape[0]
    for s in prange(n):
        for i in range(gy.shape[1]):
            gx[s, argmax[s, i]] += gy[s, i]


@parallel
def im2col(x, kh, kw, sh, sw, dh, dw, top, left, oh, ow, cols):
    n, hh, ww, ch = x.shape
    for b in prange(n * oh):
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


@parallel
def col2im(cols, kh, kw, sh, sw, dh, dw, top, left, oh, ow, gx):
    """Adds ``cols`` back into ``gx (n, h, w, ch)`` (zeroed); one sample per thread."""
    n, hh, ww, ch = gx.shape
    for s in prange(n):
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
