"""Joining and splitting along axes: `concatenate`, `stack` and `split`, and NumPy's
``hstack``, ``vstack``, ``dstack``, ``array_split`` and friends, ``unstack`` and ``append``
built on them. Gradients flow through all of them (a split is a list of slices)."""

import numpy as np

from kerasrs.autodiff import Function, convert_to_tensor
from kerasrs.ops import layout
from kerasrs.ops.core import axis_index, getitem
from kerasrs.ops.layout import _axis, _shape, expand_dims, ravel
from kerasrs.ops.dispatch import op
from kerasrs.ops.promotion import promote_all


class Concatenate(Function):
    def __init__(self, axis):
        self.axis = axis

    def forward(self, *xs):
        self.sizes = np.cumsum([x.shape[self.axis] for x in xs])[:-1]
        return self.xp.concatenate(promote_all(*xs), axis=self.axis)

    def backward(self, gy):
        return tuple(self.xp.split(gy, self.sizes, axis=self.axis))


@op
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
    ax = _axis("concatenate", axis, nd, shapes[0])
    if any(s[:ax] + s[ax + 1:] != shapes[0][:ax] + shapes[0][ax + 1:] for s in shapes):
        raise ValueError(f"concatenate: inputs must match on every axis except axis {axis}. "
                         f"Received: shapes {shapes}")
    return Concatenate(ax).apply(*xs)


@op
def stack(xs, axis=0):
    """Join tensors of one shape along a new axis."""
    shapes = [_shape(x) for x in xs]
    if not shapes:
        raise ValueError("stack: needs at least one tensor. Received: an empty list")
    if any(s != shapes[0] for s in shapes):
        raise ValueError(f"stack: inputs must all have the same shape. Received: shapes {shapes}")
    _axis("stack", axis, len(shapes[0]) + 1, shapes[0])
    return concatenate([expand_dims(x, axis) for x in xs], axis=axis)


@op
def split(x, indices_or_sections, axis=0):
    """Split ``x`` along ``axis`` into a list of Tensors, as NumPy's ``split``.

    Args:
        x: Tensor.
        indices_or_sections: int ``n`` (``n`` equal parts; the axis size must divide by
            ``n``) or a sorted list of split positions.
        axis: int.

    Returns:
        list of Tensors, each differentiable (each is a slice of ``x``).

    Raises:
        ValueError: for a bad axis or an unequal split.
    """
    shape = _shape(x)
    ax = _axis("split", axis, len(shape), shape)
    n = shape[ax]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0 or n % k:
            raise ValueError(f"split: axis {axis} of size {n} cannot be split into {k} equal "
                             f"parts. Received: shape {shape}, indices_or_sections={k}")
        bounds = [i * (n // k) for i in range(k + 1)]
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    lead = (slice(None),) * ax
    return [getitem(x, lead + (slice(a, b),)) for a, b in zip(bounds[:-1], bounds[1:])]


def _atleast(x, n):
    x = convert_to_tensor(x)
    while x.ndim < n:
        x = layout.expand_dims(x, 0 if x.ndim == 0 or n == 2 else -1) if n != 3 or x.ndim != 2 \
            else layout.expand_dims(x, -1)
    return x


@op
def hstack(xs):
    """Join along axis 1 (axis 0 for 1-D inputs)."""
    xs = [convert_to_tensor(x) for x in xs]
    return concatenate(xs, axis=0 if xs[0].ndim == 1 else 1)


@op
def vstack(xs):
    """Join 1-D or 2-D arrays as rows (axis 0)."""
    return concatenate([_atleast(x, 2) for x in xs], axis=0)


@op
def dstack(xs):
    """Join along the third axis."""
    out = []
    for x in xs:
        x = convert_to_tensor(x)
        if x.ndim == 1:
            x = layout.reshape(x, (1, -1, 1))
        elif x.ndim == 2:
            x = layout.expand_dims(x, -1)
        out.append(x)
    return concatenate(out, axis=2)


@op
def array_split(x, indices_or_sections, axis=0):
    """Split into ``indices_or_sections`` parts that may differ in size by one."""
    x = convert_to_tensor(x)
    if isinstance(indices_or_sections, int):
        n = x.shape[axis_index(axis, x.ndim)]
        q, r = divmod(n, indices_or_sections)
        sizes = [q + 1] * r + [q] * (indices_or_sections - r)
        indices_or_sections = list(np.cumsum(sizes)[:-1])
    return split(x, indices_or_sections, axis=axis)


@op
def hsplit(x, indices_or_sections):
    """`split` along axis 1 (0 for 1-D)."""
    x = convert_to_tensor(x)
    return split(x, indices_or_sections, axis=0 if x.ndim == 1 else 1)


@op
def vsplit(x, indices_or_sections):
    return split(x, indices_or_sections, axis=0)


@op
def dsplit(x, indices_or_sections):
    return split(x, indices_or_sections, axis=2)


@op
def unstack(x, num=None, axis=0):
    """The slices of ``x`` along ``axis``, as a list."""
    x = convert_to_tensor(x)
    ax = axis_index(axis, x.ndim)
    key = [slice(None)] * x.ndim
    out = []
    for i in range(x.shape[ax]):
        key[ax] = i
        out.append(getitem(x, tuple(key)))
    return out


@op
def append(x1, x2, axis=None):
    """``x2`` appended to ``x1`` (both flattened when ``axis`` is None)."""
    if axis is None:
        return concatenate([ravel(x1), ravel(x2)], axis=0)
    return concatenate([convert_to_tensor(x1), convert_to_tensor(x2)], axis=axis)
