"""Metric-learning losses: Circle (Sun et al. 2020), as Keras 3 computes it
(keras/src/losses/losses.py), one value per sample."""

import numpy as np

from kerasrs import ops
from kerasrs.losses import base


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


Circle = base.loss_class("Circle", circle, "circle",
                         {"gamma": 80.0, "margin": 0.4, "remove_diagonal": True},
                         "`circle` as a `Loss`.", __name__)
