"""Training on several processes (Keras 3's ``keras.distribution`` names), built on mpi4py.

``import kerasrs`` does not import mpi4py or start MPI: that happens when a `DataParallel` is
made. Typical use, launched with ``mpiexec -n 4 python -m mpi4py train.py``::

    kerasrs.distribution.set_distribution(kerasrs.distribution.DataParallel())
    model.fit(x, y, batch_size=256)   # 256 samples per step in all, 64 per process
"""

from kerasrs import backend
from kerasrs.distribution import mpi
from kerasrs.distribution.data_parallel import DataParallel

__all__ = ["DataParallel", "distribution", "get_device_count", "initialize", "list_devices",
           "set_distribution"]

_current = [None]


def set_distribution(value):
    """Make ``value`` (a `DataParallel`, or None to train on this process alone) the
    distribution that ``Model.fit`` uses.

    Raises:
        TypeError: for anything else.
    """
    if value is not None and not isinstance(value, DataParallel):
        raise TypeError("set_distribution: expected a DataParallel or None. Received: "
                        f"{type(value).__name__}")
    _current[0] = value


def distribution():
    """The distribution set with `set_distribution` (None when training on one process)."""
    return _current[0]


def initialize(job_addresses=None, num_processes=None, process_id=None):
    """Start MPI and check the job (Keras 3's signature). The MPI launcher already knows the
    hosts and the processes, so the arguments are only checked against what MPI reports.

    Raises:
        ImportError: without mpi4py.
        RuntimeError: when ``num_processes`` or ``process_id`` disagree with MPI, or the
            launcher and MPI disagree (see `DataParallel`).
    """
    comm = mpi.load_mpi().COMM_WORLD
    mpi.check_launcher(comm.Get_size())
    for name, given, actual in (("num_processes", num_processes, comm.Get_size()),
                                ("process_id", process_id, comm.Get_rank())):
        if given is not None and given != actual:
            raise RuntimeError(f"initialize: MPI reports {name}={actual}. Received: "
                               f"{name}={given!r}")


def list_devices(device_type=None):
    """One name per process of the MPI job, ``"cpu:<rank>"`` (or ``"gpu:<rank>"`` on the CuPy
    backend); ``["cpu:0"]`` when mpi4py is not installed. Starts MPI if it is installed.

    Args:
        device_type: "cpu", "gpu" or None (the current backend's kind).
    """
    if device_type not in (None, "cpu", "gpu"):
        raise ValueError(f"list_devices: device_type must be 'cpu', 'gpu' or None. Received: "
                         f"device_type={device_type!r}")
    kind = device_type or ("gpu" if backend.backend() == "cupy" else "cpu")
    try:
        size = mpi.load_mpi().COMM_WORLD.Get_size()
    except ImportError:
        size = 1
    return [f"{kind}:{i}" for i in range(size)]


def get_device_count(device_type=None):
    """How many devices `list_devices` names (the processes of the MPI job; 1 without mpi4py)."""
    return len(list_devices(device_type))


def for_fit():
    """The distribution ``fit`` uses: the one set, or a stand-in that changes nothing."""
    return _current[0] or _LOCAL


class _Local:
    """Training on this process alone: every hook of `DataParallel` as a no-op."""

    is_chief = True

    def begin_fit(self, model, x=None, custom_train_step=False):
        model._fit_distribution = None

    def begin_epoch(self):
        pass

    def shard_step(self, batch):
        return batch

    def end_epoch(self, model):
        pass

    def for_this_process(self, verbose, callbacks):
        return verbose, callbacks

    def any(self, flag):
        return flag

    def shard_batch(self, batch):
        return batch


_LOCAL = _Local()
