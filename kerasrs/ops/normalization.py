"""Normalization ops: batch normalization (training and inference), layer normalization,
``normalize`` (by the norm) and RMS normalization.

Each training-time normalization is one `Function` whose backward is the closed form of the
gradient (Ioffe & Szegedy, 2015, section 3), so the tape records one op instead of about ten and
no intermediate is kept but the normalized input. With ``x̂ = (x - mean) * inv``,
``inv = 1 / sqrt(var + eps)`` (biased variance over the ``n`` reduced elements) and
``y = x̂ * gamma + beta``:

    d beta  = sum(gy)                d gamma = sum(gy * x̂)
    d x     = gamma * inv * (gy - d beta / n - x̂ * d gamma / n)

(sums over the reduced axes). Layer normalization is the same with the roles of the axes swapped:
the statistics are per example and ``gamma``/``beta`` are per feature.

Both work on a 2-D ``(rows, features)`` view of the input. Plain sums are BLAS matrix-vector
products with a vector of ones and sums of products are ``einsum("ij,ij->j")``: on this
project's CPU both are about 3-5x faster than NumPy's axis reductions (measured), which matters
because normalization is memory-bound.
"""

import numpy as np

from kerasrs.autodiff import Function, convert_to_tensor
from kerasrs.backend import is_float_dtype
from kerasrs.ops import core, math, reduction
from kerasrs.ops.core import EPSILON, sorted_axes
from kerasrs.ops.dispatch import op
from kerasrs.ops.layout import reshape, transpose


def _axis_list(op, axis, ndim):
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    if not axes or any(not -ndim <= a < ndim for a in axes):
        raise ValueError(f"{op}: every axis must be in [-{ndim}, {ndim}) for an input of rank "
                         f"{ndim}. Received: axis={axis!r}")
    return sorted(int(a) % ndim for a in axes)


def _param_shape(x_shape, kept):
    """Broadcast shape of a per-``kept``-axes parameter: the input's sizes there, 1 elsewhere."""
    return tuple(n if i in kept else 1 for i, n in enumerate(x_shape))


def _rows(xp, x, axis):
    """``x`` as a 2-D ``(rows, features)`` array with the feature ``axis`` last (a view when
    ``axis`` already is last and ``x`` is contiguous)."""
    x = x if axis == x.ndim - 1 else xp.moveaxis(x, axis, -1)
    return x.reshape(-1, x.shape[-1])


def _unrows(xp, y2, shape, axis):
    """Inverse of `_rows` for an input of ``shape``."""
    moved = shape[:axis] + shape[axis + 1:] + (shape[axis],)
    y = y2.reshape(moved)
    return y if axis == len(shape) - 1 else xp.moveaxis(y, -1, axis)


def _column_sum(xp, a):
    """``a.sum(0)`` of a 2-D array as one BLAS matrix-vector product (about 5x NumPy's)."""
    return xp.ones(a.shape[0], a.dtype) @ a


class FusedBatchNorm(Function):
    """Training-mode batch normalization on the ``(rows, features)`` view of the input; keeps
    the batch ``mean`` and biased ``var`` (``(features,)`` arrays) for the moving averages."""
    half_in_float32 = "always"

    def __init__(self, axis, epsilon):
        self.axis, self.epsilon = axis, epsilon

    def forward(self, x, gamma, beta):
        xp, self.shape = self.xp, x.shape
        x2 = _rows(xp, x, self.axis)
        self.count = x2.shape[0]
        self.mean = _column_sum(xp, x2) / x.dtype.type(self.count)
        xhat = x2 - self.mean
        self.var = xp.einsum("ij,ij->j", xhat, xhat) / x.dtype.type(self.count)
        self.inv = 1 / xp.sqrt(self.var + x.dtype.type(self.epsilon))
        xhat *= self.inv
        self.xhat, self.gamma = xhat, gamma
        y = xhat * gamma
        y += beta
        return _unrows(xp, y, self.shape, self.axis)

    def backward(self, gy):
        xp, n = self.xp, self.count
        gy2 = _rows(xp, gy, self.axis)
        gbeta = _column_sum(xp, gy2)
        ggamma = xp.einsum("ij,ij->j", gy2, self.xhat)
        gx = None
        if self.needs_grad[0]:
            gx = self.xhat * (ggamma / n)
            gx += gbeta / n
            xp.subtract(gy2, gx, out=gx)
            gx *= self.gamma * self.inv
            gx = _unrows(xp, gx, self.shape, self.axis)
        return gx, ggamma, gbeta


