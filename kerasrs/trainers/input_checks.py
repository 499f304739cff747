"""Checks of the values in the data, run once per ``fit``/``evaluate`` (cheap next to an epoch).

`check_data` raises clear errors for data a model cannot learn from (complex numbers, sample
weights of the wrong shape, class weights for classes that do not exist, fractional class ids for
a sparse loss) and warns, naming the array and the count, about NaN and inf values: training on
them silently turns every weight into NaN.
"""

import warnings

import numpy as np

from kerasrs import autodiff
from kerasrs import backend as backend_module
from kerasrs.trainers import data_adapter, epoch_iterator


def check_array_data(model, method, x, y=None, sample_weight=None, class_weight=None,
                     stacklevel=3):
    """`check_data` for array data, called once by fit/evaluate (predict: only ragged lists
    and complex numbers). Generators and datasets are not walked. ``stacklevel``: the user's
    call, counted from this function."""
    if not all(epoch_iterator.is_array_data(v) for v in (x, y, sample_weight)):
        return
    x, y, sample_weight = (data_adapter.standardize(v, f"Model.{method}: `{name}`") for v, name
                           in ((x, "x"), (y, "y"), (sample_weight, "sample_weight")))
    if method == "predict":
        for leaf in data_adapter.leaves(x):
            check_real(method, "x", leaf)
        return
    check_data(model, method, x, y, sample_weight, class_weight, stacklevel + 1)


def check_data(model, method, x, y=None, sample_weight=None, class_weight=None, stacklevel=4):
    """Check standardized ``x``, ``y``, ``sample_weight`` and ``class_weight`` for ``method``.
    ``stacklevel`` is the warnings' level counted from this function (the user's call).

    Raises:
        TypeError: for complex data.
        ValueError: for a ``sample_weight`` whose shape fits neither ``(n,)`` nor the targets,
            ``class_weight`` keys that are not class ids of the model's output, or non-integral
            labels with a sparse loss or with ``class_weight``.

    Warns:
        RuntimeWarning: naming each array with NaN or inf values and how many it has.
    """
    named = list(_named_leaves("x", x)) + list(_named_leaves("y", y)) + \
        list(_named_leaves("sample_weight", sample_weight))
    for name, array in named:
        check_real(method, name, array)
    sparse = _uses_sparse_loss(model)
    for name, array in named:
        if not (sparse and name == "y"):  # a sparse loss rejects NaN/inf labels itself
            _warn_non_finite(method, name, array, stacklevel + 1)
    _check_sample_weight_shape(method, sample_weight, y)
    if y is not None and not isinstance(y, (list, dict)) and (sparse or class_weight):
        _check_integral_labels(method, y, "a sparse loss" if sparse else "class_weight")
    if class_weight is not None:
        _check_class_weight(model, method, y, class_weight)


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


def _warn_non_finite(method, name, array, stacklevel):
    if not backend_module.is_float_dtype(array.dtype):
        return
    xp = backend_module.backend_of(array).xp
    bad = int(array.size - xp.count_nonzero(xp.isfinite(array)))
    if bad:
        nans = int(xp.count_nonzero(xp.isnan(array)))
        warnings.warn(f"Model.{method}: `{name}` holds {bad} non-finite value(s) ({nans} NaN, "
                      f"{bad - nans} inf) out of {array.size}; the loss and, in fit, every "
                      "weight they reach will become NaN. Remove or replace them first (a "
                      "TerminateOnNaN callback stops training when the loss turns NaN).",
                      RuntimeWarning, stacklevel=stacklevel)


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
