"""Elementwise kernels: relu and its gradient, the logistic sigmoid, erf.

NumPy twins (`Twin`); numba relu/relu_grad (`Cpu`); on CUDA, one-liners as
``cupy.ElementwiseKernel`` objects (`ELEMENTWISE`, `Cuda`) rather than a ``.cu`` file.
"""

import functools

import numpy as np

from kerasrs.backend import cpu_threads, memory
from kerasrs.backend.kernels import cpu


class Twin:
    """The reference versions (methods of `kerasrs.backend.base.Backend`)."""

    def relu(self, x):
        """``max(x, 0)`` elementwise, a new array of ``x``'s shape and dtype."""
        return self.xp.maximum(x, 0)

    def relu_grad(self, y, gy):
        """Gradient of relu from its output: ``gy * (y > 0)`` (relu'(0) = 0, as PyTorch)."""
        return gy * (y > 0)

    def sigmoid(self, x):
        """Logistic function, computed without overflow for large ``|x|``."""
        xp = self.xp
        e = xp.exp(-xp.abs(x))
        return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)

    def erf(self, x):
        """The error function ``2/sqrt(pi) * integral_0^x exp(-t**2) dt``, elementwise.

        Float64-accurate (max abs error about 1e-15; the tests require < 1e-12 against
        ``math.erf``) without SciPy. Computed in float64 and returned in ``x``'s float dtype:

        * ``|x| < 2``: ``2/sqrt(pi) exp(-x^2) sum_k 2^k x^(2k+1) / (2k+1)!!`` (Abramowitz &
          Stegun 7.1.6), a series of positive terms (no cancellation), 30 terms in Horner form.
        * ``|x| >= 2``: ``1 - erfc(x)`` with erfc's continued fraction (A&S 7.1.14)
          ``exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))``, 45 levels,
          evaluated bottom-up.

        erf is odd, so both are applied to ``|x|`` and the sign is copied back.
        """
        xp = self.xp
        is_float = x.dtype.kind == "f" or x.dtype.name == "bfloat16"
        a = xp.abs(xp.asarray(x, dtype=np.float64))
        out = xp.empty_like(a)
        small = a < 2.0
        s = a[small]
        t = s * s
        p = xp.full_like(s, _ERF_SERIES[0])
        for c in _ERF_SERIES[1:]:
            p *= t
            p += c
        out[small] = _TWO_OVER_SQRT_PI * xp.exp(-t) * s * p
        b = a[~small]
        f = b.copy()
        for k in range(_ERF_CF_LEVELS, 0, -1):
            f = b + (k / 2) / f
        clipped = xp.minimum(b, 10.0)  # erfc(10) ~ 2e-45: no overflow in b*b, same result
        out[~small] = 1.0 - xp.exp(-clipped * clipped) / (_SQRT_PI * f)
        y = xp.copysign(out, xp.asarray(x, dtype=np.float64))
        return y.astype(x.dtype if is_float else np.float32, copy=False)  # ints give float32


_SQRT_PI = 1.7724538509055159
_TWO_OVER_SQRT_PI = 1.1283791670955126
_ERF_CF_LEVELS = 45


def _erf_series_coefficients(n=30):
    """``2^k / (2k+1)!!`` for k = n-1 ... 0 (highest first, for Horner)."""
    coeffs = [1.0]
    for k in range(1, n):
        coeffs.append(coeffs[-1] * 2.0 / (2 * k + 1))
    return coeffs[::-1]


_ERF_SERIES = _erf_series_coefficients()


# -- numba ------------------------------------------------------------------------------------
@cpu.kernel
def relu_range(x, out, start, stop):
    x, out = x[start:stop], out[start:stop]
    for i in range(out.size):
        out[i] = x[i] if not x[i] <= 0 else 0  # as np.maximum: NaN stays, -inf gives 0


@cpu.kernel
def relu_grad_range(y, gy, out, start, stop):
    y, gy, out = y[start:stop], gy[start:stop], out[start:stop]
    for i in range(out.size):
        out[i] = gy[i] if y[i] > 0 else gy[i] * 0


class Cpu:
    """`NumpyBackend`'s compiled versions, falling back to `Twin` for what they do not take."""

    def relu(self, x):
        if not x.flags.c_contiguous or not cpu.usable(x):
            return super().relu(x)
        y = memory.empty(x.shape, x.dtype)
        cpu_threads.split(relu_range.compiled(), x.size, x.reshape(-1), y.reshape(-1))
        return y

    def relu_grad(self, y, gy):
        if y.shape != gy.shape or y.dtype != gy.dtype or not cpu.usable(gy):
            return super().relu_grad(y, gy)
        shape = gy.shape  # (np.ascontiguousarray turns a 0-d array into 1-d)
        y, gy = np.ascontiguousarray(y), np.ascontiguousarray(gy)
        gx = memory.empty(shape, gy.dtype)
        cpu_threads.split(relu_grad_range.compiled(), gx.size, y.reshape(-1), gy.reshape(-1),
                          gx.reshape(-1))
        return gx


# -- CUDA: ``cupy.ElementwiseKernel``s --------------------------------------------------------
# ``name: (in_params, out_params, body)`` in its syntax, ``T`` the float type. The NumPy twin is
# the method named after "kerasrs_".
ELEMENTWISE = {
    # relu'(0) = 0, as PyTorch: the gradient flows only where the output is positive.
    "kerasrs_relu_grad": ("T y, T gy", "T gx", "gx = y > (T)0 ? gy : (T)0"),
    # Branch on the sign so exp never overflows.
    "kerasrs_sigmoid": (
        "T x",
        "T y",
        "double e = exp(-fabs((double)x)); y = x >= (T)0 ? (T)(1 / (1 + e)) : (T)(e / (1 + e))",
    ),
    # CUDA's erf is accurate to 2 ulp in float64 (CUDA C Programming Guide, math functions).
    "kerasrs_erf": ("T x", "T y", "y = erf(x)"),
}


@functools.cache
def elementwise_kernel(xp, name):
    """The ``ElementwiseKernel`` called ``name`` (a key of `ELEMENTWISE`) of array module
    ``xp`` (CuPy), built once."""
    in_params, out_params, body = ELEMENTWISE[name]
    return xp.ElementwiseKernel(in_params, out_params, body, name)


class Cuda:
    """`CupyBackend`'s versions."""

    def relu_grad(self, y, gy):
        return elementwise_kernel(self.xp, "kerasrs_relu_grad")(y, gy)

    def sigmoid(self, x):
        return elementwise_kernel(self.xp, "kerasrs_sigmoid")(x)

    def erf(self, x):
        kernel = elementwise_kernel(self.xp, "kerasrs_erf")
        if x.dtype.kind != "f" or x.dtype.itemsize < 4:  # half/int inputs: compute in float32
            return kernel(x.astype(self.xp.float32)).astype(
                x.dtype if x.dtype.kind == "f" else self.xp.float32)
        return kernel(x)

