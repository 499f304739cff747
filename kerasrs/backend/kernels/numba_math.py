"""numba implementations of the scalar functions the compiled kernels call: the activations of
`activations.CODES` (`activations.act`, `act_grad`) and the vectorizable float32 ``exp``,
sigmoid and tanh they are built from. Imported by `cpu` with numba, on the first compile; never
by ``import kerasrs``.

numba's ``math.exp``/``math.tanh`` are scalar libm calls (a vector ``exp`` needs Intel's SVML),
so a loop full of them loses to NumPy's SIMD functions. `_exp_neg`, `_sigmoid` and `_tanh` are
float32 written in plain arithmetic that LLVM vectorizes (float64 keeps libm).
"""

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from kerasrs.backend.kernels import activations
from kerasrs.backend.kernels.activations import HARD_SIGMOID, RELU, SIGMOID, TANH


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


# -- the activations by code (activations.CODES), in the argument's float type -------------------
# A kernel that calls these with a constant code gets the branch inlined and its loop vectorized;
# with a runtime code the loop stays scalar.
@overload(activations.act, jit_options={"error_model": "numpy"})
def _act_impl(x, code):
    f = np.float32 if x == types.float32 else np.float64
    zero, three, six, sixth = f(0.0), f(3.0), f(6.0), f(1 / 6)

    def impl(x, code):
        if code == SIGMOID:
            return _sigmoid(x)
        if code == TANH:
            return _tanh(x)
        if code == RELU:  # as np.maximum(x, 0): NaN stays, -inf and -0.0 give +0.0
            return x if not x <= zero else zero
        if code == HARD_SIGMOID:  # Keras 3: relu6(x + 3) / 6 (as np.clip: NaN stays)
            v = x + three
            v = v if not v <= zero else zero
            return (v if not v >= six else six) * sixth
        return x
    return impl


@overload(activations.act_grad, jit_options={"error_model": "numpy"})
def _act_grad_impl(y, code):
    f = np.float32 if y == types.float32 else np.float64
    zero, one, sixth = f(0.0), f(1.0), f(1 / 6)

    def impl(y, code):
        if code == SIGMOID:
            return y - y * y  # y (1 - y): one fused multiply-add where contraction is allowed
        if code == TANH:
            return one - y * y
        if code == RELU:
            return one if y > zero else zero
        if code == HARD_SIGMOID:
            return sixth if zero < y < one else zero
        return one
    return impl
