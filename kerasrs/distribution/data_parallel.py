"""`DataParallel`: the same model on every MPI process, each step split over their samples."""

import contextlib

import numpy as np

from kerasrs import autodiff, tree
from kerasrs import backend as backend_module
from kerasrs.distribution import mpi, reducer, threads

_EXACT_REDUCTIONS = ("sum_over_batch_size", "mean")
# Callbacks that only write logs (files, event files, HTTP posts): only rank 0 runs them.
REPORTING_CALLBACKS = frozenset({"CSVLogger", "TensorBoard", "RemoteMonitor"})


class DataParallel:
    """Data parallelism over the processes of an MPI job (Keras 3's
    ``keras.distribution.DataParallel``, built on mpi4py).

    Every process holds the whole model and gets the same data. In ``fit``, every process
    takes rank 0's shuffling generator state at the start of each epoch, so arrays and
    `PyDataset`s are shuffled alike (a generator or iterable must yield the same batches on
    every process); each process takes a contiguous shard of every global batch of
    ``batch_size`` samples (a padded last batch included), computes the gradient of its mean
    loss, and one sum-allreduce per step (over a flat buffer, in buckets started while backward
    still runs) turns ``n_local / n_global * gradient`` into the mean over the whole global
    batch (see `kerasrs.distribution.reducer`). Every process therefore applies the same update, and
    training matches single-process training on the same batches up to float rounding. ``fit``
    broadcasts rank 0's weights first; metrics are summed over processes before they are read,
    so the logs, the progress bar (rank 0 only) and the callbacks' decisions agree. Only rank 0
    writes files: ``Model.save``/``save_weights`` do nothing on the other processes (so
    ``ModelCheckpoint`` and ``BackupAndRestore`` write once), and the callbacks that only
    report (`REPORTING_CALLBACKS`) run on rank 0 alone. A Ctrl-C stops every process after the
    same batch. On the CuPy backend each process uses the GPU of its local rank and the
    gradients are summed with NCCL (``cupy.cuda.nccl``; MPI hands out the NCCL id).

    Launch with ``mpiexec -n N python -m mpi4py train.py`` (``-m mpi4py`` makes an error on one
    process end the whole job instead of leaving the others waiting; without it, an exception
    that ends one process or one of its threads calls ``MPI Abort`` from ``sys.excepthook``
    (``threading.excepthook``), installed when a
    distribution of several processes is made, to the same effect; ``pip install
    "kerasrs[mpi]"`` brings mpi4py and the ``mpich`` wheel with its ``mpiexec``). On the CuPy
    backend make the distribution before building the model, so that its weights land on the
    process's GPU. Each process sizes its thread pools to its share of the node's cores when
    the distribution is made (``threads_per_process``): N processes with a thread per core
    each would oversubscribe the cores N times over.

    Exact for losses reduced with "sum_over_batch_size" (the default) or "mean", and for weight
    regularizers; losses reduced by "sum" or "mean_with_sample_weight", or with
    ``ignore_class``, raise NotImplementedError (their divisor is not proportional to the
    batch), and so does an overridden ``train_step``. BatchNormalization normalizes with each
    process's shard statistics (as Keras does without SyncBatchNormalization); its moving
    statistics are averaged over the processes at the end of every epoch (`end_epoch`).
    Dropout masks differ between processes. Validation in ``fit`` is sharded and reduced the
    same way; ``evaluate``, ``predict`` and ``train_on_batch`` run on each process alone.

    Args:
        device_mesh: not supported (model parallelism); must be None.
        devices: optional list of device names, one per process (see `list_devices`).
        auto_shard_dataset: must be True: every process gets the same arrays and fit shards
            each batch.
        comm: the mpi4py communicator to use (defaults to ``MPI.COMM_WORLD``).
        bucket_size_mb: float, the size in MiB from which an allreduce bucket is closed (25, as
            in PyTorch DDP; the first bucket closes at 1 MiB already, as there). The gradients
            are laid out last layer first and a bucket holds whole weights, so smaller buckets
            start communicating earlier in backward (more overlap) at the price of more,
            smaller collectives.
        overlap: True starts a bucket's allreduce as soon as backward has finished its
            gradients (a thread of this process polls MPI meanwhile so that it makes progress);
            False reduces the whole buffer once after backward. "auto" (the default) overlaps
            only when the node has a core to spare for that polling thread (processes x threads
            below the cores): on a full node the poller takes CPU from backward, and on 2 cores
            with 2 processes reducing after backward trained the MLP 1.3x faster than
            overlapping (`benchmarks/data_parallel.py`). The choice is in ``self.overlap``.
        threads_per_process: None (the default) sizes this process's BLAS, numba and kerasrs
            kernel threads to its share of the node's cores, except those the user chose with
            ``OMP_NUM_THREADS`` and the like; an int sets all of them (see
            `kerasrs.distribution.threads`). Rank 0 prints one line with the choice.

    Raises:
        ImportError: without mpi4py (with the install line).
        RuntimeError: when the launcher started N processes but MPI sees a world of size 1.
        ValueError: for ``devices`` not one per process, a ``threads_per_process`` that is
            not a positive int, or an ``overlap`` that is not True, False or "auto".
        NotImplementedError: for a ``device_mesh`` or ``auto_shard_dataset=False``.

    Attributes:
        threads: what each thread pool of this process got, as rank 0's line says it: a dict
            with the share ``"threads"`` (int) and ``"blas"``, ``"kernels"``, ``"numba"``
            (words such as ``"1"`` or ``"as set (OMP_NUM_THREADS=2)"``).
    """

    def __init__(self, device_mesh=None, devices=None, auto_shard_dataset=True, comm=None,
                 bucket_size_mb=25, overlap="auto", threads_per_process=None):
        if device_mesh is not None:
            raise NotImplementedError("DataParallel: device meshes (model parallelism) are not "
                                      f"supported; pass `devices` or nothing. Received: "
                                      f"device_mesh={device_mesh!r}")
        if not auto_shard_dataset:
            raise NotImplementedError("DataParallel: only auto_shard_dataset=True is supported "
                                      "(every process gets the same arrays). Received: "
                                      "auto_shard_dataset=False")
        self._mpi = mpi.load_mpi()
        self.comm = self._mpi.COMM_WORLD if comm is None else comm
        mpi.check_launcher(self.comm.Get_size())
        if self.comm.Get_size() > 1:
            mpi.abort_on_uncaught_exception(self.comm)
        self.threads = threads.configure(self.comm, self._mpi, threads_per_process)
        self.num_processes, self.process_id = self.comm.Get_size(), self.comm.Get_rank()
        self.devices = list(devices) if devices is not None else _device_names(
            self.num_processes)
        if len(self.devices) != self.num_processes:
            raise ValueError(f"DataParallel: give one device per process ({self.num_processes})."
                             f" Received: devices={self.devices!r}")
        self.auto_shard_dataset = True
        self.batch_dim_name = "batch"
        self.bucket_size_mb = bucket_size_mb
        self.overlap = _choose_overlap(overlap, self.threads)
        self._reducer = self._reducer_key = self._transport = self._step_rows = None
        if backend_module.backend() == "cupy":
            from kerasrs.backend import nccl  # the CuPy path: loads CUDA sources, so only here

            local = self.comm.Split_type(self._mpi.COMM_TYPE_SHARED)
            nccl.select_device(local.Get_rank())
            local.Free()

    def __repr__(self):
        return (f"<DataParallel process {self.process_id} of {self.num_processes}, "
                f"devices={self.devices}>")

    @property
    def is_chief(self):
        """True on rank 0, the process that shows progress and writes files."""
        return self.process_id == 0

    # -- hooks called by Model.fit (kerasrs.trainers.trainer and loops) ------------------------
    def begin_fit(self, model, x=None, custom_train_step=False):
        """Check the model can be trained in parallel, build it (on ``x[:1]``, the training
        arrays), and copy rank 0's weights and optimizer state to every process.
        ``custom_train_step``: whether the model's class overrides ``train_step``.

        Raises:
            NotImplementedError: for an overridden ``train_step``.
            ValueError: for an unbuilt model and data that are not arrays.
        """
        if custom_train_step:
            raise NotImplementedError(
                f"DataParallel: {type(model).__name__} overrides train_step, whose gradients "
                "DataParallel cannot reduce; use the built-in train_step (compute_loss and "
                "compute_metrics may be overridden). Received: a custom train_step")
        if not model.built and x is None:
            raise ValueError("DataParallel: build the model before fit on a dataset or "
                             "generator (give it an Input, or call model.build), so that every "
                             "process starts from rank 0's weights. Received: an unbuilt model")
        if not model.built:
            with autodiff.no_grad():
                model(tree.map_structure(lambda a: a[:1], x), training=False)
        self.broadcast_weights(model)
        self._state_snapshot = _snapshot(model.non_trainable_weights)
        model._fit_distribution = self

    def for_this_process(self, verbose, callbacks):
        """``(verbose, callbacks)`` for this process: rank 0 keeps both; the others train
        silently and without the callbacks that only report (`REPORTING_CALLBACKS`), so that
        one process writes the logs. Callbacks that change training stay everywhere."""
        if self.is_chief:
            return verbose, callbacks
        kept = [c for c in callbacks or [] if type(c).__name__ not in REPORTING_CALLBACKS]
        return 0, kept

    def end_epoch(self, model):
        """Average the non-trainable weights that the forward pass changed on some process
        (BatchNormalization's moving statistics), so that all processes hold the same ones.

        Moving averages are linear, so the average of the per-process averages is the moving
        average of the per-step means over the processes (the moving mean over the global
        batches when shards are equal; the moving variance misses the spread between shards).
        Weights that no process changed, such as frozen ones, are left untouched."""
        variables = [v for v in model.non_trainable_weights
                     if np.dtype(v.dtype).kind == "f"]
        before = self._state_snapshot
        changed = [not (id(v) in before and np.array_equal(
            backend_module.convert_to_numpy(v.data), before[id(v)])) for v in variables]
        changed = np.array(changed, np.uint8)
        self.comm.Allreduce(self._mpi.IN_PLACE, changed, op=self._mpi.MAX)
        for v, moved in zip(variables, changed):
            if moved:
                host = np.array(backend_module.convert_to_numpy(v.data), dtype=np.float64)
                self.comm.Allreduce(self._mpi.IN_PLACE, host, op=self._mpi.SUM)
                v.data[...] = v.backend.asarray((host / self.num_processes).astype(v.dtype))
        self._state_snapshot = _snapshot(model.non_trainable_weights)

    def any(self, flag):
        """True on every process if ``flag`` is true on one (keeps per-batch work in step)."""
        return bool(self.comm.allreduce(bool(flag), op=self._mpi.LOR))

    def begin_epoch(self):
        """Give every process rank 0's state of the generator fit shuffles with (the NumPy
        backend's, seeded by `kerasrs.backend.set_seed`), so that the shuffled order of the
        epoch is the same everywhere."""
        bits = backend_module.get("numpy").rng.bit_generator
        bits.state = self.comm.bcast(bits.state if self.is_chief else None, root=0)

    def shard_step(self, batch):
        """This process's part of one fit batch ``(x, y, sample_weight[, real_rows])``; for a
        padded last batch (``real_rows`` given) the count of real rows in the part follows."""
        part = self.shard_batch(tuple(batch[:3]))
        rows = len(_first_leaf(batch[0]))
        self._step_rows = rows if len(batch) == 3 else batch[3]  # the samples that count
        if len(batch) == 3:
            return part
        lo, hi = self._bounds(rows)
        return (*part, min(max(batch[3] - lo, 0), hi - lo))

    def shard_batch(self, batch):
        """This process's rows of one global batch given as data: an array, or a tuple, list
        or dict of them (None stays). For batches that an iterator yields in the same order on
        every process."""
        if batch is None:
            return None
        if isinstance(batch, dict):
            return {k: self.shard_batch(v) for k, v in batch.items()}
        if isinstance(batch, (list, tuple)):
            return type(batch)(self.shard_batch(v) for v in batch)
        return batch[self.shard(slice(0, len(batch)))]

    def shard(self, index):
        """The contiguous part ``[n * rank / size, n * (rank + 1) / size)`` of one batch's
        index (a slice or an index array)."""
        n = index.stop - index.start if isinstance(index, slice) else len(index)
        lo, hi = self._bounds(n)
        if isinstance(index, slice):
            return slice(index.start + lo, index.start + hi)
        return index[lo:hi]

    def gradients(self, model, tape, target, variables, n_local):
        """The gradients of ``target`` (the mean loss over this process's ``n_local`` samples)
        averaged over every process's samples of the step `shard_step` last cut."""
        key = (id(model._compiled_loss), *(id(v) for v in variables))
        if self._reducer_key != key:
            _check_losses(model)
            self._reducer = None if self.num_processes == 1 else reducer.GradientReducer(
                self._transport_for(variables[0]), variables,
                int(self.bucket_size_mb * 2**20), self.overlap)
            self._reducer_key = key
        if self._reducer is None:  # one process: nothing to reduce, no buffer to copy into
            return tape.gradient(target, variables)
        return self._reducer.gradients(tape, target, n_local / self._step_rows)

    def _bounds(self, n):
        return tuple(n * r // self.num_processes for r in (self.process_id, self.process_id + 1))

    @contextlib.contextmanager
    def global_metric_states(self, metrics):
        """Inside the block, every metric holds the sum of its state over all processes."""
        states = [s for m in metrics for s in _metric_states(m)]
        local = [_read_state(s) for s in states]
        flat = np.concatenate([a.ravel() for a in local]) if local else np.zeros(0)
        self.comm.Allreduce(self._mpi.IN_PLACE, flat, op=self._mpi.SUM)
        offset = 0
        for state, value in zip(states, local):
            _write_state(state, flat[offset:offset + value.size].reshape(value.shape))
            offset += value.size
        try:
            yield
        finally:
            for state, value in zip(states, local):
                _write_state(state, value)

    def broadcast_weights(self, model):
        """Copy every weight of ``model`` (trainable or not) and, once built, the optimizer's
        state from rank 0 to all processes."""
        optimizer = getattr(model, "optimizer", None)
        built = self.comm.bcast(bool(getattr(optimizer, "built", False)), root=0)
        if built and not optimizer.built:  # rank 0 restored optimizer state; make the slots
            optimizer.build(model.trainable_weights)
        for v in model.weights + (list(optimizer.variables) if built else []):
            host = np.ascontiguousarray(backend_module.convert_to_numpy(v.data))
            self.comm.Bcast(host, root=0)
            v.data[...] = v.backend.asarray(host)

    @property
    def comm_seconds(self):
        """Wall time spent in gradient communication calls so far (for benchmarks)."""
        return 0.0 if self._reducer is None else self._reducer.comm_seconds

    @property
    def wait_seconds(self):
        """The part of `comm_seconds` spent waiting for the allreduce after backward ended."""
        return 0.0 if self._reducer is None else self._reducer.wait_seconds

    def _transport_for(self, variable):
        if self._transport is None:
            if variable.backend.name == "cupy":
                from kerasrs.backend import nccl  # the CuPy path, as in __init__

                self._transport = nccl.NcclTransport(self.comm)
            else:
                self._transport = reducer.MpiTransport(self.comm, self._mpi)
        return self._transport


def _first_leaf(struct):
    while isinstance(struct, (dict, list, tuple)):
        struct = next(iter(struct.values())) if isinstance(struct, dict) else struct[0]
    return struct


def _snapshot(variables):
    return {id(v): np.array(backend_module.convert_to_numpy(v.data)) for v in variables}


def _device_names(count):
    kind = "gpu" if backend_module.backend() == "cupy" else "cpu"
    return [f"{kind}:{i}" for i in range(count)]


def _check_losses(model):
    """Raise for compiled losses whose divisor is not proportional to the batch size."""
    compiled = getattr(model, "_compiled_loss", None)
    for loss in getattr(compiled, "losses", None) or []:
        if loss is None:
            continue
        reduction = getattr(loss, "reduction", "sum_over_batch_size")
        ignore = getattr(loss, "_fn_kwargs", {}).get("ignore_class")
        if reduction not in _EXACT_REDUCTIONS or ignore is not None:
            raise NotImplementedError(
                f"DataParallel: the loss {getattr(loss, 'name', loss)!r} divides by something "
                "other than the batch size, so shards cannot be combined exactly; use "
                f"reduction in {_EXACT_REDUCTIONS} without ignore_class. Received: "
                f"reduction={reduction!r}, ignore_class={ignore!r}")


def _metric_states(metric):
    """The additive state of a metric (or of each metric in a container such as
    ``compile_metrics``): its `Variable`s, or the plain ``total``/``count`` of the loss
    trackers (a Python float, or a device scalar on a GPU), as ``(owner, attribute)`` pairs."""
    inner = getattr(metric, "metrics", None)
    if isinstance(inner, list):
        return [s for m in inner for s in _metric_states(m)]
    states = [(v, None) for v in getattr(metric, "variables", [])]
    states += [(metric, name) for name in ("total", "count")
               if _is_plain_state(getattr(metric, name, None))]
    return states


def _is_plain_state(value):
    if isinstance(value, float):
        return True
    return value is not None and not isinstance(value, autodiff.Tensor) and \
        backend_module.backend_of(value).is_array(value)


def _read_state(state):
    owner, name = state
    value = owner.data if name is None else getattr(owner, name)
    return np.array(backend_module.convert_to_numpy(value), dtype=np.float64)


def _write_state(state, value):
    owner, name = state
    if name is None:
        owner.data[...] = backend_module.backend_of(owner.data).asarray(
            value.astype(owner.data.dtype))
    else:
        setattr(owner, name, float(value))


def _choose_overlap(overlap, chosen):
    """``overlap`` as a bool: "auto" overlaps only with a core to spare for the MPI poller."""
    if overlap == "auto":
        return threads.spare_cores(chosen) > 0
    if not isinstance(overlap, bool):
        raise ValueError('DataParallel: overlap must be True, False or "auto". Received: '
                         f"overlap={overlap!r}")
    return overlap
