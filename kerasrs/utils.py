"""User-facing utilities with Keras's names: seeding, label encoding and data (`PyDataset`,
`split_dataset`)."""

import random

import numpy as np

from kerasrs import backend
from kerasrs.models.data_adapter import pack_x_y_sample_weight, unpack_x_y_sample_weight  # noqa: F401
from kerasrs.models.data_adapter import split_dataset  # noqa: F401
from kerasrs.models.py_dataset import PyDataset, Sequence  # noqa: F401


def set_random_seed(seed):
    """Seed Python's, NumPy's and every kerasrs backend's generator, for reproducible runs.

    On the CPU, two runs with the same seed and code give bit-for-bit the same weights.
    """
    random.seed(seed)
    np.random.seed(seed)
    backend.set_seed(seed)
    _seed_initializers(seed)


def clear_session():
    """Reset the default-name counters, so new layers are named ``dense``, ``dense_1``, ...
    again (Keras's ``keras.utils.clear_session``). Existing layers and models keep working."""
    from kerasrs.layers import naming

    naming.reset_uids()


def _seed_initializers(seed):
    try:
        from kerasrs import initializers
    except ImportError:  # initializers not built yet
        return
    if hasattr(initializers, "set_global_seed"):
        initializers.set_global_seed(seed)


def to_categorical(x, num_classes=None):
    """One-hot encode integer class ids.

    Args:
        x: array-like of non-negative ints, any shape (a trailing axis of size 1 is dropped).
        num_classes: int; defaults to ``max(x) + 1``.

    Returns:
        float32 NumPy array of shape ``x.shape + (num_classes,)``.

    Raises:
        ValueError: for negative ids or ids ``>= num_classes``.
    """
    x = np.asarray(x, dtype="int64")
    if x.ndim > 1 and x.shape[-1] == 1:
        x = x[..., 0]
    if num_classes is None:
        num_classes = int(x.max()) + 1 if x.size else 0
    if x.size and (x.min() < 0 or x.max() >= num_classes):
        raise ValueError(f"to_categorical: class ids must be in [0, {num_classes}). "
                         f"Received: ids from {x.min()} to {x.max()}")
    out = np.zeros(x.shape + (num_classes,), dtype="float32")
    np.put_along_axis(out, x[..., None], 1.0, axis=-1)
    return out
