"""The interface every backend implements: an array module, dtypes, an RNG and named kernels."""

import numpy as np


class Backend:
    """One array library (NumPy or CuPy) behind a common interface.

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

    # -- arrays and transfer -------------------------------------------------------------------
    def asarray(self, x, dtype=None):
        """Array on this backend's device, without a copy where possible."""
        return self.xp.asarray(x, dtype=dtype)

    def to_numpy(self, x):
        """Host NumPy copy (or view, on the CPU) of an array of this backend."""
        raise NotImplementedError

    def is_array(self, x):
        return isinstance(x, self.array_type)

    # -- random numbers ------------------------------------------------------------------------
    def seed(self, seed):
        """Re-seed this backend's generator (None: from OS entropy)."""
        raise NotImplementedError

    # -- fused kernels: NumPy versions are the reference, other backends override ------------------
    def relu_grad(self, y, gy):
        """Gradient of relu from its output: ``gy * (y > 0)`` (relu'(0) = 0, as PyTorch)."""
        return gy * (y > 0)

    def sigmoid(self, x):
        """Logistic function, computed without overflow for large ``|x|``."""
        xp = self.xp
        e = xp.exp(-xp.abs(x))
        return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)

    def __repr__(self):
        return f"<kerasrs backend {self.name!r}>"


def numpy_dtype(dtype):
    """The NumPy dtype for a name or dtype object; "bfloat16" comes from ml_dtypes."""
    if isinstance(dtype, str) and dtype == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype)
