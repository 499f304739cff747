"""Each process's thread pools sized to its share of the node's cores.

Every MPI process starts BLAS (and numba, and kerasrs's kernel pool) with one thread per core of
the machine, so N processes on one node run N times as many busy threads as there are cores;
on 2 cores, 2 processes trained the MLP 12x slower than one. When a `DataParallel` starts, each
process therefore sizes its pools to ``cores on the node // processes on the node`` (at least 1,
at most the CPUs it may run on), as PyTorch's launcher does, except the pools the user chose:

- BLAS (OpenBLAS, MKL, BLIS) and OpenMP, through threadpoolctl (``pip install "kerasrs[mpi]"``
  brings it), unless ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` or
  ``BLIS_NUM_THREADS`` is set;
- numba's threads, with ``numba.set_num_threads``, when something started them (kerasrs's own
  kernels do not use them), unless ``NUMBA_NUM_THREADS`` is set;
- kerasrs's kernel pool (`kerasrs.backend.cpu_threads.set_threads`), unless ``OMP_NUM_THREADS``
  is set or ``set_threads`` was called.

``DataParallel(threads_per_process=N)`` sets all of them to N instead. Loader threads and
processes of a `PyDataset` are the user's ``workers`` and are left alone (loader processes
already run BLAS on one thread each). Rank 0 prints one line saying what was chosen.
"""

import os
import sys

from kerasrs.backend import cpu_threads

BLAS_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                  "BLIS_NUM_THREADS")
HOW_TO_CHOOSE = "choose with DataParallel(threads_per_process=N) or OMP_NUM_THREADS=N"
_done = []  # the first automatic sizing in this process (a second DataParallel keeps it)


def cpus_of_this_process():
    """The CPUs this process may run on (its affinity mask; all CPUs where there is none)."""
    try:
        return frozenset(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return frozenset(range(os.cpu_count() or 1))


def share(own_cpus, node_cpus, processes_on_node):
    """Threads per process: the node's CPUs split evenly over its processes, at least 1, at most
    the CPUs this process may run on (a launcher that binds each process to a core set already
    made the split)."""
    return max(1, min(own_cpus, node_cpus // max(1, processes_on_node)))


def node_layout(comm, mpi):
    """``(own CPUs, CPUs used by the job on this node, processes on this node)``, counted with
    MPI's shared-memory split of ``comm`` (collective: every process must call it)."""
    local = comm.Split_type(mpi.COMM_TYPE_SHARED)
    try:
        own = cpus_of_this_process()
        masks = local.allgather(own)
    finally:
        local.Free()
    return len(own), len(frozenset().union(*masks)), len(masks)


def configure(comm, mpi, threads_per_process=None, environ=None, report=None):
    """Size this process's pools (see the module docstring) and, on rank 0, print one line
    saying what was chosen (to ``report``, a callable; stderr by default). Collective.

    Args:
        threads_per_process: None (automatic; only the first call in a process applies it) or
            a positive int for every pool.

    Returns:
        ``{"threads": n, "blas": ..., "kernels": ..., "numba": ...,  "node_cores": c,
        "processes_on_node": p}``: the share, what each pool got (as words), and the node's
        layout it was computed from.

    Raises:
        ValueError: for a ``threads_per_process`` that is not a positive int or None.
    """
    if threads_per_process is not None and (isinstance(threads_per_process, bool) or not
                                            isinstance(threads_per_process, int) or
                                            threads_per_process < 1):
        raise ValueError("DataParallel: threads_per_process must be a positive int or None. "
                         f"Received: threads_per_process={threads_per_process!r}")
    own, node, processes = node_layout(comm, mpi)
    if threads_per_process is None and _done:
        return _done[0]
    environ = os.environ if environ is None else environ
    n = threads_per_process or share(own, node, processes)
    forced = threads_per_process is not None
    chosen = {"threads": n, "node_cores": node, "processes_on_node": processes,
              "blas": _blas(n, _set_variable(environ, BLAS_VARIABLES, forced)),
              "kernels": _kernels(n, _set_variable(environ, ("OMP_NUM_THREADS",), forced) or
                                  _set_call(forced)),
              "numba": _numba(n, _set_variable(environ, ("NUMBA_NUM_THREADS",), forced))}
    if threads_per_process is None:
        _done.append(chosen)
    if comm.Get_rank() == 0:
        line = (f"kerasrs.distribution: {processes} process{'es' * (processes > 1)} on this "
                f"node's {node} core{'s' * (node > 1)}; threads per process: BLAS "
                f"{chosen['blas']}, kerasrs kernels {chosen['kernels']}, numba "
                f"{chosen['numba']} ({HOW_TO_CHOOSE})")
        (report or _to_stderr)(line)
    return chosen


def spare_cores(chosen):
    """Cores of the node left idle when every process runs ``chosen["threads"]`` busy threads
    (0 when the processes fill the node)."""
    return max(0, chosen["node_cores"] - chosen["processes_on_node"] * chosen["threads"])


def _set_variable(environ, names, forced):
    """``NAME=value`` of the first of ``names`` the user set (None when forced or none is)."""
    if forced:
        return None
    return next((f"{v}={environ[v]}" for v in names if environ.get(v, "").strip()), None)


def _set_call(forced):
    """``set_threads(n)`` when the user called it before (None when forced or not called)."""
    setting = cpu_threads.thread_setting()
    return None if forced or setting is None else f"set_threads({setting})"


def _blas(n, user):
    if user:
        return f"as set ({user})"
    try:
        import threadpoolctl
    except ImportError:
        return ("unchanged (threadpoolctl is not installed: pip install threadpoolctl, or set "
                "OMP_NUM_THREADS before starting)")
    threadpoolctl.threadpool_limits(n)  # every BLAS and OpenMP library loaded so far
    return str(n)


def _kernels(n, user):
    if user:
        return f"as set ({user})"
    cpu_threads.set_threads(n)
    return str(n)


def _numba(n, user):
    if user:
        return f"as set ({user})"
    numba = sys.modules.get("numba")
    try:
        numba.threading_layer()  # raises until something starts numba's threads
    except (AttributeError, ValueError):
        return "not started"
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    return str(n)


def _to_stderr(line):
    print(line, file=sys.stderr, flush=True)
