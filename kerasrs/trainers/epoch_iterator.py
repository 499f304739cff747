"""One way for fit, evaluate and predict to walk their data, whatever its kind.

`get_adapter` wraps the data in an adapter: `ArrayAdapter` (arrays, sliced into batches),
`PyDatasetAdapter` (a `PyDataset`, prefetched by its workers) or `IterableAdapter` (a Python
generator, or any iterable of batches such as a PyTorch ``DataLoader``, whose tensors convert
through ``numpy()``). Each adapter's `batches` is one pass over the data as ``(x, y,
sample_weight)`` tuples. `EpochIterator` cuts passes into epochs with Keras 3's ``steps``
rules:

* without ``steps``, an epoch is one pass;
* with ``steps``, an epoch is ``steps`` batches: the pass runs on across epochs, a source is
  advanced exactly ``steps`` times per epoch (a generator is never read ahead), and a pass that
  ends mid-epoch ends the epoch with a warning; the next epoch starts a new pass (a one-shot
  generator cannot restart: its data have run out, and training stops with a warning).
"""

import collections.abc
import itertools
import warnings

import numpy as np

from kerasrs import autodiff
from kerasrs import backend as backend_module
from kerasrs.datasets import py_dataset
from kerasrs.trainers import data_adapter

ACCEPTED = ("NumPy arrays (or lists/dicts of arrays), a kerasrs.utils.PyDataset, a Python "
            "generator, or an iterable of batches (such as a PyTorch DataLoader)")


