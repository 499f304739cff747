"""Diagonals, triangles and products of vectors and matrices with NumPy's names (``diagonal``,
``trace``, ``tril``, ``outer``, ``tensordot``, ``kron``, ``cross``...). Composites of indexing,
``einsum``, ``matmul`` and ``where``, so gradients flow through them."""

import builtins

import numpy as np

from kerasrs.autodiff import convert_to_tensor
from kerasrs.ops import contraction, core, layout, math, stacking
from kerasrs.ops.core import axis_index, constant, getitem
from kerasrs.ops.dispatch import op
from kerasrs.ops.layout import moveaxis, ravel


@op
def diagonal(x, offset=0, axis1=0, axis2=1):
    """The diagonal of each 2-D slice in the plane ``(axis1, axis2)``, as the last axis."""
    x = convert_to_tensor(x)
    a1, a2 = axis_index(axis1, x.ndim), axis_index(axis2, x.ndim)
    rest = [a for a in range(x.ndim) if a not in (a1, a2)]
    y = layout.transpose(x, rest + [a1, a2])
    n, m = y.shape[-2], y.shape[-1]
    i = np.arange(builtins.max(0, -offset), builtins.min(n, m - offset))
    return getitem(y, (Ellipsis, i, i + offset))


@op
def trace(x, offset=0, axis1=0, axis2=1):
    """Sum of the diagonal."""
    return math.sum(diagonal(x, offset, axis1, axis2), axis=-1)


@op
def diag(x, k=0):
    """A 1-D ``x`` as the ``k``-th diagonal of a matrix, or a 2-D ``x``'s ``k``-th diagonal."""
    x = convert_to_tensor(x)
    if x.ndim == 2:
        return diagonal(x, k)
    if x.ndim != 1:
        raise ValueError(f"diag: `x` must be 1-D or 2-D. Received shape {x.shape}")
    n = x.shape[0] + builtins.abs(k)
    rows, cols = np.arange(x.shape[0]) + builtins.max(-k, 0), np.arange(x.shape[0]) + \
        builtins.max(k, 0)
    flat = rows * n + cols
    onehot = np.zeros((x.shape[0], n * n), dtype=x.dtype)
    onehot[np.arange(x.shape[0]), flat] = 1
    out = core.matmul(x, constant(x.backend.asarray(onehot), x.backend))  # int8: int32 products
    return layout.reshape(math.cast(out, x.dtype) if out.dtype != x.dtype else out, (n, n))


@op
def diagflat(x, k=0):
    return diag(ravel(x), k)


@op
def tril(x, k=0):
    """``x`` with the elements above diagonal ``k`` (of the last two axes) zeroed."""
    x = convert_to_tensor(x)
    mask = np.tri(x.shape[-2], x.shape[-1], k, dtype=bool)
    return math.where(constant(x.backend.asarray(mask), x.backend), x, x.dtype.type(0))


@op
def triu(x, k=0):
    """``x`` with the elements below diagonal ``k`` zeroed."""
    x = convert_to_tensor(x)
    mask = ~np.tri(x.shape[-2], x.shape[-1], k - 1, dtype=bool)
    return math.where(constant(x.backend.asarray(mask), x.backend), x, x.dtype.type(0))


@op
def outer(x1, x2):
    """Outer product of the flattened inputs."""
    return core.multiply(layout.expand_dims(ravel(x1), 1), layout.expand_dims(ravel(x2), 0))


@op
def inner(x1, x2):
    """Sum product over the last axes (scalar inputs multiply)."""
    a, b = convert_to_tensor(x1), convert_to_tensor(x2)
    if a.ndim == 0 or b.ndim == 0:
        return core.multiply(a, b)
    return tensordot(a, b, axes=([-1], [-1]))


@op
def vdot(x1, x2):
    """Dot product of the flattened inputs, in their promoted dtype."""
    return contraction.einsum("i,i->", ravel(x1), ravel(x2))


@op
def tensordot(x1, x2, axes=2):
    """Sum products over ``axes`` (an int: the last/first ``axes`` axes; or two lists)."""
    a, b = convert_to_tensor(x1), convert_to_tensor(x2)
    if isinstance(axes, int):
        ax_a, ax_b = list(range(a.ndim - axes, a.ndim)), list(range(axes))
    else:
        ax_a, ax_b = [np.atleast_1d(v).tolist() for v in axes]
    ax_a, ax_b = [axis_index(v, a.ndim) for v in ax_a], [axis_index(v, b.ndim) for v in ax_b]
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    sa = [next(letters) for _ in range(a.ndim)]
    sb = [next(letters) for _ in range(b.ndim)]
    for i, j in zip(ax_a, ax_b):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in ax_a] + \
        [c for j, c in enumerate(sb) if j not in ax_b]
    return contraction.einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b)


@op
def kron(x1, x2):
    """Kronecker product of two arrays of the same rank."""
    a, b = convert_to_tensor(x1), convert_to_tensor(x2)
    nd = builtins.max(a.ndim, b.ndim)
    a = layout.reshape(a, (1,) * (nd - a.ndim) + a.shape)
    b = layout.reshape(b, (1,) * (nd - b.ndim) + b.shape)
    ea = layout.reshape(a, tuple(d for s in a.shape for d in (s, 1)))
    eb = layout.reshape(b, tuple(d for s in b.shape for d in (1, s)))
    return layout.reshape(core.multiply(ea, eb), tuple(p * q for p, q in zip(a.shape, b.shape)))


@op
def cross(x1, x2, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross product of 3-vectors along the given axes."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(convert_to_tensor(x1), axisa, -1), moveaxis(convert_to_tensor(x2), axisb, -1)
    if a.shape[-1] != 3 or b.shape[-1] != 3:
        raise ValueError(f"cross: vectors must have 3 components. Received shapes "
                         f"{a.shape} and {b.shape}")
    a0, a1, a2 = (a[..., i] for i in range(3))
    b0, b1, b2 = (b[..., i] for i in range(3))
    c = stacking.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return moveaxis(c, -1, axisc)
