"""Adaptive pooling, im2col-style ``unfold``/``fold``, pairwise distances and einops-style
``rearrange``, composed of differentiable primitives (gathers, matmuls, reductions)."""

import numpy as np

from kerasrs.autodiff import convert_to_tensor
from kerasrs.backend import settings
from kerasrs.ops import core, layout, math
from kerasrs.ops.core import constant, getitem


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
            x = layout.concatenate(parts, axis=axis)
    return x


def adaptive_average_pool(inputs, output_size, data_format=None):
    """Average pooling to a fixed spatial ``output_size`` (int or tuple), with PyTorch's bins
    ``[floor(i n / o), ceil((i + 1) n / o))`` per axis; 1-D to 3-D spatial inputs."""
    return _adaptive(inputs, output_size, data_format, "avg")


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


def unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks of an (N, C, H, W) input as (N, C * kh * kw, L) (im2col, PyTorch's
    ``unfold`` layout: channel-major, then kernel row, then kernel column)."""
    x = convert_to_tensor(x)
    flat, (ph, pw), (hp, wp) = _patch_index(x.shape, kernel_size, dilation, padding, stride)
    xp_ = layout.pad(x, [(0, 0), (0, 0), (ph, ph), (pw, pw)])
    plane = layout.reshape(xp_, (x.shape[0], x.shape[1], hp * wp))
    blocks = layout.take(plane, flat, axis=2)  # (N, C, k, L)
    return layout.reshape(blocks, (x.shape[0], x.shape[1] * flat.shape[0], flat.shape[1]))


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


__all__ = ["adaptive_average_pool", "adaptive_max_pool", "unfold", "fold", "cdist", "rearrange"]
