"""The gradient allreduce: one flat buffer per model, reduced in buckets as backward fills it.

Each process puts ``share * gradient`` into the buffer, ``share`` being its part of the step's
samples (``n_local / n_global``); the sum over processes is then the gradient of the mean loss
over the whole global batch (a mean over a shard, times the shard's part of the batch, is that
shard's sum of per-sample losses over the global count), short last batch and empty shards
included, with no pass over the buffer after the sum. Bucketing follows PyTorch's
DistributedDataParallel (Li et al., 2020, "PyTorch Distributed: Experiences on Accelerating Data
Parallel Training", VLDB, section 3.2): the variables are laid out in reverse order, the order in
which backward finishes them, and a bucket is sent (nonblocking) as soon as all of its gradients
are final.

Overlap needs progress: MPICH (like most MPIs) advances a nonblocking collective only inside MPI
calls, and backward makes none while a kernel runs, so a bucket started during backward used to
sit untouched until the wait after it. `MpiTransport` therefore has a thread of its own
(`Progress`) run MPI's progress engine while backward computes; `GradientReducer.last_step`
shows when each bucket started and whether it had finished when backward ended. (MPICH's own
asynchronous progress, ``MPIR_CVAR_ASYNC_PROGRESS=1``, would do the same with a thread that
spins all the time, taking a core from training.) Within one node MPICH moves the buckets
through shared memory (large ones by a single kernel copy, CMA), not sockets.
"""

import threading
import time

import numpy as np

from kerasrs import autodiff

# Seconds the progress thread sleeps between polls. Each poll advances every started bucket by
# one protocol step (a handshake or a copy), so a bucket needs a few polls; one poll costs a few
# microseconds of the core the process computes on. 200 us keeps that small while a 1 MiB
# bucket still finishes within a millisecond of the other process starting it.
POLL_SECONDS = 2e-4
# The first bucket (the last layers' gradients) closes at 1 MiB whatever the bucket size, as
# PyTorch DDP's first bucket does: its reduction then overlaps the rest of backward.
FIRST_BUCKET_BYTES = 2**20


class Progress:
    """A daemon thread that runs MPI's progress engine every `POLL_SECONDS` while `resume`d
    (an ``Iprobe`` on a communicator of its own, where nothing is ever sent), so that started
    buckets advance while this process computes. It never touches their requests: the training
    thread waits for them without waiting for this one.

    Needs ``MPI_THREAD_MULTIPLE`` (mpi4py's default). Making it is collective over ``comm``.
    """

    def __init__(self, comm, poll_seconds=POLL_SECONDS):
        self.comm, self.poll_seconds = comm.Dup(), poll_seconds
        self._running = threading.Event()
        self._thread = None

    def resume(self):
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kerasrs-mpi-progress",
                                            daemon=True)
            self._thread.start()
        self._running.set()

    def pause(self):
        self._running.clear()

    def _run(self):
        while True:
            self._running.wait()
            self.comm.Iprobe()  # any source, any tag: drives progress, matches nothing
            time.sleep(self.poll_seconds)


class MpiTransport:
    """Sum-allreduce of host arrays over an mpi4py communicator; while backward runs, a
    `Progress` thread makes the started ones advance (when MPI allows threads:
    ``MPI_THREAD_MULTIPLE``; else they advance when a bucket starts). Collective to make."""

    def __init__(self, comm, mpi):
        self.comm, self.mpi = comm, mpi
        threaded = mpi.Query_thread() == mpi.THREAD_MULTIPLE
        self.progress_thread = Progress(comm) if threaded else None
        self.done_early = []  # per request of the last wait_all: finished before it was called

    def start(self, array):
        return self.comm.Iallreduce(self.mpi.IN_PLACE, array, op=self.mpi.SUM)

    def progress(self, requests):
        """Make ``requests`` (this step's, in start order) advance while this thread
        computes."""
        if self.progress_thread is not None:
            self.progress_thread.resume()
        else:
            self.mpi.Request.Testall(requests)

    def pause(self):
        """Stop the progress thread's polling until the next `progress`."""
        if self.progress_thread is not None:
            self.progress_thread.pause()

    def wait_all(self, requests):
        """Wait for ``requests``; afterwards `done_early` says which ones had finished before
        the call."""
        self.pause()
        done = self.mpi.Request.Testsome(requests) or []
        self.done_early = [i in done for i in range(len(requests))]
        self.mpi.Request.Waitall(requests)  # those finished are null requests now


