"""Running sums and means, and `MeanMetricWrapper`, which averages a per-sample function.

A `Mean` keeps ``total = sum(value * weight)`` and ``count = sum(weight)`` over every sample seen
(a missing weight counts 1 per sample), so an epoch's mean is exact however the samples were
split into batches (behaviour case C02): a last batch of 1 sample counts 1, not as much as a
full batch.
"""

from kerasrs import autodiff, losses
from kerasrs import backend as backend_module
from kerasrs.metrics import base

# The per-sample metric functions by name (``accuracy``, ``mean_absolute_error``, ...) that
# `lookup_function` finds first; kerasrs.metrics fills it once it has imported their modules
# (which import this one).
FUNCTIONS = {}


def lookup_function(name):
    """A per-sample function by name: a metric function first, then a loss function or alias.

    Raises:
        ValueError: for an unknown name.
    """
    if name in FUNCTIONS:
        return FUNCTIONS[name]
    fn = losses._BY_NAME.get(name) or losses._BY_NAME.get(name.lower())
    if fn is None:
        raise ValueError(f"metrics: unknown metric function {name!r}. Received: {name!r}")
    return fn


def add_to(variable, amount):
    """``variable += amount`` where ``variable`` lives: a sum on the same device is added there
    (a GPU's metrics are read once per log, not once per batch); one from another backend is
    read as a Python float."""
    if backend_module.backend_of(amount) is not backend_module.backend_of(variable.data):
        amount = float(amount)
    variable.data += amount


def reduce_to_samplewise(values, sample_weight, reduce="mean"):
    """Keras's ``reduce_to_samplewise_values`` on arrays: returns ``(weighted values of shape
    (batch,) or (), weights of the same shape or None)``. Axes beyond the weight's rank are
    reduced first, then the weighted values' and the weights' axes after the first, by
    ``reduce`` (``"mean"``, or ``"sum"`` for `Sum`). Totals are taken in float64 (exact sums;
    the values themselves are computed in the inputs' dtype)."""
    xp = base.xp_of(values)
    reduce_fn = getattr(xp, reduce)
    values = values.astype("float64", copy=False)
    weight = None
    if sample_weight is not None:
        weight = base.raw(sample_weight, like=values).astype("float64")
        values, weight = base.squeeze_or_expand(values, weight)
        if values.ndim > weight.ndim:
            values = reduce_fn(values, axis=tuple(range(weight.ndim, values.ndim)))
        weight = xp.broadcast_to(weight, values.shape)
        values = values * weight
        if weight.ndim > 1:
            weight = reduce_fn(weight, axis=tuple(range(1, weight.ndim)))
    if values.ndim > 1:
        values = reduce_fn(values, axis=tuple(range(1, values.ndim)))
    return values, weight


class Sum(base.Metric):
    """The (weighted) sum of the values given. Variable: ``total``.

    Example:
        >>> m = Sum()
        >>> m.update_state([1, 3, 5, 7], sample_weight=[1, 1, 0, 0])
        >>> float(m.result())
        4.0
    """

    def __init__(self, name="sum", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_accumulator((), "total")

    def update_state(self, values, sample_weight=None):
        values, _ = reduce_to_samplewise(base.raw(values), sample_weight, reduce="sum")
        add_to(self.total, values.sum())

    def result(self):
        return self.result_tensor(self.total.data)


class Mean(base.Metric):
    """The (weighted) mean of the values given: ``total / count``. Variables: ``total``,
    ``count``. Values of shape ``(batch, ...)`` count one sample per row (extra axes are
    averaged); a 0-d value counts as one sample. With no samples the result is 0.

    Example:
        >>> m = Mean()
        >>> m.update_state([1, 3, 5, 7], sample_weight=[1, 1, 0, 0])
        >>> float(m.result())
        2.0
    """

    def __init__(self, name="mean", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_accumulator((), "total")
        self.count = self.add_accumulator((), "count")

    def update_state(self, values, sample_weight=None):
        values, weight = reduce_to_samplewise(base.raw(values), sample_weight)
        add_to(self.total, values.sum())
        if weight is not None:
            add_to(self.count, weight.sum())
        else:
            self.count.data += values.shape[0] if values.ndim else 1

    def result(self):
        total, count = backend_module.convert_to_numpy(  # one read from a device
            base.xp_of(self.total.data).stack([self.total.data, self.count.data])).tolist()
        return self.result_tensor(total / count if count else 0.0)


class MeanMetricWrapper(Mean):
    """The running mean of ``fn(y_true, y_pred, **kwargs)``, a per-sample function.

    ``fn`` may be a kerasrs metric or loss function, any function of arrays or Tensors, or a
    `kerasrs.losses.Loss` (its unreduced values are used). A ``_keras_mask`` on the result
    (``ignore_class``), or one carried by ``y_pred`` (a mask propagated through the model),
    removes those samples from both the total and the count, as in Keras 3.

    Args:
        fn: the per-sample function.
        name: str; defaults to ``fn``'s name.
        dtype: result dtype name (config only).
        **kwargs: passed to ``fn`` on every call.
    """

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        name = name or getattr(fn, "name", None) or getattr(fn, "__name__", None)
        super().__init__(name=name, dtype=dtype)
        self._fn, self._fn_kwargs = fn, kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        carried = getattr(y_pred, "_keras_mask", None)  # a mask propagated through the model
        with autodiff.no_grad():
            if hasattr(self._fn, "convert_inputs") and hasattr(self._fn, "call"):  # a Loss
                values = self._fn.call(*self._fn.convert_inputs(y_true, y_pred))
            else:
                values = self._fn(y_true, y_pred, **self._fn_kwargs)
        mask = getattr(values, "_keras_mask", None)
        values = base.raw(values)
        if carried is not None:
            carried = base.raw(carried).astype(bool)
            while carried.ndim > values.ndim and carried.shape[-1] == 1:
                carried = carried[..., 0]
            mask = carried if mask is None else base.raw(mask).astype(bool) & carried
        if mask is not None:
            mask = mask.astype("float64")
            sample_weight = mask if sample_weight is None else \
                base.weights_like(sample_weight, mask) * mask
        super().update_state(values, sample_weight)

    def get_config(self):
        fn_name = getattr(self._fn, "__name__", None) or getattr(self._fn, "name", None)
        return {**super().get_config(), "fn": fn_name, **self._fn_kwargs}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        fn = config.pop("fn")
        if isinstance(fn, dict):  # Keras writes {"class_name": "function", "config": name}
            fn = fn.get("config")
        return cls(lookup_function(fn) if isinstance(fn, str) else fn, **config)


class FunctionMean(MeanMetricWrapper):
    """Base of the named metrics built on a fixed function (``BinaryAccuracy``, ...): a
    `MeanMetricWrapper` whose config is its constructor's arguments only."""

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype, **self._fn_kwargs}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
