"""Layers that wrap another layer: the base class `Wrapper` (Keras's ``keras.layers.Wrapper``)
and `SpectralNormalization`, which normalizes the wrapped layer's kernel."""

import numpy as np

from kerasrs import initializers
from kerasrs.layers import serialization
from kerasrs.layers.base import Layer


class Wrapper(Layer):
    """Base class of layers that wrap another layer (``self.layer``), e.g. `TimeDistributed`.

    Raises:
        ValueError: if ``layer`` is not a `Layer`.
    """

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"{type(self).__name__}: Layer {layer!r} supplied to Wrapper isn't a "
                             "supported layer type. Please ensure wrapped layer is a valid Keras "
                             f"layer (a Layer instance). Received: layer of type "
                             f"{type(layer).__name__}")
        super().__init__(**kwargs)
        self.layer = layer

    def build(self, input_shape=None):
        if not self.layer.built:
            self.layer.build(input_shape)
            self.layer.built = True

    def get_config(self):
        return {**super().get_config(), "layer": serialization.serialize(self.layer)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        config["layer"] = serialization.deserialize(config["layer"], custom_objects)
        return cls(**config)


class SpectralNormalization(Wrapper):
    """Divides the wrapped layer's kernel (or embeddings) by its largest singular value,
    estimated by ``power_iterations`` steps of the power method per training call (Miyato et
    al. 2018, Algorithm 1). Weight ``vector_u`` (1, units) is non-trainable.

    Raises:
        ValueError: for ``power_iterations <= 0`` or a layer without kernel/embeddings.
    """

    def __init__(self, layer, power_iterations=1, **kwargs):
        super().__init__(layer, **kwargs)
        if power_iterations <= 0:
            raise ValueError(f"{self.name}: `power_iterations` should be greater than zero. "
                             f"Received: power_iterations={power_iterations}")
        self.power_iterations = power_iterations

    def build(self, input_shape):
        super().build(input_shape)
        kernel = getattr(self.layer, "kernel", None)
        if kernel is None:
            kernel = getattr(self.layer, "embeddings", None)
        if kernel is None:
            raise ValueError(f"{self.name}: the wrapped {type(self.layer).__name__} object "
                             "has no attribute 'kernel' nor 'embeddings' to normalize. "
                             f"Received: layer={self.layer.name!r}")
        self.kernel = kernel
        self.vector_u = self.add_weight(shape=(1, kernel.shape[-1]),
                                        initializer=initializers.TruncatedNormal(stddev=0.02),
                                        trainable=False, name="vector_u", dtype=kernel.dtype)

    def call(self, inputs, training=False):
        if training and np.any(self.kernel.numpy() != 0):
            u, kernel = self.normalized_weights()
            self.vector_u.assign(u)
            self.kernel.assign(kernel)
        return self.layer(inputs)

    def normalized_weights(self):
        """``(new vector_u, kernel / sigma)`` as arrays."""
        xp = self.kernel.backend.xp
        w = self.kernel.data.reshape(-1, self.kernel.shape[-1])
        u = self.vector_u.data
        for _ in range(self.power_iterations):
            v = u @ w.T
            v = v / max(float(xp.sqrt((v * v).sum())), 1e-12)
            u = v @ w
            u = u / max(float(xp.sqrt((u * u).sum())), 1e-12)
        sigma = float((v @ w @ u.T).reshape(()))
        return u, self.kernel.data / sigma

    def compute_output_shape(self, input_shape):
        return self.layer.compute_output_shape(input_shape)

    def get_config(self):
        return {**super().get_config(), "power_iterations": self.power_iterations}


__all__ = ["Wrapper", "SpectralNormalization"]
