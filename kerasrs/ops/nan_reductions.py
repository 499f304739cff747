"""Reductions that skip NaN (``nansum``, ``nanmean``, ``nanvar``, ``nanmax``, ``nancumsum``...):
the plain reduction of the values with NaN replaced by the operation's neutral element, so
gradients flow to the non-NaN entries. ``nanargmax``/``nanargmin`` return indices (no
gradient)."""

import numpy as np

from kerasrs.autodiff import convert_to_tensor
from kerasrs.backend.dtypes import INDEX
from kerasrs.ops import core, math, reduction
from kerasrs.ops.core import no_gradient
from kerasrs.ops.dispatch import op


def _nan_fill(x, value):
    """``x`` with NaN replaced by ``value``, and the NaN mask (integers and bools hold no NaN:
    they stay as they are, so ``nanmax`` of int8 is int8)."""
    x = convert_to_tensor(x)
    nan = math.isnan(x)
    if x.dtype.kind in "iub":
        return x, nan
    return math.where(nan, value, x), nan


@op
def nansum(x, axis=None, keepdims=False):
    """Sum ignoring NaN."""
    return math.sum(_nan_fill(x, 0.0)[0], axis=axis, keepdims=keepdims)


@op
def nanprod(x, axis=None, keepdims=False):
    return reduction.prod(_nan_fill(x, 1.0)[0], axis=axis, keepdims=keepdims)


@op
def nanmean(x, axis=None, keepdims=False):
    filled, nan = _nan_fill(x, 0.0)
    count = math.sum(math.cast(core.logical_not(nan), filled.dtype), axis=axis, keepdims=keepdims)
    return core.divide(math.sum(filled, axis=axis, keepdims=keepdims), count)


@op
def nanvar(x, axis=None, keepdims=False):
    filled, nan = _nan_fill(x, 0.0)
    mu = nanmean(x, axis=axis, keepdims=True)
    dev = math.where(nan, 0.0, filled - mu)
    count = math.sum(math.cast(core.logical_not(nan), filled.dtype), axis=axis, keepdims=keepdims)
    return core.divide(math.sum(dev * dev, axis=axis, keepdims=keepdims), count)


@op
def nanstd(x, axis=None, keepdims=False):
    return math.sqrt(nanvar(x, axis=axis, keepdims=keepdims))


@op
def nanmax(x, axis=None, keepdims=False):
    return math.max(_nan_fill(x, -np.inf)[0], axis=axis, keepdims=keepdims)


@op
def nanmin(x, axis=None, keepdims=False):
    return math.min(_nan_fill(x, np.inf)[0], axis=axis, keepdims=keepdims)


@op
def nancumsum(x, axis=None, dtype=None):
    return reduction.cumsum(_nan_fill(x, 0.0)[0], axis=axis, dtype=dtype)


@op
def nancumprod(x, axis=None, dtype=None):
    return reduction.cumprod(_nan_fill(x, 1.0)[0], axis=axis, dtype=dtype)


@op
def nanargmax(x, axis=None, keepdims=False):
    return no_gradient(x, lambda xp, a: xp.nanargmax(a, axis=axis, keepdims=keepdims).astype(
        INDEX))


@op
def nanargmin(x, axis=None, keepdims=False):
    return no_gradient(x, lambda xp, a: xp.nanargmin(a, axis=axis, keepdims=keepdims).astype(
        INDEX))
