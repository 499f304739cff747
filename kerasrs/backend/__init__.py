"""Backend selection: which array library (NumPy or CuPy) holds new arrays.

The default comes from the ``KERASRS_BACKEND`` environment variable ("numpy" unless set),
``set_backend(name)``, or, for a block of code, ``with using(name):``. Every array remembers
which backend made it (by its type), so both backends can be used in one process; an op that
mixes them raises ``ValueError``. CuPy is imported only when the "cupy" backend is first asked for.
"""

import contextlib
import os

import numpy as np

from kerasrs import context
from kerasrs.backend import base, memory
from kerasrs.backend.base import Backend, numpy_dtype
from kerasrs.backend.dtypes import floatx, result_type, set_floatx
from kerasrs.backend.cupy_backend import CupyBackend
from kerasrs.backend.numpy_backend import NumpyBackend

NAMES = ("numpy", "cupy")
_CLASSES = {"numpy": NumpyBackend, "cupy": CupyBackend}  # (CupyBackend imports CuPy when made)
_instances = {}
_default = [os.environ.get("KERASRS_BACKEND", "numpy").strip().lower() or "numpy"]
if _default[0] not in NAMES:
    raise ValueError(f"KERASRS_BACKEND must be one of {NAMES}. Received: {_default[0]!r}")
_seed = [None]
_dropout_keys = [np.random.default_rng()]  # draws the Philox keys of unseeded dropout layers


def get(name=None):
    """The `Backend` object for ``name`` (the current default when None).

    Raises:
        ValueError: for a name other than "numpy" or "cupy".
        ImportError / RuntimeError: for "cupy" without CuPy / without a GPU.
    """
    name = _default[-1] if name is None else name
    be = _instances.get(name)
    if be is None:
        if name not in _CLASSES:
            raise ValueError(f"Unknown backend: expected one of {NAMES}. Received: {name!r}")
        be = _instances[name] = _CLASSES[name]()
        be.seed(_seed[0])
    return be


base.restore = get


def backend():
    """Name of the current default backend: "numpy" or "cupy"."""
    return _default[-1]


def set_backend(name):
    """Make ``name`` the default backend for new arrays. Checks that it is usable first."""
    get(name)
    _default[0] = name


@contextlib.contextmanager
def using(name):
    """Context manager: new arrays go to backend ``name`` inside the block. Yields the Backend."""
    be = get(name)
    _default.append(name)
    try:
        yield be
    finally:
        _default.pop()


def is_available(name):
    """True if backend ``name`` can be used here (for "cupy": CuPy installed and a GPU present)."""
    try:
        get(name)
        return True
    except (ImportError, RuntimeError, ValueError):
        return False


def backend_of(array):
    """The Backend that owns ``array``: NumPy for NumPy arrays and scalars, else by array type."""
    if isinstance(array, (np.ndarray, np.generic)):
        return get("numpy")
    for be in _instances.values():
        if be.is_array(array):
            return be
    return get()


def standardize_dtype(dtype):
    """A dtype object from a name ("float32", "bfloat16", ...), dtype or None (-> floatx).

    Raises:
        TypeError: for a name or object that is not a dtype, e.g. "float33".
    """
    try:
        return numpy_dtype(floatx() if dtype is None else dtype)
    except (TypeError, ValueError) as e:
        raise TypeError(f"unknown dtype {dtype!r}: use a dtype name such as 'float32', "
                        f"'float64', 'float16', 'bfloat16', 'int32', 'int64' or 'bool'. "
                        f"Received: dtype={dtype!r}") from e


def is_float_dtype(dtype):
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or dtype.name == "bfloat16"


def convert_to_numpy(x):
    """A host NumPy array from a Tensor, backend array, list or scalar."""
    data = x
    if not isinstance(x, np.ndarray) and not hasattr(x, "__cuda_array_interface__"):
        data = getattr(x, "data", x)  # a Tensor's array (a CuPy array's .data is its pointer)
    if isinstance(data, np.ndarray):
        return data
    return backend_of(data).to_numpy(data) if not isinstance(data, (list, tuple, int, float)) \
        else np.asarray(data)


def set_seed(seed):
    """Seed the runtime generator (dropout, shuffling) of every backend created so far and later."""
    _seed[0] = seed
    _dropout_keys[0] = np.random.default_rng(seed)
    for be in _instances.values():
        be.seed(seed)


def dropout_seed():
    """A fresh 63-bit Philox key for a dropout layer without a ``seed``: drawn on the host from
    a generator that `set_seed` seeds, so it is the same on every backend. Inside a
    `kerasrs.remat` recomputation: the key its forward run drew."""
    log = context.rng_log.get()
    if log is None:
        return int(_dropout_keys[0].integers(0, 2 ** 63))
    return log.draw(lambda: int(_dropout_keys[0].integers(0, 2 ** 63)))


__all__ = ["Backend", "base", "get", "backend", "set_backend", "using", "is_available",
           "backend_of",
           "floatx", "set_floatx", "standardize_dtype", "is_float_dtype", "convert_to_numpy",
           "set_seed", "dropout_seed", "NAMES"]

# Keras's keras.backend / keras.config settings (values live in settings.py).
from kerasrs.backend import settings  # noqa: E402
from kerasrs.backend.settings import (  # noqa: E402,F401
    epsilon, image_data_format, set_epsilon, set_image_data_format)


def is_int_dtype(dtype):
    """True for signed and unsigned integer dtypes."""
    return np.dtype(standardize_dtype(dtype)).kind in "iu"


_uids = {}


def get_uid(prefix=""):
    """1, 2, 3, ... per ``prefix``: a counter for unique default names."""
    _uids[prefix] = _uids.get(prefix, 0) + 1
    return _uids[prefix]


def is_keras_tensor(x):
    """True for a symbolic tensor of a functional model (what ``Input()`` returns)."""
    return type(x).__name__ == "SymbolicTensor"


def clear_session(free_memory=True):
    """Reset the default-name counters (see ``kerasrs.utils.clear_session``)."""
    _uids.clear()
    if free_memory:
        memory.clear()
    for hook in _clear_session_hooks:
        hook()


_clear_session_hooks = []  # filled by upper levels (layer naming) that keep per-session state

__all__ += ["epsilon", "image_data_format", "set_epsilon", "set_image_data_format", "settings",
            "is_int_dtype", "result_type", "get_uid", "is_keras_tensor", "clear_session"]
