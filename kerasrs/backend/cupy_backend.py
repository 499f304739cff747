"""The CuPy (NVIDIA GPU) backend. CuPy is imported only when this backend is first asked for."""

import numpy as np

from kerasrs.backend import base, kernels
from kerasrs.backend.kernels import cuda


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


class CupyBackend(*kernels.CUDA, base.Backend):
    """CuPy arrays on the current GPU; the named kernels run as handwritten CUDA (the ``Cuda``
    classes of `kerasrs.backend.kernels`, launching each family's ``.cu`` file through
    `kernels.Launcher`).

    Each override falls back to the reference twin in `base.Backend` for what the kernels do
    not take: dtypes other than float32/float64, mixed dtypes, activations the kernels do not
    know, and in-place arguments that are not C-contiguous. Other inputs that are not
    C-contiguous are copied once.
    """

    name = "cupy"

    def __init__(self):
        cp = import_cupy()
        self.xp = cp
        self.array_type = cp.ndarray
        self._kernels = None
        super().__init__()

    @property
    def kernels(self):
        """The launchers, built on first use; each .cu file is compiled on its first launch."""
        if self._kernels is None:
            self._kernels = kernels.Launcher(self.xp, self._load_module)
            self._kernels.upload = self._upload
        return self._kernels

    def _load_module(self, name):
        """The compiled ``cupy.RawModule`` of kernel file ``name`` (CuPy caches the binaries)."""
        return self.xp.RawModule(code=cuda.source(name), options=cuda.OPTIONS,
                                 name_expressions=kernels.FILES[name])

    def _upload(self, host):
        """Device copy of a small host array without a device sync: staged in pinned memory and
        copied asynchronously on the current stream (CuPy's pinned pool keeps the staging
        buffer until the copy is done)."""
        cp = self.xp
        pinned = cp.cuda.alloc_pinned_memory(host.nbytes)
        staged = np.frombuffer(pinned, host.dtype, host.size).reshape(host.shape)
        staged[...] = host
        out = cp.empty(host.shape, host.dtype)
        out.set(staged, stream=cp.cuda.get_current_stream())
        return out

    def _c(self, a):
        """``a`` as a C-contiguous array (itself when it is one; None stays None)."""
        return a if a is None else self.xp.ascontiguousarray(a)

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
