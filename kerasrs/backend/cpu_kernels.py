"""Compiled CPU kernels (numba) behind `NumpyBackend`'s fused methods.

Imported on the first fused call, never by ``import kerasrs``. Each kernel is one pass over its
arrays (NumPy makes one pass per operation). Compiled code is cached on disk (``cache=True``):
numba writes it to ``__pycache__`` beside this file, or, where that is read-only (a system
site-packages), to the user's cache directory, so a second process loads it instead of
compiling. No environment variable or numba setting is changed.

Every kernel releases the GIL and takes the half-open range ``start, stop`` of the rows (or
elements) it works on as its last two arguments; `kerasrs.backend.cpu_threads.split` runs the
parts on both cores with threads that sleep when idle (numba's own ``parallel=True`` threads
spin between kernels and took the cores from OpenBLAS's GEMM threads). Kernels that reduce
over rows write one partial result per part, summed by the caller.

``error_model="numpy"``: a division by zero gives inf/nan as in NumPy instead of raising,
which is also what lets LLVM vectorize loops that divide (Adam ran 3x faster with it).

Every kernel has a reference twin in `kerasrs.backend.base.Backend`; tests compare them.
Activation codes: 0 linear, 1 relu, 2 sigmoid, 3 tanh (recurrent gates also 4 hard_sigmoid).

numba's ``math.exp``/``math.tanh`` are scalar libm calls (a vector ``exp`` needs Intel's SVML);
the sigmoid and tanh here come from `cpu_recurrent`, float32 written in arithmetic that LLVM
vectorizes. The recurrent gate kernels live there too and are re-exported from here.
"""

import math

import numba
import numpy as np

from kerasrs.backend.cpu_recurrent import (  # noqa: F401 (re-exported kernels)
    _sigmoid, _tanh, gru_gates, gru_gates_grad, lstm_gates, lstm_gates_grad)

ACTIVATION_CODES = {"linear": 0, "relu": 1, "sigmoid": 2, "tanh": 3}

kernel = numba.njit(cache=True, nogil=True, error_model="numpy")
# For kernels that sum along a row: without permission to reassociate, LLVM keeps a float sum in
# its written order and leaves the loop scalar (layer_norm 0.47 -> 0.12 ms with it, 3584 x 64).
# Only reassociation and fused multiply-add are allowed; NaN and inf keep their IEEE meaning.
reducing_kernel = numba.njit(cache=True, nogil=True, error_model="numpy",
                             fastmath={"reassoc", "contract"})


@kernel
def _act(x, code):
    if code == 1:  # as np.maximum(x, 0): NaN stays, -inf and -0.0 give +0.0
        return x if not x <= 0 else 0
    if code == 2:  # logistic without overflow (float32: the vectorizable `_sigmoid` below)
        return _sigmoid(x)
    if code == 3:
        return _tanh(x)
    return x


@kernel
def _dact(y, code):
    """The activation's derivative from its output ``y``."""
    if code == 1:
        return 1 if y > 0 else 0
    if code == 2:
        return y * (1 - y)
    if code == 3:
        return 1 - y * y
    return 1


# -- bias + activation ------------------------------------------------------------------------------
# A loop that branches on a runtime activation code is vectorized only for the cheapest codes;
# each kernel calls its row loop with a constant code, which LLVM inlines and vectorizes
# (3584 x 128 float32: sigmoid 3.0 -> 0.32 ms, tanh 3.3 -> 0.42 ms).
@kernel
def bias_act(x, bias, code, out, start, stop):
    """``out[i] = act(x[i] + bias)`` for rows ``start:stop``."""
    if code == 1:
        _bias_act_rows(x, bias, 1, out, start, stop)
    elif code == 2:
        _bias_act_rows(x, bias, 2, out, start, stop)
    elif code == 3:
        _bias_act_rows(x, bias, 3, out, start, stop)
    else:
        _bias_act_rows(x, bias, 0, out, start, stop)


