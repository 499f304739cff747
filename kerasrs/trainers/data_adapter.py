"""Array data for fit/evaluate/predict: checking, splitting, batching and class weights.

Data stay where the user put them (NumPy arrays on the host, or backend arrays); each batch is
sliced from them (a view for in-order batches, one gather for shuffled ones) and moved to the
backend by the model call. Structures: an array (one input/output), a list or tuple of arrays
(several, in model order) or a dict keyed by input/output name.
"""

import math

import numpy as np

from kerasrs import autodiff
from kerasrs import backend as backend_module


def _is_data(x):
    """A (nested) list of numbers (or of strings, rejected later by `num_samples` with their
    dtype) rather than a list of arrays."""
    if isinstance(x, (list, tuple)):
        return len(x) > 0 and all(_is_data(v) for v in x)
    return isinstance(x, (int, float, bool, str, bytes, np.generic))


def _leaf(value, what="Model: the data"):
    if isinstance(value, autodiff.Tensor):
        return value.data
    if isinstance(value, np.ndarray) or hasattr(value, "__cuda_array_interface__"):
        return value
    try:
        return np.asarray(value)
    except ValueError as e:  # NumPy's "inhomogeneous shape" for ragged nested lists
        lengths = sorted({len(v) for v in value if hasattr(v, "__len__")}) \
            if isinstance(value, (list, tuple)) else []
        raise ValueError(f"{what}: a ragged nested list cannot be one array: its rows have "
                         f"different lengths {lengths}. Pad or cut them to one length, or "
                         "pass one array per input. Received: "
                         f"a {type(value).__name__} of {len(value)} rows") from e


def standardize(x, what="Model: the data"):
    """``x`` with every leaf an array (lists of numbers become one array); ``what`` names the
    argument in the error for a ragged nested list."""
    if x is None:
        return None
    if isinstance(x, dict):
        return {k: standardize(v, what) for k, v in x.items()}
    if isinstance(x, (list, tuple)) and not _is_data(x):
        return [standardize(v, what) for v in x]
    return _leaf(x, what)


def leaves(x):
    return [leaf for leaf in autodiff._flatten(x) if leaf is not None]


def num_samples(method, **named):
    """The common sample count of the named structures.

    Raises:
        ValueError: if ``x`` is None or holds only None, an array holds non-numeric data
            (strings, objects, dates), an array is 0-d, the counts differ (naming each
            argument's shapes), or there are no samples.
    """
    counts = {}
    for name, struct in named.items():
        if name == "x":
            _check_not_none(method, struct)
        arrays = leaves(struct)
        for a in arrays:
            _check_numeric(method, name, a)
            if a.ndim == 0:
                raise ValueError(f"Model.{method}: `{name}` must have a sample axis. Received: "
                                 f"a scalar {name}")
        sizes = {a.shape[0] for a in arrays}
        if len(sizes) > 1:
            raise ValueError(f"Model.{method}: every array in `{name}` must have the same number "
                             f"of samples. Received: shapes {[a.shape for a in arrays]}")
        if sizes:
            counts[name] = sizes.pop()
    if len(set(counts.values())) > 1:
        detail = ", ".join(f"{k} has {v} samples" for k, v in counts.items())
        raise ValueError(f"Model.{method}: the data arguments must have the same number of "
                         f"samples. Received: {detail}")
    n = next(iter(counts.values()), None)
    if n is None:
        raise ValueError(f"Model.{method}: no input data. Received: x=None")
    if n == 0:
        shapes = [a.shape for a in leaves(named.get("x"))]
        raise ValueError(f"Model.{method}: the data have no samples, so there is nothing to "
                         f"do. Received: x with shape(s) {shapes}")
    return n


_NON_NUMERIC_KINDS = "USOMmV"  # str, bytes, object, datetime, timedelta, void/records


def _check_numeric(method, name, array):
    dtype = array.dtype
    if dtype.kind in _NON_NUMERIC_KINDS and not _is_extension_float(dtype):
        hint = " (a ragged nested list, or a list mixing arrays and other values, also gives " \
            "dtype object)" if dtype.kind == "O" else ""
        raise ValueError(f"Model.{method}: `{name}` holds non-numeric data of dtype {dtype.str}"
                         f"{hint}; a model takes numbers (float or integer arrays). Convert the "
                         f"data to numbers first, e.g. with a lookup table or one-hot encoding. "
                         f"Received: {name} with dtype {dtype.str} and shape "
                         f"{tuple(array.shape)}")


def _is_extension_float(dtype):
    """ml_dtypes' bfloat16 and float8 types have kind "V" but are numbers."""
    return dtype.kind == "V" and dtype.names is None and dtype.itemsize <= 2


