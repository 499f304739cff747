"""The interface every backend implements: an array module, dtypes, an RNG and named kernels."""

import numpy as np


class Backend:
    """One array library (NumPy or CuPy) behind a common interface.

    Attributes:
        name: "numpy" or "cupy".
        xp: the array module (``numpy`` or ``cupy``).
        array_type: the array class this backend owns, used to tell which backend made an array.
    """

    name = None
    xp = None
    array_type = None

    def __init__(self):
        self.rng = None
        self.seed(None)

    # -- arrays and transfer -------------------------------------------------------------------
    def asarray(self, x, dtype=None):
        """Array on this backend's device, without a copy where possible."""
        return self.xp.asarray(x, dtype=dtype)

    def to_numpy(self, x):
        """Host NumPy copy (or view, on the CPU) of an array of this backend."""
        raise NotImplementedError

    def is_array(self, x):
        return isinstance(x, self.array_type)

    # -- random numbers ------------------------------------------------------------------------
    def seed(self, seed):
        """Re-seed this backend's generator (None: from OS entropy)."""
        raise NotImplementedError

    def scatter_add(self, a, key, values):
        """In place ``a[key] += values``, summing where ``key`` repeats an index (unlike ``+=``)."""
        self.xp.add.at(a, key, values)

    # -- fused kernels: NumPy versions are the reference, other backends override ------------------
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

    def __repr__(self):
        return f"<kerasrs backend {self.name!r}>"


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


def numpy_dtype(dtype):
    """The NumPy dtype for a name or dtype object; "bfloat16" comes from ml_dtypes."""
    if isinstance(dtype, str) and dtype == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype)