@kernel
def _bias_act_rows(x, bias, code, out, start, stop):
    c = x.shape[1]
    for i in range(start, stop):
        for j in range(c):
            out[i, j] = _act(x[i, j] + bias[j], code)


@kernel
def bias_act_inplace(y, bias, code, start, stop):
    """`bias_act` with ``out`` = ``x``: one array, so LLVM vectorizes without an overlap check
    (which fails for two arguments on the same memory, leaving a scalar loop 4x slower)."""
    if code == 1:
        _bias_act_inplace_rows(y, bias, 1, start, stop)
    elif code == 2:
        _bias_act_inplace_rows(y, bias, 2, start, stop)
    elif code == 3:
        _bias_act_inplace_rows(y, bias, 3, start, stop)
    else:
        _bias_act_inplace_rows(y, bias, 0, start, stop)


@kernel
def _bias_act_inplace_rows(y, bias, code, start, stop):
    c = y.shape[1]
    for i in range(start, stop):
        for j in range(c):
            y[i, j] = _act(y[i, j] + bias[j], code)


@kernel
def bias_act_grad(y, gy, code, out, acc, start, stop):
    """``out = gy * act'(y)`` for rows ``start:stop``; ``acc`` += their column sums."""
    if code == 1:
        _bias_act_grad_rows(y, gy, 1, out, acc, start, stop)
    elif code == 2:
        _bias_act_grad_rows(y, gy, 2, out, acc, start, stop)
    elif code == 3:
        _bias_act_grad_rows(y, gy, 3, out, acc, start, stop)
    else:
        _bias_act_grad_rows(y, gy, 0, out, acc, start, stop)


@kernel
def _bias_act_grad_rows(y, gy, code, out, acc, start, stop):
    c = y.shape[1]
    for i in range(start, stop):
        for j in range(c):
            g = gy[i, j] * _dact(y[i, j], code)
            out[i, j] = g
            acc[j] += g


@kernel
def relu_grad(y, gy, out, start, stop):
    y, gy, out = y[start:stop], gy[start:stop], out[start:stop]
    for i in range(out.size):
        out[i] = gy[i] if y[i] > 0 else gy[i] * 0


@kernel
def relu(x, out, start, stop):
    x, out = x[start:stop], out[start:stop]
    for i in range(out.size):
        out[i] = x[i] if not x[i] <= 0 else 0  # as np.maximum: NaN stays, -inf gives 0


# -- optimizers (flat arrays; scalars passed in the arrays' dtype) ----------------------------------
# Flat kernels slice their range first and loop from 0: a loop from a runtime ``start`` was not
# vectorized (Adam 0.71 vs 0.22 ms for 401k elements).
@kernel
def adam(w, g, m, v, v_hat, amsgrad, alpha, c1, c2, epsilon, decay, start, stop):
    """Adam/AdamW on elements ``start:stop`` (`Backend.adam_update`'s rule); ``c1 = 1 - beta_1``,
    ``c2 = 1 - beta_2``, ``decay = weight_decay * lr``; with ``amsgrad`` the running maximum
    ``v_hat`` of ``v`` is the denominator (``v_hat`` unused otherwise). The flag is passed on as
    a constant, so each variant's loop is compiled (and vectorized) without the other's work."""
    if amsgrad:
        _adam_range(w, g, m, v, v_hat, True, alpha, c1, c2, epsilon, decay, start, stop)
    else:
        _adam_range(w, g, m, v, v, False, alpha, c1, c2, epsilon, decay, start, stop)


@kernel
def _adam_range(w, g, m, v, v_hat, amsgrad, alpha, c1, c2, epsilon, decay, start, stop):
    w, g, m, v, v_hat = w[start:stop], g[start:stop], m[start:stop], v[start:stop], \
        v_hat[start:stop]
    for i in range(w.size):
        gi = g[i]
        wi = w[i] - w[i] * decay
        mi = m[i] + c1 * (gi - m[i])
        vi = v[i] + c2 * (gi * gi - v[i])
        m[i] = mi
        v[i] = vi
        if amsgrad:
            vi = max(v_hat[i], vi)
            v_hat[i] = vi
        w[i] = wi - alpha * mi / (np.sqrt(vi) + epsilon)


