"""Quantization configs (Keras's ``keras.quantizers.*QuantizationConfig``, ``GPTQConfig``,
``AWQConfig``): which quantizers ``layer.quantize(mode, config=...)`` uses, and the int4
block size.

GPTQ and AWQ configs are kept for their saved form and the layout they give a layer (packed
4-bit kernels with per-group scales and zero points); the calibration that fills those weights
from a dataset (Frantar et al. 2023; Lin et al. 2024) is not implemented in kerasrs: a layer
quantized with them computes with its float kernel until calibrated weights are loaded.
"""

from kerasrs import dtype_policies, registry
from kerasrs.quantizers.quantizers import AbsMaxQuantizer, Quantizer


def serialize(obj):
    """Keras's saved form of a quantizer or a config (module "keras.quantizers")."""
    if obj is None:
        return None
    key = registry.registered_key(type(obj))
    config = {k: serialize(v) if isinstance(v, (Quantizer, QuantizationConfig)) else v
              for k, v in obj.get_config().items()}
    return {"module": "keras.quantizers", "class_name": type(obj).__name__, "config": config,
            "registered_name": key}


def deserialize(config, custom_objects=None):
    """A quantizer or config from `serialize`'s dict (None stays None).

    Raises:
        ValueError: for an unknown class name.
    """
    if config is None or isinstance(config, (Quantizer, QuantizationConfig)):
        return config
    name = config.get("registered_name") or config["class_name"]
    cls = registry.get_registered_object(name, custom_objects, _CLASSES) or \
        _CLASSES.get(config["class_name"])
    if cls is None:
        raise ValueError(f"kerasrs.quantizers: unknown quantizer or config "
                         f"{config['class_name']!r}. Register it with "
                         f"@kerasrs.saving.register_keras_serializable(). Received: {config!r}")
    return cls.from_config(config.get("config", {}))


