"""Intersection-over-union metrics for segmentation (Keras 3's ``IoU`` family): a confusion
matrix accumulated over all samples, then ``IoU_c = TP_c / (TP_c + FP_c + FN_c)``.

As in Keras, the metrics' dtype defaults to ``"int32"``: the confusion matrix holds integer
counts and float sample weights are truncated to integers (with a warning); pass
``dtype="float32"`` for fractional weights. Pixels whose label or prediction is not a class id
(negative, or ``>= num_classes``) are left out, as are pixels labelled ``ignore_class``.
"""

import warnings

import numpy as np

from kerasrs import backend as backend_module
from kerasrs.metrics import base


def _host(x):
    return np.asarray(backend_module.convert_to_numpy(base.raw(x)))


class IoU(base.Metric):
    """Mean IoU over ``target_class_ids``, from integer labels and predictions.

    Args:
        num_classes: number of classes.
        target_class_ids: the classes averaged.
        name: str.
        dtype: the confusion matrix's dtype. Defaults to ``"int32"``.
        ignore_class: a label value left out of the counts (or None).
        sparse_y_true / sparse_y_pred: False means one-hot/score vectors (argmax is taken).
        axis: the class axis for non-sparse inputs.

    ``sample_weight`` may be a scalar, one weight per pixel (the labels' shape, or the same
    number of values), or a weight of lower rank applied along the leading axes (one per
    image, say: Keras refuses that one).
    """

    # Constructor arguments a subclass fixes; its config leaves them out (as Keras's does).
    _fixed_args = ()

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None,
                 sparse_y_true=True, sparse_y_pred=True, axis=-1):
        super().__init__(name=name, dtype=dtype or "int32")
        self.num_classes, self.target_class_ids = num_classes, list(target_class_ids)
        if max(self.target_class_ids, default=0) >= num_classes:
            raise ValueError(f"{self.name}: target_class_ids must be < num_classes "
                             f"({num_classes}). Received: {self.target_class_ids}")
        self.ignore_class, self.axis = ignore_class, axis
        self.sparse_y_true, self.sparse_y_pred = sparse_y_true, sparse_y_pred
        self.total_cm = self.add_variable((num_classes, num_classes), "zeros", dtype=self.dtype,
                                          name="total_confusion_matrix")

    def _labels(self, y_true, y_pred):
        """Class ids (int64, the labels' shape) of the labels and the predictions."""
        t, p = _host(y_true), _host(y_pred)
        if not self.sparse_y_true:
            t = t.argmax(self.axis)
        if not self.sparse_y_pred:
            p = p.argmax(self.axis)
        return t.astype("int64"), p.astype("int64")

    def _weights(self, sample_weight, shape):
        """Per-pixel weights of ``shape`` in the metric's dtype (see the class docstring)."""
        if sample_weight is None:
            return np.ones(shape, self.dtype)
        w = _host(sample_weight)
        if w.dtype.kind == "f" and not backend_module.is_float_dtype(self.dtype):
            warnings.warn(f"{self.name}: float sample weights are truncated to the metric's "
                          f"dtype {self.dtype}; pass integer weights or dtype='float32'.",
                          stacklevel=3)
        w = w.astype(self.dtype)
        if w.size == int(np.prod(shape)):  # one weight per pixel, in any layout (as Keras)
            return w.reshape(shape)
        if 0 < w.ndim < len(shape):  # lower rank: along the leading axes
            w = w.reshape(w.shape + (1,) * (len(shape) - w.ndim))
        return np.broadcast_to(w, shape)

    def update_state(self, y_true, y_pred, sample_weight=None):
        t, p = self._labels(y_true, y_pred)
        w = self._weights(sample_weight, t.shape).reshape(-1)
        t, p = t.reshape(-1), p.reshape(-1)
        n = self.num_classes
        keep = (t >= 0) & (t < n) & (p >= 0) & (p < n)
        if self.ignore_class is not None:
            keep &= t != self.ignore_class
        cm = np.bincount(t[keep] * n + p[keep], weights=w[keep], minlength=n * n)
        self.total_cm.assign_add(cm.reshape(n, n).astype(self.dtype))

    def result(self):
        cm = np.asarray(self.total_cm.numpy(), "float64")
        tp = np.diag(cm)
        denom = cm.sum(0) + cm.sum(1) - tp
        ids = self.target_class_ids
        tp, denom = tp[ids], denom[ids]
        present = denom > 1e-9
        iou = np.where(present, tp / np.where(present, denom, 1), 0.0)
        return self.result_tensor(iou.sum() / max(present.sum(), 1))

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
        """Labels as integers (as Keras casts them), predictions ``>= threshold``."""
        t = _host(y_true)
        return t.astype("int64"), (_host(y_pred) >= self.threshold).astype("int64")

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
