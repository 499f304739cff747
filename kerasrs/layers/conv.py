"""Convolution layers: Conv1D, Conv2D, Conv3D, and the argument helpers the other convolution,
pooling and spatial layers share.

The layers only compose `kerasrs.ops.conv` (im2col plus one GEMM per group, see
``kerasrs/ops/convolution.py``), a bias add and the activation; they hold no gradient code. Kernels have
Keras's layout ``(*kernel_size, in_channels // groups, filters)`` for both data formats, so Keras
weights load unchanged; ``data_format="channels_first"`` only changes the activations' layout.
"""

import numpy as np

from kerasrs import activations, initializers, ops
from kerasrs.layers.base import InputSpec, Layer
from kerasrs.layers.layer_config import get_regularizer, serialize_regularizer
from kerasrs.layers.quantized import QuantizedWeights
from kerasrs.ops import convolution, projection

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Convolution1D", "Convolution2D", "Convolution3D"]


# -- argument helpers (shared with conv_transpose, depthwise, pooling, reshaping_spatial) --------
def standardize_tuple(value, n, name, who, allow_zero=False):
    """``value`` (an int or n ints) as a tuple of n ints, each >= 1 (>= 0 with ``allow_zero``)."""
    values = (value,) * n if isinstance(value, (int, np.integer)) else value
    try:
        values = tuple(values)
    except TypeError:
        values = None
    low = 0 if allow_zero else 1
    kind = "non-negative" if allow_zero else "positive"
    # Keras's phrase, then ours
    what = f"{who}: The `{name}` argument must be a tuple of {n} integers."
    ours = f"`{name}` must be a {kind} int or a tuple of {n} {kind} ints"
    if values is None or len(values) != n or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        raise ValueError(f"{what} Received: {name}={value!r} ({ours})")
    if any(v < low for v in values):
        bad = {int(v) for v in values if v < low}
        raise ValueError(f"{what} Received {name}={tuple(int(v) for v in values)}, including "
                         f"values {bad} that do not satisfy `value {'>=' if allow_zero else '>'} "
                         f"0` ({ours})")
    return tuple(int(v) for v in values)


def standardize_padding(value, who, allow_causal=False):
    """"valid", "same" (or "causal" when allowed), lower-cased."""
    padding = str(value).lower()
    allowed = ("valid", "same", "causal") if allow_causal else ("valid", "same")
    if padding not in allowed:
        raise ValueError(f"{who}: `padding` must be one of {allowed}. Received: padding={value!r}")
    return padding


def standardize_data_format(value, who):
    """"channels_last" (the default for None) or "channels_first"."""
    data_format = "channels_last" if value is None else str(value).lower()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"{who}: `data_format` must be 'channels_last' or 'channels_first'. "
                         f"Received: data_format={value!r}")
    return data_format


