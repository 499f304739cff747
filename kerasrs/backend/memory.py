"""Large NumPy arrays whose memory is reused from one training step to the next.

Touching freshly allocated memory is slow on the project's CPU (each new page faults in; glibc
returns large freed blocks to the OS and maps them again next step): a CNN step spent about a
fifth of its time there. `empty` hands out arrays of at least `MIN_BYTES` on memory kept in a
free list by size. A block goes back to its list only when no array or view on it is alive:
the array's base is a small owner object whose ``__del__`` returns the block, and NumPy keeps
that owner alive for as long as any view exists. So an array that escapes (a layer output the
user keeps) is as safe as one from ``np.empty``.

Block sizes are rounded up to a multiple of an eighth of their power of two, so sizes within
12.5 % share blocks (a smaller last batch, varying sequence lengths). At most `MAX_FREE_BYTES`
of free blocks are kept: a block freed beyond that drops all the free ones first (blocks of
shapes no longer used do not pile up), and `clear` releases them all
(`kerasrs.utils.clear_session` calls it). Nothing process-wide is
changed: malloc's settings stay as they are.
"""

import math

import numpy as np

MIN_BYTES = 1 << 20  # smaller arrays come cheaply from malloc's heap
MAX_FREE_BYTES = 1 << 30

_free = {}  # size class in bytes -> [uint8 blocks]
_kept = [0]  # bytes in _free (approximate under threads: only a cap)
# Plain numeric dtypes: their ``dtype.str`` (the array interface's typestr) names them exactly.
# Others (structured, sub-array, object, ml_dtypes' bfloat16: kind "V" or "O") would come back
# as raw bytes, so they take np.empty.
_POOLED_KINDS = "biufc"


class _Owner:
    """Owns one pooled block while any array on it is alive."""
    __slots__ = ("block", "__array_interface__")

    def __init__(self, block, shape, dtype):
        self.block = block
        self.__array_interface__ = {"data": (block.ctypes.data, False), "shape": shape,
                                    "typestr": dtype.str, "version": 3}

    def __del__(self):
        try:
            _give(self.block)
        except Exception:  # interpreter shutdown: module globals may be gone
            pass


def empty(shape, dtype="float32"):
    """An uninitialized C-contiguous ``np.ndarray`` of ``shape`` and ``dtype``, on pooled
    memory when it has at least `MIN_BYTES` (else a plain ``np.empty``)."""
    dtype = np.dtype(dtype)
    shape = tuple(int(s) for s in shape)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < MIN_BYTES or dtype.kind not in _POOLED_KINDS:
        return np.empty(shape, dtype)
    size = _size_class(nbytes)
    free = _free.get(size)
    try:
        block = free.pop()
        _kept[0] -= size
    except (AttributeError, IndexError):  # no list for this size yet, or it is empty
        block = np.empty(size, np.uint8)
    return np.asarray(_Owner(block, shape, dtype))


def _size_class(nbytes):
    """``nbytes`` rounded up to a multiple of 1/8 of its largest power of two (<= 12.5 % more)."""
    step = 1 << max(nbytes.bit_length() - 4, 0)
    return -(-nbytes // step) * step


def _give(block):
    if _kept[0] + block.size > MAX_FREE_BYTES:
        clear()  # the free blocks are of sizes no longer asked for, or too many: start again
    if block.size > MAX_FREE_BYTES:
        return  # released with the last reference
    _free.setdefault(block.size, []).append(block)
    _kept[0] += block.size


def clear():
    """Release every free block (arrays still in use keep theirs until they are collected)."""
    _free.clear()
    _kept[0] = 0


def kept_bytes():
    """Bytes held in free blocks now."""
    return _kept[0]
