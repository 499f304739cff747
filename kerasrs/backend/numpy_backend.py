"""The NumPy (CPU) backend. The twins in `base.Backend` are the reference; the ``Cpu`` classes of
`kerasrs.backend.kernels` override the kernels on training's hot path with compiled (numba)
versions, whose large results and temporaries come from reused memory (`memory.empty`)."""

import numpy as np

from kerasrs.backend import base, kernels, memory


class NumpyBackend(*kernels.CPU, base.Backend):
    name = "numpy"
    xp = np
    array_type = np.ndarray

    def to_numpy(self, x):
        return np.asarray(x)

    def empty(self, shape, dtype="float32"):
        return memory.empty(shape, dtype)

    def seed(self, seed):
        self.rng = np.random.default_rng(seed)
