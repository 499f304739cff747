"""`DTypePolicy`: the dtype a layer stores its variables in and the dtype it computes in.

A policy named after a float dtype ("float32", "float16", "bfloat16", "float64") uses that
dtype for both. The two mixed policies keep variables in float32 and compute in half precision
(Micikevicius et al. 2018, "Mixed Precision Training"):

* ``"mixed_float16"``: compute in float16. Small gradients underflow float16, so a model
  compiled under it wraps its optimizer in a `kerasrs.optimizers.LossScaleOptimizer`.
* ``"mixed_bfloat16"``: compute in bfloat16, which has float32's exponent range: no loss
  scaling is needed.

Whatever the compute dtype, reductions, softmax, normalization statistics and losses are
accumulated in float32 (see ``Function.half_in_float32`` in `kerasrs.autodiff`).

The global policy (`set_dtype_policy`) is read when a layer is created: layers made after
``set_dtype_policy("mixed_float16")`` use it unless given ``dtype=``. Names and the saved form
(``{"module": "keras", "class_name": "DTypePolicy", "config": {"name": ...}}``) are Keras 3's.
"""

import threading

from kerasrs import backend as backend_module

_MIXED = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}
_global = [None]  # the policy set by set_dtype_policy, or None for floatx()
_lock = threading.Lock()


class DTypePolicy:
    """A dtype policy: ``variable_dtype`` for weights, ``compute_dtype`` for the computation.

    Args:
        name: a dtype name ("float32", "float64", "float16", "bfloat16", "int32", ...),
            "mixed_float16" or "mixed_bfloat16". Defaults to ``kerasrs.backend.floatx()``.

    Raises:
        ValueError: for an unknown "mixed_..." name.
        TypeError: for a name that is no dtype ("float33").

    Example:
        >>> policy = DTypePolicy("mixed_float16")
        >>> policy.compute_dtype, policy.variable_dtype
        ('float16', 'float32')
    """

    def __init__(self, name=None):
        name = backend_module.floatx() if name is None else name
        if not isinstance(name, str):
            raise TypeError(f"DTypePolicy: `name` must be a string such as 'float32' or "
                            f"'mixed_float16'. Received: name={name!r}")
        if name in _MIXED:
            compute, variable = _MIXED[name], "float32"
        elif name.startswith("mixed_"):
            raise ValueError(f"DTypePolicy: unknown policy name; the mixed policies are "
                             f"'mixed_float16' and 'mixed_bfloat16'. Received: name={name!r}")
        else:  # a dtype name; TypeError (from standardize_dtype) for an unknown one
            compute = variable = backend_module.standardize_dtype(name).name
        self._name, self._compute_dtype, self._variable_dtype = name, compute, variable
        # what a layer call casts float variables to (see kerasrs.context.autocast)
        self.autocast_dtype = backend_module.standardize_dtype(compute) if compute != variable \
            else None

    name = property(lambda self: self._name)
    compute_dtype = property(lambda self: self._compute_dtype)
    variable_dtype = property(lambda self: self._variable_dtype)
    quantization_mode = property(lambda self: None)

    @property
    def is_mixed(self):
        """Whether variables and computation use different dtypes."""
        return self._compute_dtype != self._variable_dtype

    def get_config(self):
        return {"name": self._name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __eq__(self, other):
        return isinstance(other, DTypePolicy) and other.name == self.name

    __hash__ = object.__hash__

    def __repr__(self):
        return f'<DTypePolicy "{self._name}">'


Policy = DTypePolicy  # the Keras 2 name, kept by keras.mixed_precision
FloatDTypePolicy = DTypePolicy  # Keras 3's name for a float policy (the only kind here)


def get(identifier):
    """A `DTypePolicy` from None (the global policy), a name, a dtype, a policy or its config.

    Accepts Keras's serialized form ``{"class_name": "DTypePolicy", "config": {"name": ...}}``
    (also with class name "FloatDTypePolicy" or "Policy", as older Keras versions wrote it).

    Raises:
        ValueError: for an unknown mixed policy name or a dict of another form.
        TypeError: for an unknown dtype name.
    """
    if identifier is None:
        return dtype_policy()
    if isinstance(identifier, DTypePolicy):
        return identifier
    if isinstance(identifier, dict):
        config = identifier.get("config", identifier)
        if not isinstance(config, dict) or "name" not in config:
            raise ValueError(f"dtype policy: a dict must be a DTypePolicy config with a 'name'. "
                             f"Received: {identifier!r}")
        return DTypePolicy(config["name"])
    name = getattr(identifier, "name", identifier)  # a NumPy dtype
    if not isinstance(name, str):
        name = backend_module.standardize_dtype(identifier).name
    return DTypePolicy(name)


def deserialize(config, custom_objects=None):
    """The policy a `serialize` dict (or a Keras ``DTypePolicy`` config) describes."""
    return get(config)


def serialize(policy):
    """Keras 3's saved form of a policy."""
    return {"module": "keras", "class_name": "DTypePolicy", "config": policy.get_config(),
            "registered_name": None}


def set_dtype_policy(policy):
    """Set the global policy that new layers use (``keras.config.set_dtype_policy``).

    Args:
        policy: a `DTypePolicy` or a name ("mixed_float16", "mixed_bfloat16", "float32", ...).

    Raises:
        ValueError, TypeError: for an unknown name (see `DTypePolicy`).
    """
    policy = get(policy) if policy is not None else None
    with _lock:
        _global[0] = policy


def dtype_policy():
    """The global policy (``keras.config.dtype_policy``): ``DTypePolicy(floatx())`` unless set."""
    return _global[0] or DTypePolicy(backend_module.floatx())


def _explicit_global():
    """The policy set with `set_dtype_policy`, or None if none was set."""
    return _global[0]


set_global_policy, global_policy = set_dtype_policy, dtype_policy  # keras.mixed_precision names

__all__ = ["DTypePolicy", "Policy", "get", "serialize", "deserialize", "set_dtype_policy", "dtype_policy",
           "set_global_policy", "global_policy"]
