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
sit untouched until the wait after it. `MpiTransport` therefore polls the started buckets from a
thread of its own (`Progress`) while backward computes; the timestamps in
`GradientReducer.last_step` show when each bucket started and finished against the end of
backward. (MPICH's own asynchronous progress, ``MPIR_CVAR_ASYNC_PROGRESS=1``, would do the same
with a thread that spins all the time, taking a core from training.) Within one node MPICH moves
the buckets through shared memory (large ones by a single kernel copy, CMA), not sockets.
"""

import threading
import time

import numpy as np

from kerasrs import autodiff

# Seconds the progress thread sleeps between polls. Each poll advances every started bucket by
# one protocol step (a handshake or a copy), so a bucket needs a few polls; one poll costs ~5 us
# of the core the process computes on. 200 us keeps that under 3% while a 1 MiB bucket still
# finishes within a millisecond of the other process starting it.
POLL_SECONDS = 2e-4
# The first bucket (the last layers' gradients) closes at 1 MiB whatever the bucket size, as
# PyTorch DDP's first bucket does: its reduction then overlaps the rest of backward.
FIRST_BUCKET_BYTES = 2**20


class Progress:
    """A daemon thread that tests started MPI requests until they complete, so that they make
    progress while this process computes. Only this thread touches a request until `take` hands
    the unfinished ones back (MPI forbids two threads using one request at once).

    Needs ``MPI_THREAD_MULTIPLE`` (mpi4py's default).
    """

    def __init__(self, mpi, poll_seconds=POLL_SECONDS):
        self.mpi, self.poll_seconds = mpi, poll_seconds
        self._pending = []  # [Request], in start order
        self._done_at = {}  # id(Request) -> time.perf_counter() when it completed
        self._cv = threading.Condition()
        self._thread = None

    def add(self, request):
        with self._cv:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="kerasrs-mpi-progress",
                                                daemon=True)
                self._thread.start()
            self._pending.append(request)
            self._cv.notify()

    def take(self):
        """Stop polling the requests given so far (the caller waits for them); returns
        ``{id(request): time finished}`` for those the thread saw finish."""
        with self._cv:  # the thread polls under this lock: after it, it no longer touches them
            self._pending = []
            done_at, self._done_at = self._done_at, {}
        return done_at

    def _run(self):
        while True:
            with self._cv:
                while not self._pending:
                    self._cv.wait()
                finished = self.mpi.Request.Testsome(self._pending)
                if finished:
                    now = time.perf_counter()
                    for i in finished:
                        self._done_at[id(self._pending[i])] = now
                    self._pending = [r for i, r in enumerate(self._pending)
                                     if i not in finished]
            time.sleep(self.poll_seconds)  # outside the lock: `take` never waits for a sleep


class MpiTransport:
    """Sum-allreduce of host arrays over an mpi4py communicator; `progress` hands the started
    requests to a `Progress` thread (when MPI allows threads: ``MPI_THREAD_MULTIPLE``)."""

    def __init__(self, comm, mpi):
        self.comm, self.mpi = comm, mpi
        threaded = mpi.Query_thread() == mpi.THREAD_MULTIPLE
        self.progress_thread = Progress(mpi) if threaded else None
        self._handed = 0  # how many of this step's requests the thread has
        self.done_at = {}  # id(request) -> when it finished, for the last wait_all's requests

    def start(self, array):
        return self.comm.Iallreduce(self.mpi.IN_PLACE, array, op=self.mpi.SUM)

    def progress(self, requests):
        """Make ``requests`` (this step's, in start order) progress while this thread
        computes."""
        if self.progress_thread is None:  # no thread: advance them on this one, now and then
            self.mpi.Request.Testall(requests)
            return
        for request in requests[self._handed:]:
            self.progress_thread.add(request)
        self._handed = len(requests)

    def wait_all(self, requests):
        """Wait for ``requests``; afterwards `done_at` says when each one finished."""
        done_at = {}
        if self.progress_thread is not None:
            done_at = self.progress_thread.take()  # the thread no longer touches them
            self._handed = 0
        self.mpi.Request.Waitall(requests)  # those the thread saw finish are null requests
        now = time.perf_counter()
        self.done_at = {id(r): done_at.get(id(r), now) for r in requests}


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
        last_step: `time.perf_counter` stamps of the last step, a dict: ``begin`` (backward
            starts), ``started`` (one per bucket, in bucket order), ``backward_end`` (the last
            gradient is in the buffer), ``finished`` (one per bucket: when it was seen complete;
            None where the transport cannot tell) and ``end`` (all reduced).
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
        grads = tape.gradient(target, self.variables)
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
        done_at = getattr(self.transport, "done_at", {})
        step["finished"] = [done_at.get(id(r)) for r in self._requests]
