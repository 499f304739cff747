"""Philox4x32-10 dropout masks on the CPU, compiled with numba (behind `NumpyBackend`).

The same bits as the twin ``base.Backend.dropout_mask`` and the CUDA kernel ``dropout_mask`` in
``cuda/dropout.cu`` (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011), in
one pass instead of the twin's ~60 full-size array operations, split over the cores by
`cpu_threads` as ``cpu_kernels`` are. Imported on first use, never by ``import kerasrs``;
compiled code is cached on disk as ``cpu_kernels`` does.
"""

import numba
import numpy as np

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
_MASK, _32, _8 = np.uint64(0xFFFFFFFF), np.uint64(32), np.uint64(8)


kernel = numba.njit(cache=True, nogil=True, error_model="numpy")
_BLOCK = 512  # Philox blocks computed per pass, in four L1-resident rows


@kernel
def dropout_mask(out, seed_lo, seed_hi, offset_lo, offset_hi, threshold, scale, start, stop):
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
        x0, x1, x2, x3 = bb & _MASK, bb >> _32, offset_lo, offset_hi
        k0, k1 = seed_lo, seed_hi
        for _ in range(10):
            p0 = _M0 * x0  # 32 x 32 -> 64-bit products, exact in uint64
            p1 = _M1 * x2
            x0, x1, x2, x3 = (p1 >> _32) ^ x1 ^ k0, p1 & _MASK, (p0 >> _32) ^ x3 ^ k1, p0 & _MASK
            k0 = (k0 + _W0) & _MASK
            k1 = (k1 + _W1) & _MASK
        f0[i] = scale if (x0 >> _8) >= threshold else scale * 0
        f1[i] = scale if (x1 >> _8) >= threshold else scale * 0
        f2[i] = scale if (x2 >> _8) >= threshold else scale * 0
        f3[i] = scale if (x3 >> _8) >= threshold else scale * 0
