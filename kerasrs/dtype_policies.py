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

Quantized layers (`Dense`, `EinsumDense`, `Embedding` after ``layer.quantize(mode)``) carry a
quantized policy named ``"<mode>_from_<source>"``: ``"int8_from_float32"``,
``"int4/128_from_mixed_bfloat16"`` (int4 with groups of 128 input rows; ``/-1`` per channel),
``"float8_from_float32"``, ``"gptq/4/128_from_float32"``, ``"awq/4/128_from_float32"``. The
source policy gives the compute and variable dtypes; the mode says how the kernel is stored.
`DTypePolicyMap` maps layer paths to policies (Keras's way to save a model whose sublayers are
quantized differently).
"""

import re
import threading
from collections.abc import MutableMapping

from kerasrs import backend as backend_module

_MIXED = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}
QUANTIZATION_MODES = ("int8", "float8", "int4", "gptq", "awq")
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
    quantization_mode = None  # a plain attribute: Layer.__call__ reads it on every call

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
        return type(other) is type(self) and other.name == self.name

    __hash__ = object.__hash__

    def __repr__(self):
        return f'<{type(self).__name__} "{self._name}">'


Policy = DTypePolicy  # the Keras 2 name, kept by keras.mixed_precision
FloatDTypePolicy = DTypePolicy  # Keras 3's name for a float policy


class QuantizedDTypePolicy(DTypePolicy):
    """The policy of a quantized layer: ``mode`` ("int8", "int4", "float8", "gptq" or "awq")
    applied to the float policy ``source_name``, named ``"<mode>_from_<source_name>"``.

    Raises:
        ValueError: for an unknown mode or source, or int8 with a float16 compute dtype (int8
            products overflow float16; Keras refuses it too).
    """

    def __init__(self, mode, source_name=None):
        source_name = dtype_policy().name if source_name is None else source_name
        base = DTypePolicy(source_name)
        mode_name = mode.split("/")[0] if isinstance(mode, str) else mode
        if mode_name not in QUANTIZATION_MODES:
            raise ValueError(f"{type(self).__name__}: Invalid quantization mode. Expected one "
                             f"of {QUANTIZATION_MODES}. Received: mode={mode!r}")
        if mode_name == "int8" and base.compute_dtype == "float16":
            raise ValueError(f"{type(self).__name__}: Quantization mode='{mode}' doesn't work "
                             f"well with compute_dtype='float16'. Received: "
                             f"source_name={source_name!r}")
        self._name = f"{mode}_from_{source_name}"
        self._compute_dtype, self._variable_dtype = base.compute_dtype, base.variable_dtype
        self.autocast_dtype = base.autocast_dtype
        self._source_name, self.quantization_mode = source_name, mode_name

    source_name = property(lambda self: self._source_name)

    def get_config(self):
        return {"mode": self._name.split("_from_")[0], "source_name": self._source_name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class QuantizedFloat8DTypePolicy(QuantizedDTypePolicy):
    """The float8 policy; ``amax_history_length`` is the window of the delayed scaling."""

    default_amax_history_length = 1024

    def __init__(self, mode, source_name=None, amax_history_length=1024):
        super().__init__(mode, source_name)
        if not isinstance(amax_history_length, int) or isinstance(amax_history_length, bool):
            raise TypeError(f"QuantizedFloat8DTypePolicy: `amax_history_length` must be an "
                            f"integer. Received: amax_history_length={amax_history_length!r}")
        self.amax_history_length = amax_history_length

    def __eq__(self, other):
        return super().__eq__(other) and other.amax_history_length == self.amax_history_length

    __hash__ = object.__hash__

    def get_config(self):
        return {**super().get_config(), "amax_history_length": self.amax_history_length}


def _mode_numbers(cls, mode, base, count, what):
    """The integers of a mode ``"<base>/<n>[/<m>]"``, or ValueError in Keras's words."""
    parts = mode.split("/") if isinstance(mode, str) else []
    expected = f"'{base}/" + "/".join(f"<{w}>" for w in what) + "'"
    if len(parts) != count + 1 or parts[0] != base:
        raise ValueError(f"Invalid mode for {cls}. Expected format {expected}, but got "
                         f"'{mode}'.")
    try:
        return [int(p) for p in parts[1:]]
    except ValueError:
        raise ValueError(f"Invalid mode for {cls}. {' and '.join(f'<{w}>' for w in what)} must "
                         f"be integers. Expected format {expected}, but got '{mode}'.") from None


