"""Shape and layout: reshape, transpose and the axis moves (``moveaxis``, ``swapaxes``,
``ravel``), flips and rolls, broadcasting, padding, tiling, and gathers (``take``,
``take_along_axis``). Each differentiable one is a `Function` pair or a composite of them."""

import numpy as np

from kerasrs import backend as backend_module
from kerasrs.autodiff import Function, Tensor, convert_to_tensor
from kerasrs.ops import operation_utils
from kerasrs.ops.core import axis_index, getitem
from kerasrs.ops.dispatch import op


def _shape(x):
    return tuple(np.shape(x.data if isinstance(x, Tensor) else x))


def _axis(op, axis, ndim, shape):
    """``axis`` in ``[0, ndim)``, or a ValueError naming ``op`` if it is out of range."""
    if not isinstance(axis, (int, np.integer)) or not -ndim <= axis < ndim:
        raise ValueError(f"{op}: axis {axis!r} is out of bounds for a tensor of rank {ndim}. "
                         f"Received: shape {shape}")
    return int(axis) % ndim


class Reshape(Function):
    def __init__(self, newshape):
        self.newshape = newshape

    def forward(self, x):
        self.shape = x.shape
        return x.reshape(self.newshape)

    def backward(self, gy):
        return (gy.reshape(self.shape),)


@op
def reshape(x, newshape):
    """``x`` with a new shape of the same size; one entry may be -1 (inferred)."""
    newshape = (newshape,) if isinstance(newshape, int) else tuple(newshape)
    if newshape and (min(newshape) < -1 or newshape.count(-1) > 1):
        operation_utils.validate_reshape_shape(newshape)  # raises with Keras's phrases
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


@op
def transpose(x, axes=None):
    """Permute axes (reverse them when ``axes`` is None)."""
    if axes is not None:
        nd = len(_shape(x))
        axes = tuple(a % nd if -nd <= a < nd else a for a in axes) if nd else tuple(axes)
        if sorted(axes) != list(range(nd)):
            raise ValueError(f"transpose: axes {axes} are not a permutation of the {nd} axes. "
                             f"Received: shape {_shape(x)}")
    return Transpose(axes).apply(x)


@op
def expand_dims(x, axis):
    """Insert size-1 axes at ``axis`` (int or tuple), as NumPy's ``expand_dims``."""
    try:
        shape = np.expand_dims(np.empty(_shape(x), dtype=bool), axis).shape
    except (ValueError, IndexError, TypeError) as e:
        raise ValueError(f"expand_dims: {e}. Received: shape {_shape(x)}, axis={axis!r}") from None
    return Reshape(shape).apply(x)


@op
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


@op
def broadcast_to(x, shape):
    """``x`` broadcast to ``shape`` (a read-only view where possible)."""
    shape = tuple(shape)
    try:
        np.broadcast_shapes(_shape(x), shape)
    except ValueError:
        raise ValueError(f"broadcast_to: cannot broadcast shape {_shape(x)} to {shape}") from None
    return BroadcastTo(shape).apply(x)


class Tile(Function):
    def __init__(self, reps):
        self.reps = reps

    def forward(self, x):
        self.shape = x.shape
        return self.xp.tile(x, self.reps)

    def backward(self, gy):  # view gy as (r0, s0, r1, s1, ...) and sum over the r axes
        nd = gy.ndim
        reps = (1,) * (nd - len(self.reps)) + tuple(self.reps)
        shape = (1,) * (nd - len(self.shape)) + tuple(self.shape)
        g = gy.reshape([n for pair in zip(reps, shape) for n in pair])
        return (g.sum(axis=tuple(range(0, 2 * nd, 2))).reshape(self.shape),)


@op
def tile(x, repeats):
    """``x`` repeated ``repeats`` times along each axis (NumPy's ``tile``): ``repeats`` is an
    int or a sequence; a shorter one applies to the trailing axes."""
    reps = (int(repeats),) if isinstance(repeats, (int, np.integer)) else tuple(map(int, repeats))
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: repeats must be >= 0. Received: repeats={repeats!r}")
    return Tile(reps).apply(x)


class Repeat(Function):
    def __init__(self, repeats, axis):
        self.repeats, self.axis = repeats, axis

    def forward(self, x):
        self.shape = x.shape
        return self.xp.repeat(x, self.repeats, axis=self.axis)

    def backward(self, gy):
        xp, ax, r = self.xp, self.axis, self.repeats
        if isinstance(r, int):  # (..., n * r, ...) -> (..., n, r, ...) summed over r
            n = self.shape[ax]
            return (gy.reshape(gy.shape[:ax] + (n, r) + gy.shape[ax + 1:]).sum(axis=ax + 1),)
        source = xp.repeat(xp.arange(self.shape[ax]), r)  # which input each output came from
        gx = xp.zeros(self.shape, gy.dtype)
        self.backend.scatter_add(gx, (slice(None),) * ax + (source,), gy)
        return (gx,)


