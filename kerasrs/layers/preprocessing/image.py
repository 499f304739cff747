"""Image geometry: `Resizing` and `CenterCrop`, and the resampling kernels the augmentation
layers share (`resize`, `affine_transform`, `sample`), on NumPy or CuPy arrays.

Conventions are Keras 3's (on its torch backend): bilinear resizing samples at half-pixel
centres (``src = (dst + 0.5) * in / out - 0.5``, clamped at 0; PyTorch's
``align_corners=False`` without antialiasing), nearest uses ``floor((dst + 0.5) * in / out)``
("nearest-exact"). `affine_transform` maps each output pixel ``(x, y)`` to the input point
``(a0 x + a1 y + a2, b0 x + b1 y + b2)`` and interpolates it like Keras's ``map_coordinates``:
each neighbour outside the image contributes ``fill_value`` ("constant") or is folded back
into the image ("reflect" ``dcba|abcd|dcba``, "mirror" ``dcb|abcd|cba``, "wrap", "nearest").
The outputs are not differentiable with respect to the images (as in Keras, these layers
preprocess data). `affine_transform_traced`, `sample_traced` and `resize_traced` are the same
resampling in kerasrs ops, so that a traced step (``compile(jit_compile=True)``) holds it;
`Resizing` (without padding) and `CenterCrop` call them.
"""

import numpy as np

from kerasrs import ops
from kerasrs.layers.base import Layer
from kerasrs.ops.core import constant

__all__ = ["Resizing", "CenterCrop"]

INTERPOLATIONS = ("bilinear", "nearest")
FILL_MODES = ("reflect", "wrap", "constant", "nearest")


def check_choice(who, name, value, allowed):
    if value not in allowed:
        raise ValueError(f"{who}: unknown `{name}`; expected one of {list(allowed)}. "
                         f"Received: {name}={value!r}")


def check_size(who, height, width):
    """``(height, width)`` as ints, both >= 1.

    Raises:
        ValueError: for a size that is not a positive integer, naming the layer.
    """
    for name, value in (("height", height), ("width", width)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{who}: `{name}` must be a positive int (pixels). Received: "
                             f"height={height!r}, width={width!r}")
    return int(height), int(width)


def check_data_format(who, data_format):
    data_format = data_format or "channels_last"
    check_choice(who, "data_format", data_format, ("channels_last", "channels_first"))
    return data_format


def to_nhwc(who, inputs, data_format):
    """``(images as float NHWC backend array, undo)``: ``undo`` restores the layout and rank.

    Raises:
        ValueError: for inputs that are not rank 3 (one image) or 4 (a batch).
    """
    x = inputs.data
    if x.ndim not in (3, 4):
        raise ValueError(f"{who}: expected images of rank 3 (height, width, channels) or 4 "
                         f"(batch, ...). Received: input shape {tuple(x.shape)}")
    single = x.ndim == 3
    x = x[None] if single else x
    if data_format == "channels_first":
        x = x.transpose(0, 2, 3, 1)

    def undo(y):
        if data_format == "channels_first":
            y = y.transpose(0, 3, 1, 2)
        return y[0] if single else y

    return x, undo


def _linear_weights(xp, size_in, size_out, dtype):
    """``(size_out, size_in)`` bilinear interpolation matrix, half-pixel centres."""
    src = np.maximum((np.arange(size_out) + 0.5) * (size_in / size_out) - 0.5, 0.0)
    low = np.minimum(np.floor(src).astype(np.int64), size_in - 1)
    high = np.minimum(low + 1, size_in - 1)
    frac = src - low
    weights = np.zeros((size_out, size_in), "float64")
    np.add.at(weights, (np.arange(size_out), low), 1.0 - frac)
    np.add.at(weights, (np.arange(size_out), high), frac)
    return xp.asarray(weights.astype(dtype))


def _nearest_index(size_in, size_out):
    return np.minimum(np.floor((np.arange(size_out) + 0.5) * (size_in / size_out)),
                      size_in - 1).astype(np.int64)


def crop_box(height, width, target_height, target_width):
    """Keras's centred crop to the target's aspect ratio: ``(top, left, rows, cols)``."""
    rows = max(min(height, int(float(width * target_height) / target_width)), 1)
    cols = max(min(width, int(float(height * target_width) / target_height)), 1)
    return int(float(height - rows) / 2), int(float(width - cols) / 2), rows, cols


