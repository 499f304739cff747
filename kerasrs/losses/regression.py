"""Regression losses: squared, absolute, percentage, logarithmic, Huber, log-cosh, cosine.

Each function takes ``y_true`` (array-like, cast to ``y_pred``'s dtype) and ``y_pred`` (Tensor
or array, shape ``(batch, ..., d)``) and returns one value per sample, shape ``(batch, ...)``:
the last axis is averaged (summed for `cosine_similarity`), as Keras does. Ranks that differ by a
trailing size-1 axis are aligned first. Gradients flow to ``y_pred`` only.
"""

import math

from kerasrs import ops
from kerasrs.losses import base

EPSILON = 1e-7  # Keras's backend.epsilon()


def mean_squared_error(y_true, y_pred):
    """``mean((y_true - y_pred)**2, axis=-1)``."""
    y_true, y_pred = base.prepare(y_true, y_pred)
    return ops.mean(ops.square(y_true - y_pred), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """``mean(|y_true - y_pred|, axis=-1)``. The gradient at a zero error is 0."""
    y_true, y_pred = base.prepare(y_true, y_pred)
    return ops.mean(ops.abs(y_true - y_pred), axis=-1)


def mean_absolute_percentage_error(y_true, y_pred):
    """``100 * mean(|(y_true - y_pred) / max(|y_true|, 1e-7)|, axis=-1)``, in percent."""
    y_true, y_pred = base.prepare(y_true, y_pred)
    scale = ops.maximum(ops.abs(y_true), EPSILON)
    return 100.0 * ops.mean(ops.abs((y_true - y_pred) / scale), axis=-1)


def mean_squared_logarithmic_error(y_true, y_pred):
    """``mean((log(max(y_pred, 1e-7) + 1) - log(max(y_true, 1e-7) + 1))**2, axis=-1)``."""
    y_true, y_pred = base.prepare(y_true, y_pred)
    first = ops.log1p(ops.maximum(y_pred, EPSILON))
    second = ops.log1p(ops.maximum(y_true, EPSILON))
    return ops.mean(ops.square(first - second), axis=-1)


def huber(y_true, y_pred, delta=1.0):
    """Huber (1964) loss: ``0.5 e**2`` for ``|e| <= delta``, else ``delta |e| - 0.5 delta**2``,
    with ``e = y_pred - y_true``, averaged over the last axis.

    Raises:
        ValueError: if ``delta`` is not positive.
    """
    if not delta > 0:
        raise ValueError(f"huber: `delta` must be > 0. Received: delta={delta!r}")
    y_true, y_pred = base.prepare(y_true, y_pred)
    error = y_pred - y_true
    abs_error = ops.abs(error)
    quadratic = 0.5 * ops.square(error)
    linear = delta * abs_error - 0.5 * delta * delta
    return ops.mean(ops.where(abs_error.data <= delta, quadratic, linear), axis=-1)


def log_cosh(y_true, y_pred):
    """``mean(log(cosh(y_pred - y_true)), axis=-1)``, computed as
    ``|e| + softplus(-2|e|) - log 2`` so large errors do not overflow; gradient ``tanh(e)``."""
    y_true, y_pred = base.prepare(y_true, y_pred)
    abs_error = ops.abs(y_pred - y_true)
    return ops.mean(abs_error + ops.softplus(-2.0 * abs_error) - math.log(2.0), axis=-1)


def cosine_similarity(y_true, y_pred, axis=-1):
    """``-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)``: -1 for parallel vectors.

    A zero vector gives 0 with finite gradients (behaviour case C11): the normalisation is
    ``x * rsqrt(max(sum(x**2), 1e-14))`` (`kerasrs.ops.normalize`).
    """
    y_true, y_pred = base.prepare(y_true, y_pred)
    return -ops.sum(ops.normalize(y_true, axis=axis) * ops.normalize(y_pred, axis=axis),
                    axis=axis)


class MeanSquaredError(base.LossFunctionWrapper):
    """`mean_squared_error` as a `Loss`. Args: ``reduction``, ``name``, ``dtype``."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, reduction=reduction, name=name, dtype=dtype)


class MeanAbsoluteError(base.LossFunctionWrapper):
    """`mean_absolute_error` as a `Loss`."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_error", dtype=None):
        super().__init__(mean_absolute_error, reduction=reduction, name=name, dtype=dtype)


class MeanAbsolutePercentageError(base.LossFunctionWrapper):
    """`mean_absolute_percentage_error` as a `Loss`."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_percentage_error",
                 dtype=None):
        super().__init__(mean_absolute_percentage_error, reduction=reduction, name=name,
                         dtype=dtype)


class MeanSquaredLogarithmicError(base.LossFunctionWrapper):
    """`mean_squared_logarithmic_error` as a `Loss`."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_logarithmic_error",
                 dtype=None):
        super().__init__(mean_squared_logarithmic_error, reduction=reduction, name=name,
                         dtype=dtype)


class Huber(base.LossFunctionWrapper):
    """`huber` as a `Loss`. Args: ``delta`` (default 1.0), ``reduction``, ``name``, ``dtype``."""

    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name="huber_loss",
                 dtype=None):
        super().__init__(huber, reduction=reduction, name=name, dtype=dtype, delta=delta)


class LogCosh(base.LossFunctionWrapper):
    """`log_cosh` as a `Loss`."""

    def __init__(self, reduction="sum_over_batch_size", name="log_cosh", dtype=None):
        super().__init__(log_cosh, reduction=reduction, name=name, dtype=dtype)


class CosineSimilarity(base.LossFunctionWrapper):
    """`cosine_similarity` as a `Loss`. Args: ``axis`` (default -1), ``reduction``, ``name``."""

    def __init__(self, axis=-1, reduction="sum_over_batch_size", name="cosine_similarity",
                 dtype=None):
        super().__init__(cosine_similarity, reduction=reduction, name=name, dtype=dtype,
                         axis=axis)
