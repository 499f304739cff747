"""The gradient allreduce: one flat buffer per model, reduced in buckets as backward fills it.

Each process puts ``n_local * gradient`` (``n_local``: its samples in this step) into the buffer,
with ``n_local`` itself in the last slot; after the sum every process divides by that slot, the
global sample count. A mean-reduced loss over a shard, times the shard's size, is that shard's
sum of per-sample losses, so the result is the gradient of the mean over the whole global batch,
short last batch included. Bucketing follows PyTorch's DistributedDataParallel (Li et al., 2020,
"PyTorch Distributed: Experiences on Accelerating Data Parallel Training", VLDB, section 3.2): the
variables are laid out in reverse order, the order in which backward finishes them, and a bucket
is sent (nonblocking) as soon as all of its gradients are final.
"""

import time

import numpy as np

from kerasrs import autodiff


class MpiTransport:
    """Sum-allreduce of host arrays over an mpi4py communicator."""

    def __init__(self, comm, mpi):
        self.comm, self.mpi = comm, mpi

    def start(self, array):
        return self.comm.Iallreduce(self.mpi.IN_PLACE, array, op=self.mpi.SUM)

    def progress(self, requests):
        self.mpi.Request.Testall(requests)  # MPI advances nonblocking collectives inside calls

    def wait_all(self, requests):
        self.mpi.Request.Waitall(requests)


class GradientReducer:
    """Reduces the gradients of ``variables`` (one dtype, float32 or float64) across processes.

    Args:
        transport: `MpiTransport` or `kerasrs.backend.nccl.NcclTransport`.
        variables: the trainable `Variable`s, in the order the model lists them.
        bucket_bytes: target bucket size; a bucket holds whole variables.
        overlap: start each bucket during backward (True) or reduce the whole buffer after it.

    Attributes:
        comm_seconds: wall time spent inside communication calls so far (for benchmarks).
    """

    def __init__(self, transport, variables, bucket_bytes=25 * 2**20, overlap=True):
        dtypes = sorted({np.dtype(v.dtype).name for v in variables})
        if dtypes not in (["float32"], ["float64"]):
            raise TypeError("DataParallel: the trainable weights must all be float32 or all "
                            f"float64 (MPI and NCCL sum those exactly). Received: {dtypes}")
        self.transport, self.overlap = transport, overlap
        self.variables = list(variables)
        be = self.variables[0].backend
        self.xp = be.xp
        total = sum(v.size for v in self.variables)
        self.buffer = self.xp.zeros(total + 1, dtypes[0])  # + the sample-count slot
        self.views, self.bucket_of, self.buckets = {}, {}, []
        start = offset = 0
        for v in reversed(self.variables):
            self.views[id(v)] = self.buffer[offset:offset + v.size].reshape(v.shape)
            self.bucket_of[id(v)] = len(self.buckets)
            offset += v.size
            if (offset - start) * self.buffer.itemsize >= bucket_bytes:
                self.buckets.append((start, offset))
                start = offset
        if start < total or not self.buckets:
            self.buckets.append((start, total + 1))  # the last bucket carries the count
        else:
            self.buckets[-1] = (self.buckets[-1][0], total + 1)
        self.comm_seconds = 0.0

    def gradients(self, tape, target, n_local):
        """``tape.gradient(target, variables)`` averaged over every process's samples.

        Returns:
            One `Tensor` per variable (views into the buffer, valid until the next step).
        """
        self._begin(n_local)
        tape._on_gradient_ready = self._fill if self.overlap else None
        grads = tape.gradient(target, self.variables)
        for v, g in zip(self.variables, grads):
            if id(v) not in self._filled:  # unconnected weights, or overlap off
                self._fill(v, None if g is None else g.data)
        self._finish()
        return [autodiff.Tensor(self.views[id(v)], backend=v.backend) for v in self.variables]

    def _begin(self, n_local):
        self._n_local = n_local
        self._filled = set()
        self._missing = [0] * len(self.buckets)
        for v in self.variables:
            self._missing[self.bucket_of[id(v)]] += 1
        self._next, self._requests = 0, []
        self.buffer[-1] = n_local

    def _fill(self, variable, gradient):
        view = self.views[id(variable)]
        if gradient is None:
            view[...] = 0
        else:
            self.xp.multiply(gradient, self._n_local, out=view)
        self._filled.add(id(variable))
        self._missing[self.bucket_of[id(variable)]] -= 1
        if self.overlap:
            self._start_ready()

    def _start_ready(self):
        """Start the complete buckets, strictly in order, so every process issues the same
        sequence of collectives."""
        tic = time.perf_counter()
        while self._next < len(self.buckets) and self._missing[self._next] == 0:
            start, stop = self.buckets[self._next]
            self._requests.append(self.transport.start(self.buffer[start:stop]))
            self._next += 1
        if self._requests:
            self.transport.progress(self._requests)
        self.comm_seconds += time.perf_counter() - tic

    def _finish(self):
        if self.overlap:
            self._start_ready()
        tic = time.perf_counter()
        if not self.overlap:  # one allreduce over the whole buffer
            self._requests = [self.transport.start(self.buffer)]
        self.transport.wait_all(self._requests)
        self.comm_seconds += time.perf_counter() - tic
        count = self.buffer[-1:].copy()
        self.buffer /= count  # the count slot becomes 1; the next step overwrites it