@op
def repeat(x, repeats, axis=None):
    """Repeat each element ``repeats`` times (an int, or one count per element along
    ``axis``), as NumPy's ``repeat``; with ``axis`` None the flattened tensor is repeated."""
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    shape = _shape(x)
    ax = _axis("repeat", axis, len(shape), shape)
    if isinstance(repeats, (int, np.integer)):
        repeats = int(repeats)
        bad = repeats < 0
    else:
        repeats = backend_module.convert_to_numpy(repeats).astype("int64")
        bad = repeats.shape not in ((shape[ax],), (1,)) or (repeats < 0).any()
        repeats = int(repeats[0]) if repeats.shape == (1,) else repeats.tolist()
    if bad:
        raise ValueError(f"repeat: repeats must be >= 0 and an int or one count per element "
                         f"along axis {axis}. Received: shape {shape}")
    return Repeat(repeats, ax).apply(x)


class Pad(Function):
    def __init__(self, pad_width, mode, constant_values):
        self.pad_width, self.mode, self.value = pad_width, mode, constant_values

    def forward(self, x):
        xp, self.shape = self.xp, x.shape
        if self.mode == "constant":
            return xp.pad(x, self.pad_width, mode="constant", constant_values=self.value)
        # every other mode copies input elements: pad an index map, then gather through it
        self.source = xp.pad(xp.arange(x.size).reshape(x.shape), self.pad_width, mode=self.mode)
        return x.reshape(-1)[self.source]

    def backward(self, gy):
        if self.mode == "constant":
            return (gy[tuple(slice(a, a + n) for (a, _), n in zip(self.pad_width, self.shape))],)
        gx = self.xp.zeros(int(np.prod(self.shape)), gy.dtype)
        self.backend.scatter_add(gx, self.source.reshape(-1), gy.reshape(-1))
        return (gx.reshape(self.shape),)


_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


@op
def pad(x, pad_width, mode="constant", constant_values=None):
    """Pad ``x`` as NumPy's ``pad``.

    Args:
        x: Tensor.
        pad_width: int, ``(before, after)`` or one ``(before, after)`` pair per axis.
        mode: "constant" (default), "edge", "reflect", "symmetric" or "wrap".
        constant_values: fill value for "constant" (default 0).

    Returns:
        Tensor, differentiable: padded values copied from ``x`` send their gradient back.

    Raises:
        ValueError: for negative widths, a pad_width of the wrong shape, or an unknown mode.
    """
    shape = _shape(x)
    try:
        widths = np.broadcast_to(np.asarray(pad_width, dtype="int64"), (len(shape), 2))
    except ValueError:
        raise ValueError(f"pad: pad_width must be an int, a pair, or one pair per axis. "
                         f"Received: pad_width={pad_width!r}, shape {shape}") from None
    if (widths < 0).any() or mode not in _PAD_MODES:
        raise ValueError(f"pad: widths must be >= 0 and mode one of {_PAD_MODES}. Received: "
                         f"pad_width={pad_width!r}, mode={mode!r}")
    if constant_values is not None and mode != "constant":
        raise ValueError(f"pad: Argument `constant_values` can only be provided when "
                         f"`mode == 'constant'`. Received: mode={mode!r}")
    widths = tuple((int(a), int(b)) for a, b in widths)
    return Pad(widths, mode, 0 if constant_values is None else constant_values).apply(x)


class Take(Function):
    def __init__(self, indices, axis):
        self.indices, self.axis = indices, axis

    def forward(self, x):
        self.shape = x.shape
        return self.xp.take(x, self.indices, axis=self.axis)

    def backward(self, gy):
        if self.axis == 0 and len(self.shape) == 2:  # an embedding lookup: the fused kernel
            n = self.shape[0]
            return (self.backend.embedding_grad(self.indices % n, gy, n),)
        gx = self.xp.zeros(self.shape, gy.dtype)
        self.backend.scatter_add(gx, (slice(None),) * self.axis + (self.indices,), gy)
        return (gx,)


def _indices(op, indices, x):
    idx = convert_to_tensor(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"{op}: indices must be integers. Received: dtype {idx.dtype}")
    return idx.data if idx.backend is x.backend else x.backend.asarray(idx.numpy())


@op
def take(x, indices, axis=None):
    """Elements of ``x`` at integer ``indices`` along ``axis`` (of the flattened ``x`` when
    None), as NumPy's ``take``. Negative indices count from the end. Differentiable in ``x``
    (repeated indices add their gradients).

    Raises:
        IndexError: for an index out of range. TypeError: for non-integer indices.
    """
    x = convert_to_tensor(x)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    ax = _axis("take", axis, x.ndim, x.shape)
    idx = _indices("take", indices, x)
    n = x.shape[ax]
    if idx.size and (int(idx.min()) < -n or int(idx.max()) >= n):
        raise IndexError(f"take: indices must be in [-{n}, {n}) along axis {axis}. Received: "
                         f"indices from {int(idx.min())} to {int(idx.max())}, shape {x.shape}")
    return Take(idx, ax).apply(x)