def resize(xp, x, height, width, interpolation="bilinear", crop_to_aspect_ratio=False,
           pad_to_aspect_ratio=False, fill_value=0.0):
    """Resize NHWC float images ``x`` to ``(height, width)`` (see the module docstring)."""
    if crop_to_aspect_ratio:
        top, left, rows, cols = crop_box(x.shape[1], x.shape[2], height, width)
        x = x[:, top:top + rows, left:left + cols]
    elif pad_to_aspect_ratio:
        x = _pad_to_aspect(xp, x, height, width, fill_value)
    if interpolation == "nearest":
        rows, cols = _nearest_index(x.shape[1], height), _nearest_index(x.shape[2], width)
        return x[:, rows][:, :, cols]
    weight_h = _linear_weights(xp, x.shape[1], height, x.dtype)
    weight_w = _linear_weights(xp, x.shape[2], width, x.dtype)
    return xp.einsum("oh,nhwc,pw->nopc", weight_h, x, weight_w)


def in_nhwc(x, data_format, fn):
    """``fn`` applied to images ``x`` (a Tensor, rank 3 or 4, in ``data_format``) as an NHWC
    batch, in kerasrs ops; the result in ``x``'s layout and rank."""
    single, first = x.ndim == 3, data_format == "channels_first"
    x = ops.expand_dims(x, 0) if single else x
    x = fn(ops.transpose(x, (0, 2, 3, 1)) if first else x)
    x = ops.transpose(x, (0, 3, 1, 2)) if first else x
    return x[0] if single else x


def resize_traced(x, height, width, interpolation="bilinear", crop_to_aspect_ratio=False):
    """`resize` (without padding) in kerasrs ops, so that a graph traces it: NHWC images
    ``x`` (a Tensor)."""
    rows, cols = x.shape[1:3]
    if crop_to_aspect_ratio:
        top, left, rows, cols = crop_box(rows, cols, height, width)
        x = x[:, top:top + rows, left:left + cols]
    if interpolation == "nearest":
        x = ops.take(x, _nearest_index(rows, height), axis=1)
        return ops.take(x, _nearest_index(cols, width), axis=2)
    weight_h, weight_w = (constant(_linear_weights(x.backend.xp, size, out, x.dtype), x.backend)
                          for size, out in ((rows, height), (cols, width)))
    return ops.einsum("oh,nhwc,pw->nopc", weight_h, x, weight_w)


def _pad_to_aspect(xp, x, height, width, fill_value):
    n, h, w, c = x.shape
    rows = max(h, int(float(w * height) / width))
    cols = max(w, int(float(h * width) / height))
    top, left = int(float(rows - h) / 2), int(float(cols - w) / 2)
    out = xp.full((n, h + 2 * top, w + 2 * left, c), fill_value, dtype=x.dtype)
    out[:, top:top + h, left:left + w] = x
    return out


def _fix_index(xp, index, size, fill_mode):
    """Keras's index fixers: fold indices outside ``[0, size)`` back in."""
    if fill_mode in ("constant", "nearest"):
        return xp.clip(index, 0, size - 1)
    if fill_mode == "wrap":
        return index % size
    if fill_mode == "mirror":
        return _mirror(xp, index, size)
    return (_mirror(xp, 2 * index + 1, 2 * size + 1) - 1) // 2  # reflect


def _mirror(xp, index, size):
    s = max(size - 1, 1)
    return xp.abs((index + s) % (2 * s) - s)


def sample(xp, x, src_x, src_y, interpolation, fill_value, fill_mode="constant"):
    """Images ``x`` (NHWC) read at ``(src_y, src_x)`` per output pixel (``(n, h, w)`` each),
    outside points handled by ``fill_mode`` (see the module docstring)."""
    n, h, w, _ = x.shape
    batch = xp.arange(n)[:, None, None]
    if interpolation == "nearest":
        corners = [(xp.round(src_y).astype(np.int64), xp.round(src_x).astype(np.int64), None)]
    else:
        y0, x0 = xp.floor(src_y), xp.floor(src_x)
        wy, wx = src_y - y0, src_x - x0
        y0, x0 = y0.astype(np.int64), x0.astype(np.int64)
        corners = [(y0, x0, (1 - wy) * (1 - wx)), (y0, x0 + 1, (1 - wy) * wx),
                   (y0 + 1, x0, wy * (1 - wx)), (y0 + 1, x0 + 1, wy * wx)]
    out = xp.zeros(x.shape, dtype="float64")
    for yi, xi, weight in corners:
        values = x[batch, _fix_index(xp, yi, h, fill_mode), _fix_index(xp, xi, w, fill_mode)]
        if fill_mode == "constant":
            inside = (yi >= 0) & (yi < h) & (xi >= 0) & (xi < w)
            values = xp.where(inside[..., None], values, fill_value)
        out += values if weight is None else weight[..., None] * values
    return out.astype(x.dtype)


