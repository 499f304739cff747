"""mpi4py, loaded on first use, and the check that it talks to the launcher that started us.

``import mpi4py.MPI`` initializes MPI, so kerasrs imports it only when a `DataParallel` is made.
"""

import os
import sys
import threading
import time

# Environment variables through which launchers announce the job size: MPICH/Hydra and Intel MPI
# (PMI_SIZE), Open MPI (OMPI_COMM_WORLD_SIZE), MVAPICH (MV2_COMM_WORLD_SIZE).
LAUNCHER_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")


def load_mpi():
    """The ``mpi4py.MPI`` module (initializes MPI on first call).

    Raises:
        ImportError: if mpi4py (or the MPI library it loads) is missing, with the install line.
    """
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError(
            "kerasrs.distribution: data-parallel training needs mpi4py and an MPI library. "
            "Install both without root with `pip install \"kerasrs[mpi]\"` (mpi4py and the "
            f"`mpich` wheel), then launch with `mpiexec -n N python train.py`. Received: {e}"
        ) from e
    return MPI


def launcher_size(environ=None):
    """The number of processes the launcher says it started, or None when not launched by one.

    Args:
        environ: mapping to read (defaults to ``os.environ``).
    """
    environ = os.environ if environ is None else environ
    for name in LAUNCHER_SIZE_VARIABLES:
        value = environ.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return None


def check_launcher(comm_size, environ=None):
    """Raise when a launcher started several processes but MPI sees each one alone.

    That happens when ``mpiexec`` comes from one MPI (say Open MPI) and mpi4py loaded another
    (say the ``mpich`` wheel): each process then trains alone on the full data.

    Raises:
        RuntimeError: naming both sizes and the variable read, and how to fix it.
    """
    expected = launcher_size(environ)
    if expected is not None and expected != comm_size:
        environ = os.environ if environ is None else environ
        variable = next(n for n in LAUNCHER_SIZE_VARIABLES if environ.get(n, "").strip())
        raise RuntimeError(
            f"kerasrs.distribution: the launcher started {expected} processes ({variable}="
            f"{expected}) but MPI sees a world of {comm_size}: `mpiexec` and the MPI library "
            "that mpi4py loaded come from different MPI implementations. Launch with the "
            "`mpiexec` installed next to mpi4py's library (for the `mpich` wheel: the one in "
            "your environment's bin/), or point mpi4py at the launcher's MPI "
            f"(MPI4PY_LIBMPI). Received: world size {comm_size}, launcher size {expected}")


def abort_on_uncaught_exception(comm):
    """Make an exception that ends this process, or any of its threads, abort the whole job
    (``comm.Abort``).

    Without it, the other processes wait forever in their next collective for the one that
    died (or, for a dead thread such as the gradient-overlap progress thread, for work it no
    longer does). ``python -m mpi4py`` does the same for a script it runs; these hooks
    (``sys.excepthook`` and ``threading.excepthook``) cover a job started without it and
    threads. The traceback is printed first (by the hook that was there before, which stays in
    charge of printing); a thread ended by ``SystemExit`` aborts nothing, as Python ignores it.
    Installed once, when a `DataParallel` of more than one process is made.
    """
    previous, previous_thread = sys.excepthook, threading.excepthook
    if not getattr(previous, "kerasrs_aborts_mpi", False):
        def hook(kind, value, traceback):
            _report_then_abort(comm, lambda: previous(kind, value, traceback))

        hook.kerasrs_aborts_mpi = True
        sys.excepthook = hook
    if not getattr(previous_thread, "kerasrs_aborts_mpi", False):
        def thread_hook(args):
            if args.exc_type is SystemExit:
                previous_thread(args)
            else:
                _report_then_abort(comm, lambda: previous_thread(args))

        thread_hook.kerasrs_aborts_mpi = True
        threading.excepthook = thread_hook


def _report_then_abort(comm, report):
    """Call ``report`` (the previous hook prints the traceback), then ``comm.Abort(1)``."""
    try:
        report()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        time.sleep(0.5)  # let the launcher forward the traceback: Abort kills the job
    finally:
        comm.Abort(1)
