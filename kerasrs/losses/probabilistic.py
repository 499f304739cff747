"""Probabilistic losses: binary, categorical and sparse cross-entropy, their focal (Lin et al.
2017) and generalized (Zhang & Sabuncu 2018) variants, KL divergence, Poisson.

The cross-entropies are Keras 3's, built on `kerasrs.ops`'s stable kernels: with
``from_logits=True`` they are finite for logits of any size (C06); on probabilities they clip to
``[1e-7, 1 - 1e-7]``, so exact 0 and 1 give finite values and gradients (C08). Values are in
nats, one per sample (the class axis is reduced).
"""

import numpy as np

from kerasrs import ops
from kerasrs.losses import base

EPSILON = 1e-7


def _check_smoothing(op, label_smoothing):
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"{op}: `label_smoothing` must be in [0, 1]. Received: "
                         f"label_smoothing={label_smoothing!r}")


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Binary cross-entropy averaged over ``axis``: ``mean(-(t log p + (1-t) log(1-p)))``.

    Args:
        y_true: targets in [0, 1] (cast to ``y_pred``'s dtype), shape of ``y_pred`` (a missing or
            extra trailing size-1 axis is fixed as in Keras).
        y_pred: probabilities, or logits with ``from_logits=True``, shape ``(batch, ..., d)``.
        from_logits: bool. Defaults to False.
        label_smoothing: float in [0, 1]; targets become ``t (1 - s) + 0.5 s``.
        axis: the axis averaged over. Defaults to -1.

    Returns:
        Tensor of shape ``(batch, ...)`` (``axis`` removed), in nats.

    Raises:
        ValueError: for ``label_smoothing`` outside [0, 1] or shapes that do not match.
    """
    _check_smoothing("binary_crossentropy", label_smoothing)
    y_true, y_pred = base.prepare(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    return ops.mean(ops.binary_crossentropy(y_true, y_pred, from_logits=from_logits), axis=axis)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Cross-entropy ``-sum(t log p, axis)`` between one-hot (or soft) targets and predictions.

    Args:
        y_true: targets, same shape as ``y_pred``; each slice along ``axis`` a distribution.
        y_pred: probabilities (renormalised to sum 1, then clipped; an all-zero row gives
            16.118 rather than NaN) or logits with ``from_logits=True``.
        from_logits: bool. Defaults to False.
        label_smoothing: float in [0, 1]; targets become ``t (1 - s) + s / classes``.
        axis: the class axis. Defaults to -1.

    Returns:
        Tensor with ``axis`` removed, in nats.

    Raises:
        ValueError: for ``label_smoothing`` outside [0, 1] or shapes that differ (for example
            integer labels passed here instead of to `sparse_categorical_crossentropy`).
    """
    _check_smoothing("categorical_crossentropy", label_smoothing)
    y_pred = base.float_tensor(y_pred)
    y_true = base.to_tensor_like(y_true, y_pred, y_pred.dtype)
    if y_true.shape != y_pred.shape:
        raise ValueError("categorical_crossentropy: y_true and y_pred must have the same shape "
                         "(for integer labels use sparse_categorical_crossentropy). Received: "
                         f"y_true shape {y_true.shape}, y_pred shape {y_pred.shape}")
    if label_smoothing:
        classes = y_pred.shape[axis]
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / classes
    return ops.categorical_crossentropy(y_true, y_pred, from_logits=from_logits, axis=axis)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None,
                                    axis=-1):
    """Cross-entropy with integer class ids: ``-log p[label]``.

    Args:
        y_true: class ids, shape ``(batch, ...)`` or with a trailing size-1 axis
            (``(N,)`` and ``(N, 1)`` give the same result, C18); any integer or integral float
            dtype.
        y_pred: probabilities or logits (``from_logits=True``), shape ``(batch, ..., classes)``.
        from_logits: bool. Defaults to False.
        ignore_class: optional int. Samples with this label get loss 0 and are marked in the
            result's ``_keras_mask``, so a `Loss` leaves them out of the mean (Keras semantics).
        axis: the class axis. Defaults to -1.

    Returns:
        Tensor of shape ``(batch, ...)``, in nats.

    Raises:
        ValueError: if the shapes do not fit or a label (other than ``ignore_class``) is
            outside ``[0, classes)``.
    """
    y_pred = base.float_tensor(y_pred)
    y_true = base.to_tensor_like(y_true, y_pred) if ignore_class is not None else \
        base.labels_tensor(y_true, y_pred)
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = ops.squeeze(y_true, -1)
    if ignore_class is None:
        return ops.sparse_categorical_crossentropy(y_true, y_pred, from_logits=from_logits,
                                                   axis=axis)
    labels = y_true.data
    valid = labels != ignore_class
    safe = y_true.backend.xp.where(valid, labels, 0)
    losses = ops.sparse_categorical_crossentropy(safe, y_pred, from_logits=from_logits,
                                                 axis=axis)
    losses = ops.where(valid, losses, 0.0)
    losses._keras_mask = valid
    return losses


