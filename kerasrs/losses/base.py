"""The `Loss` base class, the function wrapper, and Keras 3's reduction rules.

A `Loss` turns ``(y_true, y_pred)`` into one value per sample with ``call`` and then reduces
those values with optional ``sample_weight``:

- ``"sum_over_batch_size"`` (default) and ``"mean"``: ``sum(loss * weight) / number of
  loss values`` (weights do not change the divisor, as in Keras);
- ``"sum"``: ``sum(loss * weight)``;
- ``"mean_with_sample_weight"``: ``sum(loss * weight) / sum(weight)``;
- ``"none"`` or ``None``: the weighted per-sample values.

A per-sample result may carry a boolean ``_keras_mask`` (``SparseCategoricalCrossentropy`` with
``ignore_class`` sets one), and so may ``y_pred`` (a mask propagated through the model, e.g. from
``Embedding(mask_zero=True)``); masked-out values count neither in the sum nor in the divisor,
so the loss is the mean over the unmasked steps, as in Keras 3.
Everything is built from `kerasrs.ops`, so the reduced loss is differentiable w.r.t. ``y_pred``.
"""

import re

import numpy as np

from kerasrs import autodiff, ops
from kerasrs import backend as backend_module

REDUCTIONS = ("sum_over_batch_size", "sum", "mean", "mean_with_sample_weight", "none", None)


def standardize_reduction(reduction):
    """``reduction`` checked against Keras's list. Raises ValueError for anything else."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"Loss: invalid `reduction`; expected one of {REDUCTIONS}. Received: "
                         f"reduction={reduction!r}")
    return reduction


def to_tensor_like(x, ref, dtype=None):
    """``x`` as a Tensor on ``ref``'s backend (optionally cast to ``dtype``, differentiably)."""
    if not isinstance(x, autodiff.Tensor):
        data = x
        if not ref.backend.is_array(data):
            data = np.asarray(backend_module.convert_to_numpy(data))
        x = autodiff.Tensor(ref.backend.asarray(data), backend=ref.backend)
    elif x.backend is not ref.backend:
        x = autodiff.Tensor(ref.backend.asarray(x.numpy()), backend=ref.backend)
    if dtype is not None and x.dtype != dtype:
        x = ops.cast(x, dtype)
    return x


def labels_tensor(y_true, y_pred):
    """Class ids as a Tensor: a host array stays on the host, where the op checks their range
    before copying them to ``y_pred``'s device (no device read per step); anything else goes
    to ``y_pred``'s backend."""
    host = backend_module.get("numpy")
    if isinstance(y_true, np.ndarray):
        return autodiff.Tensor(y_true, backend=host)
    if isinstance(y_true, autodiff.Tensor) and y_true.backend is host:
        return y_true
    return to_tensor_like(y_true, y_pred)


def float_tensor(y_pred, dtype=None):
    """``y_pred`` as a float Tensor: cast to ``dtype`` if given, non-floats to ``floatx()`` and
    half precision (mixed-precision outputs) to float32, so losses accumulate in float32."""
    y_pred = autodiff.convert_to_tensor(y_pred)
    if dtype is not None:
        dtype = backend_module.standardize_dtype(dtype)
    elif not backend_module.is_float_dtype(y_pred.dtype):
        dtype = backend_module.standardize_dtype(None)
    elif y_pred.dtype.itemsize == 2:
        dtype = backend_module.standardize_dtype("float32")
    return y_pred if dtype is None or y_pred.dtype == dtype else ops.cast(y_pred, dtype)


def prepare(y_true, y_pred, cast=True):
    """The usual start of a loss function: float ``y_pred``; ``y_true`` on its backend (cast to
    its dtype when ``cast``); ranks aligned by `squeeze_or_expand_to_same_rank`."""
    y_pred = float_tensor(y_pred)
    y_true = to_tensor_like(y_true, y_pred, y_pred.dtype if cast else None)
    return squeeze_or_expand_to_same_rank(y_true, y_pred)


