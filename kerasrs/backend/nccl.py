"""NCCL allreduce for CuPy arrays (through ``cupy.cuda.nccl``), set up over an MPI communicator.

MPI only hands out the NCCL id and picks each process's GPU; the gradients themselves move GPU to
GPU through NCCL on a stream of their own, ordered after the kernels that wrote them by events.
"""

from kerasrs.backend import cupy_backend

_NCCL_DTYPES = {"float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64"}


def select_device(local_rank):
    """Make GPU ``local_rank % number of GPUs`` current (``local_rank``: the process's rank among
    those on its host). Call before any CuPy array is made. Returns the device id."""
    cp = cupy_backend.import_cupy()
    device = int(local_rank) % cp.cuda.runtime.getDeviceCount()
    cp.cuda.Device(device).use()
    return device


class NcclTransport:
    """Sum-allreduce of CuPy arrays over all processes of ``mpi_comm`` (same interface as
    `kerasrs.distribution.reducer.MpiTransport`: ``start``, ``progress``, ``wait_all``)."""

    def __init__(self, mpi_comm):
        self.cp, self.nccl = cupy_backend.import_cupy(), cupy_backend.import_nccl()
        uid = self.nccl.get_unique_id() if mpi_comm.Get_rank() == 0 else None
        uid = mpi_comm.bcast(uid, root=0)  # MPI hands rank 0's NCCL id to every process
        self.comm = self.nccl.NcclCommunicator(mpi_comm.Get_size(), uid, mpi_comm.Get_rank())
        self.stream = self.cp.cuda.Stream(non_blocking=True)

    def start(self, array):
        """Start summing ``array`` (contiguous, float32/float64) in place; returns an event."""
        written = self.cp.cuda.Event()
        written.record(self.cp.cuda.get_current_stream())
        self.stream.wait_event(written)  # the gradient copies must land before NCCL reads
        dtype = getattr(self.nccl, _NCCL_DTYPES[array.dtype.name])
        self.comm.allReduce(array.data.ptr, array.data.ptr, array.size, dtype,
                            self.nccl.NCCL_SUM, self.stream.ptr)
        done = self.cp.cuda.Event()
        done.record(self.stream)
        return done

    def progress(self, requests):
        """Nothing to do: NCCL runs on its own stream."""

    def wait_all(self, requests):
        """Order the current stream after every started reduction (does not block the host)."""
        current = self.cp.cuda.get_current_stream()
        for done in requests:
            current.wait_event(done)
