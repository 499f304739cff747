"""Convolutional LSTMs (Shi et al. 2015, eq. 3): `ConvLSTM1D`, `ConvLSTM2D`, `ConvLSTM3D`, with
Keras 3's arguments and weights (``kernel`` (*k, in, 4 filters), ``recurrent_kernel`` (*k,
filters, 4 filters), ``bias`` (4 filters); gates i, f, c, o). The input-to-state convolutions of
all time steps run as one batched convolution; the state-to-state convolution ("same", stride
1) runs once per step."""

import numpy as np

from kerasrs import activations, initializers, ops, random
from kerasrs.backend import settings
from kerasrs.layers.base import Layer
from kerasrs.layers.core import dropout_mask
from kerasrs.ops.core import constant


def _tuple(value, n):
    return tuple(value) if isinstance(value, (list, tuple)) else (value,) * n


class _ConvLSTM(Layer):
    rank = 2
    supports_masking = True  # a (batch, time) mask: masked steps carry the states unchanged

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, activation="tanh", recurrent_activation="sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, seed=None, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if padding not in ("valid", "same"):
            raise ValueError(f"{self.name}: padding must be 'valid' or 'same'. Received: "
                             f"{padding!r}")
        if stateful:
            raise ValueError(f"{self.name}: stateful=True is not supported for ConvLSTM.")
        self.filters, self.kernel_size = filters, _tuple(kernel_size, self.rank)
        self.strides, self.dilation_rate = _tuple(strides, self.rank), _tuple(dilation_rate,
                                                                              self.rank)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"{self.name}: Specifying `strides > 1` is not compatible with "
                             f"`dilation_rate > 1`. Received: strides={self.strides}, "
                             f"dilation_rate={self.dilation_rate}")
        self.padding = padding
        self.data_format = data_format or settings.image_data_format()
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias, self.unit_forget_bias = use_bias, unit_forget_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer, self.recurrent_regularizer = kernel_regularizer, \
            recurrent_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel_constraint, self.recurrent_constraint = kernel_constraint, \
            recurrent_constraint
        self.bias_constraint = bias_constraint
        self.dropout, self.recurrent_dropout, self.seed = dropout, recurrent_dropout, seed
        self.seed_generator = random.SeedGenerator(seed)
        self.return_sequences, self.return_state = return_sequences, return_state
        self.go_backwards, self.stateful = go_backwards, stateful

    def build(self, input_shape):
        channels = input_shape[2] if self.data_format == "channels_first" else input_shape[-1]
        if channels is None:
            raise ValueError(f"{self.name}: the channel dimension must be known. Received: "
                             f"input shape {input_shape}")
        self.kernel = self.add_weight(name="kernel", shape=self.kernel_size + (
            channels, 4 * self.filters), initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer, constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight(
            name="recurrent_kernel", shape=self.kernel_size + (self.filters, 4 * self.filters),
            initializer=self.recurrent_initializer, regularizer=self.recurrent_regularizer,
            constraint=self.recurrent_constraint)
        if self.use_bias:
            base, n = self.bias_initializer, self.filters

            def bias_init(shape, dtype=None):
                b = np.asarray(base((4 * n,), dtype=dtype))
                if self.unit_forget_bias:
                    b[n:2 * n] = 1.0
                return b

            self.bias = self.add_weight(name="bias", shape=(4 * self.filters,),
                                        initializer=bias_init if self.unit_forget_bias else
                                        self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        else:
            self.bias = None

    def call(self, inputs, initial_state=None, training=False, mask=None):
        x = inputs
        if x.ndim != self.rank + 3:
            raise ValueError(f"{self.name}: expects inputs of rank {self.rank + 3} (batch, time,"
                             f" *spatial, channels). Received: shape {x.shape}")
        if self.data_format == "channels_first":  # (b, t, c, *s) -> (b, t, *s, c)
            x = ops.moveaxis(x, 2, -1)
        batch, steps = x.shape[:2]
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        if mask is not None:  # (batch, time) -> (batch, time, 1, ..., 1) against the states
            mask = ops.reshape(ops.cast(mask, "bool"), (batch, steps) + (1,) * (self.rank + 1))
        if self.go_backwards:
            x = ops.flip(x, 1)
            mask = None if mask is None else ops.flip(mask, 1)
        be = x.backend
        if training and self.dropout:  # one input mask per sequence, from the layer's generator
            x = x * constant(dropout_mask(self.seed_generator, (batch,) + tuple(x.shape[2:]), self.dropout,
                                          x.dtype, be)[:, None], be)
        frames = ops.reshape(x, (batch * steps,) + tuple(x.shape[2:]))
        xz = ops.conv(frames, self.kernel, self.strides, self.padding, "channels_last",
                      self.dilation_rate)
        if self.bias is not None:
            xz = xz + self.bias
        xz = ops.reshape(xz, (batch, steps) + tuple(xz.shape[1:]))
        spatial = tuple(xz.shape[2:-1])
        if initial_state is None:
            h = ops.zeros((batch,) + spatial + (self.filters,), dtype=x.dtype)
            c = h
        else:
            h, c = initial_state
        outputs = []
        f = self.filters
        rmask = None
        if training and self.recurrent_dropout:  # one mask per sequence (Gal & Ghahramani 2016)
            rmask = constant(dropout_mask(self.seed_generator, (batch,) + spatial + (f,),
                                          self.recurrent_dropout, x.dtype, be), be)
        for t in range(steps):
            hr = h if rmask is None else h * rmask
            z = xz[:, t] + ops.conv(hr, self.recurrent_kernel, 1, "same", "channels_last")
            i = self.recurrent_activation(z[..., :f])
            g = self.recurrent_activation(z[..., f:2 * f])
            c_new = g * c + i * self.activation(z[..., 2 * f:3 * f])
            o = self.recurrent_activation(z[..., 3 * f:])
            h_new = o * self.activation(c_new)
            if mask is None:
                h, c = h_new, c_new
            else:
                h, c = ops.where(mask[:, t], h_new, h), ops.where(mask[:, t], c_new, c)
            outputs.append(h)
        out = ops.stack(outputs, axis=1) if self.return_sequences else h
        if self.data_format == "channels_first":
            out = ops.moveaxis(out, -1, 2 if self.return_sequences else 1)
            h, c = ops.moveaxis(h, -1, 1), ops.moveaxis(c, -1, 1)
        return [out, h, c] if self.return_state else out

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        out = mask if self.return_sequences else None
        return [out, None, None] if self.return_state else out

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": list(self.kernel_size), "strides": list(self.strides),
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": list(self.dilation_rate),
                "activation": activations.serialize(self.activation),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "use_bias": self.use_bias, "unit_forget_bias": self.unit_forget_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout,
                "seed": self.seed, "return_sequences": self.return_sequences,
                "return_state": self.return_state, "go_backwards": self.go_backwards,
                "stateful": self.stateful}


class ConvLSTM1D(_ConvLSTM):
    """Convolutional LSTM over (batch, time, steps, channels) inputs."""
    rank = 1


class ConvLSTM2D(_ConvLSTM):
    """Convolutional LSTM over (batch, time, rows, cols, channels) inputs."""
    rank = 2


class ConvLSTM3D(_ConvLSTM):
    """Convolutional LSTM over (batch, time, d1, d2, d3, channels) inputs."""
    rank = 3


__all__ = ["ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D"]
