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

numba's ``math.exp``/``math.tanh`` are scalar libm calls (a vector ``exp`` needs Intel's SVML),
so a loop full of them loses to NumPy's SIMD functions. The recurrent gate kernels use
`_exp_neg`, `_sigmoid` and `_tanh` instead: float32 written in plain arithmetic that LLVM
vectorizes (float64 keeps libm).
"""

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

ACTIVATION_CODES = {"linear": 0, "relu": 1, "sigmoid": 2, "tanh": 3}

kernel = numba.njit(cache=True, nogil=True, error_model="numpy")
# For kernels that sum along a row: without permission to reassociate, LLVM keeps a float sum in
# its written order and leaves the loop scalar (layer_norm 0.47 -> 0.12 ms with it, 3584 x 64).
# Only reassociation and fused multiply-add are allowed; NaN and inf keep their IEEE meaning.
reducing_kernel = numba.njit(cache=True, nogil=True, error_model="numpy",
                             fastmath={"reassoc", "contract"})
# For the recurrent gate kernels: fused multiply-adds in the exp/tanh polynomials (1-2 ulp
# from the unfused result; an LSTM step of 128 x 128 units 75 -> 54 us).
gate_kernel = numba.njit(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})


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
def adam(w, g, m, v, alpha, c1, c2, epsilon, decay, start, stop):
    """Adam/AdamW on elements ``start:stop`` (`Backend.adam_update`'s rule); ``c1 = 1 - beta_1``,
    ``c2 = 1 - beta_2``, ``decay = weight_decay * lr``."""
    w, g, m, v = w[start:stop], g[start:stop], m[start:stop], v[start:stop]
    for i in range(w.size):
        gi = g[i]
        wi = w[i] - w[i] * decay
        mi = m[i] + c1 * (gi - m[i])
        vi = v[i] + c2 * (gi * gi - v[i])
        m[i] = mi
        v[i] = vi
        w[i] = wi - alpha * mi / (np.sqrt(vi) + epsilon)


@kernel
def adam_amsgrad(w, g, m, v, v_hat, alpha, c1, c2, epsilon, decay, start, stop):
    """`adam` with the running maximum ``v_hat`` of ``v`` in the denominator (AMSGrad)."""
    w, g, m, v, v_hat = w[start:stop], g[start:stop], m[start:stop], v[start:stop], \
        v_hat[start:stop]
    for i in range(w.size):
        gi = g[i]
        wi = w[i] - w[i] * decay
        mi = m[i] + c1 * (gi - m[i])
        vi = v[i] + c2 * (gi * gi - v[i])
        m[i] = mi
        v[i] = vi
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


# -- vectorizable float32 exp, sigmoid and tanh ---------------------------------------------------
@intrinsic
def _f32_from_bits(typingctx, bits):
    """The float32 whose bit pattern is the int32 ``bits`` (a bitcast LLVM vectorizes)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.int32), codegen


def _exp_neg(x):
    """``exp(x)`` for ``x <= 0`` (and NaN), in ``x``'s float type."""


@overload(_exp_neg, jit_options={"error_model": "numpy"})
def _exp_neg_impl(x):
    """float32: ``exp(x) = 2**n exp(r)`` with ``n = round(x / ln 2)``, ``|r| <= ln(2) / 2`` from
    a two-part ``ln 2`` (Cody & Waite range reduction) and ``exp(r)`` by a degree-7 minimax
    polynomial (the Cephes ``expf`` coefficients, ~1 ulp). ``2**n`` is built from its bits in two
    halves so results down to the smallest subnormal round once; below ``-110`` the result is 0.
    """
    if x != types.float32:
        return lambda x: math.exp(x)
    f = np.float32
    low, log2e, half = f(-110.0), f(1.4426950408889634), f(0.5)
    ln2_hi, ln2_lo = f(0.693359375), f(-2.12194440e-4)
    p0, p1, p2 = f(1.9875691500e-4), f(1.3981999507e-3), f(8.3334519073e-3)
    p3, p4, p5, one = f(4.1665795894e-2), f(1.6666665459e-1), f(5.0000001201e-1), f(1.0)
    i1, bias, mant = np.int32(1), np.int32(127), np.int32(23)

    def impl(x):
        xc = max(x, low)  # (a NaN becomes `low` here and is passed through at the end)
        n = np.floor(xc * log2e + half)
        r = xc - n * ln2_hi - n * ln2_lo
        p = ((((p0 * r + p1) * r + p2) * r + p3) * r + p4) * r + p5
        p = p * (r * r) + r + one
        k = np.int32(n)
        k1 = k >> i1
        y = p * _f32_from_bits((k1 + bias) << mant) * _f32_from_bits((k - k1 + bias) << mant)
        return x if x != x else y
    return impl


