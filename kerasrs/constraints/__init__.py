"""Weight constraints as Keras's ``keras.constraints``: projections applied to a weight after each
optimizer step (``Dense(kernel_constraint=MaxNorm(2))``).

A constraint is a callable ``w -> w'`` on a Tensor; the norms are taken over ``axis`` (for a
Dense kernel of shape (input_dim, units), ``axis=0`` constrains each unit's incoming weights).
Formulas follow Keras 3 (keras/src/constraints/constraints.py) with its fuzz factor (epsilon).
"""

from kerasrs import ops
from kerasrs.backend import settings


class Constraint:
    """Base class: subclasses implement ``__call__(w)`` and, if they take arguments,
    ``get_config``."""

    def __call__(self, w):
        return w

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _norms(w, axis):
    return ops.sqrt(ops.sum(ops.square(w), axis=axis, keepdims=True))


class MaxNorm(Constraint):
    """Rescale so that the L2 norm along ``axis`` is at most ``max_value``."""

    def __init__(self, max_value=2, axis=0):
        self.max_value, self.axis = max_value, axis

    def __call__(self, w):
        w = ops.convert_to_tensor(w)
        norms = _norms(w, self.axis)
        desired = ops.clip(norms, 0, self.max_value)
        return w * (desired / (settings.epsilon() + norms))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class MinMaxNorm(Constraint):
    """Move the L2 norm along ``axis`` into ``[min_value, max_value]``; ``rate`` in (0, 1] sets
    how far: ``norm' = rate * clip(norm) + (1 - rate) * norm``."""

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value, self.max_value, self.rate, self.axis = min_value, max_value, rate, axis

    def __call__(self, w):
        w = ops.convert_to_tensor(w)
        norms = _norms(w, self.axis)
        desired = self.rate * ops.clip(norms, self.min_value, self.max_value) + \
            (1 - self.rate) * norms
        return w * (desired / (settings.epsilon() + norms))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


class NonNeg(Constraint):
    """Set negative weights to zero."""

    def __call__(self, w):
        w = ops.convert_to_tensor(w)
        return w * ops.cast(ops.greater_equal(w, 0.0), w.dtype)


class UnitNorm(Constraint):
    """Scale to unit L2 norm along ``axis``."""

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        w = ops.convert_to_tensor(w)
        return w / (settings.epsilon() + _norms(w, self.axis))

    def get_config(self):
        return {"axis": self.axis}


max_norm, min_max_norm, non_neg, unit_norm = MaxNorm, MinMaxNorm, NonNeg, UnitNorm
_CLASSES = {c.__name__: c for c in (Constraint, MaxNorm, MinMaxNorm, NonNeg, UnitNorm)}
_ALIASES = {"max_norm": MaxNorm, "min_max_norm": MinMaxNorm, "non_neg": NonNeg,
            "unit_norm": UnitNorm}


def serialize(constraint):
    """Keras's ``{"module", "class_name", "config", "registered_name"}`` dict, or None."""
    if constraint is None:
        return None
    return {"module": "keras.constraints", "class_name": type(constraint).__name__,
            "config": constraint.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """A constraint from `serialize`'s dict (or a bare class name)."""
    if isinstance(config, str):
        config = {"class_name": config, "config": {}}
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _CLASSES.get(name) or _ALIASES.get(name)
    if cls is None:
        raise ValueError(f"deserialize: unknown constraint. Received: class_name={name!r}")
    return cls.from_config(dict(config.get("config") or {}))


def get(identifier):
    """A constraint from None, a name ("max_norm", "MaxNorm"), a config dict or a callable.

    Raises:
        ValueError: for anything else.
    """
    if identifier is None or (callable(identifier) and not isinstance(identifier, type)):
        return identifier
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if isinstance(identifier, type) and issubclass(identifier, Constraint):
        return identifier()
    raise ValueError(f"Could not interpret constraint identifier: {identifier!r}")


__all__ = ["Constraint", "MaxNorm", "MinMaxNorm", "NonNeg", "UnitNorm", "deserialize", "get",
           "max_norm", "min_max_norm", "non_neg", "serialize", "unit_norm"]