def _check_not_none(method, x):
    if x is None:
        raise ValueError(f"Model.{method}: `x` is None, and None is not data. Pass the input "
                         f"array(s). Received: x=None")
    parts = list(x.values()) if isinstance(x, dict) else x if isinstance(x, list) else []
    if parts and all(p is None for p in parts):  # None for some inputs: optional ones (Keras)
        where = [k for k, v in x.items() if v is None] if isinstance(x, dict) else \
            [i for i, v in enumerate(x) if v is None]
        raise ValueError(f"Model.{method}: `x` holds None at {where}, and None is not data. "
                         f"Pass an array for every input. Received: x with None at {where}")


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    """What a ``train_step``/``test_step``/``predict_step`` receives as ``data`` (Keras 3's
    ``keras.utils.pack_x_y_sample_weight``): ``x`` alone (``(x,)`` when ``x`` is a list or
    tuple, so that it is not mistaken for ``(x, y)``), ``(x, y)`` or ``(x, y, sample_weight)``."""
    if y is None:
        if not isinstance(x, (list, tuple)):
            return x
        return (x,)
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)


def unpack_x_y_sample_weight(data):
    """``(x, y, sample_weight)`` from a step's ``data`` (Keras 3's
    ``keras.utils.unpack_x_y_sample_weight``); missing parts are None.

    Raises:
        ValueError: for a tuple or list of more than 3 elements.
    """
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data[0], data[1], data[2]
    raise ValueError("unpack_x_y_sample_weight: data must be x, (x,), (x, y) or (x, y, "
                     f"sample_weight). Received: a {type(data).__name__} of {len(data)} elements")


def slice_struct(struct, index):
    """Every leaf of ``struct`` indexed by ``index`` along the sample axis."""
    if struct is None:
        return None
    if isinstance(struct, dict):
        return {k: slice_struct(v, index) for k, v in struct.items()}
    if isinstance(struct, list):
        return [slice_struct(v, index) for v in struct]
    return struct[index]


def to_tensors(struct):
    """Every array leaf of ``struct`` as a `Tensor` on the current backend (None stays)."""
    if struct is None:
        return None
    if isinstance(struct, dict):
        return {k: to_tensors(v) for k, v in struct.items()}
    if isinstance(struct, (list, tuple)):
        return type(struct)(to_tensors(v) for v in struct)
    return autodiff.convert_to_tensor(struct)


def first_rows(outputs, count):
    """Every output Tensor's first ``count`` rows, with its mask (if any) cut alike."""
    def cut(out):
        part = out[:count]
        mask = getattr(out, "_keras_mask", None)
        if mask is not None:
            part._keras_mask = mask[:count]
        return part

    return autodiff._pack(outputs, iter([cut(o) for o in autodiff._flatten(outputs)]))


def batch_size_of(x):
    """The number of rows of the first array of ``x``."""
    return int(leaves(x)[0].shape[0])


def split_validation(x, y, sample_weight, validation_split, n):
    """``((x, y, sw) train, (x, y, sw) validation)``: the last fraction is validation, taken
    before any shuffling, with ``split_at = floor(n * (1 - validation_split))`` (Keras's rule).

    Raises:
        ValueError: if the split leaves no training or no validation sample.
    """
    if not 0.0 <= validation_split < 1.0:
        raise ValueError("Model.fit: `validation_split` must be in [0, 1). Received: "
                         f"validation_split={validation_split}")
    split_at = int(math.floor(n * (1.0 - validation_split)))
    if split_at == 0 or split_at == n:
        raise ValueError(f"Model.fit: {n} samples cannot be split into training and validation "
                         f"sets with validation_split={validation_split} (split at {split_at}). "
                         f"Received: {n} samples")
    head, tail = slice(0, split_at), slice(split_at, n)
    return tuple(slice_struct(s, head) for s in (x, y, sample_weight)), \
        tuple(slice_struct(s, tail) for s in (x, y, sample_weight))


def unpack_validation_data(validation_data):
    """``(x, y, sample_weight)`` from a tuple of 2 or 3."""
    if not isinstance(validation_data, (tuple, list)) or len(validation_data) not in (2, 3):
        raise ValueError("Model.fit: `validation_data` must be a tuple (x_val, y_val) or "
                         "(x_val, y_val, val_sample_weight). Received: "
                         f"{type(validation_data).__name__} of length "
                         f"{len(validation_data) if hasattr(validation_data, '__len__') else '?'}")
    x, y, *rest = validation_data
    return standardize(x), standardize(y), standardize(rest[0]) if rest else None


def check_batch_size(batch_size, method):
    """``batch_size`` as an int (32 when None).

    Raises:
        ValueError: unless it is a positive int.
    """
    if batch_size is None:
        return 32
    if not isinstance(batch_size, (int, np.integer)) or isinstance(batch_size, bool) \
            or batch_size <= 0:
        raise ValueError(f"Model.{method}: `batch_size` must be a positive int. Received: "
                         f"batch_size={batch_size!r}")
    return int(batch_size)