def is_array_data(x):
    """Whether ``x`` is array data (an array, a list/dict of arrays, or nested numbers)."""
    if x is None or isinstance(x, (np.ndarray, np.generic, autodiff.Tensor, int, float, bool,
                                  str, bytes)):
        return True
    if isinstance(x, dict):
        return all(is_array_data(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return all(is_array_data(v) for v in x)
    return _is_array_like(x)


def _is_array_like(x):
    return any(hasattr(x, a) for a in ("__array__", "__array_interface__",
                                       "__cuda_array_interface__"))


def get_adapter(method, x, y=None, sample_weight=None, batch_size=None, shuffle=False,
                class_weight=None):
    """The adapter for ``x`` (see the module docstring).

    Raises:
        TypeError: for an object that is none of the accepted kinds (an object with
            ``__len__``/``__getitem__`` that is not a `PyDataset` included: it is not walked).
        ValueError: for ``y`` or ``sample_weight`` given with a dataset or generator (they
            come from its batches), or bad array data (see `data_adapter.num_samples`).
    """
    if isinstance(x, py_dataset.PyDataset) or _is_iterator_source(x):
        for name, value in (("y", y), ("sample_weight", sample_weight)):
            if value is not None:
                raise ValueError(f"Model.{method}: `{name}` cannot be given with a "
                                 f"{type(x).__name__}: its batches provide the targets and "
                                 f"weights. Received: {name} of type {type(value).__name__}")
        if isinstance(x, py_dataset.PyDataset):
            return PyDatasetAdapter(method, x, shuffle, class_weight)
        return IterableAdapter(method, x, class_weight)
    for name, value in (("x", x), ("y", y), ("sample_weight", sample_weight)):
        if not is_array_data(value):
            raise TypeError(f"Model.{method}: `{name}` must be {ACCEPTED}. Received: "
                            f"{name} of type {type(value).__module__}.{type(value).__name__}")
    return ArrayAdapter(method, x, y, sample_weight, batch_size, shuffle, class_weight)


def source_name(source):
    """How messages name a data source: "generator", "PyDataset Numbers", "DataLoader"."""
    if isinstance(source, py_dataset.PyDataset):
        return f"PyDataset {type(source).__name__}"
    return type(source).__name__


def _is_iterator_source(x):
    """Generators, iterators and re-iterable objects (DataLoader) that are not array data."""
    if isinstance(x, (str, bytes, dict, list, tuple, np.ndarray)) or _is_array_like(x):
        return False
    return isinstance(x, collections.abc.Iterator) or (
        hasattr(x, "__iter__") and not hasattr(x, "__getitem__"))


class Adapter:
    """What `EpochIterator` needs of a data source: `batches` (one pass), ``num_batches`` (per
    pass, None if unknown), ``one_shot`` (True if a second pass is impossible) and the epoch
    hooks. ``check``: a `kerasrs.trainers.input_checks.DataCheck` that the batches of the first
    pass go through (set by the trainer), or None."""

    num_batches = None
    one_shot = False
    check = None

    def batches(self):
        raise NotImplementedError

    def batch_index(self, position):
        """The index by which messages name the ``position``-th batch of the running pass."""
        return position

    def on_epoch_begin(self):
        pass

    def on_epoch_end(self):
        pass


class ArrayAdapter(Adapter):
    """Arrays sliced into batches of ``batch_size`` (shuffled per pass as ``shuffle`` says)."""

    def __init__(self, method, x, y, sample_weight, batch_size, shuffle, class_weight):
        self.x, self.y, self.sample_weight = (data_adapter.standardize(v)
                                              for v in (x, y, sample_weight))
        self.num_samples = data_adapter.num_samples(method, x=self.x, y=self.y,
                                                    sample_weight=self.sample_weight)
        self.batch_size = data_adapter.check_batch_size(batch_size, method)
        self.shuffle = shuffle
        if class_weight is not None:
            self.sample_weight = data_adapter.with_class_weight(self.y, self.sample_weight,
                                                                class_weight)

    @property
    def num_batches(self):
        return -(-self.num_samples // self.batch_size)

    def batches(self):
        x, y, sample_weight = self.x, self.y, self.sample_weight
        for index in data_adapter.batch_indices(self.num_samples, self.batch_size, self.shuffle):
            yield (data_adapter.slice_struct(x, index), data_adapter.slice_struct(y, index),
                   data_adapter.slice_struct(sample_weight, index))


class PyDatasetAdapter(Adapter):
    """A `PyDataset`: batches in order, or in a random order per pass with ``shuffle``;
    loaded by its workers when ``workers > 1`` or ``use_multiprocessing``."""

    def __init__(self, method, dataset, shuffle, class_weight):
        self.method, self.dataset, self.class_weight = method, dataset, class_weight
        self.shuffle = bool(shuffle)
        self.options = py_dataset.check_options(dataset)
        self.num_batches = dataset.num_batches
        self._order = None  # the running pass's indices when shuffled

    def batches(self):
        n = self.num_batches
        if n is None:
            indices = itertools.count()
        else:
            indices = _shuffle_rng().permutation(n).tolist() if self.shuffle else range(n)
        self._order = indices if isinstance(indices, list) else None  # shuffled
        workers, use_multiprocessing, queue = self.options
        if workers > 1 or use_multiprocessing:
            loaded = py_dataset.prefetch(self.dataset, indices, workers, use_multiprocessing,
                                         queue)
        else:
            loaded = (self.dataset[i] for i in indices)
        try:
            for batch in loaded:
                yield standardize_batch(self.method, batch, self.class_weight,
                                        type(self.dataset).__name__)
        finally:
            loaded.close()

    def batch_index(self, position):
        """``dataset[i]``'s ``i`` (the pass may be shuffled)."""
        return position if self._order is None else self._order[position]

    def on_epoch_begin(self):
        self.dataset.on_epoch_begin()

    def on_epoch_end(self):
        self.dataset.on_epoch_end()


class IterableAdapter(Adapter):
    """A generator (one pass, ever) or a re-iterable object (a new pass per ``iter()``)."""

    def __init__(self, method, source, class_weight):
        self.method, self.source, self.class_weight = method, source, class_weight
        self.num_batches = None
        self.one_shot = isinstance(source, collections.abc.Iterator)
        if not self.one_shot:
            try:
                self.num_batches = len(source)
            except TypeError:
                pass

    def batches(self):
        for batch in self.source:
            yield standardize_batch(self.method, batch, self.class_weight,
                                    type(self.source).__name__)


def standardize_batch(method, batch, class_weight, where):
    """A batch from a dataset or generator as ``(x, y, sample_weight)`` of NumPy arrays.

    Raises:
        ValueError: for a tuple or list of more than 3 elements, or ``class_weight`` with
            batches that carry sample weights.
    """
    if isinstance(batch, list):
        batch = tuple(batch)
    if not isinstance(batch, tuple):
        batch = (batch,)
    if not 1 <= len(batch) <= 3:
        raise ValueError(f"Model.{method}: each batch of the {where} must be x, (x,), (x, y) or "
                         f"(x, y, sample_weight). Received: a tuple of {len(batch)} elements")
    x, y, sample_weight = (_to_numpy(v) for v in batch + (None,) * (3 - len(batch)))
    _check_batch(method, where, x, y, sample_weight)
    if class_weight is not None:
        if sample_weight is not None:
            raise ValueError(f"Model.{method}: `class_weight` cannot be combined with batches "
                             "that carry sample weights. Received: batches of 3 elements")
        sample_weight = data_adapter.with_class_weight(y, None, class_weight)
    return x, y, sample_weight


def _check_batch(method, where, x, y, sample_weight):
    """Reject a batch without inputs, with no rows, or with non-numeric arrays (which NumPy
    would otherwise convert, so that strings such as "0.5" silently train)."""
    if x is None or not data_adapter.leaves(x):
        raise ValueError(f"Model.{method}: a batch of the {where} has no inputs `x`. Each batch "
                         f"must be x, (x,), (x, y) or (x, y, sample_weight). Received: x=None")
    for name, struct in (("x", x), ("y", y), ("sample_weight", sample_weight)):
        for array in data_adapter.leaves(struct):
            try:
                data_adapter._check_numeric(method, name, array)
            except ValueError as e:
                raise ValueError(f"{e} (in a batch of the {where})") from None
    shapes = [tuple(a.shape) for a in data_adapter.leaves(x)]
    if any(len(s) == 0 for s in shapes):
        raise ValueError(f"Model.{method}: a batch of the {where} holds a scalar where the "
                         f"inputs belong: each batch must be x, (x,), (x, y) or (x, y, "
                         f"sample_weight), each array with a batch axis first. Received: x "
                         f"with shape(s) {shapes}")
    if any(s[0] == 0 for s in shapes):
        raise ValueError(f"Model.{method}: a batch of the {where} has no samples (every input "
                         f"array needs a batch axis of size >= 1). Received: x with shape(s) "
                         f"{shapes}")


def _to_numpy(struct):
    """Leaves as arrays: tensors of other libraries through ``numpy()`` (after ``detach``/``cpu``
    when they have them, as PyTorch tensors do)."""
    if struct is None:
        return None
    if isinstance(struct, dict):
        return {k: _to_numpy(v) for k, v in struct.items()}
    if isinstance(struct, (list, tuple)) and not data_adapter._is_data(struct):
        return [_to_numpy(v) for v in struct]
    if isinstance(struct, (np.ndarray, autodiff.Tensor)) or \
            hasattr(struct, "__cuda_array_interface__"):
        return data_adapter._leaf(struct)
    if hasattr(struct, "numpy") and callable(struct.numpy):
        for step in ("detach", "cpu"):
            if callable(getattr(struct, step, None)):
                struct = getattr(struct, step)()
        return np.asarray(struct.numpy())
    return data_adapter._leaf(struct)


def pad_batches(batches, batch_size=None):
    """``batches`` with each short one padded to ``batch_size`` rows (None: the first batch's
    size) by repeating its rows, as ``(x, y, sample_weight, real_rows)``; full batches pass
    through unchanged as ``(x, y, sample_weight)`` (for ``fit(pad_last_batch=True)``)."""
    for batch in batches:
        rows = int(data_adapter.leaves(batch[0])[0].shape[0])
        batch_size = rows if batch_size is None else batch_size
        if rows < batch_size:
            index = np.arange(batch_size) % rows
            batch = tuple(data_adapter.slice_struct(s, index) for s in batch) + (rows,)
        yield batch


class EpochIterator:
    """Epochs of batches from an adapter, with Keras 3's ``steps`` rules (module docstring).

    Use `epoch` once per epoch, then `close` (in a ``finally``): it stops any prefetch workers.
    With ``resume=False`` (evaluation) every epoch starts a new pass (a one-shot generator goes
    on where it stopped) and a pass shorter than ``steps`` ends the epoch without a warning.
    """

    def __init__(self, adapter, steps=None, method="fit", resume=True):
        integer = isinstance(steps, (int, np.integer)) and not isinstance(steps, bool)
        if steps is not None and (not integer or steps <= 0):
            raise ValueError(f"Model.{method}: `steps` must be a positive int or None. "
                             f"Received: {steps!r}")
        steps = None if steps is None else int(steps)  # NumPy ints too (e.g. from len // n)
        if steps is None and adapter.num_batches is None and \
                isinstance(adapter, PyDatasetAdapter):
            raise ValueError(f"Model.{method}: an endless PyDataset (num_batches None) needs "
                             "`steps` (`steps_per_epoch` in fit). Received: steps=None")
        self.adapter, self.steps, self.method, self.resume = adapter, steps, method, resume
        self._pass = None
        self.exhausted = False  # a one-shot source has no more data
        self._seen_batch = False  # an empty source is an error, not an epoch of nothing

    @property
    def num_steps(self):
        """Batches per epoch if known (for progress bars), else None."""
        return self.adapter.num_batches if self.steps is None else self.steps

    def epoch(self):
        """The batches of one epoch, as ``(x, y, sample_weight)`` tuples."""
        if self.steps is None:
            self.close()
            self._pass = self._new_pass()
            count = yield from self._drain(self._pass)
            self._pass = None
            if count == 0:
                self._check_not_empty()
                self._ran_out(0)
            return
        if not self.resume and not self.adapter.one_shot:
            self.close()
        for step in range(self.steps):
            batch = self._next(restart=step == 0)
            if batch is None:
                self._check_not_empty()
                if self.resume and (step or self.exhausted):
                    self._ran_out(step)
                return
            yield batch

    def _new_pass(self):
        """A new pass over the adapter's batches, through its ``check`` until one pass has
        been checked whole."""
        check = self.adapter.check
        batches = self.adapter.batches()
        return batches if check is None or check.done else \
            _checked(batches, check, self.adapter.batch_index)

    def _drain(self, batches):
        count = 0
        for batch in batches:
            count += 1
            self._seen_batch = True
            yield batch
        return count

    def _check_not_empty(self):
        """Raise if the source has never given a batch (Keras raises too, less clearly)."""
        if self._seen_batch:
            return
        source = getattr(self.adapter, "dataset", getattr(self.adapter, "source", None))
        size = "" if self.adapter.num_batches is None else f" of {self.adapter.num_batches} batches"
        raise ValueError(f"Model.{self.method}: the data gave no batch, so there is nothing to "
                         f"do. Received: an empty {type(source).__name__}{size}")

    def _next(self, restart):
        """The next batch of the running pass, or (``restart``) of a new one; None at the end."""
        for attempt in range(2 if restart else 1):
            if self._pass is None:
                if attempt and self.adapter.one_shot:
                    break
                self._pass = self._new_pass()
            batch = next(self._pass, None)
            if batch is not None:
                self._seen_batch = True
                return batch
            self._pass = None
        if self.adapter.one_shot:
            self.exhausted = True
        return None

    def _ran_out(self, step):
        self.exhausted = self.exhausted or self.adapter.one_shot
        if self.exhausted and not self.resume:
            return  # fit's validation: the fit loop says that validation stops
        tail = "" if not self.resume else (
            "Make sure that the generator can produce `steps_per_epoch * epochs` batches; "
            "training stops here." if self.exhausted else
            "The next epoch starts a new pass over the data.")
        warnings.warn(f"Model.{self.method}: the data ran out after {step} batches"
                      f"{'' if self.steps is None else f' of {self.steps}'} in this epoch."
                      f"{' ' + tail if tail else ''}", stacklevel=4)

    def on_epoch_begin(self):
        self.adapter.on_epoch_begin()

    def on_epoch_end(self):
        self.adapter.on_epoch_end()

    def close(self):
        """Stop the running pass (and its prefetch workers, if any)."""
        if self._pass is not None:
            self._pass.close()
            self._pass = None


def _checked(batches, check, batch_index):
    """``batches``, each given to ``check`` (with its `Adapter.batch_index`) first;
    ``check.done`` once the pass is over."""
    try:
        for position, batch in enumerate(batches):
            check(batch, batch_index(position))
            yield batch
        check.done = True
    finally:
        batches.close()


def _shuffle_rng():
    """The generator fit shuffles with: the NumPy backend's, seeded by `backend.set_seed`."""
    return backend_module.get("numpy").rng