def _sigmoid(x):
    """``1 / (1 + exp(-x))`` without overflow."""


@overload(_sigmoid, jit_options={"error_model": "numpy"})
def _sigmoid_impl(x):
    one = np.float32(1.0) if x == types.float32 else 1.0

    def impl(x):
        e = _exp_neg(-abs(x))
        return (one if x >= 0 else e) / (one + e)
    return impl


def _tanh(x):
    """``tanh(x)``."""


@overload(_tanh, jit_options={"error_model": "numpy"})
def _tanh_impl(x):
    """float32: ``(1 - e) / (1 + e)`` with ``e = exp(-2|x|)`` for ``|x| >= 0.625``; below, where
    ``1 - e`` would cancel, ``x + x**3 P(x**2)`` (the Cephes ``tanhf`` polynomial)."""
    if x != types.float32:
        return lambda x: math.tanh(x)
    f = np.float32
    one, two, cut = f(1.0), f(2.0), f(0.625)
    q0, q1, q2 = f(-5.70498872745e-3), f(2.06390887954e-2), f(-5.37397155531e-2)
    q3, q4 = f(1.33314422036e-1), f(-3.33332819422e-1)

    def impl(x):
        a = abs(x)
        e = _exp_neg(-two * a)
        z = a * a
        small = a + a * z * ((((q0 * z + q1) * z + q2) * z + q3) * z + q4)
        t = small if a < cut else (one - e) / (one + e)
        return math.copysign(t, x)
    return impl


def _gate(x, code):
    """A recurrent gate's activation (codes as `ACTIVATION_CODES`)."""


@overload(_gate, jit_options={"error_model": "numpy"})
def _gate_impl(x, code):
    f = np.float32 if x == types.float32 else np.float64
    zero, three, six, sixth = f(0.0), f(3.0), f(6.0), f(1 / 6)

    def impl(x, code):
        if code == 2:
            return _sigmoid(x)
        if code == 3:
            return _tanh(x)
        if code == 1:  # as np.maximum(x, 0): NaN stays, -inf and -0.0 give +0.0
            return x if not x <= zero else zero
        if code == 4:  # hard_sigmoid, Keras 3: relu6(x + 3) / 6 (as np.clip: NaN stays)
            v = x + three
            v = v if not v <= zero else zero
            return (v if not v >= six else six) * sixth
        return x
    return impl


def _one(x):
    """1 in ``x``'s float type."""


@overload(_one)
def _one_impl(x):
    one = np.float32(1.0) if x == types.float32 else 1.0
    return lambda x: one


def _gate_derivative(y, code):
    """The gate activation's derivative from its output ``y``."""


@overload(_gate_derivative, jit_options={"error_model": "numpy"})
def _gate_derivative_impl(y, code):
    f = np.float32 if y == types.float32 else np.float64
    zero, one, sixth = f(0.0), f(1.0), f(1 / 6)

    def impl(y, code):
        if code == 2:
            return y - y * y
        if code == 3:
            return one - y * y
        if code == 1:
            return one if y > zero else zero
        if code == 4:
            return sixth if zero < y < one else zero
        return one
    return impl


# -- recurrent gates (one time step; rows are batch entries, gate blocks are column blocks) -------
# A loop that branches on a runtime activation code is not vectorized, so each kernel calls its
# row function with constant codes for Keras's default activations (tanh, sigmoid), which LLVM
# inlines and vectorizes, and with the runtime codes (a scalar loop) for the others.
DEFAULT_GATES = (3, 2)  # (activation, recurrent_activation) codes: tanh, sigmoid


@gate_kernel
def _lstm_row(z, c_prev, act, ract, h, c, tc, i):
    u = c_prev.shape[1]
    for j in range(u):
        ig, fg = _gate(z[i, j], ract), _gate(z[i, u + j], ract)
        gg, og = _gate(z[i, 2 * u + j], act), _gate(z[i, 3 * u + j], ract)
        cn = fg * c_prev[i, j] + ig * gg
        t = _gate(cn, act)
        z[i, j], z[i, u + j], z[i, 2 * u + j], z[i, 3 * u + j] = ig, fg, gg, og
        c[i, j] = cn
        tc[i, j] = t
        h[i, j] = og * t