def _check_group(value, mode, what="block_size"):
    if value < -1 or value == 0:
        raise ValueError(f"Invalid {what} in mode. Supported values are -1 (per-channel) or a "
                         f"positive integer, but got {value} from '{mode}'.")


class Int4DTypePolicy(QuantizedDTypePolicy):
    """int4 with the block size in the name: ``"int4/<block_size>_from_<source>"`` (-1 means
    one scale per output channel, a positive size one scale per group of input rows)."""

    def __init__(self, mode, source_name=None):
        (self.block_size,) = _mode_numbers("Int4DTypePolicy", mode, "int4", 1, ["block_size"])
        _check_group(self.block_size, mode)
        super().__init__(mode, source_name)
        self.mode = "int4"

    def __eq__(self, other):
        return super().__eq__(other) and other.block_size == self.block_size

    __hash__ = object.__hash__


class _CalibratedDTypePolicy(QuantizedDTypePolicy):
    """GPTQ/AWQ: ``"<mode>/<weight_bits>/<group_size>_from_<source>"``."""

    _bits = (2, 3, 4, 8)

    def __init__(self, mode, source_name=None):
        base = self._base
        self.weight_bits, self.group_size = _mode_numbers(
            type(self).__name__, mode, base, 2, ["weight_bits", "group_size"])
        if self.weight_bits not in self._bits:
            raise ValueError(f"Invalid weight_bits in mode. Supported values are "
                             f"{', '.join(map(str, self._bits))}, but got {self.weight_bits} "
                             f"from '{mode}'.")
        _check_group(self.group_size, mode, "group_size")
        super().__init__(mode, source_name)
        self.mode = base

    def __eq__(self, other):
        return super().__eq__(other) and (other.weight_bits, other.group_size) == (
            self.weight_bits, self.group_size)

    __hash__ = object.__hash__


class GPTQDTypePolicy(_CalibratedDTypePolicy):
    """The policy of a GPTQ-quantized layer (Frantar et al. 2023)."""

    _base = "gptq"


class AWQDTypePolicy(_CalibratedDTypePolicy):
    """The policy of an AWQ-quantized layer (Lin et al. 2024); 4-bit only."""

    _base, _bits = "awq", (4,)


def _quantized_policy(name):
    """The quantized policy named ``"<mode>_from_<source>"``."""
    parts = name.split("_from_")
    if len(parts) != 2:
        raise ValueError(f"dtype policy: cannot split {name!r} into a quantization mode and a "
                         "source policy ('<mode>_from_<source>', e.g. 'int8_from_float32').")
    mode, source = parts
    if mode.startswith("int4/"):
        return Int4DTypePolicy(mode, source)
    for prefix, cls in (("gptq", GPTQDTypePolicy), ("awq", AWQDTypePolicy),
                        ("float8", QuantizedFloat8DTypePolicy)):
        if mode.startswith(prefix):
            return cls(mode, source)
    return QuantizedDTypePolicy(mode, source)


