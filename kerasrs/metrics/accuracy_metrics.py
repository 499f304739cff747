"""Accuracy metrics: exact match, binary, categorical, sparse categorical and top-k.

The functions take ``(y_true, y_pred)`` (Tensors or arrays) and return a ``floatx()`` (float32)
array of hits (1.0 or 0.0) on the inputs' device, as Keras's do: `binary_accuracy` one per
element, the others one per sample. The classes average them with `Mean` semantics (exact,
sample-weighted; a weight of lower rank applies along the leading axes). Labels shaped ``(N,)``
and ``(N, 1)`` give the same result (C18).
"""

from kerasrs import backend as backend_module
from kerasrs.metrics import base, reduction


def _hits(matches):
    """Boolean matches as ``floatx()`` 1.0/0.0 (Keras's accuracy dtype)."""
    return matches.astype(backend_module.floatx())


def accuracy(y_true, y_pred):
    """Elementwise ``y_true == y_pred`` as 1.0/0.0 (for already-decided predictions)."""
    y_true, y_pred = base.squeeze_or_expand(*base.inputs(y_true, y_pred))
    return _hits(y_true == y_pred)


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """Elementwise ``y_true == (y_pred > threshold)`` (Keras 3 no longer averages the last axis
    here; `BinaryAccuracy` does, through its mean).

    Args:
        y_true: 0/1 labels, shape of ``y_pred`` (a trailing size-1 axis may differ).
        y_pred: probabilities (or scores with a matching ``threshold``), ``(batch, ..., d)``.
        threshold: float; a prediction counts as 1 when strictly above it. Defaults to 0.5.

    Returns:
        float32 array of ``y_pred``'s shape (after the rank fix).
    """
    y_true, y_pred = base.squeeze_or_expand(*base.inputs(y_true, y_pred))
    predicted = (y_pred > threshold).astype(y_pred.dtype)
    return _hits(y_true.astype(y_pred.dtype) == predicted)


def categorical_accuracy(y_true, y_pred):
    """``argmax(y_true) == argmax(y_pred)`` over the last axis (ties: the first index wins).

    Returns:
        float32 array of shape ``(batch, ...)``.
    """
    y_true, y_pred = base.inputs(y_true, y_pred)
    return _hits(y_true.argmax(axis=-1) == y_pred.argmax(axis=-1))


def _sparse_labels(y_true, y_pred):
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = y_true[..., 0]
    if y_true.shape != y_pred.shape[:-1]:
        raise ValueError("sparse accuracy: y_true must hold one class id per sample, shaped "
                         f"{y_pred.shape[:-1]} or {y_pred.shape[:-1] + (1,)}. Received: y_true "
                         f"shape {y_true.shape}, y_pred shape {y_pred.shape}")
    return y_true.astype("int64")


def sparse_categorical_accuracy(y_true, y_pred):
    """``y_true == argmax(y_pred)`` with integer labels shaped ``(N,)`` or ``(N, 1)``.

    Returns:
        float32 array of shape ``(N,)`` (labels' shape without a trailing 1).

    Raises:
        ValueError: if the label shape does not fit ``y_pred``.
    """
    y_true, y_pred = base.inputs(y_true, y_pred)
    return _hits(_sparse_labels(y_true, y_pred) == y_pred.argmax(axis=-1))


def _in_top_k(labels, y_pred, k):
    """1.0 where the label's score is among the k largest; ties count as in (as TF's in_top_k)."""
    xp = base.xp_of(y_pred)
    target = xp.take_along_axis(y_pred, labels[..., None], axis=-1)
    return _hits((y_pred > target).sum(axis=-1) < k)


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where ``argmax(y_true)`` is among the ``k`` highest-scored classes."""
    y_true, y_pred = base.inputs(y_true, y_pred)
    return _in_top_k(y_true.argmax(axis=-1), y_pred, k)


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5, from_sorted_ids=False):
    """1.0 where the integer label is among the ``k`` highest-scored classes.

    Args:
        y_true: class ids, shape ``(N,)`` or ``(N, 1)``.
        y_pred: scores ``(N, classes)``; with ``from_sorted_ids=True``, class ids ``(N, M)``
            already sorted from the highest score down (the label counts when it is among the
            first ``k``).
        k: int. Defaults to 5.
        from_sorted_ids: bool. Defaults to False.
    """
    y_true, y_pred = base.inputs(y_true, y_pred)
    labels = _sparse_labels(y_true, y_pred)
    if from_sorted_ids:
        return _hits((y_pred[..., :k] == labels[..., None]).any(axis=-1))
    return _in_top_k(labels, y_pred, k)


class Accuracy(reduction.FunctionMean):
    """How often predictions equal labels exactly (`accuracy`)."""

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(accuracy, name=name, dtype=dtype)


class BinaryAccuracy(reduction.FunctionMean):
    """How often ``(y_pred > threshold)`` equals the 0/1 label. Args: ``threshold`` (0.5)."""

    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(binary_accuracy, name=name, dtype=dtype, threshold=threshold)
        self.threshold = threshold


class CategoricalAccuracy(reduction.FunctionMean):
    """How often ``argmax(y_pred)`` equals ``argmax(y_true)`` (one-hot labels)."""

    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name=name, dtype=dtype)


class SparseCategoricalAccuracy(reduction.FunctionMean):
    """How often ``argmax(y_pred)`` equals the integer label (``(N,)`` or ``(N, 1)``)."""

    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_accuracy, name=name, dtype=dtype)


class TopKCategoricalAccuracy(reduction.FunctionMean):
    """How often the one-hot label is among the top ``k`` (default 5) predictions."""

    def __init__(self, k=5, name="top_k_categorical_accuracy", dtype=None):
        super().__init__(top_k_categorical_accuracy, name=name, dtype=dtype, k=k)
        self.k = k


class SparseTopKCategoricalAccuracy(reduction.FunctionMean):
    """How often the integer label is among the top ``k`` (default 5) predictions; with
    ``from_sorted_ids=True``, ``y_pred`` holds class ids sorted by score (see
    `sparse_top_k_categorical_accuracy`). The config has ``from_sorted_ids`` only when True,
    as Keras's."""

    def __init__(self, k=5, name="sparse_top_k_categorical_accuracy", dtype=None,
                 from_sorted_ids=False):
        super().__init__(sparse_top_k_categorical_accuracy, name=name, dtype=dtype, k=k,
                         from_sorted_ids=from_sorted_ids)
        self.k, self.from_sorted_ids = k, from_sorted_ids

    def get_config(self):
        config = {"name": self.name, "dtype": self.dtype, "k": self.k}
        if self.from_sorted_ids:
            config["from_sorted_ids"] = True
        return config