sparse_categorical_crossentropy.takes_class_ids = True  # see LossFunctionWrapper


def kl_divergence(y_true, y_pred):
    """Kullback-Leibler divergence ``sum(t log(t / p), axis=-1)``, both clipped to [1e-7, 1]."""
    y_true, y_pred = base.prepare(y_true, y_pred)
    y_true = ops.clip(y_true, EPSILON, 1.0)
    y_pred = ops.clip(y_pred, EPSILON, 1.0)
    return ops.sum(y_true * ops.log(y_true / y_pred), axis=-1)


def poisson(y_true, y_pred):
    """Poisson negative log-likelihood up to a constant: ``mean(p - t log(p + 1e-7), -1)``."""
    y_true, y_pred = base.prepare(y_true, y_pred)
    return ops.mean(y_pred - y_true * ops.log(y_pred + EPSILON), axis=-1)


def binary_focal_crossentropy(y_true, y_pred, apply_class_balancing=False, alpha=0.25,
                              gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1):
    """Focal loss (Lin et al. 2017, eq. 4-5): ``(1 - p_t)**gamma * bce``, optionally weighted by
    ``alpha`` for positives and ``1 - alpha`` for negatives; averaged over ``axis``."""
    y_true, y_pred = base.prepare(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        y_pred = ops.sigmoid(y_pred)
    bce = ops.binary_crossentropy(y_true, y_pred)
    p_t = y_true * y_pred + (1 - y_true) * (1 - y_pred)
    focal = ops.power(1.0 - p_t, gamma) * bce
    if apply_class_balancing:
        focal = (y_true * alpha + (1 - y_true) * (1 - alpha)) * focal
    return ops.mean(focal, axis=axis)


def categorical_focal_crossentropy(y_true, y_pred, alpha=0.25, gamma=2.0, from_logits=False,
                                   label_smoothing=0.0, axis=-1):
    """Categorical focal loss: ``sum(alpha * (1 - p)**gamma * -y log p, axis)`` with ``p`` the
    renormalized, clipped probabilities (Lin et al. 2017)."""
    y_true, y_pred = base.prepare(y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / y_true.shape[-1]
    if from_logits:
        y_pred = ops.softmax(y_pred, axis=axis)
    p = ops.clip(y_pred / ops.sum(y_pred, axis=axis, keepdims=True), EPSILON, 1.0 - EPSILON)
    return ops.sum(alpha * ops.power(1.0 - p, gamma) * (-y_true * ops.log(p)), axis=axis)


def categorical_generalized_cross_entropy(y_true, y_pred, q):
    """Generalized cross-entropy (Zhang & Sabuncu 2018, eq. 6): ``(1 - p**q) / q`` with ``p``
    the predicted probability of the integer class ``y_true``."""
    y_pred = base.float_tensor(y_pred)
    ids = np.asarray(ops.convert_to_numpy(y_true)).astype("int64").reshape(-1)
    onehot = np.eye(y_pred.shape[-1], dtype=y_pred.dtype)[ids]
    p = ops.sum(y_pred * onehot, axis=-1)
    return (1 - ops.power(p, q)) / q



class BinaryCrossentropy(base.LossFunctionWrapper):
    """`binary_crossentropy` as a `Loss`.

    Args: ``from_logits`` (False), ``label_smoothing`` (0.0), ``axis`` (-1), ``reduction``,
    ``name``, ``dtype``.
    """

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="binary_crossentropy", dtype=None):
        _check_smoothing("BinaryCrossentropy", label_smoothing)
        super().__init__(binary_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits


class CategoricalCrossentropy(base.LossFunctionWrapper):
    """`categorical_crossentropy` as a `Loss` (same arguments as `BinaryCrossentropy`)."""

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="categorical_crossentropy", dtype=None):
        _check_smoothing("CategoricalCrossentropy", label_smoothing)
        super().__init__(categorical_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits


class SparseCategoricalCrossentropy(base.LossFunctionWrapper):
    """`sparse_categorical_crossentropy` as a `Loss`. Integer labels are not cast to float.

    Args: ``from_logits`` (False), ``ignore_class`` (None), ``reduction``, ``name``, ``dtype``.
    With ``ignore_class`` the default reduction averages over the other samples only.
    """

    cast_y_true = False

    def __init__(self, from_logits=False, ignore_class=None, reduction="sum_over_batch_size",
                 name="sparse_categorical_crossentropy", dtype=None):
        super().__init__(sparse_categorical_crossentropy, reduction=reduction, name=name,
                         dtype=dtype, from_logits=from_logits, ignore_class=ignore_class)
        self.from_logits = from_logits


class KLDivergence(base.LossFunctionWrapper):
    """`kl_divergence` as a `Loss`."""

    def __init__(self, reduction="sum_over_batch_size", name="kl_divergence", dtype=None):
        super().__init__(kl_divergence, reduction=reduction, name=name, dtype=dtype)


class Poisson(base.LossFunctionWrapper):
    """`poisson` as a `Loss`."""

    def __init__(self, reduction="sum_over_batch_size", name="poisson", dtype=None):
        super().__init__(poisson, reduction=reduction, name=name, dtype=dtype)


BinaryFocalCrossentropy = base.loss_class(
    "BinaryFocalCrossentropy", binary_focal_crossentropy, "binary_focal_crossentropy",
    {"apply_class_balancing": False, "alpha": 0.25, "gamma": 2.0, "from_logits": False,
     "label_smoothing": 0.0, "axis": -1}, "`binary_focal_crossentropy` as a `Loss`.", __name__)
CategoricalFocalCrossentropy = base.loss_class(
    "CategoricalFocalCrossentropy", categorical_focal_crossentropy,
    "categorical_focal_crossentropy", {"alpha": 0.25, "gamma": 2.0, "from_logits": False,
                                       "label_smoothing": 0.0, "axis": -1},
    "`categorical_focal_crossentropy` as a `Loss`.", __name__)


class CategoricalGeneralizedCrossEntropy(base.LossFunctionWrapper):
    """`categorical_generalized_cross_entropy` as a `Loss`; ``q`` in (0, 1).

    Raises:
        ValueError: for ``q`` outside (0, 1).
    """

    def __init__(self, q=0.5, reduction="sum_over_batch_size",
                 name="categorical_generalized_cross_entropy", dtype=None):
        if not 0 < q < 1:
            raise ValueError(f"{name}: q must be in the interval (0, 1). Received: q={q}")
        super().__init__(categorical_generalized_cross_entropy, reduction=reduction, name=name,
                         dtype=dtype, q=q)
        self.q = q
