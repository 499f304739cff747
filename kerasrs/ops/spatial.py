"""Adaptive pooling, im2col-style ``unfold``/``fold``, pairwise distances and einops-style
``rearrange``, composed of differentiable primitives (gathers, matmuls, reductions)."""

import numpy as np

from kerasrs.autodiff import convert_to_tensor
from kerasrs.backend import settings
from kerasrs.ops import core, layout, math, stacking
from kerasrs.ops.core import constant, getitem
from kerasrs.ops.dispatch import op


def _tuple(value, n):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


def _bins(n_in, n_out):
    """PyTorch's adaptive bins: [floor(i n/o), ceil((i + 1) n/o))."""
    i = np.arange(n_out)
    return (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)


def _adaptive(x, output_size, data_format, reduce):
    x = convert_to_tensor(x)
    if x.dtype.kind != "f":
        x = math.cast(x, "float32")
    nd = x.ndim - 2
    data_format = data_format or settings.image_data_format()
    first = data_format == "channels_first"
    sizes = _tuple(output_size, nd)
    for k in range(nd):
        axis = 2 + k if first else 1 + k
        n_in = x.shape[axis]
        starts, ends = _bins(n_in, sizes[k])
        if reduce == "avg":  # one averaging matrix per axis
            w = np.zeros((n_in, sizes[k]), dtype=x.dtype)
            for j, (s, e) in enumerate(zip(starts, ends)):
                w[s:e, j] = 1.0 / (e - s)
            moved = layout.transpose(x, [a for a in range(x.ndim) if a != axis] + [axis])
            y = core.matmul(moved, constant(x.backend.asarray(w), x.backend))
            order = list(range(x.ndim - 1))
            order.insert(axis, x.ndim - 1)
            x = layout.transpose(y, order)
        else:
            key = [slice(None)] * x.ndim
            parts = []
            for s, e in zip(starts, ends):
                key[axis] = slice(int(s), int(e))
                parts.append(math.max(getitem(x, tuple(key)), axis=axis, keepdims=True))
            x = stacking.concatenate(parts, axis=axis)
    return x


@op
def adaptive_average_pool(inputs, output_size, data_format=None):
    """Average pooling to a fixed spatial ``output_size`` (int or tuple), with PyTorch's bins
    ``[floor(i n / o), ceil((i + 1) n / o))`` per axis; 1-D to 3-D spatial inputs."""
    return _adaptive(inputs, output_size, data_format, "avg")


@op
def adaptive_max_pool(inputs, output_size, data_format=None):
    """Max pooling to a fixed spatial ``output_size`` (bins as `adaptive_average_pool`)."""
    return _adaptive(inputs, output_size, data_format, "max")


def _patch_index(shape, kernel_size, dilation, padding, stride):
    n, c, h, w = shape
    kh, kw = _tuple(kernel_size, 2)
    dh, dw = _tuple(dilation, 2)
    ph, pw = _tuple(padding, 2)
    sh, sw = _tuple(stride, 2)
    hp, wp = h + 2 * ph, w + 2 * pw
    oh = (hp - dh * (kh - 1) - 1) // sh + 1
    ow = (wp - dw * (kw - 1) - 1) // sw + 1
    rows = (np.arange(kh)[:, None, None, None] * dh + np.arange(oh)[None, None, :, None] * sh)
    cols = (np.arange(kw)[None, :, None, None] * dw + np.arange(ow)[None, None, None, :] * sw)
    flat = (rows * wp + cols).reshape(kh * kw, oh * ow)  # into the padded (hp * wp) plane
    return flat, (ph, pw), (hp, wp)