@gate_kernel
def lstm_gates(z, c_prev, act, ract, h, c, tc, start, stop):
    """`Backend.lstm_gates` for rows ``start:stop``."""
    default = act == DEFAULT_GATES[0] and ract == DEFAULT_GATES[1]
    for i in range(start, stop):
        if default:
            _lstm_row(z, c_prev, 3, 2, h, c, tc, i)
        else:
            _lstm_row(z, c_prev, act, ract, h, c, tc, i)


@gate_kernel
def _lstm_grad_row(gates, c_prev, tc, dh, dc, act, ract, dz, dc_prev, i):
    u = c_prev.shape[1]
    for j in range(u):
        ig, fg, gg, og = gates[i, j], gates[i, u + j], gates[i, 2 * u + j], gates[i, 3 * u + j]
        t, d_h = tc[i, j], dh[i, j]
        d_c = dc[i, j] + d_h * og * _gate_derivative(t, act)
        dz[i, j] = d_c * gg * _gate_derivative(ig, ract)
        dz[i, u + j] = d_c * c_prev[i, j] * _gate_derivative(fg, ract)
        dz[i, 2 * u + j] = d_c * ig * _gate_derivative(gg, act)
        dz[i, 3 * u + j] = d_h * t * _gate_derivative(og, ract)
        dc_prev[i, j] = d_c * fg


@gate_kernel
def lstm_gates_grad(gates, c_prev, tc, dh, dc, act, ract, dz, dc_prev, start, stop):
    """`Backend.lstm_gates_grad` for rows ``start:stop``."""
    default = act == DEFAULT_GATES[0] and ract == DEFAULT_GATES[1]
    for i in range(start, stop):
        if default:
            _lstm_grad_row(gates, c_prev, tc, dh, dc, 3, 2, dz, dc_prev, i)
        else:
            _lstm_grad_row(gates, c_prev, tc, dh, dc, act, ract, dz, dc_prev, i)


@gate_kernel
def _gru_row(xz, hz, h_prev, act, ract, h, i):
    u = h_prev.shape[1]
    for j in range(u):
        zg = _gate(xz[i, j] + hz[i, j], ract)
        r = _gate(xz[i, u + j] + hz[i, u + j], ract)
        hh = _gate(xz[i, 2 * u + j] + r * hz[i, 2 * u + j], act)
        xz[i, j], xz[i, u + j], xz[i, 2 * u + j] = zg, r, hh
        h[i, j] = zg * h_prev[i, j] + (_one(zg) - zg) * hh


@gate_kernel
def gru_gates(xz, hz, h_prev, act, ract, h, start, stop):
    """`Backend.gru_gates` for rows ``start:stop``."""
    default = act == DEFAULT_GATES[0] and ract == DEFAULT_GATES[1]
    for i in range(start, stop):
        if default:
            _gru_row(xz, hz, h_prev, 3, 2, h, i)
        else:
            _gru_row(xz, hz, h_prev, act, ract, h, i)


@gate_kernel
def _gru_grad_row(gates, hz, h_prev, dh, act, ract, dxz, dhz, dh_prev, i):
    u = h_prev.shape[1]
    for j in range(u):
        zg, r, hh, d = gates[i, j], gates[i, u + j], gates[i, 2 * u + j], dh[i, j]
        dhh = d * (_one(zg) - zg) * _gate_derivative(hh, act)
        dzz = d * (h_prev[i, j] - hh) * _gate_derivative(zg, ract)
        dr = dhh * hz[i, 2 * u + j] * _gate_derivative(r, ract)
        dxz[i, j], dxz[i, u + j], dxz[i, 2 * u + j] = dzz, dr, dhh
        dhz[i, j], dhz[i, u + j], dhz[i, 2 * u + j] = dzz, dr, dhh * r
        dh_prev[i, j] = d * zg


@gate_kernel
def gru_gates_grad(gates, hz, h_prev, dh, act, ract, dxz, dhz, dh_prev, start, stop):
    """`Backend.gru_gates_grad` for rows ``start:stop``."""
    default = act == DEFAULT_GATES[0] and ract == DEFAULT_GATES[1]
    for i in range(start, stop):
        if default:
            _gru_grad_row(gates, hz, h_prev, dh, 3, 2, dxz, dhz, dh_prev, i)
        else:
            _gru_grad_row(gates, hz, h_prev, dh, act, ract, dxz, dhz, dh_prev, i)
