"""Dropout masks from the counter-based generator Philox4x32-10 (Salmon et al., "Parallel random
numbers: as easy as 1, 2, 3", SC 2011): the NumPy twin, the numba kernel and the CUDA launcher
of ``dropout.cu`` give the same bits, since a mask depends only on (seed, offset, shape)."""

import math

import numpy as np

from kerasrs.backend import cpu_threads, memory
from kerasrs.backend.kernels import cuda
from kerasrs.backend.kernels.cpu import kernel, usable
from kerasrs.backend.kernels.cuda import KERNEL_DTYPES, check, float_type

CUDA = ("philox4x32_10",) + cuda.each_float("dropout_mask")


class Twin:
    """The reference version (a method of `kerasrs.backend.base.Backend`)."""

    def dropout_mask(self, shape, rate, seed, offset=0, dtype="float32"):
        """Inverted-dropout multiplier: 0 with probability ``rate``, else ``1 / (1 - rate)``.

        Element e is word ``e % 4`` of ``philox(counter=(e // 4, offset), key=seed)`` (64-bit
        halves as two 32-bit words); it is kept when its top 24 bits ``u`` satisfy
        ``u >= ceil(rate * 2**24)``.

        Args:
            shape: output shape. rate: float in [0, 1). seed, offset: ints in [0, 2**64).
            dtype: float dtype of the result.
        """
        xp = self.xp
        n = math.prod(shape)
        b = xp.arange((n + 3) // 4, dtype=np.uint64)
        ctr = [b & _MASK32, b >> np.uint64(32)]
        ctr += [xp.full_like(b, v) for v in split64(offset)]
        words = philox4x32_10(xp, ctr, split64(seed))
        bits = xp.stack(words, axis=1).reshape(-1)[:n]
        keep = (bits >> np.uint64(8)) >= np.uint64(dropout_threshold(rate))
        return xp.where(keep, 1 / (1 - rate), 0).astype(dtype).reshape(shape)


# -- Philox4x32-10, vectorized over uint64 arrays holding 32-bit words ----------------------------
_MASK32 = np.uint64(0xFFFFFFFF)
_PHILOX_M = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)


def split64(v):
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
    """Philox4x32-10: four counter words (uint64 arrays of 32-bit values) and two key words
    (ints) to four output words, elementwise."""
    x0, x1, x2, x3 = counter
    k0, k1 = key
    for _ in range(10):
        p0 = _PHILOX_M[0] * x0  # 32 x 32 -> 64-bit products, exact in uint64
        p1 = _PHILOX_M[1] * x2
        x0, x1, x2, x3 = ((p1 >> np.uint64(32)) ^ x1 ^ np.uint64(k0), p1 & _MASK32,
                          (p0 >> np.uint64(32)) ^ x3 ^ np.uint64(k1), p0 & _MASK32)
        k0, k1 = (k0 + _PHILOX_W[0]) & 0xFFFFFFFF, (k1 + _PHILOX_W[1]) & 0xFFFFFFFF
    return x0, x1, x2, x3


# -- numba: one pass instead of the twin's ~60 full-size array operations ------------------------
_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
_32, _8 = np.uint64(32), np.uint64(8)
_BLOCK = 512  # Philox blocks computed per pass, in four L1-resident rows


@kernel
def dropout_mask_blocks(out, seed_lo, seed_hi, offset_lo, offset_hi, threshold, scale, start,
                        stop):
    """Fill the flat float array ``out`` for the blocks of four ``start:stop``: element e is
    word e % 4 of philox(counter=(e // 4, offset), key=seed); ``scale`` where its top 24 bits
    are >= ``threshold``, else 0. All integer arguments are np.uint64 holding 32-bit words
    (threshold: 24 bits). The words go to four separate rows first (`_words`, which LLVM
    vectorizes: 2.7x faster than storing them interleaved), then are interleaved into ``out``."""
    n = out.size
    rows = np.empty((4, _BLOCK), out.dtype)
    for b0 in range(start, stop, _BLOCK):
        m = min(_BLOCK, stop - b0)
        _words(rows[0, :m], rows[1, :m], rows[2, :m], rows[3, :m], b0, seed_lo, seed_hi,
               offset_lo, offset_hi, threshold, scale)
        for i in range(m):
            for w in range(4):
                e = 4 * (b0 + i) + w
                if e < n:
                    out[e] = rows[w, i]


