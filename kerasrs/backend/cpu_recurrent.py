"""Compiled recurrent-gate kernels (LSTM, GRU; one time step each) and the vectorizable
float32 ``exp``, sigmoid and tanh they are built from. Part of `cpu_kernels` (which re-exports
the kernels); imported with it on the first fused call, never by ``import kerasrs``.

numba's ``math.exp``/``math.tanh`` are scalar libm calls (a vector ``exp`` needs Intel's SVML),
so a loop full of them loses to NumPy's SIMD functions. `_exp_neg`, `_sigmoid` and `_tanh` are
float32 written in plain arithmetic that LLVM vectorizes (float64 keeps libm). Every kernel has
its NumPy twin in `kerasrs.backend.base.Backend` (``lstm_gates`` ...); tests compare them.
"""

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

# For the recurrent gate kernels: fused multiply-adds in the exp/tanh polynomials (1-2 ulp
# from the unfused result; an LSTM step of 128 x 128 units 75 -> 54 us).
gate_kernel = numba.njit(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})


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
