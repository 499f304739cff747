"""The interface every backend implements: an array module, dtypes, an RNG and named kernels."""

import numpy as np

from kerasrs.backend import kernels


# `kerasrs.backend.get`, set by the package: a Backend pickles as its name and unpickles as this
# process's one object of that name (ops compare backends by identity).
restore = None


class Backend(*kernels.TWINS):
    """One array library (NumPy or CuPy) behind a common interface.

    The named kernels (``bias_act``, ``layer_norm``, ``adam_update``, ...) are inherited from
    the ``Twin`` classes of `kerasrs.backend.kernels`: plain ``xp`` compositions, the reference
    that `NumpyBackend` and `CupyBackend` override with compiled versions tested against them.
    Arrays may be non-contiguous; outputs are new arrays unless an ``out`` is passed.

    Attributes:
        name: "numpy" or "cupy".
        xp: the array module (``numpy`` or ``cupy``).
        array_type: the array class this backend owns, used to tell which backend made an array.
    """

    name = None
    xp = None
    array_type = None

    def __init__(self):
        self.rng = None
        self.seed(None)

    def __reduce__(self):
        return (restore, (self.name,))

    # -- arrays and transfer -------------------------------------------------------------------
    def asarray(self, x, dtype=None):
        """Array on this backend's device, without a copy where possible."""
        return self.xp.asarray(x, dtype=dtype)

    def to_numpy(self, x):
        """Host NumPy copy (or view, on the CPU) of an array of this backend."""
        raise NotImplementedError

    def is_array(self, x):
        return isinstance(x, self.array_type)

    def empty(self, shape, dtype="float32"):
        """An uninitialized C-contiguous array for a hot path's result; the NumPy backend
        reuses the memory of large ones from step to step (`kerasrs.backend.memory`)."""
        return self.xp.empty(shape, dtype)

    # -- random numbers ------------------------------------------------------------------------
    def seed(self, seed):
        """Re-seed this backend's generator (None: from OS entropy)."""
        raise NotImplementedError

    def scatter_add(self, a, key, values):
        """In place ``a[key] += values``, summing where ``key`` repeats an index (unlike ``+=``)."""
        self.xp.add.at(a, key, values)

    def __repr__(self):
        return f"<kerasrs backend {self.name!r}>"


def numpy_dtype(dtype):
    """The NumPy dtype for a name or dtype object; "bfloat16" comes from ml_dtypes."""
    if isinstance(dtype, str) and dtype == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype)
