"""Depthwise and separable convolution layers: DepthwiseConv1D/2D, SeparableConv1D/2D.

A depthwise convolution filters each input channel with its own ``depth_multiplier`` filters
(`kerasrs.ops.depthwise_conv`, a grouped im2col GEMM); a separable convolution follows it with a
1x1 convolution that mixes the channels (`kerasrs.ops.separable_conv`). Weight layouts are
Keras's: depthwise ``(*kernel_size, in_channels, depth_multiplier)``, pointwise
``(1, ..., 1, in_channels * depth_multiplier, filters)``.
"""

import numpy as np

from kerasrs import activations, initializers, ops
from kerasrs.layers import conv
from kerasrs.layers.base import InputSpec, Layer
from kerasrs.layers.layer_config import get_regularizer, serialize_regularizer

__all__ = ["DepthwiseConv1D", "DepthwiseConv2D", "SeparableConv1D", "SeparableConv2D",
           "SeparableConvolution1D", "SeparableConvolution2D"]


def _positive(who, name, value):
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{who}: Invalid value for argument `{name}`. Expected a strictly "
                         f"positive value. Received {name}={value!r}.")
    return int(value)


class _WindowedConv(Layer):
    """Arguments shared by the depthwise and separable layers (geometry, bias, activation)."""

    def __init__(self, rank, kernel_size, strides, padding, data_format, dilation_rate,
                 depth_multiplier, activation, use_bias, bias_initializer, bias_regularizer,
                 activity_regularizer, bias_constraint, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        who = self.name
        self.rank = rank
        self.depth_multiplier = _positive(who, "depth_multiplier", depth_multiplier)
        self.kernel_size = conv.standardize_tuple(kernel_size, rank, "kernel_size", who)
        self.strides = conv.standardize_tuple(strides, rank, "strides", who)
        self.dilation_rate = conv.standardize_tuple(dilation_rate, rank, "dilation_rate", who)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"{who}: strides > 1 cannot be combined with dilation_rate > 1. "
                             f"Received: strides={self.strides}, "
                             f"dilation_rate={self.dilation_rate}")
        self.padding = conv.standardize_padding(padding, who)
        self.data_format = conv.standardize_data_format(data_format, who)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.bias_initializer = initializers.get(bias_initializer)
        self.bias_regularizer = get_regularizer(bias_regularizer)
        self.bias_constraint = bias_constraint
        self.input_spec = InputSpec(ndim=rank + 2)

    def _check(self, input_shape):
        conv.check_rank(self, input_shape, self.rank)
        channels = conv.channels_of(input_shape, self.data_format)
        if channels is None:
            raise ValueError(f"{self.name}: the input channels must be known. "
                             f"Received: input shape {tuple(input_shape)}")
        conv.check_windows(self, input_shape, self.kernel_size, self.dilation_rate, self.padding)
        return channels

    def _finish_build(self, channels, bias_size):
        self.bias = self.add_weight((bias_size,), self.bias_initializer, name="bias",
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        axis = 1 if self.data_format == "channels_first" else -1
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={axis: channels})

    def _output_shape(self, input_shape, channels):
        self._check(input_shape)
        spatial = [conv.output_length(n, k, s, d, self.padding) for n, k, s, d in zip(
            conv.spatial_shape(input_shape, self.data_format), self.kernel_size, self.strides,
            self.dilation_rate)]
        return conv.with_spatial(input_shape, spatial, channels, self.data_format)

    def _finish_call(self, outputs):
        if self.bias is not None:
            outputs = conv.add_bias(outputs, self.bias, self.data_format, self.rank)
        return self.activation(outputs)

    def get_config(self):
        return {**super().get_config(), "depth_multiplier": self.depth_multiplier,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "bias_regularizer": serialize_regularizer(self.bias_regularizer),
                "activity_regularizer": serialize_regularizer(self.activity_regularizer),
                "bias_constraint": None}