def with_class_weight(y, sample_weight, class_weight):
    """``sample_weight`` (or ones) times each sample's ``class_weight`` (one output only).

    Raises:
        ValueError: for a model with several targets.
    """
    if isinstance(y, (list, dict)):
        raise ValueError("`class_weight` is only supported for models with one output. "
                         "Received: several targets")
    weights = class_weight_to_sample_weight(y, class_weight)
    if sample_weight is None:
        return weights
    return np.asarray(sample_weight, dtype=np.float32).reshape(len(weights), -1)[:, 0] * weights


def class_weight_to_sample_weight(y, class_weight):
    """Per-sample weights ``class_weight[label]`` (1.0 for classes not listed). Labels are
    ``y`` (ids, shape ``(n,)`` or ``(n, 1)``) or ``argmax(y)`` for one-hot ``(n, classes)``."""
    y = np.asarray(autodiff.Tensor(y).numpy() if not isinstance(y, np.ndarray) else y)
    if y.ndim > 1:
        y = y[..., 0] if y.shape[-1] == 1 else np.argmax(y, axis=-1)
    ids = np.round(y).astype(np.int64).reshape(-1)
    size = max(int(ids.max(initial=0)), max((int(k) for k in class_weight), default=0)) + 1
    table = np.ones(size, dtype=np.float32)
    for key, value in class_weight.items():
        table[int(key)] = value
    return table[ids]


def batch_indices(n, batch_size, shuffle=False):
    """Index objects for one epoch: slices in order, or a random permutation cut into batches
    (``shuffle=True``), or in-order batches in random order (``shuffle="batch"``). The last
    batch may be short; it is never dropped."""
    starts = range(0, n, batch_size)
    rng = backend_module.get("numpy").rng  # seeded by kerasrs.backend.set_seed
    if shuffle is True:
        perm = rng.permutation(n)
        return [perm[i:i + batch_size] for i in starts]
    batches = [slice(i, min(i + batch_size, n)) for i in starts]
    if shuffle == "batch":
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def split_dataset(dataset, left_size=None, right_size=None, shuffle=False, seed=None):
    """Split arrays into a left and a right part (Keras's ``keras.utils.split_dataset``).

    Args:
        dataset: an array, or a tuple/list/dict of arrays with the same number of samples.
        left_size: float in (0, 1) (a fraction of the samples, rounded) or int (a count);
            None takes what ``right_size`` leaves. Both None: half.
        right_size: as ``left_size``, for the right part.
        shuffle: bool, shuffle the samples (with ``seed``) before splitting.
        seed: int or None, the seed of the shuffle.

    Returns:
        ``(left, right)``, each with ``dataset``'s structure: ``left`` the first ``left_size``
        samples, ``right`` the last ``right_size`` (Keras's rule when they do not add up).

    Raises:
        TypeError: for sizes that are not int, float or None.
        ValueError: for sizes out of range, sizes that add up to more than the data, an empty
            side, or arrays of different lengths.

    Example:
        >>> left, right = split_dataset(np.arange(10), left_size=0.8)
        >>> left.tolist(), right.tolist()
        ([0, 1, 2, 3, 4, 5, 6, 7], [8, 9])
    """
    data = standardize(dataset)
    n = num_samples("split_dataset", x=data)
    left, right = _split_sizes(left_size, right_size, n)
    order = np.random.default_rng(seed).permutation(n) if shuffle else np.arange(n)
    parts = slice_struct(data, order[:left]), slice_struct(data, order[n - right:])
    return tuple(tuple(p) for p in parts) if isinstance(dataset, tuple) else parts


def _split_sizes(left_size, right_size, n):
    """``(left, right)`` sample counts from split_dataset's size arguments."""
    if left_size is None and right_size is None:
        left_size = 0.5
    sizes = []
    for name, size in (("left_size", left_size), ("right_size", right_size)):
        if size is not None and (isinstance(size, bool) or not isinstance(size, (int, float))):
            raise TypeError(f"split_dataset: `{name}` must be an int, a float or None. "
                            f"Received: {name} of type {type(size).__name__}")
        bad = isinstance(size, float) and not 0 < size < 1 or isinstance(size, int) and \
            not 0 < size < n
        if bad:
            raise ValueError(f"split_dataset: `{name}` must be a float in (0, 1) or an int in "
                             f"(0, {n}) for {n} samples. Received: {name}={size!r}")
        sizes.append(None if size is None else round(size * n) if isinstance(size, float)
                     else size)
    left, right = sizes
    left = n - right if left is None else left
    right = n - left if right is None else right
    if left + right > n or left == 0 or right == 0:
        raise ValueError(f"split_dataset: {n} samples cannot give {left} left and {right} right "
                         f"samples (neither side may be empty). Received: left_size={left_size!r}"
                         f", right_size={right_size!r}")
    return left, right
