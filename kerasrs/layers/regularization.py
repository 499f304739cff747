"""Noise and regularization layers with Keras 3's names: `GaussianNoise`, `GaussianDropout`,
`AlphaDropout`, `SpatialDropout1D/2D/3D` and `ActivityRegularization`. The noise layers act
only with ``training=True``; otherwise they return their input."""

import numpy as np

from kerasrs import ops, random, regularizers
from kerasrs.backend import settings
from kerasrs.layers.base import Layer
from kerasrs.layers.core import Dropout, random_draw, resolve_noise_shape


class _Noise(Layer):
    """Shared: the rate/stddev check, the generator (layer-own with ``seed``), the config."""

    supports_masking = True

    def __init__(self, rate, seed=None, arg="rate", **kwargs):
        super().__init__(**kwargs)
        if not isinstance(rate, (int, float)) or not 0 <= rate < (1 if arg == "rate" else
                                                                    float("inf")):
            expected = "a float value between 0 and 1 (1 excluded)" if arg == "rate" else \
                "a float value >= 0"
            raise ValueError(f"{self.name}: Invalid value received for argument `{arg}`. "
                             f"Expected {expected}. Received: {arg}={rate!r}")
        self._value, self._arg, self.seed = float(rate), arg, seed
        if self._value > 0:
            self.seed_generator = random.SeedGenerator(seed)
        self._build_at_init()

    def _draw(self, kind, shape, dtype, be):
        """Random numbers for one call (`kerasrs.layers.core.random_draw`): keyed by the layer's
        seed generator (its ``seed``, or one drawn from the stream ``set_random_seed`` seeds),
        new numbers at each call, and a graph op, so a replayed step draws them too."""
        return random_draw(self.seed_generator, kind, shape, dtype, be)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), self._arg: self._value, "seed": self.seed}


class GaussianNoise(_Noise):
    """Adds zero-mean Gaussian noise of standard deviation ``stddev`` during training."""

    def __init__(self, stddev, seed=None, **kwargs):
        super().__init__(stddev, seed, arg="stddev", **kwargs)
        self.stddev = self._value

    def call(self, inputs, training=False):
        if not training or self.stddev == 0:
            return inputs
        noise = self._draw("normal", inputs.shape, inputs.dtype, inputs.backend)
        return ops.add(inputs, ops.multiply(noise, self.stddev))


class GaussianDropout(_Noise):
    """Multiplies by Gaussian noise of mean 1 and variance ``rate / (1 - rate)`` during
    training (Srivastava et al. 2014, section 10)."""

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(rate, seed, **kwargs)
        self.rate = self._value

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        std = float(np.sqrt(self.rate / (1.0 - self.rate)))
        noise = self._draw("normal", inputs.shape, inputs.dtype, inputs.backend)
        return ops.multiply(inputs, ops.add(ops.multiply(noise, std), 1.0))


class AlphaDropout(_Noise):
    """Dropout that keeps SELU's self-normalizing mean and variance (Klambauer et al. 2017,
    section 4): dropped units are set to ``-lambda * alpha``, then an affine map ``a x + b``
    restores mean 0 and variance 1."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(rate, seed, **kwargs)
        self.rate = self._value
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        shape = resolve_noise_shape(self.noise_shape, inputs.shape)
        alpha_p = -1.6732632423543772 * 1.0507009873554805
        uniform = self._draw("uniform", shape, inputs.dtype, inputs.backend)
        keep = ops.cast(ops.greater_equal(uniform, self.rate), inputs.dtype)
        a = ((1 - self.rate) * (1 + self.rate * alpha_p ** 2)) ** -0.5
        b = -a * alpha_p * self.rate
        kept = ops.multiply(ops.multiply(inputs, keep), a)  # dropped: alpha_p * a + b
        return ops.add(kept, ops.add(ops.multiply(ops.subtract(1.0, keep), alpha_p * a), b))

    def get_config(self):
        return {**super().get_config(), "noise_shape": None if self.noise_shape is None else
                list(self.noise_shape)}


class _SpatialDropout(Dropout):
    """Dropout of whole feature maps: one draw per (sample, channel)."""

    rank = 1

    def __init__(self, rate, data_format=None, seed=None, **kwargs):
        super().__init__(rate, seed=seed, **kwargs)
        self.data_format = data_format or settings.image_data_format()
        if self.data_format not in ("channels_last", "channels_first"):
            raise ValueError(f"{self.name}: data_format must be 'channels_last' or "
                             f"'channels_first'. Received: {data_format!r}")

    def call(self, inputs, training=False):
        if inputs.ndim != self.rank + 2:
            raise ValueError(f"{self.name}: expects inputs of rank {self.rank + 2}. Received: "
                             f"shape {inputs.shape}")
        n = inputs.shape[0]
        if self.data_format == "channels_last" or self.rank == 1:
            self.noise_shape = (n,) + (1,) * self.rank + (inputs.shape[-1],)
        else:
            self.noise_shape = (n, inputs.shape[1]) + (1,) * self.rank
        return super().call(inputs, training=training)

    def get_config(self):
        config = super().get_config()
        config.pop("noise_shape", None)
        if self.rank > 1:
            config["data_format"] = self.data_format
        return config


class SpatialDropout1D(_SpatialDropout):
    """Drops entire channels of (batch, steps, channels) inputs."""

    rank = 1

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(rate, data_format="channels_last", seed=seed, **kwargs)


class SpatialDropout2D(_SpatialDropout):
    """Drops entire feature maps of 4-D inputs."""

    rank = 2


class SpatialDropout3D(_SpatialDropout):
    """Drops entire feature volumes of 5-D inputs."""

    rank = 3


class ActivityRegularization(Layer):
    """Identity that adds ``l1 * sum(|x|) + l2 * sum(x**2)`` of its input to the model's losses
    (an activity regularizer as a layer)."""

    supports_masking = True

    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.l1, self.l2 = float(l1), float(l2)
        self._build_at_init()

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.pop("activity_regularizer", None)
        return {**config, "l1": self.l1, "l2": self.l2}


__all__ = ["GaussianNoise", "GaussianDropout", "AlphaDropout", "SpatialDropout1D",
           "SpatialDropout2D", "SpatialDropout3D", "ActivityRegularization"]