class BaseDepthwiseConv(_WindowedConv):
    """Depthwise convolution: output channel ``c * depth_multiplier + m`` is input channel ``c``
    filtered by ``kernel[..., c, m]``, plus bias, then the activation.

    Args:
        rank: 1 or 2. kernel_size, strides, dilation_rate: int or tuple of ``rank`` ints.
        padding: "valid" or "same". depth_multiplier: int > 0, filters per input channel.
        data_format, activation, use_bias: as `Conv2D`.
        depthwise_initializer / bias_initializer: "glorot_uniform" / "zeros".
        depthwise_regularizer, bias_regularizer, activity_regularizer, depthwise_constraint,
        bias_constraint: optional.

    Weights: ``kernel`` ``(*kernel_size, in_channels, depth_multiplier)``, ``bias``
    ``(in_channels * depth_multiplier,)``.

    Raises:
        ValueError: for malformed arguments, a wrong input rank, or a kernel larger than a
            "valid" input (naming the layer and the shape).
    """

    def __init__(self, rank, depth_multiplier, kernel_size, strides=1, padding="valid",
                 data_format=None, dilation_rate=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(rank, kernel_size, strides, padding, data_format, dilation_rate,
                         depth_multiplier, activation, use_bias, bias_initializer,
                         bias_regularizer, activity_regularizer, bias_constraint, **kwargs)
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.depthwise_regularizer = get_regularizer(depthwise_regularizer)
        self.depthwise_constraint = depthwise_constraint

    def build(self, input_shape):
        channels = self._check(input_shape)
        self.kernel = self.add_weight(self.kernel_size + (channels, self.depth_multiplier),
                                      self.depthwise_initializer, name="kernel",
                                      regularizer=self.depthwise_regularizer,
                                      constraint=self.depthwise_constraint)
        self._finish_build(channels, channels * self.depth_multiplier)

    def call(self, inputs):
        conv.check_windows(self, inputs.shape, self.kernel_size, self.dilation_rate, self.padding)
        return self._finish_call(ops.depthwise_conv(inputs, self.kernel, self.strides,
                                                    self.padding, self.data_format,
                                                    self.dilation_rate))

    def compute_output_shape(self, input_shape):
        channels = conv.channels_of(input_shape, self.data_format)
        return self._output_shape(input_shape, channels * self.depth_multiplier)

    def get_config(self):
        return {**super().get_config(),
                "depthwise_initializer": initializers.serialize(self.depthwise_initializer),
                "depthwise_regularizer": serialize_regularizer(self.depthwise_regularizer),
                "depthwise_constraint": None}


class DepthwiseConv1D(BaseDepthwiseConv):
    """1-D depthwise convolution over ``(batch, steps, channels)``; see `BaseDepthwiseConv`."""

    def __init__(self, kernel_size, strides=1, padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(1, depth_multiplier, kernel_size, strides, padding, data_format,
                         dilation_rate, activation, use_bias, depthwise_initializer,
                         bias_initializer, depthwise_regularizer, bias_regularizer,
                         activity_regularizer, depthwise_constraint, bias_constraint, **kwargs)


class DepthwiseConv2D(BaseDepthwiseConv):
    """2-D depthwise convolution; see `BaseDepthwiseConv`.

    Example:
        >>> DepthwiseConv2D(3, depth_multiplier=2)(np.ones((1, 5, 5, 3), "float32")).shape
        (1, 3, 3, 6)
    """

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(2, depth_multiplier, kernel_size, strides, padding, data_format,
                         dilation_rate, activation, use_bias, depthwise_initializer,
                         bias_initializer, depthwise_regularizer, bias_regularizer,
                         activity_regularizer, depthwise_constraint, bias_constraint, **kwargs)


class BaseSeparableConv(_WindowedConv):
    """Depthwise convolution, then a 1x1 convolution to ``filters`` channels, bias, activation.

    Args:
        rank: 1 or 2. filters: int > 0. depth_multiplier: int > 0.
        depthwise_initializer / pointwise_initializer / bias_initializer: "glorot_uniform" /
            "glorot_uniform" / "zeros"; regularizers and constraints likewise per weight.
        Other arguments as `BaseDepthwiseConv`.

    Weights (in this order): ``depthwise_kernel`` ``(*kernel_size, in_channels,
    depth_multiplier)``, ``pointwise_kernel`` ``(1, ..., 1, in_channels * depth_multiplier,
    filters)``, ``bias`` ``(filters,)``.
    """

    def __init__(self, rank, depth_multiplier, filters, kernel_size, strides=1, padding="valid",
                 data_format=None, dilation_rate=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, pointwise_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, depthwise_constraint=None,
                 pointwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(rank, kernel_size, strides, padding, data_format, dilation_rate,
                         depth_multiplier, activation, use_bias, bias_initializer,
                         bias_regularizer, activity_regularizer, bias_constraint, **kwargs)
        self.filters = _positive(self.name, "filters", filters)
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.pointwise_initializer = initializers.get(pointwise_initializer)
        self.depthwise_regularizer = get_regularizer(depthwise_regularizer)
        self.pointwise_regularizer = get_regularizer(pointwise_regularizer)
        self.depthwise_constraint = depthwise_constraint
        self.pointwise_constraint = pointwise_constraint

    def build(self, input_shape):
        channels = self._check(input_shape)
        m = self.depth_multiplier
        self.depthwise_kernel = self.add_weight(
            self.kernel_size + (channels, m), self.depthwise_initializer, name="depthwise_kernel",
            regularizer=self.depthwise_regularizer, constraint=self.depthwise_constraint)
        self.pointwise_kernel = self.add_weight(
            (1,) * self.rank + (channels * m, self.filters), self.pointwise_initializer,
            name="pointwise_kernel", regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint)
        self._finish_build(channels, self.filters)

    def call(self, inputs):
        conv.check_windows(self, inputs.shape, self.kernel_size, self.dilation_rate, self.padding)
        return self._finish_call(ops.separable_conv(
            inputs, self.depthwise_kernel, self.pointwise_kernel, self.strides, self.padding,
            self.data_format, self.dilation_rate))

    def compute_output_shape(self, input_shape):
        return self._output_shape(input_shape, self.filters)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "depthwise_initializer": initializers.serialize(self.depthwise_initializer),
                "pointwise_initializer": initializers.serialize(self.pointwise_initializer),
                "depthwise_regularizer": serialize_regularizer(self.depthwise_regularizer),
                "pointwise_regularizer": serialize_regularizer(self.pointwise_regularizer),
                "depthwise_constraint": None, "pointwise_constraint": None}


class SeparableConv1D(BaseSeparableConv):
    """1-D separable convolution; see `BaseSeparableConv`."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, pointwise_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, depthwise_constraint=None,
                 pointwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(1, depth_multiplier, filters, kernel_size, strides, padding,
                         data_format, dilation_rate, activation, use_bias, depthwise_initializer,
                         pointwise_initializer, bias_initializer, depthwise_regularizer,
                         pointwise_regularizer, bias_regularizer, activity_regularizer,
                         depthwise_constraint, pointwise_constraint, bias_constraint, **kwargs)


class SeparableConv2D(BaseSeparableConv):
    """2-D separable convolution; see `BaseSeparableConv`.

    Example:
        >>> SeparableConv2D(4, 3)(np.ones((1, 5, 5, 3), "float32")).shape
        (1, 3, 3, 4)
    """

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, pointwise_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, depthwise_constraint=None,
                 pointwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(2, depth_multiplier, filters, kernel_size, strides, padding,
                         data_format, dilation_rate, activation, use_bias, depthwise_initializer,
                         pointwise_initializer, bias_initializer, depthwise_regularizer,
                         pointwise_regularizer, bias_regularizer, activity_regularizer,
                         depthwise_constraint, pointwise_constraint, bias_constraint, **kwargs)


SeparableConvolution1D, SeparableConvolution2D = SeparableConv1D, SeparableConv2D
