"""The interface every backend implements: an array module, dtypes, an RNG and named kernels."""

import math

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

    def softmax_cross_entropy(self, logits, labels):
        """Row-wise softmax and cross-entropy of ``logits`` (n, c) against ``labels``.

        ``labels`` are int class ids (n,) (sparse) or float targets (n, c) (dense). Each row's
        log-sum-exp ``lse = max + log(sum(exp(x - max)))`` keeps exp from overflowing.

        Returns:
            (loss, probs): loss (n,) ``lse - x[label]`` or ``sum(t * (lse - x))``, and the
            softmax probabilities (n, c), both in ``logits``' dtype. A sparse id outside
            ``[0, c)`` gives a NaN loss (the op checks ids before calling).
        """
        xp = self.xp
        m = logits.max(axis=1, keepdims=True)
        m = xp.where(xp.isneginf(m), 0, m).astype(logits.dtype, copy=False)  # all -inf rows
        lse = m + xp.log(xp.exp(logits - m).sum(axis=1, keepdims=True))
        probs = xp.exp(logits - lse)
        if labels.ndim == 1:
            c = logits.shape[1]
            valid = (labels >= 0) & (labels < c)
            picked = xp.take_along_axis(logits, xp.where(valid, labels, 0)[:, None], axis=1)
            loss = xp.where(valid, lse[:, 0] - picked[:, 0], xp.nan)
        else:
            loss = (labels * (lse - logits)).sum(axis=1)
        return loss.astype(logits.dtype, copy=False), probs

    def softmax_cross_entropy_grad(self, probs, labels, gloss):
        """Gradient wrt the logits: ``gloss[:, None] * (sum(t) * probs - t)`` (t one-hot if sparse).

        Args: probs (n, c) from `softmax_cross_entropy`; labels as there; gloss (n,).
        Returns: (n, c) in ``probs``' dtype.
        """
        xp = self.xp
        if labels.ndim == 1:
            g = probs.copy()
            g[xp.arange(len(labels)), labels] -= 1
        else:
            g = labels.sum(axis=1, keepdims=True) * probs - labels
        return (gloss[:, None] * g).astype(probs.dtype, copy=False)

    def dropout_mask(self, shape, rate, seed, offset=0, dtype="float32"):
        """Inverted-dropout multiplier: 0 with probability ``rate``, else ``1 / (1 - rate)``.

        Bits from the counter-based generator Philox4x32-10 (Salmon et al., "Parallel random
        numbers: as easy as 1, 2, 3", SC 2011): element e is word ``e % 4`` of
        ``philox(counter=(e // 4, offset), key=seed)`` (64-bit halves as two 32-bit words); it is
        kept when its top 24 bits ``u`` satisfy ``u >= ceil(rate * 2**24)``. The mask depends only
        on (seed, offset, shape), so the CUDA kernel gives the same bits.

        Args:
            shape: output shape. rate: float in [0, 1). seed, offset: ints in [0, 2**64).
            dtype: float dtype of the result.
        """
        xp = self.xp
        n = math.prod(shape)
        b = xp.arange((n + 3) // 4, dtype=np.uint64)
        ctr = [b & _MASK32, b >> np.uint64(32)]
        ctr += [xp.full_like(b, v) for v in _split64(offset)]
        words = philox4x32_10(xp, ctr, _split64(seed))
        bits = xp.stack(words, axis=1).reshape(-1)[:n]
        keep = (bits >> np.uint64(8)) >= np.uint64(dropout_threshold(rate))
        return xp.where(keep, 1 / (1 - rate), 0).astype(dtype).reshape(shape)

    def embedding_grad(self, indices, gy, input_dim):
        """Gradient of an embedding table: ``out[indices[i]] += gy[i]`` summed over repeats.

        Args: indices int (...); gy ``indices.shape + (dim,)``; input_dim rows of the table.
        Returns: (input_dim, dim) in ``gy``'s dtype. Ids outside ``[0, input_dim)`` add nothing.
        """
        xp = self.xp
        dim = gy.shape[-1]
        flat = indices.reshape(-1)
        rows = gy.reshape(-1, dim)
        valid = (flat >= 0) & (flat < input_dim)
        out = xp.zeros((input_dim, dim), dtype=gy.dtype)
        self.scatter_add(out, flat[valid], rows[valid])
        return out

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


# -- Philox4x32-10, vectorized over uint64 arrays holding 32-bit words ----------------------------
_MASK32 = np.uint64(0xFFFFFFFF)
_PHILOX_M = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)


def _split64(v):
    """(low, high) 32-bit words of a non-negative int below 2**64."""
    v = int(v)
    if not 0 <= v < 2 ** 64:
        raise ValueError(f"Philox seeds and offsets must be in [0, 2**64). Received: {v}")
    return v & 0xFFFFFFFF, v >> 32


def dropout_threshold(rate):
    """The 24-bit threshold for keeping an element: ``ceil(rate * 2**24)`` (exact for rates in
    [0, 1), so ``u / 2**24 >= rate`` is decided on integers, the same on host and device)."""
    return math.ceil(rate * (1 << 24))


def philox4x32_10(xp, counter, key):
    """Philox4x32-10 (Salmon et al. 2011): four counter words (uint64 arrays of 32-bit values)
    and two key words (ints) to four output words, elementwise."""
    x0, x1, x2, x3 = counter
    k0, k1 = key
    for _ in range(10):
        p0 = _PHILOX_M[0] * x0  # 32 x 32 -> 64-bit products, exact in uint64
        p1 = _PHILOX_M[1] * x2
        x0, x1, x2, x3 = ((p1 >> np.uint64(32)) ^ x1 ^ np.uint64(k0), p1 & _MASK32,
                          (p0 >> np.uint64(32)) ^ x3 ^ np.uint64(k1), p0 & _MASK32)
        k0, k1 = (k0 + _PHILOX_W[0]) & 0xFFFFFFFF, (k1 + _PHILOX_W[1]) & 0xFFFFFFFF
    return x0, x1, x2, x3
