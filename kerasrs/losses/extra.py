"""Keras 3's focal, overlap (Dice, Tversky), metric-learning (Circle), noise-robust (generalized
cross-entropy) and sequence (CTC) losses. Formulas follow Keras 3 (keras/src/losses/losses.py)
and the papers cited per function; each returns per-sample values like the other losses."""

import numpy as np

from kerasrs import ops
from kerasrs.losses import base

EPSILON = 1e-7  # Keras's backend.epsilon()


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


def dice(y_true, y_pred, axis=None):
    """Dice loss ``1 - 2 sum(y_true y_pred) / (sum(y_true) + sum(y_pred) + eps)`` over ``axis``
    (all axes, a scalar, when None; Milletari et al. 2016)."""
    y_true, y_pred = base.prepare(y_true, y_pred)
    inter = ops.sum(y_true * y_pred, axis=axis)
    return 1 - 2.0 * inter / (ops.sum(y_true, axis=axis) + ops.sum(y_pred, axis=axis) + EPSILON)


def tversky(y_true, y_pred, alpha=0.5, beta=0.5, axis=None):
    """Tversky loss (Salehi et al. 2017): ``1 - TP / (TP + alpha FP + beta FN + eps)``, with
    Keras's roles (``FP = sum((1 - y_pred) y_true)``, ``FN = sum(y_pred (1 - y_true))``)."""
    y_true, y_pred = base.prepare(y_true, y_pred)
    tp = ops.sum(y_true * y_pred, axis=axis)
    fp = ops.sum((1 - y_pred) * y_true, axis=axis)
    fn = ops.sum(y_pred * (1 - y_true), axis=axis)
    return 1 - tp / (tp + fp * alpha + fn * beta + EPSILON)


def circle(y_true, y_pred, ref_labels=None, ref_embeddings=None, remove_diagonal=True, gamma=80,
           margin=0.4):
    """Circle loss (Sun et al. 2020, eq. 6) on L2-normalized embeddings ``y_pred`` (batch, d)
    with integer labels ``y_true`` (batch,): ``softplus(logsumexp(pos) + logsumexp(neg))`` per
    sample, from pairwise cosine distances to ``ref_embeddings`` (default ``y_pred``)."""
    y_pred = base.float_tensor(y_pred)
    ref = y_pred if ref_embeddings is None else base.float_tensor(ref_embeddings)
    labels = np.asarray(ops.convert_to_numpy(y_true)).astype("int64").reshape(-1, 1)
    ref_l = labels if ref_labels is None else np.asarray(
        ops.convert_to_numpy(ref_labels)).astype("int64").reshape(-1, 1)
    dist = ops.maximum(1 - ops.matmul(y_pred, ops.transpose(ref)), 0.0)
    pos = labels == ref_l.T
    neg = ~pos
    if remove_diagonal:
        pos = pos & ~np.eye(len(labels), len(ref_l), dtype=bool)
    posf, negf = pos.astype(y_pred.dtype), neg.astype(y_pred.dtype)
    pos_w = ops.maximum((margin + dist) * posf, 0.0)
    neg_w = ops.maximum((1 + margin - dist) * negf, 0.0)
    pos_d = -gamma * pos_w * (margin - dist)
    neg_d = gamma * neg_w * ((1 - margin) - dist)
    p_loss = ops.logsumexp(ops.where(pos, pos_d, -np.inf), axis=1)
    n_loss = ops.logsumexp(ops.where(neg, neg_d, -np.inf), axis=1)
    out = ops.softplus(p_loss + n_loss)
    out._keras_mask = out.data > 0  # Keras averages over the samples with a positive loss
    return out


def ctc(y_true, y_pred):
    """CTC loss (Graves et al. 2006): integer labels ``y_true`` (batch, max_label_len) padded
    with 0 (the blank), logits ``y_pred`` (batch, time, classes); per-sample negative
    log-likelihood over all alignments (see `kerasrs.ops.ctc_loss`).

    Raises:
        ValueError: for inputs of the wrong rank.
    """
    y_pred = base.float_tensor(y_pred)
    labels = np.asarray(ops.convert_to_numpy(y_true)).astype("int64")
    if labels.ndim != 2:
        raise ValueError(f"ctc: `y_true` must be (batch_size, max_length) integer labels. "
                         f"Received: y_true.shape={labels.shape}")
    if y_pred.ndim != 3:
        raise ValueError(f"ctc: `y_pred` must be (batch_size, max_length, num_classes) logits. "
                         f"Received: y_pred.shape={y_pred.shape}")
    target_length = (labels != 0).sum(-1)
    output_length = np.full(labels.shape[0], y_pred.shape[1])
    return ops.ctc_loss(labels, y_pred, target_length, output_length, mask_index=0)


def _wrapper(fn, default_name, params, doc):
    """A LossFunctionWrapper subclass whose constructor takes ``params`` (name -> default)."""
    def __init__(self, *args, reduction="sum_over_batch_size", name=default_name, dtype=None,
                 **kwargs):
        values = dict(params)
        values.update(zip(params, args))
        unknown = set(kwargs) - set(params)
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected arguments {sorted(unknown)}")
        values.update(kwargs)
        base.LossFunctionWrapper.__init__(self, fn, reduction=reduction, name=name, dtype=dtype,
                                          **values)
        for key, value in values.items():
            setattr(self, key, value)

    return {"__init__": __init__, "__doc__": doc}


BinaryFocalCrossentropy = type("BinaryFocalCrossentropy", (base.LossFunctionWrapper,), _wrapper(
    binary_focal_crossentropy, "binary_focal_crossentropy",
    {"apply_class_balancing": False, "alpha": 0.25, "gamma": 2.0, "from_logits": False,
     "label_smoothing": 0.0, "axis": -1}, "`binary_focal_crossentropy` as a `Loss`."))
CategoricalFocalCrossentropy = type("CategoricalFocalCrossentropy", (base.LossFunctionWrapper,),
                                    _wrapper(categorical_focal_crossentropy,
                                             "categorical_focal_crossentropy",
                                             {"alpha": 0.25, "gamma": 2.0, "from_logits": False,
                                              "label_smoothing": 0.0, "axis": -1},
                                             "`categorical_focal_crossentropy` as a `Loss`."))
Dice = type("Dice", (base.LossFunctionWrapper,), _wrapper(dice, "dice", {"axis": None},
                                                          "`dice` as a `Loss`."))
Tversky = type("Tversky", (base.LossFunctionWrapper,), _wrapper(
    tversky, "tversky", {"alpha": 0.5, "beta": 0.5, "axis": None}, "`tversky` as a `Loss`."))
Circle = type("Circle", (base.LossFunctionWrapper,), _wrapper(
    circle, "circle", {"gamma": 80.0, "margin": 0.4, "remove_diagonal": True},
    "`circle` as a `Loss`."))
CTC = type("CTC", (base.LossFunctionWrapper,), _wrapper(ctc, "ctc", {}, "`ctc` as a `Loss`."))


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


for _cls in (BinaryFocalCrossentropy, CategoricalFocalCrossentropy, Dice, Tversky, Circle, CTC):
    _cls.__module__ = __name__
    _cls.__qualname__ = _cls.__name__