def fused_batch_normalization(x, gamma=None, beta=None, axis=-1, epsilon=1e-3):
    """Batch normalization with the batch's own statistics (training mode), as one op.

    Normalizes over every axis but ``axis`` with the batch mean and the biased (population)
    variance, then scales by ``gamma`` and shifts by ``beta``. The gradient flows to ``x``,
    ``gamma`` and ``beta`` (through the statistics too, as composing the ops would).

    Args:
        x: float Tensor of rank >= 1 (rank >= 2 in practice: batch first).
        gamma: Tensor of shape ``(x.shape[axis],)`` or None (no scaling).
        beta: Tensor of shape ``(x.shape[axis],)`` or None (no shift).
        axis: int, the feature axis. Defaults to -1.
        epsilon: float added to the variance. Defaults to 1e-3 (Keras).

    Returns:
        ``(outputs, mean, variance)``: ``outputs`` like ``x``; ``mean`` and ``variance`` of shape
        ``(x.shape[axis],)``, constants (not differentiable), for the moving averages.

    Raises:
        ValueError: if ``axis`` is out of range or a parameter has the wrong shape.
    """
    x = convert_to_tensor(x)
    (axis,) = _axis_list("fused_batch_normalization", axis, x.ndim)
    be = x.backend
    gamma, beta = _params("fused_batch_normalization", x, gamma, beta, (x.shape[axis],))
    f = FusedBatchNorm(axis, float(epsilon))
    y = f.apply(x, gamma, beta)
    return y, core.constant(f.mean, be), core.constant(f.var, be)


def _params(op, x, gamma, beta, want):
    """``gamma``/``beta`` as Tensors of shape ``want`` (ones/zeros constants for None)."""
    be, out = x.backend, []
    for name, value, fill in (("gamma", gamma, 1), ("beta", beta, 0)):
        if value is None:
            out.append(core.constant(be.xp.full(want, fill, dtype=x.dtype), be))
            continue
        value = convert_to_tensor(value)
        if value.shape != tuple(want):
            raise ValueError(f"{op}: `{name}` must have shape {tuple(want)} for an input of "
                             f"shape {x.shape}. Received: {name} shape {value.shape}")
        out.append(value)
    return out


@op
def batch_normalization(x, mean, variance, axis, offset=None, scale=None, epsilon=1e-3):
    """``(x - mean) / sqrt(variance + epsilon) * scale + offset`` with given statistics
    (Keras's ``ops.batch_normalization``; the inference form of batch normalization).

    Computed as ``x * a + b`` with per-feature vectors ``a = scale * rsqrt(variance + eps)`` and
    ``b = offset - mean * a``: two passes over ``x``. Differentiable in every argument.

    Args:
        x: float Tensor. mean, variance: Tensors of shape ``(x.shape[axis],)``.
        axis: int, the feature axis. offset, scale: Tensors like ``mean``, or None.
        epsilon: float. Defaults to 1e-3.

    Returns:
        Tensor like ``x``.

    Raises:
        ValueError: if ``axis`` is out of range.
    """
    x = convert_to_tensor(x)
    (axis,) = _axis_list("batch_normalization", axis, x.ndim)
    a = math.rsqrt(core.add(variance, epsilon))
    if scale is not None:
        a = core.multiply(a, scale)
    b = core.negative(core.multiply(mean, a))
    if offset is not None:
        b = core.add(b, offset)
    if axis != x.ndim - 1:
        bshape = _param_shape(x.shape, {axis})
        a, b = reshape(a, bshape), reshape(b, bshape)
    return core.add(core.multiply(x, a), b)


