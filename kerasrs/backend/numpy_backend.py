"""The NumPy (CPU) backend. The plain compositions in `base.Backend` are the reference; this
class overrides the named kernels that are on training's hot path with versions that allocate
nothing per call (reused scratch buffers, ``out=`` everywhere)."""

import math

import numpy as np

from kerasrs.backend import base


class NumpyBackend(base.Backend):
    name = "numpy"
    xp = np
    array_type = np.ndarray

    def __init__(self):
        super().__init__()
        self._buffers = {}

    def to_numpy(self, x):
        return np.asarray(x)

    def seed(self, seed):
        self.rng = np.random.default_rng(seed)

    def scratch(self, shape, dtype, slot=0):
        """A reusable uninitialized array of ``shape`` and ``dtype``: one flat buffer per
        ``(dtype, slot)``, grown to the largest request and viewed in the asked shape. The
        contents are overwritten by the next request for the same slot."""
        size = math.prod(shape)
        key = (np.dtype(dtype).str, slot)
        buf = self._buffers.get(key)
        if buf is None or buf.size < size:
            buf = self._buffers[key] = np.empty(max(size, 1), dtype)
        return buf[:size].reshape(shape)

    def adam_update(self, params, grads, ms, vs, lr, beta_1, beta_2, epsilon, step,
                    weight_decay=0.0, v_hats=None):
        alpha = lr * math.sqrt(1.0 - beta_2 ** step) / (1.0 - beta_1 ** step)
        for i, (w, g, m, v) in enumerate(zip(params, grads, ms, vs)):
            tmp = self.scratch(w.shape, w.dtype)
            if weight_decay:
                np.multiply(w, weight_decay * lr, out=tmp)
                w -= tmp
            np.subtract(g, m, out=tmp)                  # m += (1 - b1) * (g - m)
            tmp *= 1.0 - beta_1
            m += tmp
            np.multiply(g, g, out=tmp)                  # v += (1 - b2) * (g^2 - v)
            tmp -= v
            tmp *= 1.0 - beta_2
            v += tmp
            if v_hats is not None:
                np.maximum(v_hats[i], v, out=v_hats[i])
                v = v_hats[i]
            np.sqrt(v, out=tmp)                         # w -= alpha * m / (sqrt(v) + eps)
            tmp += epsilon
            np.divide(m, tmp, out=tmp)
            tmp *= alpha
            w -= tmp

    def sgd_update(self, params, grads, momentums, lr, momentum=0.0, nesterov=False,
                   weight_decay=0.0):
        for i, (w, g) in enumerate(zip(params, grads)):
            step = self.scratch(w.shape, w.dtype)
            if weight_decay:
                np.multiply(w, weight_decay * lr, out=step)
                w -= step
            np.multiply(g, lr, out=step)                # lr * g
            if not momentum:
                w -= step
                continue
            v = momentums[i]
            v *= momentum
            v -= step
            if nesterov:
                w -= step
                np.multiply(v, momentum, out=step)
                w += step
            else:
                w += v
