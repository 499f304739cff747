"""Pooling layers: MaxPooling1D/2D/3D, AveragePooling1D/2D/3D and the global poolings.

Windowed pooling composes `kerasrs.ops.max_pool` / `kerasrs.ops.average_pool` (strided views,
one spatial axis at a time; max-pool back-propagates through the winning positions). "same"
padding splits like TensorFlow (the odd pixel at the end); padding never wins a max, and an
average counts only the real elements of its window, as in Keras.
"""

from kerasrs import ops
from kerasrs.layers import conv
from kerasrs.layers.base import InputSpec, Layer

__all__ = ["MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D",
           "AveragePooling2D", "AveragePooling3D", "GlobalMaxPooling1D", "GlobalMaxPooling2D",
           "GlobalMaxPooling3D", "GlobalAveragePooling1D", "GlobalAveragePooling2D",
           "GlobalAveragePooling3D", "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D",
           "AvgPool2D", "AvgPool3D", "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D",
           "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D"]


class BasePooling(Layer):
    """Max or average over sliding windows of ``pool_size`` (Keras's BasePooling).

    Args:
        pool_size: int or tuple of ``pool_dimensions`` ints.
        strides: int, tuple, or None (default: ``pool_size``).
        pool_dimensions: 1, 2 or 3, the number of spatial axes.
        pool_mode: "max" or "average".
        padding: "valid" (windows inside the input) or "same" (output ``ceil(n / stride)``).
        data_format: "channels_last" (default) or "channels_first".

    Input shape: ``(batch, *spatial, channels)`` (or channels_first). Output: the spatial sizes
    become ``floor((n - pool) / stride) + 1`` ("valid") or ``ceil(n / stride)`` ("same").

    Raises:
        ValueError: for malformed arguments, an input of the wrong rank, or a window larger than
            a "valid" input (naming the layer and the shape).
    """

    def __init__(self, pool_size, strides, pool_dimensions, pool_mode="max", padding="valid",
                 data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        who = self.name
        self.rank = pool_dimensions
        self.pool_size = conv.standardize_tuple(pool_size, pool_dimensions, "pool_size", who)
        self.strides = self.pool_size if strides is None else conv.standardize_tuple(
            strides, pool_dimensions, "strides", who)
        if pool_mode not in ("max", "average"):
            raise ValueError(f"{who}: `pool_mode` must be 'max' or 'average'. "
                             f"Received: pool_mode={pool_mode!r}")
        self.pool_mode = pool_mode
        self.padding = conv.standardize_padding(padding, who)
        self.data_format = conv.standardize_data_format(data_format, who)
        self.input_spec = InputSpec(ndim=pool_dimensions + 2)
        self._build_at_init()

    def _check(self, shape):
        conv.check_rank(self, shape, self.rank)
        conv.check_windows(self, shape, self.pool_size, (1,) * self.rank, self.padding,
                           what="pool window")

    def call(self, inputs):
        self._check(inputs.shape)
        pool = ops.max_pool if self.pool_mode == "max" else ops.average_pool
        return pool(inputs, self.pool_size, self.strides, self.padding, self.data_format)

    def compute_output_shape(self, input_shape):
        self._check(input_shape)
        spatial = [conv.output_length(n, k, s, 1, self.padding) for n, k, s in zip(
            conv.spatial_shape(input_shape, self.data_format), self.pool_size, self.strides)]
        return conv.with_spatial(input_shape, spatial,
                                 conv.channels_of(input_shape, self.data_format), self.data_format)

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "padding": self.padding,
                "strides": self.strides, "data_format": self.data_format}


def _pooling_class(name, rank, mode, default):
    """A Keras pooling class; ``default`` None makes ``pool_size`` required (AveragePooling*)."""
    if default is None:
        def __init__(self, pool_size, strides=None, padding="valid", data_format=None,
                     name=None, **kwargs):
            BasePooling.__init__(self, pool_size, strides, rank, mode, padding, data_format,
                                 name, **kwargs)
    else:
        def __init__(self, pool_size=default, strides=None, padding="valid", data_format=None,
                     name=None, **kwargs):
            BasePooling.__init__(self, pool_size, strides, rank, mode, padding, data_format,
                                 name, **kwargs)

    kind = "Maximum" if mode == "max" else "Average"
    size = "``pool_size`` required" if default is None else f"default ``pool_size={default}``"
    doc = (f"{kind} over {rank}-D windows ({size}, strides = pool size, \"valid\" padding); "
           "see `BasePooling`.")
    return type(name, (BasePooling,), {"__init__": __init__, "__doc__": doc,
                                       "__module__": __name__})