class FusedLayerNorm(Function):
    """Layer normalization over the trailing axes of sizes ``param_shape`` (the input seen as
    ``(rows, size)``), with ``gamma``/``beta`` of ``param_shape``: the backend kernels
    ``layer_norm`` / ``layer_norm_grad`` (one pass each way on the CPU; statistics in float32
    at least)."""
    half_in_float32 = "always"
    writes_out = True
    writes_grad_out = (0,)

    def __init__(self, param_shape, epsilon):
        self.gamma_shape, self.epsilon = tuple(param_shape), epsilon
        self.size = int(np.prod(param_shape))

    def forward(self, x, gamma, beta):
        self.shape = x.shape
        self.x2, self.gamma = x.reshape(-1, self.size), gamma.reshape(-1)
        out = self.out
        out = out.reshape(self.x2.shape) if out is not None and out.dtype == x.dtype else None
        y, self.mean, self.rstd = self.backend.layer_norm(self.x2, self.gamma, beta.reshape(-1),
                                                          self.epsilon, out=out)
        return y.reshape(self.shape)

    def backward(self, gy):
        out = (self.grad_out or (None,))[0]
        out = out.reshape(self.x2.shape) if out is not None and out.dtype == gy.dtype else None
        gx, ggamma, gbeta = self.backend.layer_norm_grad(gy.reshape(-1, self.size), self.x2,
                                                         self.gamma, self.mean, self.rstd,
                                                         out=out)
        return gx.reshape(self.shape), ggamma.reshape(self.gamma_shape), \
            gbeta.reshape(self.gamma_shape)


@op
def layer_normalization(x, gamma=None, beta=None, axis=-1, epsilon=1e-3, rms_scaling=False):
    """Layer normalization (Ba et al., 2016) over ``axis``, as Keras's ``ops.layer_normalization``.

    Each example is normalized with its own mean and biased variance over ``axis`` (int or
    list of ints), then scaled by ``gamma`` and shifted by ``beta``, which have the sizes of the
    normalized axes. One fused op (see the module docstring).

    With ``rms_scaling=True`` (Keras's deprecated mode, kept for compatibility) the output is
    ``x * rsqrt(var(x) + epsilon) * gamma``: no centering and no ``beta``, composed from ops.

    Args:
        x: float Tensor. gamma, beta: Tensors of shape ``[x.shape[a] for a in axis]``, or None.
        axis: int or list of ints. Defaults to -1. epsilon: float. Defaults to 1e-3.

    Returns:
        Tensor like ``x``.

    Raises:
        ValueError: if an axis is out of range or a parameter has the wrong shape.
    """
    x = convert_to_tensor(x)
    axes = _axis_list("layer_normalization", axis, x.ndim)
    want = tuple(x.shape[a] for a in axes)
    gamma, beta = _params("layer_normalization", x, gamma, beta, want)
    if rms_scaling:
        bshape = _param_shape(x.shape, set(axes))
        inv = math.rsqrt(core.add(reduction.var(x, axis=tuple(axes), keepdims=True), epsilon))
        return _like_x(core.multiply(core.multiply(x, inv), reshape(gamma, bshape)), x)
    trailing = axes == list(range(x.ndim - len(axes), x.ndim))
    if not trailing:  # move the normalized axes last, normalize, move them back
        rest = [i for i in range(x.ndim) if i not in axes]
        perm = rest + axes
        y = layer_normalization(transpose(x, perm), gamma, beta,
                                list(range(len(rest), x.ndim)), epsilon)
        return transpose(y, list(np.argsort(perm)))
    return _like_x(FusedLayerNorm(want, float(epsilon)).apply(x, gamma, beta), x)


