"""Keras ``keras.ops.nn`` functions not in `kerasrs.ops.nn`: sparsemax, multi-hot encoding, PSNR,
depth/space rearrangements, and the normalization and attention ops exported under their Keras
names. Composites of differentiable primitives unless said otherwise."""

import numpy as np

from kerasrs.autodiff import convert_to_tensor
from kerasrs.ops import core, layout, math, reduction
from kerasrs.ops.attention import dot_product_attention  # noqa: F401
from kerasrs.ops.ctc import ctc_decode, ctc_loss  # noqa: F401
from kerasrs.ops.core import constant
from kerasrs.ops.creation import one_hot  # noqa: F401
from kerasrs.ops.normalization import batch_normalization, layer_normalization  # noqa: F401
from kerasrs.ops.reduction import moments  # noqa: F401
from kerasrs.ops.spatial import adaptive_average_pool, adaptive_max_pool, fold, unfold  # noqa: F401


def sparsemax(x, axis=-1):
    """Sparsemax (Martins & Astudillo 2016, eq. 2 and Prop. 1): ``max(x - tau, 0)`` with the
    threshold ``tau`` that makes each slice along ``axis`` sum to 1. Differentiable almost
    everywhere (piecewise linear)."""
    x = convert_to_tensor(x)
    z = layout.sort(x, axis=axis)
    z = layout.take(z, np.arange(x.shape[axis])[::-1], axis=axis)  # descending
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    k = constant(x.backend.asarray(np.arange(1, x.shape[axis] + 1, dtype=x.dtype).reshape(shape)),
                 x.backend)
    csum = reduction.cumsum(z, axis=axis)
    support = math.cast(core.greater(1 + k * z, csum), x.dtype)
    k_z = math.sum(support, axis=axis, keepdims=True)
    tau = (math.sum(support * z, axis=axis, keepdims=True) - 1) / k_z
    return math.maximum(x - tau, 0.0)


def polar(abs_, angle):
    """The complex tensor ``abs_ * (cos(angle) + i sin(angle))``. No gradient flows (kerasrs
    differentiates real tensors only)."""
    r, a = convert_to_tensor(abs_), convert_to_tensor(angle)
    xp = r.backend.xp
    return constant(r.data * (xp.cos(a.data) + 1j * xp.sin(a.data)), r.backend)


def multi_hot(inputs, num_classes=None, axis=-1, dtype=None, sparse=False, **kwargs):
    """1 at each class id listed in the last axis of ``inputs`` (ids -> one row per example).
    No gradient flows."""
    num_classes = num_classes if num_classes is not None else kwargs.get("num_tokens")
    x = convert_to_tensor(inputs)
    ids = np.asarray(x.numpy(), dtype="int64")
    if ids.ndim == 1:
        ids = ids[None]
        squeeze = True
    else:
        squeeze = False
    out = np.zeros(ids.shape[:-1] + (num_classes,), dtype="float32")
    valid = (ids >= 0) & (ids < num_classes)
    rows = np.broadcast_to(np.arange(ids.shape[0]).reshape(-1, *([1] * (ids.ndim - 1))), ids.shape)
    out[rows[valid], ids[valid]] = 1
    if squeeze:
        out = out[0]
    if axis != -1:
        out = np.moveaxis(out, -1, axis)
    from kerasrs import backend
    return constant(x.backend.asarray(out.astype(backend.standardize_dtype(dtype))), x.backend)


def psnr(x1, x2, max_val):
    """Peak signal-to-noise ratio ``20 log10(max_val) - 10 log10(mse)`` in dB, over all
    elements (Keras's ``ops.psnr``)."""
    a, b = convert_to_tensor(x1), convert_to_tensor(x2)
    mse = math.mean(math.square(a - b))
    return 20.0 * np.log10(max_val) - 10.0 * math.log(mse) / np.log(10.0)


def _on_channels_last(x, data_format, fn):
    """``fn`` applied to the (N, H, W, C) view of the 4-D ``x``; the result in ``data_format``."""
    x = convert_to_tensor(x)
    if data_format != "channels_first":
        return fn(x)
    return layout.transpose(fn(layout.transpose(x, (0, 2, 3, 1))), (0, 3, 1, 2))


def _depth_to_space_nhwc(x, b):
    n, h, w, c = x.shape
    y = layout.reshape(x, (n, h, w, b, b, c // (b * b)))
    return layout.reshape(layout.transpose(y, (0, 1, 3, 2, 4, 5)), (n, h * b, w * b, c // (b * b)))


def _space_to_depth_nhwc(x, b):
    n, h, w, c = x.shape
    y = layout.reshape(x, (n, h // b, b, w // b, b, c))
    return layout.reshape(layout.transpose(y, (0, 1, 3, 2, 4, 5)), (n, h // b, w // b, b * b * c))


def depth_to_space(x, block_size, data_format="channels_last"):
    """Move channel blocks into spatial blocks: (N, H, W, C*b*b) -> (N, H*b, W*b, C)."""
    return _on_channels_last(x, data_format, lambda t: _depth_to_space_nhwc(t, block_size))


def space_to_depth(x, block_size, data_format="channels_last"):
    """The inverse of `depth_to_space`: (N, H*b, W*b, C) -> (N, H, W, C*b*b)."""
    return _on_channels_last(x, data_format, lambda t: _space_to_depth_nhwc(t, block_size))


def rms_normalization(x, scale=1, axis=-1, epsilon=None):
    """``x / sqrt(mean(x**2, axis) + epsilon) * scale`` (Zhang & Sennrich 2019)."""
    x = convert_to_tensor(x)
    eps = 1e-6 if epsilon is None else epsilon
    return x * math.rsqrt(math.mean(math.square(x), axis=axis, keepdims=True) + eps) * scale


__all__ = ["sparsemax", "multi_hot", "psnr", "depth_to_space", "space_to_depth",
           "rms_normalization", "dot_product_attention", "one_hot", "batch_normalization",
           "layer_normalization", "moments", "ctc_loss", "ctc_decode", "polar",
           "adaptive_average_pool", "adaptive_max_pool", "fold", "unfold"]
