"""The NumPy (CPU) backend: the reference implementation of every kernel."""

import ctypes
import ctypes.util
import os
import sys

import numpy as np

from kerasrs.backend import base

_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4  # glibc mallopt parameters (malloc.h)


def tune_malloc():
    """Keep freed memory in the process heap instead of returning it to the OS (glibc only).

    A training step frees and re-allocates the same large arrays every step. By default glibc
    serves each one with a fresh ``mmap`` whose pages must be faulted in again (first touch runs
    at ~0.5 GB/s here), which made a NumPy CNN step ~40 % slower (see shared PERFORMANCE.md:
    the same effect as ``GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=...``).
    The cost is that the peak heap size is kept for the life of the process. Set
    ``KERASRS_MALLOC_TUNING=0`` to leave malloc alone. Returns True if the settings were applied.
    """
    if os.environ.get("KERASRS_MALLOC_TUNING", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (e.g. musl): nothing to tune
        return False
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, 2**34))


class NumpyBackend(base.Backend):
    name = "numpy"
    xp = np
    array_type = np.ndarray

    def __init__(self):
        super().__init__()
        self.malloc_tuned = tune_malloc()

    def to_numpy(self, x):
        return np.asarray(x)

    def seed(self, seed):
        self.rng = np.random.default_rng(seed)