class GradientReducer:
    """Reduces the gradients of ``variables`` (one dtype, float32 or float64) across processes.

    Args:
        transport: `MpiTransport` or `kerasrs.backend.nccl.NcclTransport`.
        variables: the trainable `Variable`s, in the order the model lists them.
        bucket_bytes: target bucket size; a bucket holds whole variables. The first bucket
            closes at `FIRST_BUCKET_BYTES` already (as in DDP), so that communication starts
            early in backward.
        overlap: start each bucket during backward (True) or reduce the whole buffer after it.

    Attributes:
        comm_seconds: wall time spent inside communication calls so far (starting buckets and
            waiting for them after backward; for benchmarks).
        wait_seconds: the part of ``comm_seconds`` spent waiting after backward had ended.
        last_step: the last step, a dict of `time.perf_counter` stamps: ``begin`` (backward
            starts), ``started`` (one per bucket, in bucket order), ``backward_end`` (the last
            gradient is in the buffer) and ``end`` (all reduced); and ``done_in_backward``, one
            bool per bucket: finished when backward ended (empty where the transport cannot
            tell).
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
        self.buffer = self.xp.zeros(total, dtypes[0])
        self.views, self.bucket_of, self.buckets = {}, {}, []
        start = offset = 0
        for v in reversed(self.variables):
            self.views[id(v)] = self.buffer[offset:offset + v.size].reshape(v.shape)
            self.bucket_of[id(v)] = len(self.buckets)
            offset += v.size
            cap = min(bucket_bytes, FIRST_BUCKET_BYTES) if not self.buckets else bucket_bytes
            if (offset - start) * self.buffer.itemsize >= cap:
                self.buckets.append((start, offset))
                start = offset
        if start < total or not self.buckets:
            self.buckets.append((start, total))
        self.comm_seconds = self.wait_seconds = 0.0
        self.last_step = {}

    def gradients(self, tape, target, share):
        """``tape.gradient(target, variables)`` averaged over every process's samples.

        Args:
            share: this process's samples in the step over all processes' (``n_local /
                n_global``, a Python float); ``target`` is the mean loss over its samples.

        Returns:
            One `Tensor` per variable (views into the buffer, valid until the next step).
        """
        self._begin(share)
        tape._on_gradient_ready = self._fill if self.overlap else None
        try:
            grads = tape.gradient(target, self.variables)
        except BaseException:  # no progress thread left polling into MPI's shutdown
            getattr(self.transport, "pause", lambda: None)()
            raise
        for v, g in zip(self.variables, grads):
            if id(v) not in self._filled:  # unconnected weights, or overlap off
                self._fill(v, None if g is None else g.data)
        self._finish()
        return [autodiff.Tensor(self.views[id(v)], backend=v.backend) for v in self.variables]

    def _begin(self, share):
        self._share = share
        self._filled = set()
        self._missing = [0] * len(self.buckets)
        for v in self.variables:
            self._missing[self.bucket_of[id(v)]] += 1
        self._next, self._requests = 0, []
        self.last_step = {"begin": time.perf_counter(), "started": []}

    def _fill(self, variable, gradient):
        view = self.views[id(variable)]
        if gradient is None:
            view[...] = 0
        else:
            self.xp.multiply(gradient, self._share, out=view)
        self._filled.add(id(variable))
        self._missing[self.bucket_of[id(variable)]] -= 1
        if self.overlap:
            self._start_ready()

    def _start_ready(self, progress=True):
        """Start the complete buckets, strictly in order, so every process issues the same
        sequence of collectives; with ``progress``, have them progress while backward runs."""
        tic = time.perf_counter()
        started = self.last_step["started"]
        while self._next < len(self.buckets) and self._missing[self._next] == 0:
            start, stop = self.buckets[self._next]
            started.append(time.perf_counter())
            self._requests.append(self.transport.start(self.buffer[start:stop]))
            self._next += 1
        if progress and self._requests:
            self.transport.progress(self._requests)
        self.comm_seconds += time.perf_counter() - tic

    def _finish(self):
        step = self.last_step
        step["backward_end"] = time.perf_counter()
        if self.overlap:
            self._start_ready(progress=False)  # backward is over: the wait progresses them
        tic = time.perf_counter()
        if not self.overlap:  # one allreduce over the whole buffer
            step["started"].append(tic)
            self._requests = [self.transport.start(self.buffer)]
        wait_tic = time.perf_counter()
        self.transport.wait_all(self._requests)
        step["end"] = toc = time.perf_counter()
        self.comm_seconds += toc - tic
        self.wait_seconds += toc - wait_tic
        step["done_in_backward"] = list(getattr(self.transport, "done_early", []))