MaxPooling1D = _pooling_class("MaxPooling1D", 1, "max", 2)
MaxPooling2D = _pooling_class("MaxPooling2D", 2, "max", (2, 2))
MaxPooling3D = _pooling_class("MaxPooling3D", 3, "max", (2, 2, 2))
AveragePooling1D = _pooling_class("AveragePooling1D", 1, "average", None)
AveragePooling2D = _pooling_class("AveragePooling2D", 2, "average", None)
AveragePooling3D = _pooling_class("AveragePooling3D", 3, "average", None)
MaxPool1D, MaxPool2D, MaxPool3D = MaxPooling1D, MaxPooling2D, MaxPooling3D
AvgPool1D, AvgPool2D, AvgPool3D = AveragePooling1D, AveragePooling2D, AveragePooling3D


class BaseGlobalPooling(Layer):
    """Max or mean over every spatial axis (Keras's BaseGlobalPooling).

    Args:
        pool_dimensions: 1, 2 or 3. data_format: "channels_last" (default) or "channels_first".
        keepdims: keep the spatial axes with size 1. Defaults to False.

    Input shape: ``(batch, *spatial, channels)`` (or channels_first). Output: ``(batch,
    channels)``, or with ``keepdims`` ``(batch, 1, ..., 1, channels)`` (channels_first:
    ``(batch, channels, 1, ..., 1)``).
    """

    _mode = "average"

    def __init__(self, pool_dimensions, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.rank = pool_dimensions
        self.data_format = conv.standardize_data_format(data_format, self.name)
        self.keepdims = bool(keepdims)
        self.input_spec = InputSpec(ndim=pool_dimensions + 2)
        self._build_at_init()

    def _axes(self):
        first = 2 if self.data_format == "channels_first" else 1
        return tuple(range(first, first + self.rank))

    def call(self, inputs):
        reduce = ops.max if self._mode == "max" else ops.mean
        return reduce(inputs, axis=self._axes(), keepdims=self.keepdims)

    def compute_output_shape(self, input_shape):
        conv.check_rank(self, input_shape, self.rank)
        channels = conv.channels_of(input_shape, self.data_format)
        if not self.keepdims:
            return (input_shape[0], channels)
        return conv.with_spatial(input_shape, (1,) * self.rank, channels, self.data_format)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format,
                "keepdims": self.keepdims}


class GlobalAveragePooling1D(BaseGlobalPooling):
    """Mean over the steps axis; with a mask ``(batch, steps)``, the mean of the unmasked steps
    (the output has no mask). See `BaseGlobalPooling`."""

    supports_masking = True

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(1, data_format, keepdims, **kwargs)

    def call(self, inputs, mask=None):
        if mask is None:
            return super().call(inputs)
        axis = self._axes()[0]
        weights = ops.expand_dims(ops.cast(mask, inputs.dtype), 3 - axis)
        total = ops.sum(ops.multiply(inputs, weights), axis=axis, keepdims=self.keepdims)
        return ops.divide(total, ops.sum(weights, axis=axis, keepdims=self.keepdims))

    def compute_mask(self, inputs, mask=None):
        return None


def _global_class(name, rank, mode):
    def __init__(self, data_format=None, keepdims=False, **kwargs):
        BaseGlobalPooling.__init__(self, rank, data_format, keepdims, **kwargs)

    kind = "Maximum" if mode == "max" else "Mean"
    doc = f"{kind} over the {rank} spatial axes; see `BaseGlobalPooling`."
    return type(name, (BaseGlobalPooling,), {"__init__": __init__, "__doc__": doc,
                                             "_mode": mode, "__module__": __name__})


GlobalAveragePooling2D = _global_class("GlobalAveragePooling2D", 2, "average")
GlobalAveragePooling3D = _global_class("GlobalAveragePooling3D", 3, "average")
GlobalMaxPooling1D = _global_class("GlobalMaxPooling1D", 1, "max")
GlobalMaxPooling2D = _global_class("GlobalMaxPooling2D", 2, "max")
GlobalMaxPooling3D = _global_class("GlobalMaxPooling3D", 3, "max")
GlobalAvgPool1D, GlobalAvgPool2D, GlobalAvgPool3D = (
    GlobalAveragePooling1D, GlobalAveragePooling2D, GlobalAveragePooling3D)
GlobalMaxPool1D, GlobalMaxPool2D, GlobalMaxPool3D = (
    GlobalMaxPooling1D, GlobalMaxPooling2D, GlobalMaxPooling3D)
