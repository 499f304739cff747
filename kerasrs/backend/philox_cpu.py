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


@numba.njit(cache=True, nogil=True)
def dropout_mask(out, seed_lo, seed_hi, offset_lo, offset_hi, threshold, scale, start, stop):
    """Fill the flat float array ``out`` for the blocks of four ``start:stop``: element e is
    word e % 4 of philox(counter=(e // 4, offset), key=seed); ``scale`` where its top 24 bits
    are >= ``threshold``, else 0. All integer arguments are np.uint64 holding 32-bit words
    (threshold: 24 bits)."""
    n = out.size
    for b in range(start, stop):
        bb = np.uint64(b)
        x0, x1, x2, x3 = bb & _MASK, bb >> _32, offset_lo, offset_hi
        k0, k1 = seed_lo, seed_hi
        for _ in range(10):
            p0 = _M0 * x0  # 32 x 32 -> 64-bit products, exact in uint64
            p1 = _M1 * x2
            x0, x1, x2, x3 = (p1 >> _32) ^ x1 ^ k0, p1 & _MASK, (p0 >> _32) ^ x3 ^ k1, p0 & _MASK
            k0 = (k0 + _W0) & _MASK
            k1 = (k1 + _W1) & _MASK
        words = (x0, x1, x2, x3)
        for w in range(4):
            e = 4 * b + w
            if e < n:
                out[e] = scale if (words[w] >> _8) >= threshold else 0
