"""The data that ``adapt`` accepts, as a stream of NumPy batches."""

import collections.abc

import numpy as np

from kerasrs import autodiff
from kerasrs.datasets import py_dataset


def batches(data, who, steps=None):
    """Yield the inputs of each batch of ``data`` as NumPy arrays: ``data`` itself when it is an
    array (or a list of numbers or strings), else each element of a `PyDataset` or iterable
    (the first item of a tuple ``(x, y, ...)``), at most ``steps`` of them.

    Raises:
        TypeError: for data of another kind, naming what is accepted.
        ValueError: if there is no batch.
    """
    if _is_array(data):
        yield _to_numpy(data)
        return
    if isinstance(data, py_dataset.PyDataset):
        n = data.num_batches
        source = (data[i] for i in (range(n) if n is not None else iter(int, 1)))
    elif isinstance(data, collections.abc.Iterable) and not isinstance(data, (str, bytes, dict)):
        source = iter(data)
    else:
        raise TypeError(f"{who}.adapt: `data` must be an array, a kerasrs.utils.PyDataset or an "
                        f"iterable of batches. Received: data of type {type(data).__name__}")
    count = 0
    for batch in source:
        if steps is not None and count >= steps:
            break
        if isinstance(batch, tuple):
            batch = batch[0]
        count += 1
        yield _to_numpy(batch)
    if count == 0:
        raise ValueError(f"{who}.adapt: the data gave no batch. Received: an empty "
                         f"{type(data).__name__}")


def string_lists_to_arrays(inputs):
    """A (nested) list or tuple of strings as a NumPy string array, for the string layers' calls
    (Keras documents ``layer([["a", "c"], ["d", "z"]])``); anything else unchanged."""
    if isinstance(inputs, (list, tuple)) and inputs and _all_strings(inputs):
        return np.asarray(inputs)
    return inputs


def _all_strings(value):
    if isinstance(value, (list, tuple)):
        return all(_all_strings(v) for v in value)
    return isinstance(value, (str, bytes))


def _is_array(data):
    if isinstance(data, (np.ndarray, autodiff.Tensor)) or hasattr(data, "__array__"):
        return True
    return isinstance(data, list) and all(
        isinstance(v, (int, float, str, bytes, np.generic)) or _is_array_list(v) for v in data)


def _is_array_list(v):
    return isinstance(v, list) and all(isinstance(e, (int, float, str, bytes, np.generic))
                                       for e in v)


def _to_numpy(x):
    if isinstance(x, autodiff.Tensor):
        return x.numpy()
    if hasattr(x, "numpy") and callable(x.numpy) and not isinstance(x, np.ndarray):
        return np.asarray(x.numpy())
    return np.asarray(x)
