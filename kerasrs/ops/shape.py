"""Shape and layout ops: reshape, transpose, expand_dims, squeeze, broadcast_to, concatenate."""

import numpy as np

from kerasrs.autodiff import Function, Tensor


def _shape(x):
    return tuple(np.shape(x.data if isinstance(x, Tensor) else x))


class Reshape(Function):
    def __init__(self, newshape):
        self.newshape = newshape

    def forward(self, x):
        self.shape = x.shape
        return x.reshape(self.newshape)

    def backward(self, gy):
        return (gy.reshape(self.shape),)


def reshape(x, newshape):
    """``x`` with a new shape of the same size; one entry may be -1 (inferred)."""
    newshape = (newshape,) if isinstance(newshape, int) else tuple(newshape)
    size, known = int(np.prod(_shape(x))), int(np.prod([n for n in newshape if n != -1]))
    if (-1 in newshape and (known == 0 or size % known)) or (-1 not in newshape and size != known):
        raise ValueError(f"reshape: cannot reshape a tensor of shape {_shape(x)} ({size} values) "
                         f"into shape {newshape}")
    return Reshape(newshape).apply(x)


class Transpose(Function):
    def __init__(self, axes):
        self.axes = axes

    def forward(self, x):
        self.axes = tuple(range(x.ndim))[::-1] if self.axes is None else self.axes
        return x.transpose(self.axes)

    def backward(self, gy):
        return (gy.transpose(np.argsort(self.axes)),)


def transpose(x, axes=None):
    """Permute axes (reverse them when ``axes`` is None)."""
    if axes is not None:
        nd = len(_shape(x))
        axes = tuple(a % nd for a in axes) if nd else ()
        if sorted(axes) != list(range(nd)):
            raise ValueError(f"transpose: axes {axes} are not a permutation of the {nd} axes. "
                             f"Received: shape {_shape(x)}")
    return Transpose(axes).apply(x)


def expand_dims(x, axis):
    """Insert size-1 axes at ``axis`` (int or tuple), as NumPy's ``expand_dims``."""
    shape = np.expand_dims(np.empty(_shape(x), dtype=bool), axis).shape
    return Reshape(shape).apply(x)


def squeeze(x, axis=None):
    """Remove size-1 axes (all of them, or those in ``axis``)."""
    shape = _shape(x)
    try:
        new = np.squeeze(np.empty(shape, dtype=bool), axis=axis).shape
    except ValueError as e:
        raise ValueError(f"squeeze: {e}. Received: shape {shape}, axis={axis}") from None
    return Reshape(new).apply(x)


class BroadcastTo(Function):
    def __init__(self, shape):
        self.shape = shape

    def forward(self, x):
        return self.xp.broadcast_to(x, self.shape)

    def backward(self, gy):
        return (gy,)  # the engine sums it back to the input's shape


def broadcast_to(x, shape):
    """``x`` broadcast to ``shape`` (a read-only view where possible)."""
    shape = tuple(shape)
    try:
        np.broadcast_shapes(_shape(x), shape)
    except ValueError:
        raise ValueError(f"broadcast_to: cannot broadcast shape {_shape(x)} to {shape}") from None
    return BroadcastTo(shape).apply(x)


class Concatenate(Function):
    def __init__(self, axis):
        self.axis = axis

    def forward(self, *xs):
        self.sizes = np.cumsum([x.shape[self.axis] for x in xs])[:-1]
        return self.xp.concatenate(xs, axis=self.axis)

    def backward(self, gy):
        return tuple(self.xp.split(gy, self.sizes, axis=self.axis))


def concatenate(xs, axis=0):
    """Join tensors along an existing axis. All other axes must match.

    Raises:
        ValueError: for an empty list, mismatched ranks, or mismatched sizes off ``axis``.
    """
    shapes = [_shape(x) for x in xs]
    if not shapes:
        raise ValueError("concatenate: needs at least one tensor. Received: an empty list")
    nd = len(shapes[0])
    if any(len(s) != nd for s in shapes) or nd == 0:
        raise ValueError(f"concatenate: all inputs must have the same rank (>= 1). Received: "
                         f"shapes {shapes}")
    ax = axis % nd
    if any(s[:ax] + s[ax + 1:] != shapes[0][:ax] + shapes[0][ax + 1:] for s in shapes):
        raise ValueError(f"concatenate: inputs must match on every axis except axis {axis}. "
                         f"Received: shapes {shapes}")
    return Concatenate(ax).apply(*xs)


def stack(xs, axis=0):
    """Join tensors of one shape along a new axis."""
    shapes = [_shape(x) for x in xs]
    if not shapes or any(s != shapes[0] for s in shapes):
        raise ValueError(f"stack: inputs must all have the same shape. Received: shapes {shapes}")
    return concatenate([expand_dims(x, axis) for x in xs], axis=axis)


__all__ = ["reshape", "transpose", "expand_dims", "squeeze", "broadcast_to", "concatenate", "stack"]