def squeeze_or_expand_to_same_rank(x1, x2, expand_rank_1=True):
    """Keras's rank fix: if the ranks differ by one and the longer one ends in a size-1 axis,
    squeeze that axis (or, when the other is 1-D, expand the other instead)."""
    r1, r2 = x1.ndim, x2.ndim
    if r1 == r2 + 1 and x1.shape[-1] == 1:
        if r2 == 1 and expand_rank_1:
            x2 = ops.expand_dims(x2, -1)
        else:
            x1 = ops.squeeze(x1, -1)
    elif r2 == r1 + 1 and x2.shape[-1] == 1:
        if r1 == 1 and expand_rank_1:
            x1 = ops.expand_dims(x1, -1)
        else:
            x2 = ops.squeeze(x2, -1)
    return x1, x2


def reduce_weighted_values(values, sample_weight=None, mask=None,
                           reduction="sum_over_batch_size"):
    """Weight, mask and reduce per-sample loss values (see the module docstring).

    Args:
        values: Tensor of per-sample losses, shape ``(batch, ...)``.
        sample_weight: None, a scalar, or an array broadcastable to ``values`` after a trailing
            size-1 axis is squeezed (``(batch,)`` or ``(batch, 1)`` for ``(batch,)`` values);
            a weight of lower rank is applied along the leading axes.
        mask: None or a boolean backend array of ``values``'s shape.
        reduction: one of `REDUCTIONS`.

    Returns:
        A 0-d Tensor, or the weighted values for ``"none"``/None. An empty batch gives 0.
    """
    reduction = standardize_reduction(reduction)
    weight = None
    if sample_weight is not None:
        weight = to_tensor_like(sample_weight, values, values.dtype)
        values, weight = squeeze_or_expand_to_same_rank(values, weight)
        if 0 < weight.ndim < values.ndim:
            weight = ops.reshape(weight, weight.shape + (1,) * (values.ndim - weight.ndim))
        values = values * weight
    if mask is not None:
        values = ops.where(mask, values, 0.0)
    if reduction in (None, "none") or values.ndim == 0:
        return values
    total = ops.sum(values)
    if reduction == "sum":
        return total
    if reduction == "mean_with_sample_weight" and weight is not None:
        divisor = float(weight.data.sum())
    else:
        divisor = int(mask.sum()) if mask is not None else values.size
    return total / divisor if divisor else total * 0.0


def _as_loss_values(values, name):
    """A loss function's result as a Tensor: numbers and arrays convert; anything else (a str,
    None, a list of tensors) is a TypeError naming the loss."""
    if isinstance(values, autodiff.Tensor) or hasattr(values, "__array_interface__") or \
            hasattr(values, "__cuda_array_interface__"):
        return values
    if isinstance(values, (int, float, np.number)) and not isinstance(values, bool):
        return autodiff.convert_to_tensor(values)
    raise TypeError(f"loss {name!r} returned a {type(values).__name__}; a loss returns a tensor "
                    f"of per-sample values (or a scalar). Received: {values!r:.80}")


class Loss:
    """Base class of losses (Keras 3's ``keras.losses.Loss``).

    Subclasses implement ``call(y_true, y_pred) -> per-sample Tensor``. Calling the loss
    converts the inputs, runs ``call`` and reduces with `reduce_weighted_values`.

    Args:
        name: str; defaults to the class name in snake case.
        reduction: one of ``"sum_over_batch_size"`` (default), ``"sum"``, ``"mean"``,
            ``"mean_with_sample_weight"``, ``"none"``, None.
        dtype: the dtype to compute in. None keeps a float ``y_pred``'s dtype (so float64 works
            for gradient checks; Keras would cast to ``floatx()``) and casts other inputs to
            ``floatx()``.

    Raises:
        ValueError: for an unknown reduction.
    """

    cast_y_true = True  # sparse losses keep integer labels as they are

    def __init__(self, name=None, reduction="sum_over_batch_size", dtype=None):
        self.name = name or _snake_case(type(self).__name__)
        self.reduction = standardize_reduction(reduction)
        self._dtype = None if dtype is None else backend_module.standardize_dtype(dtype).name

    @property
    def dtype(self):
        return self._dtype

    def __call__(self, y_true, y_pred, sample_weight=None):
        """The reduced loss: a 0-d Tensor (per-sample Tensor for ``reduction="none"``)."""
        carried = getattr(y_pred, "_keras_mask", None)
        y_true, y_pred = self.convert_inputs(y_true, y_pred)
        values = _as_loss_values(self.call(y_true, y_pred), self.name)
        mask = combine_masks(getattr(values, "_keras_mask", None), carried, values, self.name)
        return reduce_weighted_values(values, sample_weight, mask, self.reduction)

    def convert_inputs(self, y_true, y_pred):
        """``(y_true, y_pred)`` as Tensors on one backend, ``y_pred`` float (see ``dtype``)."""
        y_pred = float_tensor(y_pred, self._dtype)
        return to_tensor_like(y_true, y_pred, y_pred.dtype if self.cast_y_true else None), y_pred

    def call(self, y_true, y_pred):
        raise NotImplementedError(f"{type(self).__name__} must implement call(y_true, y_pred).")

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name} reduction={self.reduction}>"


