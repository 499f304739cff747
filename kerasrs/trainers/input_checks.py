"""Checks of the values in the data of fit/evaluate/predict, and of the model's dtypes.

`check_data_source` raises clear errors for data a model cannot learn from (complex numbers,
sample weights of the wrong shape, class weights for classes that do not exist, fractional class
ids for a sparse loss, a structure that does not fit the model) and warns, naming the array and
the count, about NaN and inf values. Arrays of up to `UP_FRONT_BYTES` are checked whole before
the first step; larger ones (a ``np.memmap`` of a file on disk, say) and the batches of
generators and PyDatasets are checked batch by batch during the first pass (a `DataCheck`, run
by the data adapter), so memory stays O(batch) and the first step starts at once.

NaN or inf in the data of ``fit`` arm Keras's ``TerminateOnNaN`` behaviour: the train step
raises `NonFiniteLoss` at the first batch whose loss is not finite, before that batch's
update, and the fit loop stops there with a warning (the weights stay those of the last step
with a finite loss).
"""

import math
import os
import sys
import warnings

import numpy as np

from kerasrs import autodiff
from kerasrs import backend as backend_module
from kerasrs.trainers import compile_utils, data_adapter, epoch_iterator

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UP_FRONT_BYTES = 64 << 20  # larger arrays are checked batch by batch, as they are read

_CONSEQUENCE = {
    "fit": "fit stops at the first batch whose loss is NaN or inf, before its update (the "
           "weights stay those of the last step with a finite loss). Remove or replace them "
           "first, e.g. with numpy.nan_to_num",
    "evaluate": "the loss and the metrics they reach will be NaN. Remove or replace them "
                "first, e.g. with numpy.nan_to_num",
}


class NonFiniteLoss(Exception):
    """Raised by the train step, before the update, when the loss of a batch is NaN or inf
    and the data hold non-finite values; the fit loop catches it and stops."""

    def __init__(self, value):
        super().__init__(value)
        self.value = value

    def message(self, epoch, epochs, batch):
        """The fit loop's warning: where training stopped and why (1-based, as the progress
        bar counts)."""
        return (f"Model.fit: the loss of batch {batch + 1} in epoch {epoch + 1}/{epochs} is "
                f"{self.value}, and the training data hold NaN or inf values (see the warning "
                "before); training stops here, before this batch's update: the weights are those "
                "of the last step with a finite loss. Remove or replace the NaN and inf values "
                "(e.g. with numpy.nan_to_num) and fit again.")


class DataCheck:
    """The checks of one run's data that are left for its batches, and what they found.

    The data adapter calls it on each batch of the first pass, then sets `done`.

    Attributes:
        non_finite: True once NaN or inf were found in the data.
        done: True when no batch needs checking (any more).
    """

    def __init__(self, model, method, where, nan_names=(), labels=None, structure=False,
                 sparse=False, non_finite=False):
        self.model, self.method, self.where = model, method, where
        self.nan_names = nan_names  # leaf names to check for NaN/inf ("x", "y[0]"), None: all
        self.labels = labels  # why ``y`` must hold integer class ids, or None
        self.structure = structure  # whether x's structure is checked against the model
        self.sparse = sparse  # a sparse loss rejects NaN/inf labels itself
        self.non_finite = non_finite
        self.done = not (nan_names is None or nan_names or labels or structure)

    def __call__(self, batch, index):
        """Check ``batch`` ``(x, y, sample_weight)``, the ``index``-th of its pass.

        Raises:
            ValueError: for a structure that does not fit the model, or non-integral labels.

        Warns:
            RuntimeWarning: at the first batch with NaN or inf values, naming the array.
        """
        x, y, sample_weight = batch[:3]
        try:
            if self.structure:
                self.model._check_input_structure(self.method, x)
            if self.labels and y is not None and not isinstance(y, (list, dict)):
                _check_integral_labels(self.method, y, self.labels)
        except ValueError as e:
            raise ValueError(f"{e} (in batch {index} of the {self.where})") from None
        if self.non_finite or not (self.nan_names is None or self.nan_names):
            return
        for name, array in _named_batch(x, y, sample_weight):
            wanted = name in self.nan_names if self.nan_names is not None else \
                not (self.sparse and name == "y")
            if wanted and _warn_non_finite(self.method, name, array, _user_stacklevel(),
                                           f" in batch {index} of the {self.where}"):
                self.non_finite = True
                return