class QuantizationConfig:
    """Base class: the weight and activation quantizers of a quantization mode.

    Args:
        weight_quantizer: a `Quantizer` for the kernel, or None for the mode's default.
        activation_quantizer: a `Quantizer` for the inputs, or None (no input quantization).
    """

    def __init__(self, weight_quantizer=None, activation_quantizer=None):
        self.weight_quantizer = weight_quantizer
        self.activation_quantizer = activation_quantizer

    @property
    def mode(self):
        raise NotImplementedError("Subclasses must implement this property. Do not instantiate "
                                  "QuantizationConfig directly.")

    def get_config(self):
        return {"weight_quantizer": serialize(self.weight_quantizer),
                "activation_quantizer": serialize(self.activation_quantizer)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("weight_quantizer", "activation_quantizer"):
            config[key] = deserialize(config.get(key))
        return cls(**config)

    @staticmethod
    def weight_quantizer_or_default(config, default):
        if config is not None and config.weight_quantizer is not None:
            return config.weight_quantizer
        return default

    @staticmethod
    def activation_quantizer_or_default(config, default):
        return config.activation_quantizer if config is not None else default


def _check_output_dtype(cls, quantizer):
    if quantizer is not None and quantizer.output_dtype != "int8":
        raise ValueError(f"{cls} requires a weight_quantizer with output_dtype='int8'. "
                         f"Received: output_dtype={quantizer.output_dtype}")


class Int8QuantizationConfig(QuantizationConfig):
    """int8: kernels per output channel; inputs per row (``activation_quantizer="default"``
    is an `AbsMaxQuantizer`; None keeps float inputs: weight-only quantization)."""

    def __init__(self, weight_quantizer=None, activation_quantizer="default"):
        if isinstance(activation_quantizer, str) and activation_quantizer == "default":
            activation_quantizer = AbsMaxQuantizer()
        super().__init__(weight_quantizer, activation_quantizer)
        _check_output_dtype("Int8QuantizationConfig", self.weight_quantizer)

    mode = property(lambda self: "int8")


class Int4QuantizationConfig(QuantizationConfig):
    """int4: kernels in [-8, 7], two per byte.

    Args:
        weight_quantizer / activation_quantizer: custom quantizers (per-channel mode only);
            the default quantizes no inputs.
        block_size: rows of the kernel per group (one scale and zero point per group and
            column); None or -1: one scale per output channel. Defaults to 128.

    Raises:
        ValueError: for a bad block size, custom quantizers with groups, or a weight quantizer
            whose range is not (-8, 7) or whose output is not int8.
    """

    def __init__(self, weight_quantizer=None, activation_quantizer="default", block_size=128):
        if isinstance(activation_quantizer, str) and activation_quantizer == "default":
            activation_quantizer = None
        super().__init__(weight_quantizer, activation_quantizer)
        if block_size is not None and block_size != -1 and block_size <= 0:
            raise ValueError(f"Int4QuantizationConfig: block_size must be None, -1, or a "
                             f"positive integer. Received: block_size={block_size}")
        self.block_size = block_size
        grouped = block_size is not None and block_size > 0
        if grouped and (weight_quantizer is not None or activation_quantizer is not None):
            raise ValueError("Int4 sub-channel quantization (block_size > 0) does not support "
                             "custom quantizers. Either set block_size to None or -1 for "
                             "per-channel quantization, or remove the custom quantizer "
                             f"arguments. Received: block_size={block_size}")
        if weight_quantizer is not None and tuple(weight_quantizer.value_range) != (-8, 7):
            raise ValueError("Int4QuantizationConfig requires a weight_quantizer with "
                             f"value_range=(-8, 7). Received: "
                             f"value_range={weight_quantizer.value_range}")
        _check_output_dtype("Int4QuantizationConfig", self.weight_quantizer)

    mode = property(lambda self: "int4")

    def get_config(self):
        return {**super().get_config(), "block_size": self.block_size}


class Float8QuantizationConfig(QuantizationConfig):
    """float8 training (no custom quantizers)."""

    def __init__(self):
        super().__init__(None, None)

    mode = property(lambda self: "float8")

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls()


def _positive(name, value):
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer.")


class _CalibrationConfig(QuantizationConfig):
    """The shared arguments of GPTQ and AWQ (the dataset and tokenizer are not saved)."""

    def __init__(self, dataset, tokenizer, weight_bits, num_samples, sequence_length,
                 group_size, quantization_layer_structure):
        super().__init__()
        _positive("num_samples", num_samples)
        _positive("sequence_length", sequence_length)
        if group_size < -1 or group_size == 0:
            raise ValueError("Invalid group_size. Supported values are -1 (per-channel) or a "
                             f"positive integer, but got {group_size}.")
        self.dataset, self.tokenizer = dataset, tokenizer
        self.weight_bits, self.num_samples = weight_bits, num_samples
        self.sequence_length, self.group_size = sequence_length, group_size
        self.quantization_layer_structure = quantization_layer_structure

    def dtype_policy_string(self):
        return f"{self.mode}/{self.weight_bits}/{self.group_size}"

    def get_config(self):
        return {"dataset": None, "tokenizer": None, "weight_bits": self.weight_bits,
                "num_samples": self.num_samples, "sequence_length": self.sequence_length,
                "group_size": self.group_size,
                "quantization_layer_structure": self.quantization_layer_structure}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class GPTQConfig(_CalibrationConfig):
    """GPTQ settings (Frantar et al. 2023): 2, 3, 4 or 8 weight bits, groups of
    ``group_size`` input rows; see the module docstring for what kerasrs does with it."""

    def __init__(self, dataset, tokenizer, *, weight_bits=4, num_samples=128,
                 per_channel=True, sequence_length=512, hessian_damping=0.01, group_size=128,
                 symmetric=False, activation_order=False, quantization_layer_structure=None):
        if weight_bits not in (2, 3, 4, 8):
            raise ValueError(f"Unsupported weight_bits {weight_bits}. Supported values are 2, "
                             "3, 4, and 8.")
        if not 0 <= hessian_damping <= 1:
            raise ValueError("hessian_damping must be between 0 and 1.")
        super().__init__(dataset, tokenizer, weight_bits, num_samples, sequence_length,
                         group_size, quantization_layer_structure)
        self.per_channel, self.hessian_damping = per_channel, hessian_damping
        self.symmetric, self.activation_order = symmetric, activation_order

    mode = property(lambda self: "gptq")

    def get_config(self):
        return {**super().get_config(), "per_channel": self.per_channel,
                "hessian_damping": self.hessian_damping, "symmetric": self.symmetric,
                "activation_order": self.activation_order}


class AWQConfig(_CalibrationConfig):
    """AWQ settings (Lin et al. 2024): 4 weight bits, groups of ``group_size`` input rows."""

    def __init__(self, dataset, tokenizer, *, weight_bits=4, num_samples=128,
                 sequence_length=512, group_size=128, num_grid_points=20,
                 quantization_layer_structure=None):
        if weight_bits != 4:
            raise ValueError(f"AWQ only supports 4-bit quantization. Received "
                             f"weight_bits={weight_bits}.")
        _positive("num_grid_points", num_grid_points)
        super().__init__(dataset, tokenizer, weight_bits, num_samples, sequence_length,
                         group_size, quantization_layer_structure)
        self.num_grid_points = num_grid_points

    mode = property(lambda self: "awq")

    def get_config(self):
        return {**super().get_config(), "num_grid_points": self.num_grid_points}


_DEFAULT_CONFIGS = {"int8": Int8QuantizationConfig, "int4": Int4QuantizationConfig,
                    "float8": Float8QuantizationConfig}


def _check_mode(mode):
    if mode is not None and mode not in dtype_policies.QUANTIZATION_MODES:
        raise ValueError(f"Invalid quantization mode. Expected one of "
                         f"{dtype_policies.QUANTIZATION_MODES}. Received: mode={mode}")


def validate_and_resolve_config(mode, config):
    """The config ``layer.quantize(mode, config)`` uses: the mode's default config when
    ``config`` is None, else ``config`` after checking that it agrees with ``mode``.

    Raises:
        ValueError: for an unknown mode, neither argument, a config of another mode or type,
            or GPTQ/AWQ without their config.
    """
    if isinstance(config, str):
        mode, config = config, None
    _check_mode(mode)
    if config is None:
        if mode in ("gptq", "awq"):
            name = "GPTQConfig" if mode == "gptq" else "AWQConfig"
            raise ValueError(f"For {mode.upper()}, you must pass a `{name}` object in the "
                             "`config` argument.")
        if mode is None:
            raise ValueError("You must provide either `mode` or `config` to `quantize`.")
        config = _DEFAULT_CONFIGS[mode]()
    elif not isinstance(config, QuantizationConfig):
        raise ValueError(f"Argument `config` must be an instance of `QuantizationConfig`. "
                         f"Received: config={config!r} (of type {type(config).__name__})")
    if mode is not None and config.mode != mode:
        raise ValueError(f"Contradictory arguments: mode='{mode}' but config.mode="
                         f"'{config.mode}'")
    _check_mode(config.mode)
    return config


def block_size_for(layer, config):
    """The int4 block size of ``layer``: from an `Int4QuantizationConfig`, else from its
    `Int4DTypePolicy` (a loaded model); None means per channel."""
    if isinstance(config, Int4QuantizationConfig):
        return config.block_size
    policy = policy_of(layer)
    if isinstance(policy, dtype_policies.Int4DTypePolicy):
        return None if policy.block_size == -1 else policy.block_size
    return None


def calibration_setting(layer, config, attr):
    """``weight_bits`` or ``group_size`` of a GPTQ/AWQ layer, from its config or its policy.

    Raises:
        ValueError: when neither gives it.
    """
    if isinstance(config, _CalibrationConfig):
        return getattr(config, attr)
    policy = policy_of(layer)
    if isinstance(policy, (dtype_policies.GPTQDTypePolicy, dtype_policies.AWQDTypePolicy)):
        return getattr(policy, attr)
    raise ValueError(f"{layer.name}: for GPTQ/AWQ quantization, {attr} must be given by a "
                     "GPTQConfig/AWQConfig or a GPTQ/AWQ dtype policy.")


def policy_of(layer):
    """The layer's own policy (its entry when its policy is a `DTypePolicyMap`)."""
    policy = layer.dtype_policy
    if isinstance(policy, dtype_policies.DTypePolicyMap):
        return policy[layer.path] if getattr(layer, "path", None) else policy.default_policy
    return policy


_CLASSES = {cls.__name__: cls for cls in (
    Quantizer, AbsMaxQuantizer, QuantizationConfig, Int8QuantizationConfig,
    Int4QuantizationConfig, Float8QuantizationConfig, GPTQConfig, AWQConfig)}
