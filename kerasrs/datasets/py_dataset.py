"""`PyDataset` (Keras 3's ``keras.utils.PyDataset``, alias ``Sequence``) and the prefetcher that
loads its batches in worker threads or processes while the model steps.

Prefetch: `prefetch` submits ``dataset[i]`` for the next indices to a pool of ``workers``
threads (processes with ``use_multiprocessing=True``), at most ``max_queue_size`` ahead of the
consumer, and yields the results in index order, so the order is the same as a plain loop.
An exception in a worker is re-raised in the caller with the worker's traceback (for processes,
chained as the ``__cause__``). When the consumer stops (end of data, an error, ``close()``, or
Ctrl-C in the main thread), pending loads are cancelled and the pool is shut down and joined:
no thread or process outlives the iteration. Worker processes ignore SIGINT (Ctrl-C reaches the
parent, which shuts them down) and, when ``threadpoolctl`` is installed (``pip install
kerasrs[data]``), cap their BLAS/OpenMP pools at one thread each so that ``workers`` loaders do
not oversubscribe the cores. Nothing changes in the parent process, on import or later: worker
threads share the parent's BLAS pool, whose size stays the user's choice.
"""

import collections
import concurrent.futures
import itertools
import multiprocessing
import signal
import warnings


class PyDataset:
    """Base class for a dataset of batches computed in Python, loadable in parallel.

    A subclass implements ``__len__`` (the number of batches, not samples) and
    ``__getitem__(index)``, which returns one complete batch: ``x``, ``(x,)``, ``(x, y)`` or
    ``(x, y, sample_weight)``, each a NumPy array or a list/dict of arrays. For an endless
    dataset, override the `num_batches` property to return None (``fit`` then needs
    ``steps_per_epoch``). `on_epoch_begin`/`on_epoch_end` are called around each epoch of
    ``fit``.

    Args:
        workers: int, threads (or processes) that load batches ahead of the model. 1 (the
            default) loads in the calling thread, as Keras does.
        use_multiprocessing: bool; load in ``workers`` processes instead of threads (for loaders
            that hold the GIL). The dataset must be picklable.
        max_queue_size: int, how many batches may be loaded ahead of the model. Defaults to 10.

    Note: with ``workers > 1`` a batch may be loaded while the model trains on an earlier one;
    ``fit(shuffle=True)`` (the default) visits the batches of each epoch in a random order (seed
    with `kerasrs.utils.set_random_seed`), every batch exactly once.

    Example:
        >>> class Squares(PyDataset):
        ...     def __len__(self):
        ...         return 2
        ...     def __getitem__(self, index):
        ...         x = np.arange(3.0, dtype="float32")[:, None] + 3 * index
        ...         return x, x ** 2
        >>> len(Squares()), Squares()[1][0].ravel().tolist()
        (2, [3.0, 4.0, 5.0])
    """

    def __init__(self, workers=1, use_multiprocessing=False, max_queue_size=10):
        self._workers = workers
        self._use_multiprocessing = use_multiprocessing
        self._max_queue_size = max_queue_size

    def _check_super_called(self):
        missing = [a for a in ("_workers", "_use_multiprocessing", "_max_queue_size")
                   if not hasattr(self, a)]
        if missing:
            warnings.warn(f"{type(self).__name__}: a PyDataset subclass should call "
                          "super().__init__(**kwargs) in its constructor (kwargs may hold "
                          "workers, use_multiprocessing, max_queue_size); using the defaults.",
                          stacklevel=3)
            self._workers, self._use_multiprocessing, self._max_queue_size = 1, False, 10

    @property
    def workers(self):
        return self._workers

    @workers.setter
    def workers(self, value):
        self._workers = value

    @property
    def use_multiprocessing(self):
        return self._use_multiprocessing

    @use_multiprocessing.setter
    def use_multiprocessing(self, value):
        self._use_multiprocessing = value

    @property
    def max_queue_size(self):
        return self._max_queue_size

    @max_queue_size.setter
    def max_queue_size(self, value):
        self._max_queue_size = value

    def __getitem__(self, index):
        """Batch ``index`` (see the class docstring)."""
        raise NotImplementedError(f"{type(self).__name__}: a PyDataset must implement "
                                  "__getitem__(index). Received: no __getitem__")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__}: a PyDataset must implement __len__ "
                                  "(the number of batches), or make `num_batches` return None "
                                  "for an endless dataset. Received: no __len__")

    @property
    def num_batches(self):
        """The number of batches (``len(self)``), or None for an endless dataset.

        Raises:
            TypeError: if ``__len__`` returns something other than an int.
            ValueError: if ``__len__`` returns a negative int.
        """
        n = self.__len__()
        if isinstance(n, bool) or not hasattr(n, "__index__"):
            raise TypeError(f"{type(self).__name__}.__len__ must return the number of batches, "
                            f"an int >= 0. Received: {n!r} of type {type(n).__name__}")
        if n < 0:
            raise ValueError(f"{type(self).__name__}.__len__ must return the number of batches, "
                             f"an int >= 0. Received: {n!r}")
        return int(n)

    def __iter__(self):
        """The batches in order, in this thread (no workers)."""
        indices = itertools.count() if self.num_batches is None else range(self.num_batches)
        for i in indices:
            yield self[i]

    def on_epoch_begin(self):
        """Called at the start of each epoch of ``fit``."""

    def on_epoch_end(self):
        """Called at the end of each epoch of ``fit`` (e.g. to reshuffle the data)."""


Sequence = PyDataset


def check_options(dataset):
    """``(workers, use_multiprocessing, max_queue_size)`` of ``dataset``, checked.

    Raises:
        ValueError: for ``workers`` or ``max_queue_size`` that is not a positive int.
    """
    dataset._check_super_called()
    workers, queue = dataset.workers, dataset.max_queue_size
    for name, value in (("workers", workers), ("max_queue_size", queue)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{type(dataset).__name__}: `{name}` must be a positive int. "
                             f"Received: {name}={value!r}")
    return workers, bool(dataset.use_multiprocessing), queue


def prefetch(dataset, indices, workers, use_multiprocessing, max_queue_size):
    """Yield ``dataset[i]`` for each ``i`` of ``indices`` in order, loaded by a pool of
    ``workers`` threads (or processes) up to ``max_queue_size`` batches ahead (see the module
    docstring for errors and shutdown). The pool lives as long as this generator."""
    pool = _make_pool(dataset, workers, use_multiprocessing)
    load = _load_in_process if use_multiprocessing else dataset.__getitem__
    indices = iter(indices)
    pending = collections.deque()
    try:
        for i in itertools.islice(indices, max_queue_size):
            pending.append(pool.submit(load, i))
        while pending:
            batch = pending.popleft().result()
            for i in itertools.islice(indices, 1):
                pending.append(pool.submit(load, i))
            yield batch
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True, cancel_futures=True)


def _make_pool(dataset, workers, use_multiprocessing):
    if not use_multiprocessing:
        return concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="PyDataset")
    return concurrent.futures.ProcessPoolExecutor(
        workers, mp_context=multiprocessing.get_context(), initializer=_init_process,
        initargs=(dataset,))


_PROCESS_DATASET = None  # the dataset, in a worker process


def _init_process(dataset):
    """Worker-process setup: keep the dataset, leave Ctrl-C to the parent, one BLAS thread."""
    global _PROCESS_DATASET
    _PROCESS_DATASET = dataset
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import threadpoolctl
    except ImportError:
        return
    threadpoolctl.threadpool_limits(1)


def _load_in_process(index):
    return _PROCESS_DATASET[index]
