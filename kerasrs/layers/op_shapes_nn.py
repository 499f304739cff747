"""Output-shape rules of the neural-network ops on symbolic tensors (convolutions, pooling,
batch normalization, attention), merged into `kerasrs.layers.op_shapes.RULES`.

Each rule takes the op's bound arguments (a dict by parameter name) and returns the output
shape, with Keras's size arithmetic (`kerasrs.ops.operation_utils`) and its channel checks.
"""

import numpy as np

from kerasrs.backend import settings
from kerasrs.ops import operation_utils as shapes


def _shape(value):
    return tuple(value.shape) if hasattr(value, "shape") else np.shape(value)


def _tuple(value, n):
    return (int(value),) * n if isinstance(value, (int, np.integer)) else tuple(value)


def _window_args(a, x):
    """``(data_format, padding, strides, dilation)`` of a convolution or pooling call."""
    n = len(x) - 2
    fmt = a.get("data_format") or settings.image_data_format()
    return (fmt, str(a.get("padding", "valid")).lower(), a.get("strides", 1),
            _tuple(a.get("dilation_rate", 1), n))


def _check_channels(op, x, fmt, expected):
    channels = x[-1] if fmt == "channels_last" else x[1]
    if None not in (channels, expected) and channels != expected:
        raise ValueError(f"{op}: the input channels must match the kernel's input channels. "
                         f"Received: inputs.shape={x}, {expected} channels in the kernel")


def _conv(op, filters_of, in_channels_of):
    """``conv`` / ``depthwise_conv`` / ``separable_conv``: Keras's output-size arithmetic
    (`kerasrs.ops.operation_utils.compute_conv_output_shape`) after the channel check."""
    def rule(a):
        x = _shape(a["inputs"])
        kernel = _shape(a["kernel"] if "kernel" in a else a["depthwise_kernel"])
        fmt, padding, strides, dilation = _window_args(a, x)
        _check_channels(op, x, fmt, in_channels_of(kernel))
        return shapes.compute_conv_output_shape(x, filters_of(kernel, a), kernel[:-2], strides,
                                                padding, fmt, dilation)
    return rule


def _conv_transpose(a):
    """``conv_transpose`` (kernel ``(spatial..., out_channels, in_channels)``): each spatial size
    ``(n - 1) * stride + dilated_kernel - 2 * pad + output_padding``, as Keras."""
    x, kernel = _shape(a["inputs"]), _shape(a["kernel"])
    fmt, padding, strides, dilation = _window_args(a, x)
    _check_channels("conv_transpose", x, fmt, kernel[-1])
    n = len(x) - 2
    strides = _tuple(strides, n)
    extra = a["output_padding"]
    extra = (None,) * n if extra is None else _tuple(extra, n)
    spatial = x[1:-1] if fmt == "channels_last" else x[2:]
    out = []
    for size, k, s, d, e in zip(spatial, kernel[:-2], strides, dilation, extra):
        k = (k - 1) * d + 1
        if size is None:
            out.append(None)
        elif e is None:
            out.append(size * s if padding == "same" else size * s + max(k - s, 0))
        else:
            pad = k // 2 if padding == "same" else 0
            out.append((size - 1) * s + k - 2 * pad + e)
    if fmt == "channels_last":
        return (x[0],) + tuple(out) + (kernel[-2],)
    return (x[0], kernel[-2]) + tuple(out)


def _pool(a):
    x = _shape(a["inputs"])
    fmt, padding, _, _ = _window_args(a, x)
    pool = _tuple(a["pool_size"], len(x) - 2)
    strides = pool if a["strides"] is None else _tuple(a["strides"], len(x) - 2)
    return shapes.compute_pooling_output_shape(x, pool, strides, padding, fmt)


def _batch_normalization(a):
    x = _shape(a["x"])
    size = x[shapes.canonicalize_axis(a["axis"], len(x))]
    for name in ("mean", "variance", "offset", "scale"):
        if a.get(name) is not None:
            s = _shape(a[name])
            if len(s) != 1 or None not in (s[0], size) and s[0] != size:
                raise ValueError(f"batch_normalization: Arguments `{name}` must be a vector of "
                                 f"length `x.shape[axis]`. Expected: ({size},). Received: "
                                 f"{name}.shape={s}")
    return x


def _attention(a):
    q, v = _shape(a["query"]), _shape(a["value"])
    return q[:-1] + v[-1:]


RULES = {
    "conv": _conv("conv", lambda k, a: k[-1], lambda k: k[-2]),
    "depthwise_conv": _conv("depthwise_conv",
                            lambda k, a: None if None in k[-2:] else k[-2] * k[-1],
                            lambda k: k[-2]),
    "separable_conv": _conv("separable_conv", lambda k, a: _shape(a["pointwise_kernel"])[-1],
                            lambda k: k[-2]),
    "conv_transpose": _conv_transpose, "max_pool": _pool, "average_pool": _pool,
    "batch_normalization": _batch_normalization, "dot_product_attention": _attention,
}
