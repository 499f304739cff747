"""Thread pools under `DataParallel`: each process gets its share of the node's cores, unless the
user chose; a program without a distribution keeps every default (`kerasrs.distribution.threads`).
"""

import importlib.util
import os

import pytest
from mpi_launch import BARE_ENV, needs_mpi, snippet

from kerasrs.distribution import data_parallel, threads

needs_threadpoolctl = pytest.mark.skipif(
    importlib.util.find_spec("threadpoolctl") is None,
    reason="needs threadpoolctl: pip install \"kerasrs[mpi]\"")
CPUS = len(threads.cpus_of_this_process())

# BLAS threads (as threadpoolctl reports them), kerasrs kernel threads, numba threads
_POOLS = """
import threadpoolctl
from kerasrs.backend import cpu_threads
def pools():
    blas = {i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}
    numba = __import__("numba").get_num_threads() if numba_started else None
    return sorted(blas), cpu_threads.threads(), numba
numba_started = False
"""


@pytest.mark.parametrize("own, node, processes, expected", [
    (2, 2, 2, 1),  # the project machine: 2 processes on 2 cores
    (2, 2, 1, 2), (2, 2, 3, 1),  # more processes than cores: still one thread each
    (16, 16, 3, 5), (64, 64, 8, 8),
    (1, 2, 2, 1), (4, 16, 4, 4),  # bound by the launcher: the affinity mask already split
    (2, 16, 2, 2)])  # a mask smaller than the share caps it
def test_share_splits_the_nodes_cores_over_its_processes(own, node, processes, expected):
    assert threads.share(own, node, processes) == expected


@needs_mpi
@needs_threadpoolctl
def test_each_rank_uses_its_share_of_the_cores_and_rank_0_says_so():
    code = _POOLS + """
import numba
@numba.njit(parallel=True)
def total(x):
    s = 0.0
    for i in numba.prange(x.size):
        s += x[i]
    return s
total(np.ones(10))  # starts numba's threads: the distribution must size them too
numba_started = True
dist = kerasrs.distribution.DataParallel()
say(dist.threads["threads"], pools(), dist.overlap)
"""
    lines, stderr = snippet(code, ranks=2, env=BARE_ENV, stderr=True)
    n = threads.share(CPUS, CPUS, 2)
    overlap = CPUS > 2 * n  # "auto": overlap only with a core left for the MPI poller
    assert lines == [f"{n} {([n], n, n)} {overlap}"] * 2
    reported = [line for line in stderr.splitlines() if line.startswith("kerasrs.distribution:")]
    assert reported == [
        f"kerasrs.distribution: 2 processes on this node's {CPUS} core{'s' * (CPUS > 1)}; "
        f"threads per process: BLAS {n}, kerasrs kernels {n}, numba {n} (choose with "
        "DataParallel(threads_per_process=N) or OMP_NUM_THREADS=N)"]


@needs_mpi
@needs_threadpoolctl
def test_threads_the_user_set_are_left_alone_or_set_by_the_argument():
    code = _POOLS + """
kerasrs.backend.cpu_threads.set_threads(3)
before = pools()
dist = kerasrs.distribution.DataParallel()
say(before == pools(), pools()[1], dist.threads["blas"], dist.threads["kernels"])
dist = kerasrs.distribution.DataParallel(threads_per_process=2)
say(pools()[:2])
try:
    kerasrs.distribution.DataParallel(threads_per_process=0)
except ValueError as e:
    say(e)
"""
    lines = snippet(code, ranks=2, env={**BARE_ENV, "OPENBLAS_NUM_THREADS": "3"})
    assert lines == ["True 3 as set (OPENBLAS_NUM_THREADS=3) as set (set_threads(3)) | "
                     "([2], 2) | DataParallel: threads_per_process must be a positive int or "
                     "None. Received: threads_per_process=0"] * 2


@needs_threadpoolctl
def test_without_a_distribution_no_pool_changes():
    code = _POOLS + """
before = pools()
model = kerasrs.Sequential([kerasrs.Input((4,)), kerasrs.layers.Dense(8), kerasrs.layers.Dense(1)])
model.compile("adam", "mse")
model.fit(np.ones((32, 4), "float32"), np.ones((32, 1)), verbose=0)
say(before == pools(), pools()[1], kerasrs.backend.cpu_threads.thread_setting())
"""
    (line,) = snippet(code, env=BARE_ENV)
    assert line == f"True {CPUS} None"


@pytest.mark.parametrize("node, processes, each, spare", [
    (2, 2, 1, 0), (2, 1, 2, 0), (3, 2, 1, 1), (16, 3, 5, 1), (2, 3, 1, 0), (8, 2, 2, 4)])
def test_spare_cores_are_those_no_process_thread_keeps_busy(node, processes, each, spare):
    chosen = {"threads": each, "node_cores": node, "processes_on_node": processes}
    assert threads.spare_cores(chosen) == spare


def test_overlap_auto_needs_a_spare_core_and_other_values_are_refused():
    full = {"threads": 1, "node_cores": 2, "processes_on_node": 2}
    roomy = {"threads": 1, "node_cores": 4, "processes_on_node": 2}
    assert data_parallel._choose_overlap("auto", full) is False
    assert data_parallel._choose_overlap("auto", roomy) is True
    assert data_parallel._choose_overlap(True, full) is True
    assert data_parallel._choose_overlap(False, roomy) is False
    for bad in ("yes", 1, None):
        with pytest.raises(ValueError, match=r'overlap must be True, False or "auto"'):
            data_parallel._choose_overlap(bad, full)


def test_threads_per_process_is_checked_before_any_mpi_call():
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match=r"threads_per_process must be a positive int"):
            threads.configure(None, None, threads_per_process=bad)


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="Linux affinity masks")
def test_cpus_of_this_process_is_the_affinity_mask():
    assert threads.cpus_of_this_process() == frozenset(os.sched_getaffinity(0))
