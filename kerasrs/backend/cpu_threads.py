"""Splitting a compiled kernel's index range over the CPU cores.

The numba kernels of `kerasrs.backend.kernels` release the GIL (``nogil=True``) and take the
half-open range of rows or elements they work on as their last two arguments, so the same
kernel runs serially or in parts. `split` runs the first part on the calling thread and the
others on a small pool of Python threads that sleep (block on a queue) when idle. numba's own
OpenMP/TBB threads spin between kernels and took the cores from OpenBLAS's GEMM threads (the MLP
trained 2-4x slower); threads that sleep do not.

The pool is created on the first split call, never on ``import kerasrs``. Its size is the
number of CPUs this process may run on, capped by ``OMP_NUM_THREADS`` when that is set (the
variable BLAS libraries read, so one setting governs both), or the count given to
`set_threads` (which `kerasrs.distribution.DataParallel` calls to give each process its share of
the cores). Nothing process-wide is changed.
"""

import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait

# Work (in element copies, ~0.5 ns each) per part below which splitting costs more than it
# saves. Waking a sleeping thread on the other core takes 25-90 us on the project machine, and
# in training the other core is rarely free: after each GEMM, OpenBLAS's worker thread spins
# there for a while, and a part sent to it shares the core with the spinner. Measured per
# training step (2 threads, quiet machine): with 2**17 the transformer took 11.2 ms and the
# MLP 2.82 ms, with 2**21 10.0 and 2.70 ms (the same as never splitting); the CNN was the same
# either way (82-84 ms). So only parts of ~1 ms or more are split.
GRAIN = 1 << 21

_pool = []
_lock = threading.Lock()
_setting = []  # the count given to `set_threads`, if any


def _after_fork():
    """A forked child has none of the parent's threads, and a lock another parent thread held
    at the fork stays held forever: start both afresh."""
    global _lock
    _pool.clear()
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def set_threads(count):
    """Split the kernels over ``count`` threads from now on (None: back to the default of
    `threads`). Call it between kernel calls, not while another thread runs one.

    Raises:
        ValueError: for a count that is not a positive int or None.
    """
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise ValueError(f"set_threads: count must be a positive int or None. Received: "
                         f"count={count!r}")
    with _lock:
        _setting[:] = [] if count is None else [count]
        threads.cache_clear()
        if _pool:  # sized for the old count; the next split makes a new one
            _pool.pop().shutdown(wait=False)


def thread_setting():
    """The count given to `set_threads`, or None when the default applies."""
    return _setting[0] if _setting else None


@functools.cache
def threads():
    """How many threads a split uses: the count given to `set_threads`, else the CPUs
    available, at most ``OMP_NUM_THREADS`` (read once, at the first split)."""
    if _setting:
        return _setting[0]
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        n = os.cpu_count() or 1
    try:
        return max(1, min(n, int(os.environ.get("OMP_NUM_THREADS", n))))
    except ValueError:  # e.g. "4,2" (nested OpenMP levels): keep the CPU count
        return n


def bounds(n, work_per_item=1, grain=None):
    """Split ``range(n)`` into at most `threads()` near-equal ``(start, stop)`` parts, each
    with at least ``grain`` (default `GRAIN`) elements of work, ``work_per_item`` per index."""
    parts = max(1, min(threads(), n * work_per_item // (grain or GRAIN), n))
    return [(n * k // parts, n * (k + 1) // parts) for k in range(parts)]


def run(calls):
    """Run ``[(fn, args), ...]``: the first call on this thread, the others on the pool; return
    when all are done, even when one fails (the others write into the caller's arrays), then
    re-raise the first error in call order."""
    if len(calls) == 1:
        fn, args = calls[0]
        fn(*args)
        return
    futures = [_executor().submit(fn, *args) for fn, args in calls[1:]]
    fn, args = calls[0]
    try:
        fn(*args)
    finally:
        wait(futures)
    for f in futures:
        f.result()


def split(kernel, n, *args, work_per_item=1, grain=None):
    """``kernel(*args, start, stop)`` over ``range(n)``, in parts on `threads()` threads."""
    run([(kernel, args + part) for part in bounds(n, work_per_item, grain)])


def split_many(items, work_per_item=1, grain=None):
    """`split` for several kernels at once, ``items = [(kernel, args, n), ...]``: their index
    ranges laid end to end are cut into `threads()` parts, so a multi-tensor update over many
    small arrays wakes the other threads once, not once per array."""
    offsets, total = [], 0
    for _, _, n in items:
        offsets.append(total)
        total += n
    calls = []
    for start, stop in bounds(total, work_per_item, grain):
        segments = [(kernel, args + (max(start - o, 0), min(stop - o, n)))
                    for (kernel, args, n), o in zip(items, offsets)
                    if n and o < stop and start < o + n]  # (a zero-size item is no call)
        calls.append((_serially, (segments,)))
    run(calls)


def _serially(segments):
    for kernel, args in segments:
        kernel(*args)


def _executor():
    if not _pool:
        with _lock:
            if not _pool:
                _pool.append(ThreadPoolExecutor(max(1, threads() - 1),
                                                thread_name_prefix="kerasrs-cpu"))
    return _pool[0]