def affine_transform_traced(x, transforms, interpolation="bilinear", fill_mode="constant",
                            fill_value=0.0):
    """`affine_transform` in kerasrs ops, so that a graph traces it (the same arithmetic: the
    same numbers): NHWC images ``x`` (a Tensor) and ``transforms`` an ``(n, 8)`` Tensor."""
    n, h, w, _ = x.shape
    t = ops.cast(transforms, "float32")
    a0, a1, a2, b0, b1, b2 = (ops.reshape(t[:, k], (n, 1, 1)) for k in range(6))
    ys, xs = (constant(grid, x.backend) for grid in np.meshgrid(
        np.arange(h, dtype="float32"), np.arange(w, dtype="float32"), indexing="ij"))
    return sample_traced(x, (ys * a1 + xs * a0) + a2, (ys * b1 + xs * b0) + b2, interpolation,
                         fill_value, fill_mode)


def sample_traced(x, src_x, src_y, interpolation, fill_value, fill_mode="constant"):
    """`sample` in kerasrs ops: each corner gathered with ``take`` from the flattened images
    (its row index computed in ops), the weighted corners summed in float64."""
    n, h, w, c = x.shape
    rows = ops.reshape(x, (n * h * w, c))
    first = constant(np.arange(n, dtype="int64").reshape(n, 1, 1) * (h * w), x.backend)
    if interpolation == "nearest":
        corners = [(ops.cast(ops.round(src_y), "int64"), ops.cast(ops.round(src_x), "int64"),
                    None)]
    else:
        y0, x0 = ops.floor(src_y), ops.floor(src_x)
        wy, wx = src_y - y0, src_x - x0
        y0, x0 = ops.cast(y0, "int64"), ops.cast(x0, "int64")
        corners = [(y0, x0, (1 - wy) * (1 - wx)), (y0, x0 + 1, (1 - wy) * wx),
                   (y0 + 1, x0, wy * (1 - wx)), (y0 + 1, x0 + 1, wy * wx)]
    out = None
    for yi, xi, weight in corners:
        index = first + _fix_index(ops, yi, h, fill_mode) * w + _fix_index(ops, xi, w, fill_mode)
        values = ops.reshape(ops.take(rows, ops.reshape(index, (-1,)), axis=0), (n, h, w, c))
        if fill_mode == "constant":
            inside = (yi >= 0) & (yi < h) & (xi >= 0) & (xi < w)
            values = ops.where(ops.expand_dims(inside, -1), values, fill_value)
        if weight is not None:
            values = ops.expand_dims(weight, -1) * values
        values = ops.cast(values, "float64")
        out = values if out is None else out + values
    return ops.cast(out, x.dtype)


def affine_transform(xp, x, transforms, interpolation="bilinear", fill_mode="constant",
                     fill_value=0.0):
    """Apply one ``(8,)`` transform per image (Keras's ``[a0, a1, a2, b0, b1, b2, c0, c1]``,
    projective terms ignored) to NHWC images ``x`` (see the module docstring)."""
    n, h, w, c = x.shape
    # float32 coordinates, as Keras computes them: nearest sampling then rounds alike
    t = xp.asarray(transforms, dtype="float32").reshape(n, 8)
    ys, xs = xp.meshgrid(xp.arange(h, dtype="float32"), xp.arange(w, dtype="float32"),
                         indexing="ij")
    src_x = (ys * t[:, 1, None, None] + xs * t[:, 0, None, None]) + t[:, 2, None, None]
    src_y = (ys * t[:, 4, None, None] + xs * t[:, 3, None, None]) + t[:, 5, None, None]
    return sample(xp, x, src_x, src_y, interpolation, fill_value, fill_mode)


