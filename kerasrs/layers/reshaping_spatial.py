"""Spatial reshaping layers: UpSampling1D/2D/3D, ZeroPadding1D/2D/3D, Cropping1D/2D/3D.

They compose `kerasrs.ops` (repeat, einsum, pad, slicing) and never touch the batch or channel
axes. "channels_first" inputs are handled by addressing the spatial axes where they are.
"""

import numpy as np

from kerasrs import ops
from kerasrs.layers import conv
from kerasrs.layers.base import InputSpec, Layer

__all__ = ["UpSampling1D", "UpSampling2D", "UpSampling3D", "ZeroPadding1D", "ZeroPadding2D",
           "ZeroPadding3D", "Cropping1D", "Cropping2D", "Cropping3D"]


def _spatial_axes(rank, data_format):
    first = 2 if data_format == "channels_first" else 1
    return tuple(range(first, first + rank))


def _pairs(value, rank, name, who):
    """``value`` as ``rank`` pairs ``(before, after)`` of ints >= 0: an int (same everywhere), a
    tuple of ``rank`` ints (symmetric per axis) or of ``rank`` pairs."""
    if isinstance(value, (int, np.integer)):
        value = (value,) * rank
    if not hasattr(value, "__len__") or len(value) != rank:
        raise ValueError(f"{who}: `{name}` must be an int, {rank} ints or {rank} pairs of ints. "
                         f"Received: {name}={value!r}")
    return tuple(conv.standardize_tuple(v, 2, name, who, allow_zero=True) for v in value)


def _bilinear_matrix(n, factor, dtype):
    """``(n * factor, n)`` matrix of half-pixel-centre linear interpolation weights (edges
    clamped), the upsampling rule of TensorFlow's and PyTorch's bilinear resize."""
    src = np.clip((np.arange(n * factor) + 0.5) / factor - 0.5, 0, n - 1)
    low = np.floor(src).astype(int)
    high = np.minimum(low + 1, n - 1)
    frac = src - low
    matrix = np.zeros((n * factor, n))
    rows = np.arange(n * factor)
    np.add.at(matrix, (rows, low), 1 - frac)
    np.add.at(matrix, (rows, high), frac)
    return matrix.astype(dtype)


class _UpSampling(Layer):
    """Repeats each spatial position ``size`` times per axis ("nearest"), or, for
    ``interpolation="bilinear"`` (2-D only), interpolates linearly with half-pixel centres.

    Args:
        size: int or tuple of ``rank`` ints > 0, the factor per spatial axis.
        data_format: "channels_last" (default) or "channels_first" (not for UpSampling1D).
        interpolation: "nearest" (default) or "bilinear" (UpSampling2D only).

    Output shape: the spatial sizes multiplied by ``size``.
    """

    rank = 1

    def __init__(self, size, data_format=None, interpolation="nearest", **kwargs):
        super().__init__(**kwargs)
        self.size = conv.standardize_tuple(size, self.rank, "size", self.name)
        self.data_format = conv.standardize_data_format(data_format, self.name)
        self.interpolation = str(interpolation).lower()
        allowed = ("nearest", "bilinear") if self.rank == 2 else ("nearest",)
        if self.interpolation not in allowed:
            raise ValueError(f"{self.name}: `interpolation` must be one of {allowed}. "
                             f"Received: interpolation={interpolation!r}")
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def build(self, input_shape):
        conv.check_rank(self, input_shape, self.rank)

    def call(self, inputs):
        axes = _spatial_axes(self.rank, self.data_format)
        if self.interpolation == "nearest":
            for axis, factor in zip(axes, self.size):
                if factor > 1:
                    inputs = ops.repeat(inputs, factor, axis=axis)
            return inputs
        h_axis, w_axis = axes
        mh = _bilinear_matrix(inputs.shape[h_axis], self.size[0], inputs.dtype)
        mw = _bilinear_matrix(inputs.shape[w_axis], self.size[1], inputs.dtype)
        spec = "bchw" if self.data_format == "channels_first" else "bhwc"
        out = spec.replace("h", "o").replace("w", "p")
        return ops.einsum(f"oh,pw,{spec}->{out}", mh, mw, inputs)

    def compute_output_shape(self, input_shape):
        conv.check_rank(self, input_shape, self.rank)
        shape = list(input_shape)
        for axis, factor in zip(_spatial_axes(self.rank, self.data_format), self.size):
            shape[axis] = None if shape[axis] is None else shape[axis] * factor
        return tuple(shape)

    def get_config(self):
        config = {**super().get_config(), "size": self.size}
        if self.rank > 1:
            config["data_format"] = self.data_format
        if self.rank == 2:
            config["interpolation"] = self.interpolation
        return config


class UpSampling1D(_UpSampling):
    """Repeats each step ``size`` times: ``(batch, steps, features) -> (batch, steps * size,
    features)``.

    Example:
        >>> UpSampling1D(2)(np.array([[[1.0], [2.0]]], "float32")).numpy().ravel()
        array([1., 1., 2., 2.], dtype=float32)
    """

    def __init__(self, size=2, **kwargs):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
            raise TypeError(f"UpSampling1D: Expected an integer value for `size` (an int). "
                            f"Received: size={size!r}")
        if size <= 0:
            raise ValueError(f"UpSampling1D: `size` should be a positive integer. "
                             f"Received: size={size!r}")
        super().__init__(size, **kwargs)

    def get_config(self):
        return {**super().get_config(), "size": self.size[0]}


class UpSampling2D(_UpSampling):
    """2-D upsampling by ``size = (rows, cols)``; see `_UpSampling` for the interpolations."""

    rank = 2

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(size, data_format, interpolation, **kwargs)


