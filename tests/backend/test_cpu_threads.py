"""`kerasrs.backend.cpu_threads`: how a kernel's index range is cut into parts and run on the
sleeping pool. Kernels here are Python functions that record the ranges they are given."""

import multiprocessing
import threading
import time

import numpy as np
import pytest

from kerasrs.backend import cpu_threads


@pytest.fixture(params=[2, 3, 4])
def n_threads(request, monkeypatch):
    monkeypatch.setattr(cpu_threads, "threads", lambda: request.param)
    return request.param


class Recorder:
    """A kernel ``(tag, start, stop)`` that counts each index it covers and notes its thread."""

    def __init__(self, sizes):
        self.counts = {tag: np.zeros(n, int) for tag, n in sizes.items()}
        self.calls, self.threads = [], set()
        self.lock = threading.Lock()

    def __call__(self, tag, start, stop):
        with self.lock:
            self.counts[tag][start:stop] += 1
            self.calls.append((tag, start, stop))
            self.threads.add(threading.current_thread().name)


@pytest.mark.parametrize("n", [0, 1, 5, 1 << 17, (1 << 18) + 1, 3 * (1 << 17) + 7, 10 ** 6 + 3])
def test_bounds_cover_the_range_in_near_equal_parts(n_threads, n):
    parts = cpu_threads.bounds(n)
    assert parts[0][0] == 0 and parts[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))  # contiguous, in order
    assert 1 <= len(parts) <= n_threads
    assert len(parts) == max(1, min(n_threads, n // cpu_threads.GRAIN))
    sizes = [b - a for a, b in parts]
    assert max(sizes) - min(sizes) <= 1
    if len(parts) > 1:  # every part carries at least a grain of work
        assert min(sizes) >= cpu_threads.GRAIN
    assert len(cpu_threads.bounds(n, work_per_item=0)) == 1


def test_bounds_counts_work_per_item(n_threads):
    assert len(cpu_threads.bounds(3, work_per_item=cpu_threads.GRAIN)) == min(3, n_threads)
    assert len(cpu_threads.bounds(1000, work_per_item=1)) == 1
    assert len(cpu_threads.bounds(10, work_per_item=1, grain=1)) == n_threads


@pytest.mark.parametrize("n", [0, 1, 7, 10 ** 6 + 3])
def test_split_runs_every_index_exactly_once(n_threads, n):
    rec = Recorder({"a": n})
    cpu_threads.split(rec, n, "a")
    assert (rec.counts["a"] == 1).all()
    expect_parts = len(cpu_threads.bounds(n))
    assert len(rec.calls) == expect_parts
    if expect_parts > 1:  # the other parts ran on the pool's threads
        assert any(name.startswith("kerasrs-cpu") for name in rec.threads)
        assert threading.current_thread().name in rec.threads


def test_split_passes_arguments_before_the_range(n_threads):
    seen = []
    cpu_threads.split(lambda a, b, start, stop: seen.append((a, b, start, stop)), 10, "x", 2,
                      work_per_item=1, grain=1)
    assert sorted(seen) == [("x", 2, a, b) for a, b in cpu_threads.bounds(10, 1, 1)]


@pytest.mark.parametrize("failing", [0, 1, "all"])
def test_an_error_in_any_part_propagates_after_every_part_is_done(n_threads, failing):
    finished = []

    def kernel(start, stop):
        if failing == "all" or start == cpu_threads.bounds(100, 1, 1)[failing][0]:
            raise ValueError(f"part at {start} failed")
        time.sleep(0.05)  # still writing when the failure is known
        finished.append(start)

    with pytest.raises(ValueError, match="failed"):
        cpu_threads.split(kernel, 100, work_per_item=1, grain=1)
    n_failed = n_threads if failing == "all" else 1
    assert len(finished) == n_threads - n_failed  # no part is left running
    # the pool still works afterwards
    rec = Recorder({"a": 100})
    cpu_threads.split(rec, 100, "a", work_per_item=1, grain=1)
    assert (rec.counts["a"] == 1).all()


def test_run_raises_the_first_error_in_call_order(n_threads):
    def fail(msg):
        time.sleep(0.02 if msg == "first" else 0)
        raise RuntimeError(msg)

    with pytest.raises(RuntimeError, match="first"):
        cpu_threads.run([(lambda: None, ()), (fail, ("first",)), (fail, ("second",))])


@pytest.mark.parametrize("sizes", [
    [],
    [0],
    [0, 0, 0],
    [5, 0, 3],
    [0, 10 ** 6, 0, 1, 2, 0],
    [1 << 17, 3, (1 << 17) + 1, 1, 300_001, 0, 7],  # boundaries inside the parts
])
def test_split_many_covers_every_item_index_once(n_threads, sizes):
    rec = Recorder({i: n for i, n in enumerate(sizes)})
    cpu_threads.split_many([(rec, (i,), n) for i, n in enumerate(sizes)])
    for i, n in enumerate(sizes):
        assert (rec.counts[i] == 1).all(), i
    assert all(start < stop for _, start, stop in rec.calls)  # no empty segments are called
    total = sum(sizes)
    parts = cpu_threads.bounds(total)
    # each item is cut only where a part boundary falls inside it
    cuts = {b for _, b in parts[:-1]}
    offsets = np.cumsum([0] + sizes)
    for i, n in enumerate(sizes):
        inside = [c - offsets[i] for c in cuts if offsets[i] < c < offsets[i] + n]
        assert len([c for c in rec.calls if c[0] == i]) == (1 if n else 0) + len(inside)


def test_split_many_with_arrays_of_size_zero(n_threads):
    a, b, c = np.zeros(0), np.zeros(400_000), np.zeros(0)

    def add_one(x, start, stop):
        x[start:stop] += 1

    cpu_threads.split_many([(add_one, (x,), x.size) for x in (a, b, c)], work_per_item=1)
    assert (b == 1).all() and a.size == 0 and c.size == 0


def _child_split(queue):
    try:
        rec = Recorder({"a": 1000})
        cpu_threads.split(rec, 1000, "a", work_per_item=1, grain=1)
        names = sorted(rec.threads)
        queue.put((bool((rec.counts["a"] == 1).all()), len(rec.calls), names))
    except BaseException as e:  # pragma: no cover - reported to the parent
        queue.put(repr(e))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                    reason="no fork start method on this platform")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_can_still_split(monkeypatch):
    """The parent's pool threads do not exist in a forked child: the child must build its own
    pool (register_at_fork), even when another thread held the pool lock at the fork."""
    monkeypatch.setattr(cpu_threads, "threads", lambda: 2)
    cpu_threads.split(Recorder({"a": 10}), 10, "a", work_per_item=1, grain=1)  # parent pool up
    assert cpu_threads._pool
    ctx = multiprocessing.get_context("fork")
    for hold_lock in (False, True):
        queue = ctx.Queue()
        lock = cpu_threads._lock
        if hold_lock:
            lock.acquire()
        try:
            child = ctx.Process(target=_child_split, args=(queue,))
            child.start()
        finally:
            if hold_lock:
                lock.release()
        child.join(60)
        alive = child.is_alive()
        if alive:
            child.kill()
        assert not alive, f"the forked child hung (pool lock held at fork: {hold_lock})"
        result = queue.get(timeout=10)
        assert result[:2] == (True, 2), result
        assert any(name.startswith("kerasrs-cpu") for name in result[2])


def test_threads_reads_omp_num_threads(monkeypatch):
    import os

    cpu_threads.threads.cache_clear()
    try:
        n_cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
            os.cpu_count()
        for value, want in (("1", 1), ("0", 1), ("4,2", n_cpus), ("100000", n_cpus)):
            monkeypatch.setenv("OMP_NUM_THREADS", value)
            cpu_threads.threads.cache_clear()
            assert cpu_threads.threads() == want, value
        monkeypatch.delenv("OMP_NUM_THREADS")
        cpu_threads.threads.cache_clear()
        assert cpu_threads.threads() == n_cpus
    finally:
        monkeypatch.undo()
        cpu_threads.threads.cache_clear()
