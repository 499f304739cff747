"""The `Metric` base class and the array helpers every metric uses.

Metrics are stateful: ``update_state`` folds a batch into running totals, ``result`` reads them,
``reset_state`` clears them. The totals live in non-trainable `kerasrs.Variable`s listed by
``variables``. The built-in metrics keep them in float64 (`add_accumulator`), so that sums over
millions of samples stay exact to float32 precision; ``result()`` returns a `Tensor` of the
metric's dtype (float32 by default), as Keras's metrics do. Metrics compute on the raw arrays of
their inputs (NumPy or CuPy, on the inputs' device), in the inputs' float dtype, and never record
on a `GradientTape`.
"""

import re

import numpy as np

from kerasrs import autodiff
from kerasrs import backend as backend_module
from kerasrs import initializers

AGGREGATIONS = ("none", "mean", "sum", "only_first_replica")


class Metric:
    """Base class of metrics (Keras 3's ``keras.metrics.Metric``).

    Subclasses create their state with `add_variable` in ``__init__`` and implement
    ``update_state(y_true, y_pred, sample_weight=None)`` and ``result()``.

    Args:
        name: str; defaults to the class name in snake case.
        dtype: the result's dtype name. Defaults to ``floatx()`` (``"float32"``).
    """

    def __init__(self, name=None, dtype=None):
        self.name = name or snake_case(type(self).__name__)
        self._dtype = backend_module.standardize_dtype(dtype).name
        self._variables = []

    @property
    def dtype(self):
        return self._dtype

    @property
    def variables(self):
        """The state variables (non-trainable), in creation order."""
        return list(self._variables)

    def add_variable(self, shape, initializer="zeros", dtype=None, aggregation="sum", name=None):
        """A non-trainable state `Variable` (path ``metric/name``), as Keras's ``add_variable``.

        Args:
            shape: tuple of ints.
            initializer: an initializer name (``"zeros"``), object or callable
                ``(shape, dtype) -> array``. Defaults to ``"zeros"``.
            dtype: the variable's dtype. Defaults to ``floatx()``.
            aggregation: how a distributed run combines replicas: ``"sum"`` (default),
                ``"mean"``, ``"only_first_replica"`` or ``"none"``; kept as
                ``variable.aggregation``.
            name: str.

        Raises:
            ValueError: for an unknown initializer or aggregation.
        """
        if aggregation not in AGGREGATIONS:
            raise ValueError(f"{self.name}: `aggregation` must be one of {AGGREGATIONS}. "
                             f"Received: aggregation={aggregation!r}")
        var = autodiff.Variable(initializers.get(initializer), shape=tuple(shape),
                                dtype=backend_module.standardize_dtype(dtype), trainable=False,
                                name=name)
        var.aggregation = aggregation
        var.path = f"{self.name}/{name}"
        self._variables.append(var)
        return var

    def add_weight(self, shape=(), initializer=None, dtype=None, name=None):
        """Keras's older name for `add_variable` (zeros when ``initializer`` is None)."""
        return self.add_variable(shape, initializer or "zeros", dtype=dtype, name=name)

    def add_accumulator(self, shape, name):
        """A float64 zero-initialized state variable: the built-in metrics' exact totals."""
        return self.add_variable(shape, "zeros", dtype="float64", name=name)

    def update_state(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement update_state.")

    def result(self):
        raise NotImplementedError(f"{type(self).__name__} must implement result.")

    def result_tensor(self, value):
        """``value`` (a number, list or array) as the `Tensor` ``result()`` returns: the
        metric's dtype, or float32 for a metric of integer dtype (IoU counts)."""
        dtype = self._dtype if backend_module.is_float_dtype(self._dtype) else "float32"
        return autodiff.Tensor(np.asarray(value, dtype=dtype))

    def reset_state(self):
        """Set every state variable back to 0."""
        for var in self._variables:
            var.data[...] = 0

    def __call__(self, *args, **kwargs):
        """``update_state(*args, **kwargs)`` then ``result()``."""
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self):
        return {"name": self.name, "dtype": self._dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


def snake_case(name):
    """Keras's ``to_snake_case``: ``AUC`` -> ``auc``, ``BinaryAccuracy`` -> ``binary_accuracy``."""
    name = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def raw(x, like=None):
    """The backend array inside ``x`` (a Tensor, array, list or scalar), on ``like``'s backend."""
    data = x.data if isinstance(x, autodiff.Tensor) else x
    if like is None:
        if isinstance(data, (list, tuple, int, float, bool)) or data is None:
            return np.asarray(data)
        return data
    be = backend_module.backend_of(like)
    if not be.is_array(data):
        data = be.asarray(np.asarray(backend_module.convert_to_numpy(data)))
    return data


def xp_of(array):
    """The array module (numpy or cupy) of a backend array."""
    return backend_module.backend_of(array).xp


def inputs(y_true, y_pred):
    """``(y_true, y_pred)`` as raw arrays on ``y_pred``'s backend; ``y_pred`` becomes float."""
    y_pred = raw(y_pred)
    if y_pred.dtype.kind not in "fc":
        y_pred = y_pred.astype(backend_module.floatx())
    return raw(y_true, like=y_pred), y_pred


def squeeze_or_expand(x1, x2):
    """Keras's rank fix on raw arrays (see `kerasrs.losses.base.squeeze_or_expand_to_same_rank`)."""
    if x1.ndim == x2.ndim + 1 and x1.shape[-1] == 1:
        return (x1, x2[..., None]) if x2.ndim == 1 else (x1[..., 0], x2)
    if x2.ndim == x1.ndim + 1 and x2.shape[-1] == 1:
        return (x1[..., None], x2) if x1.ndim == 1 else (x1, x2[..., 0])
    return x1, x2


def weights_like(sample_weight, values):
    """``sample_weight`` as a float64 array on ``values``'s backend, broadcast to its shape
    (a weight of lower rank applies along the leading axes)."""
    w = raw(sample_weight, like=values).astype("float64")
    values, w = squeeze_or_expand(values, w)
    if 0 < w.ndim < values.ndim:
        w = w.reshape(w.shape + (1,) * (values.ndim - w.ndim))
    return xp_of(values).broadcast_to(w, values.shape)