def _user_stacklevel():
    """The ``stacklevel`` that attributes a warning to the innermost frame outside kerasrs
    (the user's fit call, however deep the data pipeline's generators are), for a warning
    issued by a function that the caller of this one calls."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def check_data_source(model, method, x, y=None, sample_weight=None, class_weight=None,
                      stacklevel=3):
    """Check ``method``'s data before its first batch; returns the `DataCheck` for the
    batches. Arrays are checked here (predict: only ragged lists and complex numbers), up to
    their size bound; generators and datasets are checked batch by batch. ``stacklevel``:
    the user's call, counted from this function."""
    if not all(epoch_iterator.is_array_data(v) for v in (x, y, sample_weight)):
        sparse = method != "predict" and _uses_sparse_loss(model)
        labels = None if method == "predict" else "a sparse loss" if sparse else \
            "class_weight" if class_weight else None
        return DataCheck(model, method, epoch_iterator.source_name(x),
                         () if method == "predict" else None,
                         labels, structure=True, sparse=sparse)
    x, y, sample_weight = (data_adapter.standardize(v, f"Model.{method}: `{name}`") for v, name
                           in ((x, "x"), (y, "y"), (sample_weight, "sample_weight")))
    if method == "predict":
        for leaf in data_adapter.leaves(x):
            check_real(method, "x", leaf)
        return DataCheck(model, method, "data")
    non_finite, streamed, labels = check_data(model, method, x, y, sample_weight, class_weight,
                                              stacklevel + 1)
    return DataCheck(model, method, "data", streamed, labels, sparse=_uses_sparse_loss(model),
                     non_finite=non_finite)


def check_data(model, method, x, y=None, sample_weight=None, class_weight=None, stacklevel=4):
    """Check standardized ``x``, ``y``, ``sample_weight`` and ``class_weight`` for ``method``.
    ``stacklevel`` is the warnings' level counted from this function (the user's call).
    Arrays larger than `UP_FRONT_BYTES` are left for the batches.

    Returns:
        ``(non_finite, streamed, labels)``: whether NaN or inf were found, the set of names of
        the arrays left for the batches, and why ``y`` must be integral in its batches (or None).

    Raises:
        TypeError: for complex data.
        ValueError: for a ``sample_weight`` whose shape fits neither ``(n,)`` nor the targets,
            ``class_weight`` keys that are not class ids of the model's output, or non-integral
            labels with a sparse loss or with ``class_weight``.

    Warns:
        RuntimeWarning: naming each array with NaN or inf values and how many it has.
    """
    named = list(_named_batch(x, y, sample_weight))
    for name, array in named:
        check_real(method, name, array)
    sparse = _uses_sparse_loss(model)
    streamed = {name for name, array in named if _streamed(array)}
    non_finite = False
    for name, array in named:
        if name not in streamed and not (sparse and name == "y"):  # a sparse loss rejects
            non_finite |= _warn_non_finite(method, name, array, stacklevel + 1)  # NaN labels
    _check_sample_weight_shape(method, sample_weight, y)
    labels = None
    if y is not None and not isinstance(y, (list, dict)) and (sparse or class_weight):
        labels = "a sparse loss" if sparse else "class_weight"
        if not _streamed(y):
            _check_integral_labels(method, y, labels)
            labels = None
    if class_weight is not None:
        _check_class_weight(model, method, y, class_weight)
    return non_finite, streamed, labels


def _streamed(array):
    """Whether ``array`` is too large to check before the first step."""
    return getattr(array, "nbytes", 0) > UP_FRONT_BYTES


def check_real(method, name, array):
    """TypeError for complex data (NumPy would drop the imaginary part with only a warning)."""
    if array.dtype.kind == "c":
        raise TypeError(f"Model.{method}: `{name}` holds complex numbers ({array.dtype.name}); "
                        "models take real numbers. Pass the real and imaginary parts as separate "
                        f"features, or the magnitude. Received: {name} with dtype "
                        f"{array.dtype.name} and shape {tuple(array.shape)}")


def _named_leaves(name, struct):
    if struct is None:
        return
    if isinstance(struct, dict):
        for key, value in struct.items():
            yield from _named_leaves(f"{name}[{key!r}]", value)
    elif isinstance(struct, (list, tuple)):
        for i, value in enumerate(struct):
            yield from _named_leaves(f"{name}[{i}]", value)
    else:
        yield name, struct


def _named_batch(x, y, sample_weight):
    for name, struct in (("x", x), ("y", y), ("sample_weight", sample_weight)):
        yield from _named_leaves(name, struct)


def _warn_non_finite(method, name, array, stacklevel, where=""):
    """Warn if float ``array`` holds NaN or inf (``where``: in which batch); returns whether
    it does."""
    if not backend_module.is_float_dtype(array.dtype):
        return False
    xp = backend_module.backend_of(array).xp
    finite = xp.isfinite(array)
    if bool(finite.all()):
        return False
    bad = int(array.size - xp.count_nonzero(finite))
    nans = int(xp.count_nonzero(xp.isnan(array)))
    warnings.warn(f"Model.{method}: `{name}` holds {bad} non-finite value(s) ({nans} NaN, "
                  f"{bad - nans} inf) out of {array.size}{where}; {_CONSEQUENCE[method]}.",
                  RuntimeWarning, stacklevel=stacklevel)
    return True


