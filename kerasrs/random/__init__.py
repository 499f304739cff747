"""Random tensors as Keras's ``keras.random``, seeded like Keras.

``seed`` may be None (a fresh draw from the global generator, which
``kerasrs.utils.set_random_seed`` resets), an int (the same numbers at every call) or a
`SeedGenerator` (a new, reproducible stream of numbers at each call). Numbers are drawn on the host
with NumPy's PCG64 and moved to the default backend, so a seed gives the same values on CPU and GPU.
"""

import numpy as np

from kerasrs import backend as _backend
from kerasrs import context
from kerasrs import initializers as _initializers
from kerasrs import ops
from kerasrs.autodiff import Variable
from kerasrs.ops.core import constant

_global = [None]


class SeedGenerator:
    """A seed that advances: each random op given it draws different, reproducible numbers.

    Layers that draw random numbers (`Dropout`, `GaussianNoise`, RNN cells with dropout...) own
    one, as in Keras: it appears in ``layer._seed_generators`` and its state in
    ``layer.non_trainable_variables`` (not in ``layer.weights``).

    Args:
        seed: int or None (None draws a starting seed from the generator
            ``kerasrs.utils.set_random_seed`` seeds).
        name: str, defaults to "seed_generator".

    Attributes:
        state: a non-trainable int64 `Variable` ``[seed, counter]``, kept on the host (reading it
            never waits for a GPU); `next` returns it and advances the counter.

    Raises:
        ValueError: for a seed that is not an int, or an unknown keyword argument.
    """

    def __init__(self, seed=None, name=None, **kwargs):
        kwargs.pop("backend", None)  # Keras's own backend object: one backend here
        if kwargs:
            raise ValueError(f"SeedGenerator: Unrecognized keyword arguments: {sorted(kwargs)}")
        if seed is not None and (not isinstance(seed, (int, np.integer)) or
                                 isinstance(seed, bool)):
            raise ValueError(f"SeedGenerator: Argument `seed` must be an integer. Received: "
                             f"seed={seed!r}")
        self._initial_seed = None if seed is None else int(seed)
        self.name = name or "seed_generator"
        start = int(_host_rng(None).integers(2 ** 31)) if seed is None else int(seed)
        with _backend.using("numpy"):
            self.state = Variable(np.array([start, 0], dtype="int64"), trainable=False,
                                  name="seed_generator_state")
        self.state.path = f"{self.name}/seed_generator_state"

    @property
    def seed(self):
        """The starting seed (drawn at creation when none was given)."""
        return int(self.state.data[0])

    def next(self, ordered=True):
        """The current ``[seed, counter]`` (a NumPy int64 array); advances the counter. Inside
        a `kerasrs.remat` recomputation: the state its forward run drew (no advance)."""
        log = context.rng_log.get()
        return self._advance() if log is None else log.draw(self._advance).copy()

    def _advance(self):
        state = self.state.data.copy()
        self.state.data[1] += 1
        return state

    def get_config(self):
        return {"seed": self._initial_seed, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


_initializers.register_seed_generator(SeedGenerator)  # initializers take one as `seed`


def _host_rng(seed, who=None):
    """The NumPy generator for ``seed``. ``who`` (the public function drawing) is reported to
    `kerasrs.graph` tracers: numbers drawn on the host would be frozen into a traced graph."""
    if who is not None:
        for tracer in context.tracers.get():
            tracer.host_random(f"kerasrs.random.{who}")
    log = context.rng_log.get()  # inside kerasrs.remat: seeds recorded, replayed on recompute
    if isinstance(seed, SeedGenerator):  # (its `next` consults the log itself)
        return np.random.default_rng([int(v) for v in seed.next()])
    if seed is None:
        if _global[0] is None:
            _global[0] = np.random.default_rng(_backend._seed[0])
        if log is not None:
            return np.random.default_rng(log.draw(lambda: int(_global[0].integers(2 ** 63))))
        return _global[0]
    if isinstance(seed, (int, np.integer)):
        return np.random.default_rng(int(seed))
    raise ValueError(f"`seed` must be None, an int or a SeedGenerator. Received: seed={seed!r}")


def reset_global(seed):
    """Restart the generator used for ``seed=None`` (called by ``utils.set_random_seed``)."""
    _global[0] = np.random.default_rng(seed)


def _out(values, dtype):
    dtype = _backend.standardize_dtype(dtype or _backend.floatx())
    return constant(_backend.get().asarray(np.asarray(values).astype(dtype)), _backend.get())


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Samples of N(mean, stddev**2), shape ``shape``, float dtype (floatx by default)."""
    return _out(_host_rng(seed, "normal").normal(mean, stddev, size=tuple(shape)), dtype)


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Samples of U[minval, maxval)."""
    return _out(_host_rng(seed, "uniform").uniform(minval, maxval, size=tuple(shape)), dtype)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """N(mean, stddev**2) samples redrawn until within two standard deviations of the mean."""
    rng = _host_rng(seed, "truncated_normal")
    x = rng.standard_normal(tuple(shape))
    bad = np.abs(x) > 2
    while bad.any():
        x[bad] = rng.standard_normal(int(bad.sum()))
        bad = np.abs(x) > 2
    return _out(mean + stddev * x, dtype)


def randint(shape, minval, maxval, dtype="int32", seed=None):
    """Integers drawn uniformly from [minval, maxval)."""
    return _out(_host_rng(seed, "randint").integers(minval, maxval, size=tuple(shape)), dtype)


def categorical(logits, num_samples, dtype="int32", seed=None):
    """Class ids drawn from ``softmax(logits)`` row by row: logits (batch, classes) ->
    (batch, num_samples). Vectorized inverse-CDF sampling."""
    z = ops.convert_to_numpy(logits).astype("float64")
    if z.ndim != 2:
        raise ValueError(f"categorical: `logits` must be 2D (batch, classes). Received shape "
                         f"{z.shape}")
    p = np.exp(z - z.max(axis=1, keepdims=True))
    cdf = np.cumsum(p / p.sum(axis=1, keepdims=True), axis=1)
    u = _host_rng(seed, "categorical").random((z.shape[0], num_samples))
    ids = (u[:, :, None] > cdf[:, None, :]).sum(axis=2)
    return _out(np.minimum(ids, z.shape[1] - 1), dtype)


def gamma(shape, alpha, dtype=None, seed=None):
    """Gamma(alpha, 1) samples."""
    return _out(_host_rng(seed, "gamma").gamma(alpha, 1.0, size=tuple(shape)), dtype)


def beta(shape, alpha, beta, dtype=None, seed=None):  # noqa: A002  (Keras's argument name)
    """Beta(alpha, beta) samples."""
    return _out(_host_rng(seed, "beta").beta(alpha, beta, size=tuple(shape)), dtype)


def binomial(shape, counts, probabilities, dtype=None, seed=None):
    """Binomial(counts, probabilities) samples (float dtype, as Keras)."""
    rng = _host_rng(seed, "binomial")
    return _out(rng.binomial(counts, probabilities, size=tuple(shape)), dtype)


def dropout(inputs, rate, noise_shape=None, seed=None):
    """``inputs`` with each element zeroed with probability ``rate`` and the rest scaled by
    ``1 / (1 - rate)`` (inverted dropout). Differentiable in ``inputs``.

    Raises:
        ValueError: for ``rate`` outside [0, 1).
    """
    if not 0 <= rate < 1:
        raise ValueError(f"dropout: `rate` must be in [0, 1). Received: rate={rate}")
    x = ops.convert_to_tensor(inputs)
    shape = tuple(x.shape) if noise_shape is None else tuple(
        d if d is not None else s for d, s in zip(noise_shape, x.shape))
    keep = _host_rng(seed, "dropout").random(shape) >= rate
    mask = x.backend.asarray((keep / (1 - rate)).astype(x.dtype))
    return ops.multiply(x, constant(mask, x.backend))


def shuffle(x, axis=0, seed=None):
    """``x`` with its slices along ``axis`` in a random order."""
    x = ops.convert_to_tensor(x)
    perm = _host_rng(seed, "shuffle").permutation(x.shape[axis])
    return ops.take(x, perm, axis=axis)


__all__ = ["SeedGenerator", "beta", "binomial", "categorical", "dropout", "gamma", "normal",
           "randint", "shuffle", "truncated_normal", "uniform"]