@op
def unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks of an (N, C, H, W) input as (N, C * kh * kw, L) (im2col, PyTorch's
    ``unfold`` layout: channel-major, then kernel row, then kernel column)."""
    x = convert_to_tensor(x)
    flat, (ph, pw), (hp, wp) = _patch_index(x.shape, kernel_size, dilation, padding, stride)
    xp_ = layout.pad(x, [(0, 0), (0, 0), (ph, ph), (pw, pw)])
    plane = layout.reshape(xp_, (x.shape[0], x.shape[1], hp * wp))
    blocks = layout.take(plane, flat, axis=2)  # (N, C, k, L)
    return layout.reshape(blocks, (x.shape[0], x.shape[1] * flat.shape[0], flat.shape[1]))


@op
def fold(x, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """The adjoint of `unfold`: (N, C * kh * kw, L) blocks summed back into (N, C, H, W)
    (overlaps add up)."""
    x = convert_to_tensor(x)
    h, w = _tuple(output_size, 2)
    kh, kw = _tuple(kernel_size, 2)
    c = x.shape[1] // (kh * kw)
    flat, (ph, pw), (hp, wp) = _patch_index((x.shape[0], c, h, w), kernel_size, dilation,
                                            padding, stride)
    place = np.zeros((flat.size, hp * wp), dtype=x.dtype)
    place[np.arange(flat.size), flat.reshape(-1)] = 1
    blocks = layout.reshape(x, (x.shape[0], c, flat.size))
    plane = core.matmul(blocks, constant(x.backend.asarray(place), x.backend))
    img = layout.reshape(plane, (x.shape[0], c, hp, wp))
    return getitem(img, (slice(None), slice(None), slice(ph, ph + h), slice(pw, pw + w)))


@op
def cdist(x, y):
    """Euclidean distances between the rows of ``x`` (..., m, d) and ``y`` (..., n, d):
    (..., m, n). The gradient at a zero distance is 0."""
    x, y = convert_to_tensor(x), convert_to_tensor(y)
    if x.ndim < 2 or y.ndim < 2 or x.shape[-1] != y.shape[-1]:
        raise ValueError(f"cdist: inputs must be (..., m, d) and (..., n, d). Received shapes "
                         f"{x.shape} and {y.shape}")
    diff = layout.expand_dims(x, -2) - layout.expand_dims(y, -3)
    sq = math.sum(diff * diff, axis=-1)
    safe = math.where(sq > 0, sq, 1.0)
    return math.where(sq > 0, math.sqrt(safe), 0.0)


def _groups(side):
    """'b (h w) c' -> [['b'], ['h', 'w'], ['c']]."""
    out, group = [], None
    for token in side.replace("(", " ( ").replace(")", " ) ").split():
        if token == "(":
            group = []
        elif token == ")":
            out.append(group)
            group = None
        elif group is not None:
            group.append(token)
        else:
            out.append([token])
    return out


@op
def rearrange(tensor, pattern, **axes_lengths):
    """einops-style reshape/transpose, e.g. ``rearrange(x, "b (h w) c -> b h w c", h=4)``.

    Raises:
        ValueError: for a malformed pattern or axis sizes that do not fit.
    """
    x = convert_to_tensor(tensor)
    if "->" not in pattern:
        raise ValueError(f"rearrange: pattern needs '->'. Received: {pattern!r}")
    left, right = (_groups(s) for s in pattern.split("->"))
    if len(left) != x.ndim:
        raise ValueError(f"rearrange: pattern {pattern!r} has {len(left)} input axes but the "
                         f"tensor has shape {x.shape}")
    sizes = dict(axes_lengths)
    for group, dim in zip(left, x.shape):
        unknown = [a for a in group if a not in sizes]
        known = int(np.prod([sizes[a] for a in group if a in sizes]))
        if len(unknown) > 1:
            raise ValueError(f"rearrange: cannot infer sizes of {unknown} in {pattern!r}")
        if unknown:
            sizes[unknown[0]] = dim // known
    names = [a for g in left for a in g]
    y = layout.reshape(x, tuple(sizes[a] for a in names))
    order = [names.index(a) for g in right for a in g]
    y = layout.transpose(y, order)
    return layout.reshape(y, tuple(int(np.prod([sizes[a] for a in g])) for g in right))


@op
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


@op
def depth_to_space(x, block_size, data_format="channels_last"):
    """Move channel blocks into spatial blocks: (N, H, W, C*b*b) -> (N, H*b, W*b, C)."""
    return _on_channels_last(x, data_format, lambda t: _depth_to_space_nhwc(t, block_size))


@op
def space_to_depth(x, block_size, data_format="channels_last"):
    """The inverse of `depth_to_space`: (N, H*b, W*b, C) -> (N, H, W, C*b*b)."""
    return _on_channels_last(x, data_format, lambda t: _space_to_depth_nhwc(t, block_size))