class UpSampling3D(_UpSampling):
    """3-D nearest upsampling by ``size = (dim1, dim2, dim3)``."""

    rank = 3

    def __init__(self, size=(2, 2, 2), data_format=None, **kwargs):
        super().__init__(size, data_format, **kwargs)


class _ZeroPadding(Layer):
    """Adds rows/columns of zeros at the start and end of each spatial axis.

    Args:
        padding: int (the same everywhere), ``rank`` ints (symmetric per axis), or ``rank``
            pairs ``(before, after)``.
        data_format: "channels_last" (default) or "channels_first".
    """

    rank = 1

    def __init__(self, padding, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.padding = _pairs(padding, self.rank, "padding", self.name)
        self.data_format = conv.standardize_data_format(data_format, self.name)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def build(self, input_shape):
        conv.check_rank(self, input_shape, self.rank)

    def call(self, inputs):
        pads = [(0, 0)] * inputs.ndim
        for axis, pair in zip(_spatial_axes(self.rank, self.data_format), self.padding):
            pads[axis] = pair
        return ops.pad(inputs, pads)

    def compute_output_shape(self, input_shape):
        conv.check_rank(self, input_shape, self.rank)
        shape = list(input_shape)
        for axis, (a, b) in zip(_spatial_axes(self.rank, self.data_format), self.padding):
            shape[axis] = None if shape[axis] is None else shape[axis] + a + b
        return tuple(shape)

    def get_config(self):
        padding = self.padding[0] if self.rank == 1 else self.padding
        return {**super().get_config(), "padding": padding, "data_format": self.data_format}


class ZeroPadding1D(_ZeroPadding):
    """Zero padding of the steps axis; ``padding`` is an int or ``(before, after)``.

    Example:
        >>> ZeroPadding1D(1)(np.ones((1, 2, 1), "float32")).numpy().ravel()
        array([0., 1., 1., 0.], dtype=float32)
    """

    def __init__(self, padding=1, data_format=None, **kwargs):
        if not isinstance(padding, (int, np.integer)):
            padding = (tuple(padding),)
        super().__init__(padding, data_format, **kwargs)


class ZeroPadding2D(_ZeroPadding):
    """Zero padding of rows and columns; see `_ZeroPadding`."""

    rank = 2

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(padding, data_format, **kwargs)


class ZeroPadding3D(_ZeroPadding):
    """Zero padding of the three spatial axes; see `_ZeroPadding`."""

    rank = 3

    def __init__(self, padding=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(padding, data_format, **kwargs)


class _Cropping(Layer):
    """Removes ``(before, after)`` positions from each spatial axis.

    Args:
        cropping: int, ``rank`` ints (symmetric) or ``rank`` pairs ``(before, after)``.
        data_format: "channels_last" (default) or "channels_first" (not for Cropping1D).

    Raises:
        ValueError: if a cropping removes a whole axis (naming the layer and the shape).
    """

    rank = 1

    # Keras's phrase, for code that matches on it
    _too_large = ("Values in `cropping` argument should be smaller than the corresponding "
                  "spatial dimension of the input:")

    def __init__(self, cropping, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.cropping = _pairs(cropping, self.rank, "cropping", self.name)
        self.data_format = conv.standardize_data_format(data_format, self.name)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def _check(self, input_shape):
        conv.check_rank(self, input_shape, self.rank)
        for axis, (a, b) in zip(_spatial_axes(self.rank, self.data_format), self.cropping):
            if input_shape[axis] is not None and a + b >= input_shape[axis]:
                raise ValueError(f"{self.name}: {self._too_large} cropping {self.cropping} "
                                 f"leaves nothing of axis {axis} (size {input_shape[axis]}). "
                                 f"Received: input shape {tuple(input_shape)}")

    def build(self, input_shape):
        self._check(input_shape)

    def call(self, inputs):
        self._check(inputs.shape)
        key = [slice(None)] * inputs.ndim
        for axis, (a, b) in zip(_spatial_axes(self.rank, self.data_format), self.cropping):
            key[axis] = slice(a, inputs.shape[axis] - b)
        return ops.getitem(inputs, tuple(key))

    def compute_output_shape(self, input_shape):
        self._check(input_shape)
        shape = list(input_shape)
        for axis, (a, b) in zip(_spatial_axes(self.rank, self.data_format), self.cropping):
            shape[axis] = None if shape[axis] is None else shape[axis] - a - b
        return tuple(shape)

    def get_config(self):
        if self.rank == 1:
            return {**super().get_config(), "cropping": self.cropping[0]}
        return {**super().get_config(), "cropping": self.cropping,
                "data_format": self.data_format}


class Cropping1D(_Cropping):
    """Crops the steps axis by ``cropping = (before, after)`` (or an int for both).

    Example:
        >>> Cropping1D((1, 2))(np.arange(5, dtype="float32").reshape(1, 5, 1)).numpy().ravel()
        array([1., 2.], dtype=float32)
    """

    _too_large = ("`cropping` parameter of `Cropping1D` layer must be smaller than the input "
                  "length:")

    def __init__(self, cropping=(1, 1), **kwargs):
        if not isinstance(cropping, (int, np.integer)):
            cropping = (tuple(cropping),)
        super().__init__(cropping, **kwargs)


class Cropping2D(_Cropping):
    """Crops rows and columns; see `_Cropping`."""

    rank = 2

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(cropping, data_format, **kwargs)


class Cropping3D(_Cropping):
    """Crops the three spatial axes; see `_Cropping`."""

    rank = 3

    def __init__(self, cropping=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(cropping, data_format, **kwargs)
