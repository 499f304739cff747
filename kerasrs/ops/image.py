"""Image ops of Keras's ``keras.ops.image`` built from differentiable kerasrs ops: colour space
conversions, cropping and padding, patch extraction and Gaussian blur. Images are
``(height, width, channels)`` or ``(batch, height, width, channels)`` (channels first with
``data_format="channels_first"``).

Not yet here: resize, affine/perspective/elastic transforms, map_coordinates,
scale_and_translate, sobel_edges and ssim (the preprocessing layers have NumPy versions of some).
"""

import numpy as np

from kerasrs import backend
from kerasrs.autodiff import convert_to_tensor
from kerasrs.ops import convolution, core, creation, layout, stacking
from kerasrs.ops import math as ops_math

_GRAY = (0.2989, 0.587, 0.114)  # ITU-R BT.601 luma weights, as Keras


def _images(who, images):
    images = convert_to_tensor(images)
    if len(images.shape) not in (3, 4):
        raise ValueError(f"{who}: images must be rank 3 (one image) or 4 (a batch). Received: "
                         f"images.shape={images.shape}")
    return images


def _channels_last(data_format):
    return (data_format or backend.image_data_format()) == "channels_last"


def _planes(images, axis):
    return [layout.take(images, i, axis=axis) for i in range(3)]


def _float(who, images):
    if str(images.dtype) not in ("float16", "float32", "float64", "bfloat16"):
        raise ValueError(f"{who}: needs float images. Received: images.dtype={images.dtype}")


def rgb_to_grayscale(images, data_format=None):
    """Luma ``0.2989 R + 0.587 G + 0.114 B``, keeping a channel axis of size 1 and the dtype.

    Raises:
        ValueError: for a rank other than 3/4 or a channel axis other than 1 or 3.
    """
    images = _images("rgb_to_grayscale", images)
    axis = -1 if _channels_last(data_format) else -3
    if images.shape[axis] not in (1, 3):
        raise ValueError("rgb_to_grayscale: expects 3 (RGB) or 1 channel. Received: "
                         f"images.shape={images.shape}")
    if images.shape[axis] == 1:
        return creation.copy(images)
    dtype = str(images.dtype)
    x = images if dtype.startswith("float") else ops_math.cast(images, backend.floatx())
    weights = np.array(_GRAY, str(x.dtype)).reshape((3,) + (1,) * (-axis - 1))
    return ops_math.cast(ops_math.sum(x * weights, axis=axis, keepdims=True), dtype)


def rgb_to_hsv(images, data_format=None):
    """RGB in ``[0, 1]`` to hue, saturation, value in ``[0, 1]`` (TensorFlow's rules: hue 0 for
    grey pixels).

    Raises:
        ValueError: for integer images or a rank other than 3/4.
    """
    images = _images("rgb_to_hsv", images)
    _float("rgb_to_hsv", images)
    axis = -1 if _channels_last(data_format) else -3
    eps = float(np.finfo(str(images.dtype) if str(images.dtype) != "bfloat16" else
                         "float32").eps)
    images = ops_math.where(ops_math.abs(images) < eps, 0.0, images)
    r, g, b = _planes(images, axis)
    value = ops_math.maximum(ops_math.maximum(r, g), b)
    spread = value - ops_math.minimum(ops_math.minimum(r, g), b)
    saturation = ops_math.where(value > 0, spread / ops_math.where(value > 0, value, 1.0), 0.0)
    norm = 1.0 / (6.0 * ops_math.where(spread > 0, spread, 1.0))
    hue = ops_math.where(value == g, norm * (b - r) + 2.0 / 6.0, norm * (r - g) + 4.0 / 6.0)
    hue = ops_math.where(value == r, norm * (g - b), hue)
    hue = ops_math.where(spread > 0, hue, 0.0) + ops_math.cast(hue < 0.0, hue.dtype)
    return ops_math.cast(stacking.stack([hue, saturation, value], axis=axis), images.dtype)


def hsv_to_rgb(images, data_format=None):
    """Hue, saturation, value in ``[0, 1]`` to RGB (the inverse of `rgb_to_hsv`).

    Raises:
        ValueError: for integer images or a rank other than 3/4.
    """
    images = _images("hsv_to_rgb", images)
    _float("hsv_to_rgb", images)
    axis = -1 if _channels_last(data_format) else -3
    hue, saturation, value = _planes(images, axis)
    dh = core.mod(hue, 1.0) * 6.0
    weights = [ops_math.clip(ops_math.abs(dh - 3.0) - 1.0, 0.0, 1.0),
               ops_math.clip(2.0 - ops_math.abs(dh - 2.0), 0.0, 1.0),
               ops_math.clip(2.0 - ops_math.abs(dh - 4.0), 0.0, 1.0)]
    rgb = [value * ((1.0 - saturation) + saturation * w) for w in weights]
    return ops_math.cast(stacking.stack(rgb, axis=axis), images.dtype)


def _spatial(images, data_format):
    """(height axis, width axis) of ``images``."""
    return (-3, -2) if _channels_last(data_format) else (-2, -1)


def _settle(size, before, after, target, names, who):
    """Keras's rule: two of before/after/target given, the third follows; all must be >= 0."""
    if target is None:
        target = size - (before or 0) - (after or 0)
    if before is None:
        before = size - target - (after or 0)
    if after is None:
        after = size - target - before
    for name, value in zip(names, (before, after, target)):
        if value < 0:
            raise ValueError(f"{who}: {name} must be >= 0. Received: {name}={value}")
    return before, after, target


