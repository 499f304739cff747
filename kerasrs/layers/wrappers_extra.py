"""`Wrapper`, `SpectralNormalization`, `RMSNormalization` and `ReversibleEmbedding`, with
Keras 3's arguments and weights."""

import numpy as np

from kerasrs import initializers, ops
from kerasrs.layers.base import Layer
from kerasrs.layers.core import Embedding


class Wrapper(Layer):
    """Base class of layers that wrap another layer (``self.layer``), e.g. `TimeDistributed`.

    Raises:
        ValueError: if ``layer`` is not a `Layer`.
    """

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"Wrapper: `layer` must be a Layer instance. Received: {layer!r}")
        super().__init__(**kwargs)
        self.layer = layer

    def build(self, input_shape=None):
        if not self.layer.built:
            self.layer.build(input_shape)
            self.layer.built = True

    def get_config(self):
        from kerasrs.layers import serialization

        return {**super().get_config(), "layer": serialization.serialize(self.layer)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from kerasrs.layers import serialization

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
            raise ValueError(f"{self.name}: power_iterations must be > 0. Received: "
                             f"{power_iterations}")
        self.power_iterations = power_iterations

    def build(self, input_shape):
        super().build(input_shape)
        kernel = getattr(self.layer, "kernel", None)
        if kernel is None:
            kernel = getattr(self.layer, "embeddings", None)
        if kernel is None:
            raise ValueError(f"{self.name}: {type(self.layer).__name__} has no attribute "
                             "'kernel' nor 'embeddings'")
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


class RMSNormalization(Layer):
    """Root-mean-square layer normalization (Zhang & Sennrich 2019): ``x / sqrt(mean(x**2) +
    epsilon) * scale`` over ``axis``; weight ``scale`` (ones)."""

    def __init__(self, axis=-1, epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        self.axis, self.epsilon = axis, epsilon

    def build(self, input_shape):
        axes = sorted(self.axis) if isinstance(self.axis, (list, tuple)) else [self.axis]
        self._axes = axes
        shape = tuple(input_shape[a] for a in axes)
        self.scale = self.add_weight(name="scale", shape=shape, initializer="ones")

    def call(self, x):
        axes = [a % x.ndim for a in self._axes]
        scale = self.scale
        if axes != list(range(x.ndim - len(axes), x.ndim)):  # place scale on its axes
            shape = [1] * x.ndim
            for a, n in zip(axes, self.scale.shape):
                shape[a] = n
            scale = ops.reshape(self.scale, tuple(shape))
        ms = ops.mean(ops.square(x), axis=tuple(axes), keepdims=True)
        return x * ops.rsqrt(ms + self.epsilon) * scale

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon}


class ReversibleEmbedding(Embedding):
    """An `Embedding` that can also map vectors back to token logits: ``layer(ids)`` embeds,
    ``layer(vectors, reverse=True)`` returns ``vectors @ embeddings^T`` (tied) or ``vectors @
    reverse_embeddings`` (``tie_weights=False``), optionally soft-capped
    ``cap * tanh(logits / cap)`` (``logit_soft_cap``)."""

    def __init__(self, input_dim, output_dim, tie_weights=True, embeddings_initializer="uniform",
                 embeddings_regularizer=None, embeddings_constraint=None, mask_zero=False,
                 reverse_dtype=None, logit_soft_cap=None, **kwargs):
        super().__init__(input_dim, output_dim, embeddings_initializer=embeddings_initializer,
                         embeddings_regularizer=embeddings_regularizer,
                         embeddings_constraint=embeddings_constraint, mask_zero=mask_zero,
                         **kwargs)
        self.tie_weights, self.reverse_dtype = tie_weights, reverse_dtype
        self.logit_soft_cap = logit_soft_cap

    def build(self, input_shape=None):
        super().build(input_shape)
        if not self.tie_weights:
            self.reverse_embeddings = self.add_weight(
                shape=(self.output_dim, self.input_dim), name="reverse_embeddings",
                initializer=self.embeddings_initializer)

    def call(self, inputs, reverse=False):
        if not reverse:
            return super().call(inputs)
        kernel = ops.transpose(self.embeddings) if self.tie_weights else self.reverse_embeddings
        if self.reverse_dtype is not None:
            inputs, kernel = ops.cast(inputs, self.reverse_dtype), ops.cast(kernel,
                                                                           self.reverse_dtype)
        logits = ops.matmul(inputs, kernel)
        if self.logit_soft_cap is not None:
            logits = ops.tanh(logits / self.logit_soft_cap) * self.logit_soft_cap
        return logits

    def compute_mask(self, inputs, mask=None):
        if inputs is None or getattr(inputs, "dtype", np.dtype("int64")).kind == "f":
            return None  # a reverse call (float vectors in) has no token mask
        return super().compute_mask(inputs, mask)

    def compute_output_shape(self, input_shape, reverse=False):
        if reverse:
            return tuple(input_shape[:-1]) + (self.input_dim,)
        return super().compute_output_shape(input_shape)

    def get_config(self):
        return {**super().get_config(), "tie_weights": self.tie_weights,
                "reverse_dtype": self.reverse_dtype, "logit_soft_cap": self.logit_soft_cap}


__all__ = ["Wrapper", "SpectralNormalization", "RMSNormalization", "ReversibleEmbedding"]
