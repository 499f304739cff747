"""The CuPy (NVIDIA GPU) backend. CuPy is imported only when this backend is first asked for."""

import numpy as np

from kerasrs.backend import base


def import_cupy():
    """Import CuPy and check that a GPU is present; the error says which of the two is missing."""
    try:
        import cupy
    except ImportError as e:
        raise ImportError(
            "The 'cupy' backend needs CuPy, which is not installed. Install it with "
            "`pip install kerasrs[cuda12]` (or [cuda13]), or use the 'numpy' backend."
        ) from e
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # the CUDA driver itself is missing or broken
        raise RuntimeError(
            f"The 'cupy' backend found CuPy but no usable NVIDIA GPU: {e}. Use the 'numpy' backend."
        ) from e
    if count == 0:
        raise RuntimeError("The 'cupy' backend found CuPy but no NVIDIA GPU. Use the 'numpy' "
                           "backend.")
    return cupy


def import_nccl():
    """CuPy's NCCL bindings (``cupy.cuda.nccl``), for data-parallel training on several GPUs.

    Raises:
        ImportError: if this CuPy was built without NCCL, with how to get it.
    """
    import_cupy()
    try:
        from cupy.cuda import nccl
    except ImportError as e:
        raise ImportError("kerasrs.distribution on the 'cupy' backend needs NCCL: install the "
                          "CuPy wheel for your CUDA version and `pip install nvidia-nccl-cu12` "
                          f"(or -cu13). Received: {e}") from e
    if not getattr(nccl, "available", True):
        raise ImportError("kerasrs.distribution on the 'cupy' backend needs NCCL, which this "
                          "CuPy cannot load: `pip install nvidia-nccl-cu12` (or -cu13). "
                          "Received: cupy.cuda.nccl.available is False")
    return nccl


class CupyBackend(base.Backend):
    name = "cupy"

    def __init__(self):
        cp = import_cupy()
        self.xp = cp
        self.array_type = cp.ndarray
        self._kernels = None
        super().__init__()

    @property
    def kernels(self):
        if self._kernels is None:  # compiled on first use, cached per process
            from kerasrs.backend import cuda_kernels

            self._kernels = cuda_kernels
        return self._kernels

    def asarray(self, x, dtype=None):
        return self.xp.asarray(x, dtype=dtype)

    def to_numpy(self, x):
        return self.xp.asnumpy(x)

    def seed(self, seed):
        self.rng = self.xp.random.default_rng(seed)
        self.host_rng = np.random.default_rng(seed)

    def scatter_add(self, a, key, values):
        import cupyx

        cupyx.scatter_add(a, key, values)

    def relu_grad(self, y, gy):
        return self.kernels.relu_grad()(y, gy)

    def sigmoid(self, x):
        return self.kernels.sigmoid()(x)

    def erf(self, x):
        if x.dtype.kind != "f" or x.dtype.itemsize < 4:  # half/int inputs: compute in float32
            return self.kernels.erf()(x.astype(self.xp.float32)).astype(
                x.dtype if x.dtype.kind == "f" else self.xp.float32)
        return self.kernels.erf()(x)