class Resizing(Layer):
    """Resizes images to ``(height, width)``.

    Args:
        height, width: ints, the output size.
        interpolation: "bilinear" (default) or "nearest" (Keras's other modes and
            ``antialias=True`` are not supported).
        crop_to_aspect_ratio: crop the largest centred box of the target aspect ratio first.
        pad_to_aspect_ratio: pad (with ``fill_value``) to the target aspect ratio first.
        fill_mode: "constant" only. fill_value: the padding value.
        data_format: "channels_last" (default) or "channels_first".

    Input: ``(batch, H, W, C)`` or ``(H, W, C)`` (channels_last). Output: the same with the new
    size, float (the layer's dtype).

    Raises:
        ValueError: for an unsupported interpolation, both aspect-ratio options, or inputs
            that are not images.

    Example:
        >>> Resizing(2, 2)(np.arange(16.0).reshape(1, 4, 4, 1))[0, :, :, 0].numpy()
        array([[ 2.5,  4.5],
               [10.5, 12.5]], dtype=float32)
    """

    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False,
                 pad_to_aspect_ratio=False, fill_mode="constant", fill_value=0.0,
                 antialias=False, data_format=None, **kwargs):
        super().__init__(**kwargs)
        check_choice(self.name, "interpolation", interpolation, INTERPOLATIONS)
        if antialias:
            raise ValueError(f"{self.name}: antialiasing is not supported. Received: "
                             f"antialias={antialias!r}")
        if crop_to_aspect_ratio and pad_to_aspect_ratio:
            raise ValueError(f"{self.name}: use only one of `crop_to_aspect_ratio` and "
                             "`pad_to_aspect_ratio`. Received: both True")
        check_choice(self.name, "fill_mode", fill_mode, ("constant",))
        self.height, self.width = check_size(self.name, height, width)
        self.interpolation = interpolation
        self.crop_to_aspect_ratio, self.pad_to_aspect_ratio = crop_to_aspect_ratio, \
            pad_to_aspect_ratio
        self.fill_mode, self.fill_value, self.antialias = fill_mode, fill_value, False
        self.data_format = check_data_format(self.name, data_format)

    def call(self, inputs):
        x, undo = to_nhwc(self.name, inputs, self.data_format)
        if not self.pad_to_aspect_ratio:  # in ops: a graph traces it
            return in_nhwc(ops.cast(inputs, self.compute_dtype), self.data_format, lambda x:
                           resize_traced(x, self.height, self.width, self.interpolation,
                                         self.crop_to_aspect_ratio))
        x = resize(inputs.backend.xp, x.astype(self.compute_dtype), self.height, self.width,
                   self.interpolation, self.crop_to_aspect_ratio, self.pad_to_aspect_ratio,
                   self.fill_value)
        return constant(undo(x), inputs.backend)

    def compute_output_shape(self, input_shape):
        return _with_size(input_shape, self.height, self.width, self.data_format)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "interpolation": self.interpolation,
                "crop_to_aspect_ratio": self.crop_to_aspect_ratio,
                "pad_to_aspect_ratio": self.pad_to_aspect_ratio, "fill_mode": self.fill_mode,
                "fill_value": self.fill_value, "antialias": self.antialias,
                "data_format": self.data_format}


class CenterCrop(Layer):
    """Crops the centre ``(height, width)`` of images (row/column start ``(H - height) // 2``);
    an image smaller than that is first cropped to the target aspect ratio and resized
    (bilinear), as Keras's ``smart_resize`` does.

    Example:
        >>> CenterCrop(2, 2)(np.arange(16.0).reshape(1, 4, 4, 1))[0, :, :, 0].numpy()
        array([[ 5.,  6.],
               [ 9., 10.]], dtype=float32)
    """

    def __init__(self, height, width, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.height, self.width = check_size(self.name, height, width)
        self.data_format = check_data_format(self.name, data_format)

    def call(self, inputs):
        to_nhwc(self.name, inputs, self.data_format)  # the rank check
        return in_nhwc(ops.cast(inputs, self.compute_dtype), self.data_format, self._crop)

    def _crop(self, x):
        """The centre crop of NHWC images, in kerasrs ops (a graph traces it)."""
        h, w = x.shape[1], x.shape[2]
        if h >= self.height and w >= self.width:
            top, left = (h - self.height) // 2, (w - self.width) // 2
            return x[:, top:top + self.height, left:left + self.width]
        return resize_traced(x, self.height, self.width, crop_to_aspect_ratio=True)

    def compute_output_shape(self, input_shape):
        return _with_size(input_shape, self.height, self.width, self.data_format)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "data_format": self.data_format}


def _with_size(input_shape, height, width, data_format):
    shape = list(input_shape)
    first = len(shape) - 3 + (1 if data_format == "channels_first" else 0)
    shape[first], shape[first + 1] = height, width
    return tuple(shape)