def _like_x(y, x):
    """``y`` in ``x``'s dtype: Keras's normalizations return the input's dtype, whatever the
    dtype of their scale and offset (float16 ``x`` with float32 ``gamma`` gives float16)."""
    return y if y.dtype == x.dtype or not is_float_dtype(x.dtype) else math.cast(y, x.dtype)


# -- normalize and RMS normalization (Keras's ops.normalize, ops.rms_normalization) --------
class Normalize(Function):
    """``x / max(norm_p(x), eps)``; for p = 2 as ``x * rsqrt(max(sum x^2, eps^2))``."""
    half_in_float32 = "always"

    def __init__(self, axis, order, epsilon):
        self.axis, self.order, self.epsilon = axis, order, epsilon

    def forward(self, x):
        xp, p, eps = self.xp, self.order, self.epsilon
        self.x = x
        if p == 2:
            s = (x * x).sum(axis=self.axis, keepdims=True)
            self.inside = s > eps * eps
            self.scale = 1 / xp.sqrt(xp.maximum(s, eps * eps))
        else:
            norm = ((xp.abs(x) ** p).sum(axis=self.axis, keepdims=True)) ** (1 / p)
            self.inside = norm > eps
            self.norm = norm
            self.scale = 1 / xp.maximum(norm, eps)
        return x * self.scale

    def backward(self, gy):
        xp, x, p, scale = self.xp, self.x, self.order, self.scale
        dot = (gy * x).sum(axis=self.axis, keepdims=True) * self.inside
        if p == 2:  # d/dx of x * s^-1/2 with s = sum x^2 (0 where the floor is active)
            return (gy * scale - x * (dot * scale ** 3),)
        safe = xp.where(self.inside, self.norm, 1)
        dnorm = xp.sign(x) * (xp.abs(x) / safe) ** (p - 1)
        return (gy * scale - dnorm * (dot * scale * scale),)


@op
def normalize(x, axis=-1, order=2, epsilon=None):
    """``x / max(norm(x), epsilon)`` along ``axis``, Keras's ``ops.normalize``.

    For ``order=2`` computed as ``x * rsqrt(max(sum(x**2), epsilon**2))``: Keras's forward rule
    ``x * min(rsqrt(sum x**2), 1/epsilon)`` with the floor moved inside, so a zero vector gives
    0 and finite gradients (``1/epsilon`` times the upstream gradient) instead of NaN.

    Args:
        x: float Tensor; a 0-d input is treated as shape ``(1,)``, as Keras does.
        axis: int or tuple of ints. Defaults to -1.
        order: int >= 1, the norm's exponent. Defaults to 2.
        epsilon: lower bound for the norm; None means 1e-7 (Keras's ``epsilon()``).

    Returns:
        Tensor of ``x``'s shape (``(1,)`` for a 0-d input) and dtype.

    Raises:
        ValueError: if ``order`` is not an int >= 1, ``axis`` is out of range, or ``order`` is
            not 2 while ``axis`` names several axes (a matrix norm in Keras).
    """
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 1:
        raise ValueError(f"normalize: Argument `order` must be an int >= 1. Received: "
                         f"order={order!r}")
    x = convert_to_tensor(x)
    if x.ndim == 0:
        x = reshape(x, (1,))
    axes = sorted_axes("normalize", x, axis)
    if order != 2 and len(axes) > 1:
        raise ValueError("normalize: an `order` other than 2 over several axes would be a matrix "
                         f"norm, which is not supported. Received: order={order}, axis={axis}")
    eps = EPSILON if epsilon is None else float(epsilon)
    return Normalize(axes, int(order), eps).apply(x)


@op
def rms_normalization(x, scale=1, axis=-1, epsilon=None):
    """``x / sqrt(mean(x**2, axis) + epsilon) * scale`` (Zhang & Sennrich 2019)."""
    x = convert_to_tensor(x)
    eps = 1e-6 if epsilon is None else epsilon
    y = x * math.rsqrt(math.mean(math.square(x), axis=axis, keepdims=True) + eps) * scale
    return _like_x(y, x)