def output_length(n, k, stride, dilation, padding):
    """Output size along one axis (TensorFlow's rule), or None for an unknown input size."""
    if n is None:
        return None
    if padding == "valid":
        return (n - (k - 1) * dilation - 1) // stride + 1
    return -(-n // stride)  # "same" and "causal": ceil(n / stride)


def spatial_shape(input_shape, data_format):
    """The spatial sizes of ``input_shape`` (batch first) for ``data_format``."""
    shape = tuple(input_shape)
    return shape[2:] if data_format == "channels_first" else shape[1:-1]


def with_spatial(input_shape, spatial, channels, data_format):
    """``input_shape`` with new spatial sizes and channel count."""
    if data_format == "channels_first":
        return (input_shape[0], channels, *spatial)
    return (input_shape[0], *spatial, channels)


def check_rank(layer, input_shape, rank, what="inputs"):
    """Raise ValueError naming ``layer`` unless ``input_shape`` is batch, spatial, channels."""
    if len(input_shape) != rank + 2:
        spatial = ", ".join({1: ["steps"], 2: ["height", "width"],
                             3: ["depth", "height", "width"]}[rank])
        axes = f"(batch, channels, {spatial})" if getattr(
            layer, "data_format", "channels_last") == "channels_first" else \
            f"(batch, {spatial}, channels)"
        raise ValueError(f"{layer.name}: {type(layer).__name__} expects {what} of rank "
                         f"{rank + 2} {axes}. Received: input shape {tuple(input_shape)}")


def check_windows(layer, input_shape, window, dilation, padding, what="kernel"):
    """Raise ValueError naming ``layer`` when a (dilated) window is larger than a "valid" input."""
    if padding != "valid":
        return
    for axis, (n, k, d) in enumerate(zip(spatial_shape(input_shape, layer.data_format), window,
                                         dilation)):
        reach = (k - 1) * d + 1
        if n is not None and reach > n:
            raise ValueError(
                f"{layer.name}: Computed output size would be zero or negative: the {what} "
                f"(size {tuple(window)}, dilation {tuple(dilation)}) is "
                f"larger than the input along spatial axis {axis} (size {n}) with "
                f"padding='valid'; use padding='same' or a larger input. "
                f"Received: input shape {tuple(input_shape)}")


def channels_of(input_shape, data_format):
    return input_shape[1] if data_format == "channels_first" else input_shape[-1]


def add_bias(outputs, bias, data_format, rank):
    """``outputs + bias`` with the bias on the channel axis."""
    if data_format == "channels_first":
        bias = ops.reshape(bias, (1, -1) + (1,) * rank)
    return ops.add(outputs, bias)


# -- the layers ---------------------------------------------------------------------------------
def conv_config(layer):
    """The config keys every convolution layer (plain or transposed) shares, in Keras's order."""
    return {"filters": layer.filters, "kernel_size": layer.kernel_size, "strides": layer.strides,
            "padding": layer.padding, "data_format": layer.data_format,
            "dilation_rate": layer.dilation_rate,
            "activation": activations.serialize(layer.activation), "use_bias": layer.use_bias,
            "kernel_initializer": initializers.serialize(layer.kernel_initializer),
            "bias_initializer": initializers.serialize(layer.bias_initializer),
            "kernel_regularizer": serialize_regularizer(layer.kernel_regularizer),
            "bias_regularizer": serialize_regularizer(layer.bias_regularizer),
            "activity_regularizer": serialize_regularizer(layer.activity_regularizer),
            "kernel_constraint": None, "bias_constraint": None,
            **({"lora_rank": layer.lora_rank, "lora_alpha": layer.lora_alpha}
               if getattr(layer, "lora_rank", None) else {})}


class BaseConv(QuantizedWeights, Layer):
    """N-D convolution layer: ``activation(conv(inputs, kernel) + bias)`` (Keras's BaseConv).

    Args:
        rank: 1, 2 or 3, the number of spatial axes.
        filters: int > 0, the number of output channels.
        kernel_size: int or tuple of ``rank`` ints.
        strides: int or tuple of ``rank`` ints. Defaults to 1. Strides > 1 cannot be combined
            with a dilation rate > 1 (as in Keras).
        padding: "valid" (no padding), "same" (output ``ceil(n / stride)``, TensorFlow's
            asymmetric split: the odd pixel of padding goes at the end) or, for Conv1D only,
            "causal" (``(kernel_size - 1) * dilation_rate`` zeros at the start).
        data_format: "channels_last" (default, ``(batch, *spatial, channels)``) or
            "channels_first" (``(batch, channels, *spatial)``).
        dilation_rate: int or tuple of ``rank`` ints. Defaults to 1.
        groups: int >= 1 dividing both the input channels and ``filters``: grouped convolution.
        activation: name or callable; None means linear.
        use_bias: bool. Defaults to True.
        kernel_initializer / bias_initializer: defaults "glorot_uniform" / "zeros".
        kernel_regularizer / bias_regularizer / activity_regularizer: optional regularizers.
        kernel_constraint / bias_constraint: optional callables applied after each update.
        lora_rank / lora_alpha: enable LoRA at build (see `enable_lora`).

    Weights: ``kernel`` ``(*kernel_size, in_channels // groups, filters)`` (both data formats),
    ``bias`` ``(filters,)``; with LoRA also ``lora_kernel_a`` ``(*kernel_size, in_channels //
    groups, rank)`` and ``lora_kernel_b`` ``(rank, filters)``.

    Raises:
        ValueError: for malformed arguments; on the first call for an input of the wrong rank,
            channels not divisible by ``groups``, or a kernel larger than a "valid" input. Each
            message names the layer and the received shape.
    """

    def __init__(self, rank, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, lora_rank=None, lora_alpha=None,
                 **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.lora_rank = lora_rank
        self.lora_alpha = lora_rank if lora_alpha is None else lora_alpha
        who = self.name
        self.rank = rank
        if not isinstance(filters, (int, np.integer)) or isinstance(filters, bool) or filters <= 0:
            raise ValueError(f"{who}: Invalid value for argument `filters`. Expected a strictly "
                             f"positive value. Received filters={filters!r}.")
        if not isinstance(groups, (int, np.integer)) or isinstance(groups, bool) or groups <= 0:
            raise ValueError(f"{who}: The number of groups must be a positive integer. "
                             f"Received: groups={groups!r}.")
        if filters % groups:
            raise ValueError(f"{who}: The number of filters must be evenly divisible by the "
                             f"number of groups. Received: groups={groups}, filters={filters}.")
        self.filters, self.groups = int(filters), int(groups)
        self.kernel_size = standardize_tuple(kernel_size, rank, "kernel_size", who)
        self.strides = standardize_tuple(strides, rank, "strides", who)
        self.dilation_rate = standardize_tuple(dilation_rate, rank, "dilation_rate", who)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"{who}: `strides > 1` not supported in conjunction with "
                             f"`dilation_rate > 1`. Received: strides={self.strides} and "
                             f"dilation_rate={self.dilation_rate}")
        self.padding = standardize_padding(padding, who, allow_causal=rank == 1)
        self.data_format = standardize_data_format(data_format, who)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = get_regularizer(kernel_regularizer)
        self.bias_regularizer = get_regularizer(bias_regularizer)
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self.input_spec = InputSpec(ndim=rank + 2)

    def build(self, input_shape):
        check_rank(self, input_shape, self.rank)
        channels = channels_of(input_shape, self.data_format)
        if channels is None or channels % self.groups:
            raise ValueError(f"{self.name}: the input channels must be known and divisible by "
                             f"groups={self.groups}. Received: input shape {tuple(input_shape)}")
        check_windows(self, input_shape, self.kernel_size, self.dilation_rate, self.padding)
        self._kernel_shape = self.kernel_size + (channels // self.groups, self.filters)
        self._kernel = self.add_weight(self._kernel_shape, self.kernel_initializer, name="kernel",
                                       regularizer=self.kernel_regularizer,
                                       constraint=self.kernel_constraint)
        self.bias = self.add_weight((self.filters,), self.bias_initializer, name="bias",
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        axis = 1 if self.data_format == "channels_first" else -1
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={axis: channels})
        self.built = True
        if self.lora_rank:
            self.enable_lora(self.lora_rank, self.lora_alpha)

    # -- LoRA (Hu et al. 2021; saving and loading: `kerasrs.layers.quantized`) -----------------
    _WEIGHTS = {"kernel": "_kernel"}
    _LORA = ("lora_kernel_a", "lora_kernel_b")
    _SERIALIZED = {None: ("kernel", "bias")}

    @property
    def kernel(self):
        """The kernel the convolution uses: with LoRA on, the frozen kernel plus
        ``(lora_alpha / rank) * lora_kernel_a @ lora_kernel_b``."""
        if not self.built:
            raise AttributeError(f"{self.name}: You must build the layer before accessing "
                                 "`kernel`.")
        if not self.lora_enabled:
            return self._kernel
        return ops.cast(ops.add(self._kernel, self._lora_delta()), self.compute_dtype)

    def enable_lora(self, rank, lora_alpha=None, a_initializer="he_uniform",
                    b_initializer="zeros"):
        """Freeze the kernel and learn a low-rank delta ``(lora_alpha / rank) * a @ b`` (the
        LoRA weights are float32 whatever the policy).

        Raises:
            ValueError: with a kernel constraint, before the layer is built, or when LoRA is
                already on.
        """
        self._check_lora(self.kernel_constraint, "kernel")
        self._add_kernel_lora(rank, lora_alpha, a_initializer, b_initializer)

    def _merged_lora_values(self):
        return {"kernel": np.asarray(self.kernel.numpy())}

    def call(self, inputs):
        check_windows(self, inputs.shape, self.kernel_size, self.dilation_rate, self.padding)
        padding = self.padding
        if padding == "causal":
            pads = [(0, 0)] * 3
            pads[2 if self.data_format == "channels_first" else 1] = (
                (self.kernel_size[0] - 1) * self.dilation_rate[0], 0)
            inputs, padding = ops.pad(inputs, pads), "valid"
        act = activations.serialize(self.activation)
        if act in projection.ACTIVATIONS and not getattr(inputs, "_kerasrs_symbolic", False):
            # one op: bias and activation applied to the GEMM's output in place
            return convolution.conv_bias_act(inputs, self.kernel, self.bias, self.strides,
                                             padding, self.data_format, self.dilation_rate, act)
        outputs = ops.conv(inputs, self.kernel, self.strides, padding, self.data_format,
                           self.dilation_rate)
        if self.bias is not None:
            outputs = add_bias(outputs, self.bias, self.data_format, self.rank)
        return self.activation(outputs)

    def compute_output_shape(self, input_shape):
        check_rank(self, input_shape, self.rank)
        check_windows(self, input_shape, self.kernel_size, self.dilation_rate, self.padding)
        spatial = [output_length(n, k, s, d, self.padding) for n, k, s, d in zip(
            spatial_shape(input_shape, self.data_format), self.kernel_size, self.strides,
            self.dilation_rate)]
        return with_spatial(input_shape, spatial, self.filters, self.data_format)

    def get_config(self):
        return {**super().get_config(), **conv_config(self), "groups": self.groups}


class Conv1D(BaseConv):
    """1-D convolution over ``(batch, steps, channels)`` (or channels_first); see `BaseConv`.

    ``padding="causal"`` pads ``(kernel_size - 1) * dilation_rate`` zeros at the start, so
    output step t sees only inputs up to t (WaveNet-style).

    Example:
        >>> Conv1D(4, 3, padding="causal")(np.ones((2, 10, 3), "float32")).shape
        (2, 10, 4)
    """

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(1, filters, kernel_size, strides, padding, data_format, dilation_rate,
                         groups, activation, use_bias, kernel_initializer, bias_initializer,
                         kernel_regularizer, bias_regularizer, activity_regularizer,
                         kernel_constraint, bias_constraint, **kwargs)


class Conv2D(BaseConv):
    """2-D convolution over ``(batch, height, width, channels)`` (or channels_first); see
    `BaseConv`.

    Example:
        >>> Conv2D(8, 3, activation="relu")(np.ones((2, 28, 28, 1), "float32")).shape
        (2, 26, 26, 8)
    """

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(2, filters, kernel_size, strides, padding, data_format, dilation_rate,
                         groups, activation, use_bias, kernel_initializer, bias_initializer,
                         kernel_regularizer, bias_regularizer, activity_regularizer,
                         kernel_constraint, bias_constraint, **kwargs)


class Conv3D(BaseConv):
    """3-D convolution over ``(batch, depth, height, width, channels)`` (or channels_first);
    see `BaseConv`."""

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format=None, dilation_rate=(1, 1, 1), groups=1, activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(3, filters, kernel_size, strides, padding, data_format, dilation_rate,
                         groups, activation, use_bias, kernel_initializer, bias_initializer,
                         kernel_regularizer, bias_regularizer, activity_regularizer,
                         kernel_constraint, bias_constraint, **kwargs)


Convolution1D, Convolution2D, Convolution3D = Conv1D, Conv2D, Conv3D  # Keras's aliases
