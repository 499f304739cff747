"""Output shapes of ops on shapes alone, with unknown axes as ``None`` (Keras's
``keras.src.ops.operation_utils``).

Symbolic tensors (``keras.Input``) have no values, so an op called on one cannot simply run: its
output shape is worked out from the input shapes. Most ops get theirs by a probe (see
`kerasrs.layers.node`); the rules here are for the families a probe cannot answer (broadcasting
against an unknown axis, splits, reshapes with ``-1``, pooling and convolution arithmetic) and
are also Keras's helpers of the same names. A shape is a tuple of ints and ``None``.
"""

import math

import numpy as np

from kerasrs.autodiff import Tensor


def canonicalize_axis(axis, ndim):
    """``axis`` in ``[0, ndim)`` (a negative axis counts from the end).

    Raises:
        ValueError: naming the axis and the rank when it is out of bounds.
    """
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for an array of rank {ndim}. "
                         f"Received: axis={axis}")
    return axis % ndim if ndim else axis


def _axes(axis):
    return tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)


def broadcast_shapes(shape1, shape2):
    """The NumPy broadcast of two shapes, as a list; ``None`` against 1 stays unknown, ``None``
    against ``n`` is ``n``.

    Raises:
        ValueError: "Cannot broadcast shape", naming both shapes, when two known sizes differ and
            neither is 1.
    """
    a, b = list(shape1), list(shape2)
    rank = max(len(a), len(b))
    a, b = [1] * (rank - len(a)) + a, [1] * (rank - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x == 1 or (x is None and y != 1):
            out.append(y)
        elif y == 1 or y is None or x == y:
            out.append(x)
        else:
            raise ValueError(f"Cannot broadcast shape: size {x} cannot be broadcast to {y}. "
                             f"Input shapes are: {list(shape1)} and {list(shape2)}.")
    return out


def compute_expand_dims_output_shape(input_shape, axis):
    """``input_shape`` with a 1 inserted at each of ``axis`` (an int or a sequence; None: at
    the end), axes counted in the output."""
    axis = len(input_shape) if axis is None else axis
    axes = _axes(axis)
    rank = len(input_shape) + len(axes)
    axes = {canonicalize_axis(a, rank) for a in axes}
    sizes = iter(input_shape)
    return tuple(1 if i in axes else next(sizes) for i in range(rank))


def _window_shape(input_shape, window, strides, padding, data_format, dilation, what):
    """Spatial output sizes of a sliding window (pooling, convolution); see the callers."""
    spatial = list(input_shape[1:-1] if data_format == "channels_last" else input_shape[2:])
    n = len(spatial)
    strides = (strides,) * n if isinstance(strides, int) else tuple(strides)
    dilation = (dilation,) * n if isinstance(dilation, int) else tuple(dilation)
    if len(dilation) != n:
        raise ValueError(f"Dilation must be None, scalar or tuple/list of length {n} (the "
                         f"spatial rank). Received: dilation_rate={dilation}, input shape "
                         f"{tuple(input_shape)}")
    out = []
    for size, k, s, d in zip(spatial, window, strides, dilation):
        if size is None:
            out.append(None)
        elif padding == "valid":
            length = (size - d * (k - 1) - 1) // s + 1
            if length <= 0:
                raise ValueError(f"Computed output size would be zero or negative: {what} of "
                                 f"size {tuple(window)} (strides {strides}, dilation "
                                 f"{dilation}, padding 'valid') on inputs of shape "
                                 f"{tuple(input_shape)}.")
            out.append(length)
        elif padding in ("same", "causal"):
            out.append((size - 1) // s + 1)
        else:
            raise ValueError(f"Argument `padding` must be either 'valid' or 'same'. Received: "
                             f"padding={padding!r}")
    return tuple(out)


def compute_pooling_output_shape(input_shape, pool_size, strides, padding="valid",
                                 data_format="channels_last"):
    """Output shape of a pooling op on ``input_shape`` (batch, spatial..., channels for
    ``channels_last``); ``strides`` None means ``pool_size``.

    Raises:
        ValueError: "Computed output size would be zero or negative" for a window larger than a
            known input size with ``padding="valid"``; an unknown ``padding``.
    """
    strides = pool_size if strides is None else strides
    spatial = _window_shape(input_shape, tuple(pool_size), strides, padding, data_format, 1,
                            "a pooling window")
    if data_format == "channels_last":
        return (input_shape[0],) + spatial + (input_shape[-1],)
    return (input_shape[0], input_shape[1]) + spatial


def compute_conv_output_shape(input_shape, filters, kernel_size, strides=1, padding="valid",
                              data_format="channels_last", dilation_rate=1):
    """Output shape of an N-D convolution with ``filters`` output channels.

    Raises:
        ValueError: when ``kernel_size`` does not have one size per spatial axis, or as
            `compute_pooling_output_shape`.
    """
    kernel_size = tuple(kernel_size)
    if len(kernel_size) + 2 != len(input_shape):
        raise ValueError(f"Kernel shape must have the same length as input: a kernel of "
                         f"{len(kernel_size)} spatial sizes {kernel_size} for inputs of shape "
                         f"{tuple(input_shape)}.")
    spatial = _window_shape(input_shape, kernel_size, strides, padding, data_format,
                            dilation_rate, "a kernel")
    if data_format == "channels_last":
        return (input_shape[0],) + spatial + (filters,)
    return (input_shape[0], filters) + spatial


def compute_matmul_output_shape(shape1, shape2):
    """Output shape of ``matmul`` (a 1-D operand gets an axis that the output drops again).

    Raises:
        ValueError: when the known inner sizes differ.
    """
    a = (1,) + tuple(shape1) if len(shape1) == 1 else tuple(shape1)
    b = tuple(shape2) + (1,) if len(shape2) == 1 else tuple(shape2)
    if a[-1] is not None and b[-2] is not None and a[-1] != b[-2]:
        raise ValueError(f"Inner dimensions (`x1.shape[-1]` and `x2.shape[-2]`) must be equal. "
                         f"Received: x1.shape={tuple(shape1)}, x2.shape={tuple(shape2)}")
    out = broadcast_shapes(a[:-2], b[:-2]) + [a[-2], b[-1]]
    if len(shape1) == 1:
        del out[-2]
    if len(shape2) == 1:
        del out[-1]
    return tuple(out)


def _is_symbolic(value):
    return getattr(value, "_kerasrs_symbolic", False) or isinstance(value, Tensor)


def validate_reshape_shape(newshape, newshape_arg_name="newshape"):
    """Check the integer entries of a reshape target: each ``>= 0`` or a single ``-1``
    (entries that are not ints, such as symbolic sizes, are not checked).

    Raises:
        ValueError: "non-negative integer" for an entry below -1, "at most one unknown
            dimension" for two -1 entries.
    """
    if _is_symbolic(newshape):
        return
    ints = [d for d in newshape if isinstance(d, (int, np.integer))]
    if any(d < -1 for d in ints):
        raise ValueError(f"Each dimension in `{newshape_arg_name}` must be a non-negative "
                         f"integer, or -1 for one unknown dimension. Received: "
                         f"{newshape_arg_name}={tuple(newshape)}")
    if sum(d == -1 for d in ints) > 1:
        raise ValueError(f"There must be at most one unknown dimension (-1) in "
                         f"`{newshape_arg_name}`. Received: "
                         f"{newshape_arg_name}={tuple(newshape)}")


def compute_reshape_output_shape(input_shape, newshape, newshape_arg_name="newshape"):
    """Output shape of ``reshape(x, newshape)``: the ``-1`` resolved when every size is known,
    else ``None``; a symbolic ``newshape`` (a 1-D tensor of n sizes) gives n unknown axes.

    Raises:
        ValueError: as `validate_reshape_shape`, or "The total size of the tensor must be
            unchanged" naming both shapes.
    """
    validate_reshape_shape(newshape, newshape_arg_name)
    if _is_symbolic(newshape):
        shape = tuple(newshape.shape)
        return (None,) * shape[0] if len(shape) == 1 and shape[0] is not None else (None,)
    newshape = tuple(int(d) if isinstance(d, (int, np.integer)) else None for d in newshape)
    if None in input_shape or None in newshape:
        return tuple(None if d == -1 else d for d in newshape)
    size, known = math.prod(input_shape), math.prod(d for d in newshape if d != -1)
    if -1 not in newshape and size == known:
        return newshape
    if -1 in newshape and known and size % known == 0:
        return tuple(size // known if d == -1 else d for d in newshape)
    raise ValueError(f"The total size of the tensor must be unchanged. Received: "
                     f"input_shape={tuple(input_shape)}, {newshape_arg_name}={newshape}")


def compute_transpose_output_shape(input_shape, axes):
    """Output shape of ``transpose(x, axes)`` (None: the axes reversed).

    Raises:
        ValueError: "valid permutation" when ``axes`` is not a permutation of the input axes.
    """
    if axes is None:
        return tuple(input_shape)[::-1]
    rank, axes = len(input_shape), list(axes)
    if len(axes) != rank:
        raise ValueError(f"`axes` must be a list of the same length as the input shape: "
                         f"{rank} entries for an input of shape {tuple(input_shape)}. "
                         f"Received: axes={axes}")
    if not all(isinstance(a, (int, np.integer)) and -rank <= a < rank for a in axes):
        raise ValueError(f"Each axis in `axes` must be an integer in [-{rank}, {rank}). "
                         f"Received: axes={axes}")
    if len({a % rank for a in axes}) != rank:
        raise ValueError(f"`axes` must be a valid permutation of the input dimensions (no "
                         f"duplicates). Received: axes={axes} for an input of rank {rank}.")
    return tuple(input_shape[a] for a in axes)


def compute_take_along_axis_output_shape(input_shape, indices_shape, axis):
    """Output shape of ``take_along_axis(x, indices, axis)`` (None: on the flattened x).

    Raises:
        ValueError: when ``x`` and ``indices`` differ in rank or do not broadcast.
    """
    shape = list(input_shape)
    if axis is None:
        shape, axis = [None if None in shape else math.prod(shape)], 0
    if len(shape) != len(indices_shape):
        raise ValueError(f"`x` and `indices` must have the same number of dimensions. "
                         f"Received: x.shape={tuple(input_shape)}, "
                         f"indices.shape={tuple(indices_shape)}")
    axis = canonicalize_axis(axis, len(shape))
    shape[axis] = indices_shape[axis]
    return broadcast_shapes(shape, indices_shape)


def reduce_shape(shape, axis=None, keepdims=False):
    """``shape`` reduced over ``axis`` (None: all axes); kept as 1s with ``keepdims``."""
    if axis is None:
        return (1,) * len(shape) if keepdims else ()
    axes = {canonicalize_axis(a, len(shape)) for a in _axes(axis)}
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def get_source_inputs(tensor):
    """The input tensors a symbolic ``tensor`` was computed from, as a list (the tensor itself
    when it has no recorded history)."""
    history = getattr(tensor, "_keras_history", None)
    if not history:
        return [tensor]
    node = history[0]._inbound_nodes[history[1]]
    if node.is_input:
        return list(node.outputs)
    out = []
    for t in node.input_tensors:
        out.extend(s for s in get_source_inputs(t) if all(s is not o for o in out))
    return out
