"""Transposed convolution layers: Conv1DTranspose, Conv2DTranspose, Conv3DTranspose.

They compose `kerasrs.ops.conv_transpose` (the input gradient of a convolution, as a forward op),
a bias add and the activation. Kernels have Keras's layout ``(*kernel_size, filters,
in_channels)``: output and input channels are swapped relative to `Conv2D`.
"""

import numpy as np

from kerasrs import activations, initializers, ops
from kerasrs.layers import conv
from kerasrs.layers.base import InputSpec, Layer
from kerasrs.layers.layer_config import get_regularizer

__all__ = ["Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose", "Convolution1DTranspose",
           "Convolution2DTranspose", "Convolution3DTranspose"]


def transpose_output_length(n, k, stride, dilation, padding, output_padding):
    """Output size of a transposed convolution along one axis (Keras's rule)."""
    if n is None:
        return None
    k = (k - 1) * dilation + 1
    if output_padding is None:
        return n * stride + max(k - stride, 0) if padding == "valid" else n * stride
    pad = k // 2 if padding == "same" else 0
    return (n - 1) * stride + k - 2 * pad + output_padding


class BaseConvTranspose(Layer):
    """N-D transposed convolution: ``activation(conv_transpose(inputs, kernel) + bias)``.

    Args:
        rank: 1, 2 or 3. filters: int > 0, output channels.
        kernel_size, strides, dilation_rate: int or tuple of ``rank`` ints (strides > 1 and
            dilation > 1 cannot be combined).
        padding: "valid" (output ``(n - 1) * stride + max(k, stride)``) or "same" (output
            ``n * stride``).
        output_padding: None, or int / tuple of ``rank`` ints, each smaller than its stride: the
            output size becomes ``(n - 1) * stride + k + output_padding`` ("valid") or
            ``(n - 1) * stride + k % 2 + output_padding`` ("same").
        data_format, activation, use_bias, initializers, regularizers, constraints: as `Conv2D`.

    Weights: ``kernel`` ``(*kernel_size, filters, in_channels)``, ``bias`` ``(filters,)``.

    Raises:
        ValueError: for malformed arguments, or on the first call for an input of the wrong
            rank (naming the layer and the shape).
    """

    def __init__(self, rank, filters, kernel_size, strides=1, padding="valid",
                 output_padding=None, data_format=None, dilation_rate=1, activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        who = self.name
        self.rank = rank
        if not isinstance(filters, (int, np.integer)) or isinstance(filters, bool) or filters <= 0:
            raise ValueError(f"{who}: Invalid value for argument `filters`. Expected a strictly "
                             f"positive value. Received filters={filters!r}.")
        self.filters = int(filters)
        self.kernel_size = conv.standardize_tuple(kernel_size, rank, "kernel_size", who)
        self.strides = conv.standardize_tuple(strides, rank, "strides", who)
        self.dilation_rate = conv.standardize_tuple(dilation_rate, rank, "dilation_rate", who)
        self.padding = conv.standardize_padding(padding, who)
        self.output_padding = None if output_padding is None else conv.standardize_tuple(
            output_padding, rank, "output_padding", who, allow_zero=True)
        if self.output_padding is not None and any(
                p >= s for p, s in zip(self.output_padding, self.strides)):
            raise ValueError(f"{who}: `output_padding` must be strictly less than `strides` "
                             f"(each padding smaller than its stride). "
                             f"Received: output_padding={self.output_padding}, "
                             f"strides={self.strides}")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"{who}: `strides > 1` not supported in conjunction with "
                             f"`dilation_rate > 1`. Received: strides={self.strides} and "
                             f"dilation_rate={self.dilation_rate}")
        self.data_format = conv.standardize_data_format(data_format, who)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = get_regularizer(kernel_regularizer)
        self.bias_regularizer = get_regularizer(bias_regularizer)
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self.input_spec = InputSpec(ndim=rank + 2)

    def build(self, input_shape):
        conv.check_rank(self, input_shape, self.rank)
        channels = conv.channels_of(input_shape, self.data_format)
        if channels is None:
            raise ValueError(f"{self.name}: the input channels must be known. "
                             f"Received: input shape {tuple(input_shape)}")
        self.kernel = self.add_weight(self.kernel_size + (self.filters, channels),
                                      self.kernel_initializer, name="kernel",
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = self.add_weight((self.filters,), self.bias_initializer, name="bias",
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        axis = 1 if self.data_format == "channels_first" else -1
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={axis: channels})

    def call(self, inputs):
        outputs = ops.conv_transpose(inputs, self.kernel, self.strides, self.padding,
                                     self.output_padding, self.data_format, self.dilation_rate)
        if self.bias is not None:
            outputs = conv.add_bias(outputs, self.bias, self.data_format, self.rank)
        return self.activation(outputs)

    def compute_output_shape(self, input_shape):
        conv.check_rank(self, input_shape, self.rank)
        pads = self.output_padding or (None,) * self.rank
        spatial = [transpose_output_length(n, k, s, d, self.padding, p) for n, k, s, d, p in zip(
            conv.spatial_shape(input_shape, self.data_format), self.kernel_size, self.strides,
            self.dilation_rate, pads)]
        return conv.with_spatial(input_shape, spatial, self.filters, self.data_format)

    def get_config(self):
        return {**super().get_config(), **conv.conv_config(self),
                "output_padding": self.output_padding}


def _transpose_class(rank, doc):
    defaults = (1,) * rank if rank > 1 else 1

    def __init__(self, filters, kernel_size, strides=defaults, padding="valid",
                 output_padding=None, data_format=None, dilation_rate=defaults, activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        BaseConvTranspose.__init__(
            self, rank, filters, kernel_size, strides, padding, output_padding, data_format,
            dilation_rate, activation, use_bias, kernel_initializer, bias_initializer,
            kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
            bias_constraint, **kwargs)

    return type(f"Conv{rank}DTranspose", (BaseConvTranspose,),
                {"__init__": __init__, "__doc__": doc, "__module__": __name__})


Conv1DTranspose = _transpose_class(1, """1-D transposed convolution (see `BaseConvTranspose`).

    Example:
        >>> Conv1DTranspose(4, 3, strides=2)(np.ones((2, 5, 3), "float32")).shape
        (2, 11, 4)
    """)
Conv2DTranspose = _transpose_class(2, """2-D transposed convolution (see `BaseConvTranspose`).

    Example:
        >>> Conv2DTranspose(4, 3, strides=2, padding="same")(np.ones((1, 5, 5, 3), "float32")).shape
        (1, 10, 10, 4)
    """)
Conv3DTranspose = _transpose_class(3, "3-D transposed convolution (see `BaseConvTranspose`).")
Convolution1DTranspose, Convolution2DTranspose, Convolution3DTranspose = (
    Conv1DTranspose, Conv2DTranspose, Conv3DTranspose)
