"""The sequence loss CTC (Graves et al. 2006), as Keras 3's ``keras.losses.CTC``: one value per
sample, from `kerasrs.ops.ctc_loss`."""

import numpy as np

from kerasrs import ops
from kerasrs.losses import base


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


CTC = base.loss_class("CTC", ctc, "ctc", {}, "`ctc` as a `Loss`.", __name__)
