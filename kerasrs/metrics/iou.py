"""Intersection-over-union metrics for segmentation (Keras 3's ``IoU`` family): a confusion
matrix accumulated over all samples, then ``IoU_c = TP_c / (TP_c + FP_c + FN_c)``."""

import numpy as np

from kerasrs.metrics import base


class IoU(base.Metric):
    """Mean IoU over ``target_class_ids``, from integer labels and predictions.

    Args:
        num_classes: number of classes.
        target_class_ids: the classes averaged.
        ignore_class: a label value left out of the counts (or None).
        sparse_y_true / sparse_y_pred: False means one-hot/score vectors (argmax is taken).
        axis: the class axis for non-sparse inputs.
    """

    # Constructor arguments a subclass fixes; its config leaves them out (as Keras's does).
    _fixed_args = ()

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None,
                 sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super().__init__(name=name, dtype=dtype)
        self.num_classes, self.target_class_ids = num_classes, list(target_class_ids)
        if max(self.target_class_ids, default=0) >= num_classes:
            raise ValueError(f"{self.name}: target_class_ids must be < num_classes "
                             f"({num_classes}). Received: {self.target_class_ids}")
        self.ignore_class, self.axis = ignore_class, axis
        self.sparse_y_true, self.sparse_y_pred = sparse_y_true, sparse_y_pred
        self.total_cm = self.add_variable((num_classes, num_classes), "total_confusion_matrix")

    def _labels(self, y_true, y_pred):
        t = np.asarray(base.raw(y_true))
        p = np.asarray(base.raw(y_pred))
        if not self.sparse_y_true:
            t = t.argmax(self.axis)
        if not self.sparse_y_pred:
            p = p.argmax(self.axis)
        return t.reshape(-1).astype("int64"), p.reshape(-1).astype("int64")

    def update_state(self, y_true, y_pred, sample_weight=None):
        t, p = self._labels(y_true, y_pred)
        w = np.ones(t.shape) if sample_weight is None else np.broadcast_to(
            np.asarray(base.raw(sample_weight), "float64").reshape(-1) if np.size(
                base.raw(sample_weight)) == t.size else np.asarray(base.raw(sample_weight),
                                                                   "float64"), t.shape)
        keep = np.ones(t.shape, bool) if self.ignore_class is None else t != self.ignore_class
        cm = np.bincount(t[keep] * self.num_classes + p[keep], weights=w[keep],
                         minlength=self.num_classes ** 2)
        self.total_cm.assign_add(cm.reshape(self.num_classes, self.num_classes))

    def result(self):
        cm = np.asarray(self.total_cm.numpy(), "float64")
        tp = np.diag(cm)
        denom = cm.sum(0) + cm.sum(1) - tp
        ids = self.target_class_ids
        tp, denom = tp[ids], denom[ids]
        present = denom != 0
        iou = np.where(present, tp / np.where(present, denom, 1), 0.0)
        return float(iou.sum() / max(present.sum(), 1))

    def get_config(self):
        config = {**super().get_config(), "num_classes": self.num_classes,
                  "target_class_ids": self.target_class_ids, "ignore_class": self.ignore_class,
                  "sparse_y_true": self.sparse_y_true, "sparse_y_pred": self.sparse_y_pred,
                  "axis": self.axis}
        for key in self._fixed_args:
            config.pop(key)
        return config


class MeanIoU(IoU):
    """`IoU` averaged over all ``num_classes`` classes."""

    _fixed_args = ("target_class_ids",)

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None,
                 sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super().__init__(num_classes, list(range(num_classes)), name=name, dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=sparse_y_true,
                         sparse_y_pred=sparse_y_pred, axis=axis)


class BinaryIoU(IoU):
    """IoU of binary predictions thresholded at ``threshold`` (default classes 0 and 1)."""

    def __init__(self, target_class_ids=(0, 1), threshold=0.5, name=None, dtype=None):
        super().__init__(2, target_class_ids, name=name, dtype=dtype)
        self.threshold = threshold

    def _labels(self, y_true, y_pred):
        t = np.asarray(base.raw(y_true)).reshape(-1)
        p = np.asarray(base.raw(y_pred)).reshape(-1)
        return (t > self.threshold).astype("int64"), (p > self.threshold).astype("int64")

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype, "target_class_ids":
                self.target_class_ids, "threshold": self.threshold}


class OneHotIoU(IoU):
    """`IoU` for one-hot labels and class scores."""

    _fixed_args = ("sparse_y_true",)

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None,
                 sparse_y_pred=False, axis=-1):
        super().__init__(num_classes, target_class_ids, name=name, dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=False,
                         sparse_y_pred=sparse_y_pred, axis=axis)


class OneHotMeanIoU(MeanIoU):
    """`MeanIoU` for one-hot labels and class scores."""

    _fixed_args = ("target_class_ids", "sparse_y_true")

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None,
                 sparse_y_pred=False, axis=-1):
        super().__init__(num_classes, name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=False, sparse_y_pred=sparse_y_pred, axis=axis)