def crop_images(images, top_cropping=None, left_cropping=None, bottom_cropping=None,
                right_cropping=None, target_height=None, target_width=None, data_format=None):
    """Crop each image: give two of ``top_cropping``, ``bottom_cropping`` and
    ``target_height`` (and of left/right/``target_width``).

    Raises:
        ValueError: for a rank other than 3/4 or negative croppings.
    """
    images = _images("crop_images", images)
    h_axis, w_axis = _spatial(images, data_format)
    top, _, height = _settle(images.shape[h_axis], top_cropping, bottom_cropping, target_height,
                             ("top_cropping", "bottom_cropping", "target_height"), "crop_images")
    left, _, width = _settle(images.shape[w_axis], left_cropping, right_cropping, target_width,
                             ("left_cropping", "right_cropping", "target_width"), "crop_images")
    key = [slice(None)] * len(images.shape)
    key[h_axis], key[w_axis] = slice(top, top + height), slice(left, left + width)
    return images[tuple(key)]


def pad_images(images, top_padding=None, left_padding=None, bottom_padding=None,
               right_padding=None, target_height=None, target_width=None, data_format=None):
    """Zero-pad each image: give two of ``top_padding``, ``bottom_padding`` and
    ``target_height`` (and of left/right/``target_width``).

    Raises:
        ValueError: for a rank other than 3/4 or negative paddings.
    """
    images = _images("pad_images", images)
    h_axis, w_axis = _spatial(images, data_format)
    widths = [[0, 0] for _ in images.shape]
    widths[h_axis] = _padding(images.shape[h_axis], top_padding, bottom_padding, target_height,
                              ("top_padding", "bottom_padding"))
    widths[w_axis] = _padding(images.shape[w_axis], left_padding, right_padding, target_width,
                              ("left_padding", "right_padding"))
    return layout.pad(images, widths)


def _padding(size, before, after, target, names):
    """[before, after] padding of a side of ``size`` (the missing one from ``target``)."""
    if before is None:
        before = target - (after or 0) - size
    if after is None:
        after = (size + before if target is None else target) - before - size
    for name, value in zip(names, (before, after)):
        if value < 0:
            raise ValueError(f"pad_images: {name} must be >= 0. Received: {name}={value}")
    return [before, after]


def _patches(images, size, strides, dilation_rate, padding, data_format, rank, who):
    size = (size,) * rank if isinstance(size, int) else tuple(size)
    if len(size) != rank:
        raise TypeError(f"{who}: `size` must be an int or a tuple of {rank} ints. Received: "
                        f"size={size}")
    unbatched = len(images.shape) == rank + 1
    if unbatched:
        images = layout.expand_dims(images, 0)
    channels = images.shape[-1] if _channels_last(data_format) else images.shape[1]
    out = int(np.prod(size)) * channels
    # an identity kernel: output channel k copies one (position, channel) of the window
    kernel = np.eye(out, dtype=str(images.dtype)).reshape(size + (channels, out))
    patches = convolution.conv(images, kernel, strides=strides or size, padding=padding,
                       data_format=data_format, dilation_rate=dilation_rate)
    return patches[0] if unbatched else patches


def extract_patches(images, size, strides=None, dilation_rate=1, padding="valid",
                    data_format=None):
    """Windows of ``size`` (int or ``(height, width)``; a 3-tuple calls
    `extract_patches_3d`) every ``strides`` (default: ``size``, non-overlapping), flattened
    into the channel axis: ``(..., out_height, out_width, size_h * size_w * channels)``,
    ordered row, column, channel.

    Raises:
        TypeError: for a ``size`` that is not an int or a pair.
    """
    if not isinstance(size, int) and len(size) == 3:
        return extract_patches_3d(images, size, strides, dilation_rate, padding, data_format)
    images = _images("extract_patches", images)
    return _patches(images, size, strides, dilation_rate, padding, data_format, 2,
                    "extract_patches")


def extract_patches_3d(volumes, size, strides=None, dilation_rate=1, padding="valid",
                       data_format=None):
    """`extract_patches` for volumes ``(batch, depth, height, width, channels)`` (or without
    the batch axis)."""
    volumes = convert_to_tensor(volumes)
    if len(volumes.shape) not in (4, 5):
        raise ValueError("extract_patches_3d: volumes must be rank 4 or 5. Received: "
                         f"volumes.shape={volumes.shape}")
    return _patches(volumes, size, strides, dilation_rate, padding, data_format, 3,
                    "extract_patches_3d")


def _gaussian_1d(size, sigma, dtype):
    x = np.arange(size, dtype="float64") - (size - 1) / 2
    kernel = np.exp(-0.5 * (x / sigma) ** 2)
    return (kernel / kernel.sum()).astype(dtype)


def gaussian_blur(images, kernel_size=(3, 3), sigma=(1.0, 1.0), data_format=None):
    """Blur each channel with a normalized Gaussian kernel, zero padding at the borders (the
    output keeps the size). As in Keras, ``kernel_size[0]``/``sigma[0]`` shape the kernel's
    columns and ``[1]`` its rows.

    Raises:
        ValueError: for a rank other than 3/4.
    """
    images = _images("gaussian_blur", images)
    dtype = str(images.dtype)
    x = images if dtype.startswith("float") else ops_math.cast(images, backend.floatx())
    unbatched = len(x.shape) == 3
    if unbatched:
        x = layout.expand_dims(x, 0)
    channels = x.shape[-1] if _channels_last(data_format) else x.shape[1]
    kernel = np.outer(_gaussian_1d(int(kernel_size[1]), float(sigma[1]), str(x.dtype)),
                      _gaussian_1d(int(kernel_size[0]), float(sigma[0]), str(x.dtype)))
    kernel = np.tile(kernel[:, :, None, None], (1, 1, channels, 1))
    out = convolution.depthwise_conv(x, kernel, padding="same", data_format=data_format)
    return ops_math.cast(out[0] if unbatched else out, dtype)