class LossFunctionWrapper(Loss):
    """A `Loss` around a function ``fn(y_true, y_pred, **kwargs) -> per-sample Tensor``.

    The ranks of ``y_true`` and ``y_pred`` are aligned first (`squeeze_or_expand_to_same_rank`),
    as Keras does.
    """

    def __init__(self, fn, reduction="sum_over_batch_size", name=None, dtype=None, **kwargs):
        super().__init__(name=name or getattr(fn, "__name__", None), reduction=reduction,
                         dtype=dtype)
        self.fn = fn
        self._fn_kwargs = kwargs

    def convert_inputs(self, y_true, y_pred):
        """As `Loss.convert_inputs`, except that class ids for a function that takes them
        (``fn.takes_class_ids``: the sparse cross-entropy) stay on the host when they come
        from there (`labels_tensor`)."""
        if not getattr(self.fn, "takes_class_ids", False):
            return super().convert_inputs(y_true, y_pred)
        y_pred = float_tensor(y_pred, self._dtype)
        return labels_tensor(y_true, y_pred), y_pred

    def call(self, y_true, y_pred):
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        return {**super().get_config(), **self._fn_kwargs}

    def __repr__(self):
        return f"<LossFunctionWrapper({getattr(self.fn, '__name__', self.fn)}, " \
               f"kwargs={self._fn_kwargs})>"


def loss_class(class_name, fn, default_name, params, doc, module):
    """A `LossFunctionWrapper` subclass ``class_name(*params, reduction=..., name=default_name,
    dtype=None)`` around ``fn``, whose constructor takes ``params`` (name -> default,
    positionally in that order or by keyword) and keeps each as an attribute."""
    def __init__(self, *args, reduction="sum_over_batch_size", name=default_name, dtype=None,
                 **kwargs):
        values = dict(params)
        values.update(zip(params, args))
        unknown = set(kwargs) - set(params)
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected arguments {sorted(unknown)}")
        values.update(kwargs)
        LossFunctionWrapper.__init__(self, fn, reduction=reduction, name=name, dtype=dtype,
                                     **values)
        for key, value in values.items():
            setattr(self, key, value)

    return type(class_name, (LossFunctionWrapper,), {
        "__init__": __init__, "__doc__": doc, "__module__": module, "__qualname__": class_name})


def combine_masks(own, carried, values, who):
    """The boolean backend array masking ``values``: the values' own mask and the mask carried
    by ``y_pred`` (trailing size-1 axes dropped or broadcast to ``values``), or None.

    Raises:
        ValueError: if the carried mask cannot be broadcast to the values' shape.
    """
    if carried is None:
        return own
    xp = values.backend.xp
    mask = xp.asarray(autodiff.raw(carried)).astype(bool)
    while mask.ndim > values.ndim and mask.shape[-1] == 1:
        mask = mask[..., 0]
    try:
        mask = xp.broadcast_to(mask, values.shape)
    except ValueError:
        raise ValueError(f"{who}: the mask carried by y_pred has shape {tuple(mask.shape)}, which "
                         f"does not fit the per-sample loss values of shape {values.shape}. "
                         f"Received: mask shape {tuple(mask.shape)}") from None
    return mask if own is None else xp.logical_and(mask, autodiff.raw(own))


def _snake_case(name):
    name = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()