@kernel
def sgd(w, g, v, lr, momentum, nesterov, decay, start, stop):
    w, g, v = w[start:stop], g[start:stop], v[start:stop]
    for i in range(w.size):
        wi = w[i] - w[i] * decay
        step = lr * g[i]
        if momentum == 0:
            w[i] = wi - step
        else:
            vi = momentum * v[i] - step
            v[i] = vi
            w[i] = wi + (momentum * vi - step if nesterov else vi)


# -- layer normalization (row sums in float64) -----------------------------------------------------
@reducing_kernel
def layer_norm(x, gamma, beta, epsilon, y, mean, rstd, start, stop):
    d = x.shape[1]
    for i in range(start, stop):
        xi, yi = x[i], y[i]
        s = 0.0
        for j in range(d):
            s += xi[j]
        mu = s / d
        q = 0.0
        for j in range(d):
            t = xi[j] - mu
            q += t * t
        r = 1 / math.sqrt(q / d + epsilon)
        mean[i] = mu
        rstd[i] = r
        for j in range(d):
            yi[j] = (xi[j] - mu) * r * gamma[j] + beta[j]


@reducing_kernel
def layer_norm_grad(gy, x, gamma, mean, rstd, gx, acc, start, stop):
    """``gx`` for rows ``start:stop``; ``acc[0]``/``acc[1]`` += their gamma/beta gradients."""
    d = x.shape[1]
    pg, pb = acc[0], acc[1]
    for i in range(start, stop):
        mu, r = mean[i], rstd[i]
        xi, gyi, gxi = x[i], gy[i], gx[i]
        s1 = 0.0
        s2 = 0.0
        for j in range(d):
            xhat = (xi[j] - mu) * r
            g = gyi[j] * gamma[j]
            s1 += g
            s2 += g * xhat
            pg[j] += gyi[j] * xhat
            pb[j] += gyi[j]
        s1 /= d
        s2 /= d
        for j in range(d):
            xhat = (xi[j] - mu) * r
            gxi[j] = r * (gyi[j] * gamma[j] - s1 - xhat * s2)


# -- attention -------------------------------------------------------------------------------------
@reducing_kernel
def attention_softmax_grad(dp, p, gy, o, scale, start, stop):
    """`Backend.attention_softmax_grad` for the (batch, head) pairs ``start:stop``:
    ``dp = (dp - gy . o) * p * scale``, ``dp, p (B, N, T, S)``, ``gy, o (B, T, N, H)``."""
    heads, t_len = dp.shape[1], dp.shape[2]
    for bn in range(start, stop):
        b, n = bn // heads, bn % heads
        for t in range(t_len):
            g, v = gy[b, t, n], o[b, t, n]
            row = 0.0
            for h in range(g.size):
                row += g[h] * v[h]
            d, q = dp[b, n, t], p[b, n, t]
            for j in range(d.size):
                d[j] = (d[j] - row) * q[j] * scale


# -- max pooling (2-D, channels last), argmax as a flat index within the sample --------------------
@kernel
def max_pool2d(x, kh, kw, sh, sw, top, left, y, argmax, start, stop):
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
def max_pool_grad(gy, argmax, gx, start, stop):
    """Zero ``gx (n, size)`` rows ``start:stop``, then scatter-add those samples' ``gy``
    (argmax -1, a window entirely in the padding, adds nothing)."""
    for s in range(start, stop):
        gx[s, :] = 0
        for i in range(gy.shape[1]):
            a = argmax[s, i]
            if a >= 0:
                gx[s, a] += gy[s, i]


@kernel
def im2col(x, kh, kw, sh, sw, dh, dw, top, left, oh, ow, cols, start, stop):
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
    """`im2col` of a one-channel input (an image network's first layer), one window position
    at a time across the output row: 2.7x faster than pixel by pixel with a 1-long inner loop."""
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
def col2im(cols, kh, kw, sh, sw, dh, dw, top, left, oh, ow, gx, start, stop):
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
