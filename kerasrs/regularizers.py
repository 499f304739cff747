"""Weight regularizers (Keras 3's ``keras.regularizers``): penalties added to the loss.

A regularizer is called on a weight Tensor and returns a 0-d Tensor that is differentiable with
respect to the weight; a layer adds it to the model's loss. The gradient of ``|w|`` at 0 is 0.
"""

from kerasrs import autodiff, ops, registry


def _coefficient(cls, name, value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{cls}: `{name}` must be a number. Received: {name}={value!r}") \
            from None
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"{cls}: `{name}` must be a finite number >= 0. Received: "
                         f"{name}={value!r}")
    return value


class Regularizer:
    """Base class: subclasses implement ``__call__(x) -> 0-d Tensor`` and ``get_config``."""

    def __call__(self, x):
        return ops.convert_to_tensor(0.0)

    def get_config(self):
        raise NotImplementedError(f"{type(self).__name__} must implement get_config().")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x**2)``.

    Args:
        l1: float >= 0. Defaults to 0.0 (as Keras's class; the ``"l1_l2"`` name gives 0.01).
        l2: float >= 0. Defaults to 0.0.

    Raises:
        ValueError: for a negative, infinite or non-numeric factor.

    Example:
        >>> round(float(L1L2(l1=0.1, l2=0.01)(np.array([1.0, -2.0]))), 6)
        0.35
    """

    def __init__(self, l1=0.0, l2=0.0):
        self.l1 = _coefficient("L1L2", "l1", l1)
        self.l2 = _coefficient("L1L2", "l2", l2)

    def __call__(self, x):
        x = autodiff.convert_to_tensor(x)
        penalty = None
        if self.l1:
            penalty = self.l1 * ops.sum(ops.abs(x))
        if self.l2:
            term = self.l2 * ops.sum(ops.square(x))
            penalty = term if penalty is None else penalty + term
        return penalty if penalty is not None else ops.sum(x * 0.0)

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


class L1(Regularizer):
    """``l1 * sum(|x|)``. Args: ``l1``, float >= 0, default 0.01."""

    def __init__(self, l1=0.01):
        self.l1 = _coefficient("L1", "l1", l1)

    def __call__(self, x):
        return self.l1 * ops.sum(ops.abs(autodiff.convert_to_tensor(x)))

    def get_config(self):
        return {"l1": self.l1}


class L2(Regularizer):
    """``l2 * sum(x**2)`` (no factor 1/2, as Keras). Args: ``l2``, float >= 0, default 0.01."""

    def __init__(self, l2=0.01):
        self.l2 = _coefficient("L2", "l2", l2)

    def __call__(self, x):
        return self.l2 * ops.sum(ops.square(autodiff.convert_to_tensor(x)))

    def get_config(self):
        return {"l2": self.l2}


def l1_l2(l1=0.01, l2=0.01):
    """`L1L2` with both factors defaulting to 0.01 (Keras's ``l1_l2`` shortcut)."""
    return L1L2(l1=l1, l2=l2)


class OrthogonalRegularizer(Regularizer):
    """Pushes the rows (or columns) of a 2-D weight towards orthogonality:
    ``factor * 0.5 * sum(|G - diag(G)|) / (n (n - 1) / 2)`` with ``G`` the Gram matrix of the
    L2-normalized rows (``mode="rows"``) or columns (Keras 3's formula).

    Raises:
        ValueError: for a bad ``mode`` or ``factor``, or a weight that is not 2-D.
    """

    def __init__(self, factor=0.01, mode="rows"):
        self.factor = _coefficient("OrthogonalRegularizer", "factor", factor)
        if mode not in ("rows", "columns"):
            raise ValueError(f"OrthogonalRegularizer: mode must be 'rows' or 'columns'. "
                             f"Received: mode={mode!r}")
        self.mode = mode

    def __call__(self, x):
        x = autodiff.convert_to_tensor(x)
        if x.ndim != 2:
            raise ValueError(f"OrthogonalRegularizer: inputs must have rank 2. Received: "
                             f"shape {x.shape}")
        if self.mode == "rows":
            v = ops.normalize(x, axis=1)
            gram, n = ops.matmul(v, ops.transpose(v)), x.shape[0]
        else:
            v = ops.normalize(x, axis=0)
            gram, n = ops.matmul(ops.transpose(v), v), x.shape[1]
        off = gram * (1.0 - ops.eye(n, dtype=x.dtype))
        return self.factor * 0.5 * ops.sum(ops.abs(off)) / (n * (n - 1) / 2.0)

    def get_config(self):
        return {"factor": self.factor, "mode": self.mode}


l1, l2 = L1, L2  # Keras's lowercase aliases
orthogonal_regularizer = OrthogonalRegularizer
ALL_OBJECTS = {"Regularizer": Regularizer, "L1": L1, "L2": L2, "L1L2": L1L2,
               "OrthogonalRegularizer": OrthogonalRegularizer}
_NAMES = {"l1": L1, "l2": L2, "l1_l2": l1_l2, "l1l2": l1_l2,
          "orthogonal_regularizer": OrthogonalRegularizer}


def serialize(regularizer):
    """``{"module", "class_name", "config", "registered_name"}``, as Keras writes it."""
    return {"module": "keras.regularizers", "class_name": type(regularizer).__name__,
            "config": regularizer.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """A regularizer from `serialize`'s output (or a name, see `get`).

    Raises:
        ValueError: for an unknown class name or a malformed value.
    """
    if isinstance(config, str):
        return get(config)
    classes = {**ALL_OBJECTS, **(custom_objects or {})}
    if not isinstance(config, dict) or config.get("class_name") not in classes:
        raise ValueError(f"regularizers.deserialize: unknown regularizer; known: "
                         f"{sorted(classes)}. Received: {config!r}")
    return classes[config["class_name"]].from_config(config.get("config") or {})


def get(identifier):
    """A regularizer from None (returned as None), an instance, a callable, a name (``"l1"``,
    ``"l2"``, ``"l1_l2"``, class names) or a serialized dict.

    Raises:
        ValueError: if the identifier cannot be interpreted.
    """
    if identifier is None or isinstance(identifier, Regularizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        factory = ALL_OBJECTS.get(identifier) or _NAMES.get(identifier.lower())
        if factory is not None:
            return factory()
    elif callable(identifier):
        return identifier
    raise ValueError(f"regularizers.get: could not interpret regularizer identifier "
                     f"{identifier!r}. Received: {identifier!r}")


__all__ = ["Regularizer", "L1", "L2", "L1L2", "l1", "l2", "l1_l2", "get", "serialize",
           "deserialize", "OrthogonalRegularizer", "orthogonal_regularizer"]


registry.register_kind(Regularizer, serialize)