@kernel
def _words(f0, f1, f2, f3, b0, seed_lo, seed_hi, offset_lo, offset_hi, threshold, scale):
    """The mask values of words 0..3 of Philox blocks ``b0, b0 + 1, ...`` into ``f0..f3``."""
    for i in range(f0.size):
        bb = np.uint64(b0 + i)
        x0, x1, x2, x3 = bb & _MASK32, bb >> _32, offset_lo, offset_hi
        k0, k1 = seed_lo, seed_hi
        for _ in range(10):
            p0 = _M0 * x0  # 32 x 32 -> 64-bit products, exact in uint64
            p1 = _M1 * x2
            x0, x1, x2, x3 = (p1 >> _32) ^ x1 ^ k0, p1 & _MASK32, (p0 >> _32) ^ x3 ^ k1, \
                p0 & _MASK32
            k0 = (k0 + _W0) & _MASK32
            k1 = (k1 + _W1) & _MASK32
        f0[i] = scale if (x0 >> _8) >= threshold else scale * 0
        f1[i] = scale if (x1 >> _8) >= threshold else scale * 0
        f2[i] = scale if (x2 >> _8) >= threshold else scale * 0
        f3[i] = scale if (x3 >> _8) >= threshold else scale * 0


class Cpu:
    """`NumpyBackend`'s compiled version, falling back to `Twin` for other dtypes."""

    def dropout_mask(self, shape, rate, seed, offset=0, dtype="float32"):
        dtype = np.dtype(dtype)
        if not 0 <= rate < 1 or not usable(dtype):
            return super().dropout_mask(shape, rate, seed, offset, dtype)
        out = memory.empty(tuple(shape), dtype)
        words = [np.uint64(w) for w in split64(seed) + split64(offset)]
        cpu_threads.split(dropout_mask_blocks.compiled(), (out.size + 3) // 4, out.reshape(-1),
                          *words, np.uint64(dropout_threshold(rate)),
                          dtype.type(1 / (1 - rate)),
                          work_per_item=16)  # a Philox block costs ~16 copies of an element
        return out


# -- CUDA ---------------------------------------------------------------------------------------
class Launch:
    """The launchers of ``dropout.cu`` (methods of `kerasrs.backend.kernels.Launcher`)."""

    def dropout_mask(self, shape, rate, seed, offset=0, dtype="float32"):
        dtype = np.dtype(dtype)
        t = float_type("dropout_mask", "dtype", np.empty(0, dtype))
        if not 0 <= rate < 1:
            raise ValueError(f"dropout_mask: `rate` must be in [0, 1). Received: rate={rate!r}")
        split64(seed), split64(offset)  # both must fit in 64 bits
        out = self.xp.empty(tuple(shape), dtype)
        if out.size == 0:
            return out
        grid, block = self._grid(-(-out.size // 4))
        self.launch("dropout", f"dropout_mask<{t}>", grid, block,
                    (out, np.int64(out.size), np.uint64(seed), np.uint64(offset),
                     np.uint32(dropout_threshold(rate)), dtype.type(1 / (1 - rate))))
        return out

    def philox4x32_10(self, counters, keys):
        """Raw Philox4x32-10 blocks: counters (n, 4) and keys (n, 2) uint32 -> (n, 4) uint32."""
        check("philox4x32_10", "counters", counters, ndim=2, dtype=np.uint32)
        n = counters.shape[0]
        check("philox4x32_10", "counters", counters, shape=(n, 4))
        check("philox4x32_10", "keys", keys, dtype=np.uint32, shape=(n, 2))
        out = self.xp.empty((n, 4), np.uint32)
        if n:
            self.launch("dropout", "philox4x32_10", (-(-n // 32),), (32,),
                        (counters, keys, out, np.int32(n)))
        return out


class Cuda:
    """`CupyBackend`'s version, falling back to `Twin` for other dtypes."""

    def dropout_mask(self, shape, rate, seed, offset=0, dtype="float32"):
        if np.dtype(dtype) not in KERNEL_DTYPES:
            return super().dropout_mask(shape, rate, seed, offset, dtype)
        return self.kernels.dropout_mask(shape, rate, seed, offset, dtype)