class DTypePolicyMap(DTypePolicy, MutableMapping):
    """Policies by layer path (Keras's ``keras.dtype_policies.DTypePolicyMap``): a layer given
    a map as ``dtype`` looks its own ``path`` up, exactly or as a ``re.fullmatch`` pattern,
    and falls back to ``default_policy``.

    Args:
        default_policy: a policy or name; None means the global policy.
        policy_map: dict ``{path or pattern: policy}``.

    Raises:
        ValueError: for a map as the default, a duplicate key, or a path matching several
            patterns. TypeError: for a ``policy_map`` that is not a dict.
    """

    def __init__(self, default_policy=None, policy_map=None):
        if isinstance(default_policy, DTypePolicyMap):
            raise ValueError("DTypePolicyMap: `default_policy` cannot be a `DTypePolicyMap`.")
        if policy_map is not None and not isinstance(policy_map, dict):
            raise TypeError(f"DTypePolicyMap: If specified, `policy_map` must be a dict. "
                            f"Received: policy_map={policy_map!r} of type "
                            f"{type(policy_map).__name__}")
        self._default_policy_arg = default_policy
        self._default_policy = get(default_policy)
        self._policy_map = {}
        for key, policy in (policy_map or {}).items():
            self[key] = policy

    default_policy = property(lambda self: self._default_policy)
    name = property(lambda self: f"map_{self._default_policy.name}")
    compute_dtype = property(lambda self: self._default_policy.compute_dtype)
    variable_dtype = property(lambda self: self._default_policy.variable_dtype)
    quantization_mode = property(lambda self: self._default_policy.quantization_mode)
    autocast_dtype = property(lambda self: self._default_policy.autocast_dtype)

    def __getitem__(self, key):
        if key in self._policy_map:
            return self._policy_map[key]
        found = [p for p in self._policy_map if re.fullmatch(p, key)]
        if len(found) > 1:
            raise ValueError(f"Path '{key}' matches multiple dtype policy specification keys: "
                             f"{found}. Please make sure each path only matches at most one "
                             "dtype policy specification key in the DTypePolicyMap.")
        return self._policy_map[found[0]] if found else self._default_policy

    def __setitem__(self, key, policy):
        if key in self._policy_map:
            raise ValueError(f"{key} already exist in the DTypePolicyMap with value "
                             f"{self._policy_map[key]}. Please make sure to not use duplicated "
                             "keys.")
        try:
            self._policy_map[key] = get(policy)
        except Exception as e:  # noqa: BLE001 - any failure means the value is no policy
            raise ValueError(f"DTypePolicyMap: Cannot interpret the assigned value by "
                             f"`keras.dtype_policies.get`. Received: {policy!r} of type "
                             f"{type(policy).__name__}") from e

    def __delitem__(self, key):
        return self._policy_map.pop(key)

    def __contains__(self, key):
        return key in self._policy_map

    def __len__(self):
        return len(self._policy_map)

    def __iter__(self):
        return iter(self._policy_map)

    def __eq__(self, other):
        return self is other

    __hash__ = object.__hash__

    def get_config(self):
        return {"default_policy": self._default_policy_arg,
                "policy_map": {k: serialize(v) for k, v in self._policy_map.items()}}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["policy_map"] = {k: get(v) for k, v in (config.get("policy_map") or {}).items()}
        return cls(**config)

    def __repr__(self):
        return (f"<DTypePolicyMap default_policy={self._default_policy.name}, "
                f"mapping={[(k, v.name) for k, v in self._policy_map.items()]}>")


_CLASSES = {cls.__name__: cls for cls in (
    DTypePolicy, QuantizedDTypePolicy, QuantizedFloat8DTypePolicy, Int4DTypePolicy,
    GPTQDTypePolicy, AWQDTypePolicy, DTypePolicyMap)}
_CLASSES.update(FloatDTypePolicy=DTypePolicy, Policy=DTypePolicy)


def get(identifier):
    """A `DTypePolicy` from None (the global policy), a name, a dtype, a policy or its config.

    Names of quantized policies (``"int8_from_float32"``, ``"int4/128_from_float32"``...) give
    the quantized classes. Accepts Keras's serialized form ``{"class_name": "DTypePolicy",
    "config": {"name": ...}}`` (also the class names "FloatDTypePolicy" and "Policy" older
    Keras versions wrote, and the quantized classes and `DTypePolicyMap`).

    Raises:
        ValueError: for an unknown mixed policy name or a dict of another form.
        TypeError: for an unknown dtype name.
    """
    if identifier is None:
        return dtype_policy()
    if isinstance(identifier, DTypePolicy):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str) and identifier.startswith(QUANTIZATION_MODES):
        return _quantized_policy(identifier)
    name = getattr(identifier, "name", identifier)  # a NumPy dtype
    if not isinstance(name, str):
        name = backend_module.standardize_dtype(identifier).name
    return DTypePolicy(name)


def deserialize(config, custom_objects=None):
    """A policy from its Keras config dict (``{"class_name", "config"}``, or a bare config)."""
    inner = config.get("config", config)
    cls = _CLASSES.get(config.get("class_name", "DTypePolicy"))
    if cls is None or not isinstance(inner, dict) or (cls is DTypePolicy and "name" not in inner):
        raise ValueError(f"dtype policy: a dict must be a DTypePolicy config with a 'name'. "
                         f"Received: {config!r}")
    return cls.from_config(inner)


def serialize(policy):
    """Keras 3's saved form of a policy (module "keras" for a float policy, as Keras writes
    it; "keras.dtype_policies" for the quantized ones and maps)."""
    plain = type(policy) is DTypePolicy
    return {"module": "keras" if plain else "keras.dtype_policies",
            "class_name": type(policy).__name__, "config": policy.get_config(),
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

__all__ = ["DTypePolicy", "Policy", "FloatDTypePolicy", "QuantizedDTypePolicy",
           "QuantizedFloat8DTypePolicy", "Int4DTypePolicy", "GPTQDTypePolicy", "AWQDTypePolicy",
           "DTypePolicyMap", "QUANTIZATION_MODES", "get", "serialize", "deserialize",
           "set_dtype_policy", "dtype_policy", "set_global_policy", "global_policy"]
