"""User-facing utilities with Keras's names: seeding, label encoding and data (`PyDataset`,
`split_dataset`)."""

import json
import random

import numpy as np

from kerasrs import backend, initializers, ops
from kerasrs import random as keras_random
from kerasrs.backend import is_keras_tensor, standardize_dtype  # noqa: F401
from kerasrs.backend.settings import (  # noqa: F401
    disable_interactive_logging, enable_interactive_logging, is_interactive_logging_enabled)
from kerasrs.callbacks.progbar import Progbar  # noqa: F401
from kerasrs.datasets.files import get_file  # noqa: F401
from kerasrs.datasets.py_dataset import PyDataset, Sequence  # noqa: F401
from kerasrs.layers.preprocessing import bounding_box_utils as bounding_boxes  # noqa: F401
from kerasrs.layers.preprocessing.feature_space import FeatureSpace  # noqa: F401
from kerasrs.models.plotting import model_to_dot, plot_model  # noqa: F401
from kerasrs.preprocessing.audio_dataset import audio_dataset_from_directory  # noqa: F401
from kerasrs.preprocessing.datasets import (  # noqa: F401
    image_dataset_from_directory, text_dataset_from_directory, timeseries_dataset_from_array)
from kerasrs.preprocessing.image import array_to_img, img_to_array, load_img, save_img  # noqa: F401
from kerasrs.ops.operation_utils import get_source_inputs  # noqa: F401
from kerasrs.preprocessing.sequence import pad_sequences  # noqa: F401
from kerasrs.registry import (  # noqa: F401
    CustomObjectScope, get_custom_objects, get_registered_name, get_registered_object,
    register_keras_serializable, serialize_keras_object)
from kerasrs.saving.serialization_lib import deserialize_keras_object  # noqa: F401
from kerasrs.trainers.data_adapter import (  # noqa: F401
    pack_x_y_sample_weight, split_dataset, unpack_x_y_sample_weight)

custom_object_scope = CustomObjectScope


def set_random_seed(seed):
    """Seed Python's, NumPy's and every kerasrs backend's generator, for reproducible runs.

    On the CPU, two runs with the same seed and code give bit-for-bit the same weights.
    """
    random.seed(seed)
    np.random.seed(seed)
    backend.set_seed(seed)
    initializers.set_global_seed(seed)
    keras_random.reset_global(seed)  # keras.random draws with seed=None restart


def clear_session():
    """Reset the default-name counters, so new layers are named ``dense``, ``dense_1``, ...
    again (Keras's ``keras.utils.clear_session``). Existing layers and models keep working."""
    backend.clear_session()  # also resets the layer-name counters (hook set by kerasrs)


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


def normalize(x, axis=-1, order=2):
    """``x`` divided by its ``order``-norm along ``axis`` (zero vectors stay zero); a NumPy
    array for NumPy input, else a Tensor."""
    if isinstance(x, np.ndarray) or not hasattr(x, "data"):
        x = np.asarray(x, dtype=float) if not isinstance(x, np.ndarray) else x
        norm = np.atleast_1d(np.linalg.norm(x, order, axis))
        norm[norm == 0] = 1
        return x / np.expand_dims(norm, axis)
    return ops.normalize(x, axis=axis, order=order)


class Config:
    """An attribute-access dict (``config.lr`` is ``config["lr"]``) that `freeze` makes
    read-only (Keras's ``keras.utils.Config``)."""

    def __init__(self, **kwargs):
        object.__setattr__(self, "_config", dict(kwargs))
        object.__setattr__(self, "_frozen", False)

    def freeze(self):
        object.__setattr__(self, "_frozen", True)

    def unfreeze(self):
        object.__setattr__(self, "_frozen", False)

    @property
    def frozen(self):
        return self._frozen

    def _check(self, name):
        if self._frozen:
            raise ValueError(f"Cannot set {name!r}: this Config is frozen.")

    def __setattr__(self, name, value):
        self._check(name)
        self._config[name] = value

    def __getattr__(self, name):
        try:
            return self._config[name]
        except KeyError:
            raise AttributeError(f"Config has no attribute {name!r}") from None

    def __setitem__(self, name, value):
        self.__setattr__(name, value)

    def __getitem__(self, name):
        return self._config[name]

    def __delitem__(self, name):
        self._check(name)
        del self._config[name]

    def __contains__(self, name):
        return name in self._config

    def __len__(self):
        return len(self._config)

    def __iter__(self):
        return iter(self._config)

    def keys(self):
        return self._config.keys()

    def values(self):
        return self._config.values()

    def items(self):
        return self._config.items()

    def get(self, name, default=None):
        return self._config.get(name, default)

    def update(self, *args, **kwargs):
        self._check("update")
        self._config.update(*args, **kwargs)

    def pop(self, *args):
        self._check("pop")
        return self._config.pop(*args)

    def as_dict(self):
        return dict(self._config)

    def to_json(self):
        return json.dumps(self._config)

    def __repr__(self):
        return f"<Config {self._config}>"