class TakeAlongAxis(Function):
    def __init__(self, indices, axis):
        self.indices, self.axis = indices, axis

    def forward(self, x):
        self.shape = x.shape
        return self.xp.take_along_axis(x, self.indices, axis=self.axis)

    def backward(self, gy):  # scatter-add through open-mesh indices (x may be broadcast)
        xp, ax = self.xp, self.axis
        key = []
        for d, n in enumerate(gy.shape):
            if d == ax:
                key.append(xp.broadcast_to(self.indices, gy.shape))
            else:
                shape = [1] * gy.ndim
                shape[d] = n
                key.append(xp.arange(n).reshape(shape) if self.shape[d] == n
                           else xp.zeros(shape, dtype="int64"))
        gx = xp.zeros(self.shape, gy.dtype)
        self.backend.scatter_add(gx, tuple(key), gy)
        return (gx,)


@op
def take_along_axis(x, indices, axis=None):
    """``x`` gathered at ``indices`` along ``axis``, as NumPy's ``take_along_axis``: indices
    has ``x``'s rank and broadcasts against it on the other axes (axis None: both flattened).
    Differentiable in ``x``."""
    x = convert_to_tensor(x)
    idx = _indices("take_along_axis", indices, x)
    if axis is None:
        x, idx, axis = reshape(x, (-1,)), idx.reshape(-1), 0
    ax = _axis("take_along_axis", axis, x.ndim, x.shape)
    if idx.ndim != x.ndim:
        raise ValueError(f"take_along_axis: indices must have the rank of x. Received: shapes "
                         f"{x.shape} and {tuple(idx.shape)}")
    n = x.shape[ax]
    if idx.size and (int(idx.min()) < -n or int(idx.max()) >= n):
        raise IndexError(f"take_along_axis: indices must be in [-{n}, {n}) along axis {axis}. "
                         f"Received: indices from {int(idx.min())} to {int(idx.max())}, "
                         f"shape {x.shape}")
    idx = idx % n if idx.size else idx  # negative indices count from the end
    return TakeAlongAxis(idx, ax).apply(x)


@op
def flip(x, axis=None):
    """``x`` reversed along ``axis`` (all axes when None)."""
    x = convert_to_tensor(x)
    axes = range(x.ndim) if axis is None else [axis] if isinstance(axis, int) else axis
    key = [slice(None)] * x.ndim
    for a in axes:
        key[axis_index(a, x.ndim, "flip")] = slice(None, None, -1)
    return getitem(x, tuple(key))


@op
def fliplr(x):
    """``x`` reversed along axis 1."""
    return flip(x, 1)


@op
def flipud(x):
    """``x`` reversed along axis 0."""
    return flip(x, 0)


@op
def rot90(array, k=1, axes=(0, 1)):
    """``array`` rotated by ``k * 90`` degrees in the plane of ``axes``."""
    x = convert_to_tensor(array)
    k %= 4
    a, b = axes
    if k == 0:
        return x
    if k == 2:
        return flip(flip(x, a), b)
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return transpose(flip(x, b), perm) if k == 1 else flip(transpose(x, perm), b)


@op
def roll(x, shift, axis=None):
    """``x`` with elements shifted by ``shift`` along ``axis`` (flattened when None), wrapping."""
    x = convert_to_tensor(x)
    if axis is None:
        return reshape(roll(reshape(x, (-1,)), shift, 0), x.shape)
    ax = axis_index(axis, x.ndim, "roll")
    n = x.shape[ax]
    idx = (np.arange(n) - shift) % n if n else np.arange(0)
    return take(x, idx, axis=ax)


@op
def moveaxis(x, source, destination):
    """``x`` with axes moved from ``source`` to ``destination`` (ints or sequences)."""
    x = convert_to_tensor(x)
    return transpose(x, _moved(x.ndim, source, destination))


def _moved(ndim, source, destination):
    src = [axis_index(s, ndim, "moveaxis") for s in np.atleast_1d(source)]
    dst = [axis_index(d, ndim, "moveaxis") for d in np.atleast_1d(destination)]
    order = [a for a in range(ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return order


@op
def swapaxes(x, axis1, axis2):
    """``x`` with two axes exchanged."""
    x = convert_to_tensor(x)
    perm = list(range(x.ndim))
    a = _axis("swapaxes", axis1, x.ndim, x.shape)
    b = _axis("swapaxes", axis2, x.ndim, x.shape)
    perm[a], perm[b] = perm[b], perm[a]
    return transpose(x, perm)


@op
def ravel(x):
    """``x`` flattened to 1-D."""
    return reshape(x, (-1,))


def _install_methods():
    """Tensor methods that NumPy users expect, delegating to the plain functions of the ops
    above (``__wrapped__``: a method's ``self`` is never symbolic)."""
    reshape_, transpose_, squeeze_ = reshape.__wrapped__, transpose.__wrapped__, \
        squeeze.__wrapped__
    Tensor.T = property(lambda self: transpose_(self))
    Tensor.reshape = lambda self, *shape: reshape_(
        self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)
    Tensor.transpose = lambda self, *axes: transpose_(
        self, (axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes) or None)
    Tensor.squeeze = lambda self, axis=None: squeeze_(self, axis)


_install_methods()