def _check_sample_weight_shape(method, sample_weight, y):
    if sample_weight is None or isinstance(sample_weight, (list, dict)) or y is None or \
            isinstance(y, (list, dict)):
        return
    sw, target = tuple(sample_weight.shape), tuple(y.shape)
    if sw == target[:len(sw)] or (len(sw) == 2 and sw[1] == 1):
        return
    raise ValueError(f"Model.{method}: `sample_weight` must hold one weight per sample, shape "
                     f"{target[:1]} (or one per target step, a leading part of the targets' "
                     f"shape {target}). Received: sample_weight with shape {sw}")


def _uses_sparse_loss(model):
    loss = getattr(model, "loss", None)
    if isinstance(loss, dict):
        loss = list(loss.values())
    for item in loss if isinstance(loss, (list, tuple)) else [loss]:
        name = item if isinstance(item, str) else getattr(item, "name", None) or \
            getattr(item, "__name__", None) or type(item).__name__
        if isinstance(name, str) and "sparse" in name.lower():
            return True
    return False


def _labels(y):
    return np.asarray(backend_module.convert_to_numpy(y))


def _check_integral_labels(method, y, why):
    labels = _labels(y)
    if not backend_module.is_float_dtype(labels.dtype):
        return
    finite = labels[np.isfinite(labels)]
    fractional = finite != np.round(finite)
    if fractional.any() and (why != "class_weight" or labels.ndim < 2 or labels.shape[-1] == 1):
        value = float(finite[fractional][0])
        raise ValueError(f"Model.{method}: {why} needs integer class ids in `y`, but it holds "
                         f"{int(fractional.sum())} non-integral value(s), e.g. {value!r}, which "
                         "names no class (a loss would truncate it, class_weight would round "
                         "it). "
                         f"Received: y with dtype {labels.dtype.name} and shape "
                         f"{tuple(labels.shape)}")


def _num_classes(model, y):
    """Classes of the output: one-hot targets' width, else the model's last output size."""
    y_shape = tuple(y.shape)
    if len(y_shape) >= 2 and y_shape[-1] > 1:
        return y_shape[-1]
    try:
        outputs = autodiff._flatten(model.outputs)
        units = outputs[0].shape[-1] if len(outputs) == 1 else None
    except (AttributeError, IndexError, TypeError, ValueError):
        units = None
    if units is None:
        return None
    return 2 if units == 1 else int(units)


def _check_class_weight(model, method, y, class_weight):
    if not isinstance(class_weight, dict):
        raise ValueError(f"Model.{method}: `class_weight` must be a dict {{class id: weight}}. "
                         f"Received: {type(class_weight).__name__}")
    bad = [k for k in class_weight if isinstance(k, bool) or not isinstance(k, (int, np.integer))]
    if bad:
        raise ValueError(f"Model.{method}: `class_weight` keys must be integer class ids. "
                         f"Received: keys {bad!r}")
    classes = _num_classes(model, y)
    out = sorted(int(k) for k in class_weight if k < 0 or (classes is not None and k >= classes))
    if out:
        limit = f"[0, {classes})" if classes is not None else "ids >= 0"
        raise ValueError(f"Model.{method}: `class_weight` has key(s) {out} that are not class ids "
                         f"of this model's output ({limit}). Received: class_weight keys "
                         f"{sorted(int(k) for k in class_weight)}")
    for key, value in class_weight.items():
        try:
            ok = np.isfinite(float(value))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError(f"Model.{method}: `class_weight` values must be finite numbers. "
                             f"Received: class_weight[{key}]={value!r}")


def check_variable_dtypes(model, stacklevel=3):
    """Warn at ``compile`` when the model trains float16 variables (``set_floatx("float16")``
    or the "float16" policy): optimizer updates smaller than float16's spacing are lost and
    Adam's second moment underflows to 0, so training stalls or turns NaN without an error.
    ``stacklevel``: the user's call, counted from this function."""
    weights = model.trainable_weights
    half = [w.path for w in weights if np.dtype(w.dtype) == np.float16]
    if not half and (weights or getattr(model.dtype_policy, "variable_dtype", None) != "float16"):
        return
    which = f"{len(half)} of {len(weights)} trainable variables ({half[0]}, ...)" if half else \
        "the trainable variables (dtype policy 'float16')"
    warnings.warn(f"Model.compile: {which} are float16. Optimizer steps smaller than float16's "
                  "spacing are lost and Adam's second moment underflows to 0, so training "
                  "stalls or turns NaN without an error. Use the 'mixed_float16' policy instead "
                  "(kerasrs.mixed_precision.set_dtype_policy('mixed_float16') before building "
                  "the model): layers compute in float16, keep float32 variables, and compile "
                  "adds loss scaling.", UserWarning, stacklevel=stacklevel + 1)


def stop_at_non_finite_loss(loss, dist=None, has_rows=True):
    """Raise `NonFiniteLoss` if ``loss`` is NaN or inf (called by the train step, before the
    update, when the data hold non-finite values). In a data-parallel fit every process takes
    part and all stop if one does; a process without rows in this step does not count."""
    value = compile_utils.loss_value(loss, "compute_loss")
    bad = has_rows and not math.isfinite(value)
    if dist is not None:
        bad = dist.any(bad)
    if bad:
        raise NonFiniteLoss(value)
