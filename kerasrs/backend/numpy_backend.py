"""The NumPy (CPU) backend: the reference implementation of every kernel."""

import numpy as np

from kerasrs.backend import base


class NumpyBackend(base.Backend):
    name = "numpy"
    xp = np
    array_type = np.ndarray

    def to_numpy(self, x):
        return np.asarray(x)

    def seed(self, seed):
        self.rng = np.random.default_rng(seed)
