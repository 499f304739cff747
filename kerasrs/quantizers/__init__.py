"""Quantization: quantizers, their arithmetic and the configs of ``layer.quantize(mode)``
(Keras's ``keras.quantizers``).

`kerasrs.layers.Dense`, `EinsumDense` and `Embedding` quantize their kernels to int8 or int4
(see `kerasrs.layers.quantized`); `quantizers` has the arithmetic, `config` the settings.
"""

from kerasrs import registry
from kerasrs.quantizers.config import (AWQConfig, Float8QuantizationConfig, GPTQConfig,
                                       Int4QuantizationConfig, Int8QuantizationConfig,
                                       QuantizationConfig, deserialize, serialize)
from kerasrs.quantizers.quantizers import (AbsMaxQuantizer, Quantizer, abs_max_quantize,
                                           abs_max_quantize_grouped_with_zero_point,
                                           compute_float8_amax_history, compute_float8_scale,
                                           pack_int4, quantize_and_dequantize, unpack_int4)

registry.register_kind(Quantizer, serialize, strict=True)
registry.register_kind(QuantizationConfig, serialize, strict=True)


def get(identifier, **kwargs):
    """A quantizer from a name ("abs_max_quantizer"), a config dict or a quantizer.

    Raises:
        ValueError: for anything else.
    """
    if identifier is None or isinstance(identifier, Quantizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str) and identifier in ("abs_max_quantizer", "AbsMaxQuantizer"):
        return AbsMaxQuantizer(**kwargs)
    raise ValueError(f"kerasrs.quantizers.get: could not interpret quantizer identifier "
                     f"{identifier!r}")


__all__ = ["AWQConfig", "AbsMaxQuantizer", "Float8QuantizationConfig", "GPTQConfig",
           "Int4QuantizationConfig", "Int8QuantizationConfig", "QuantizationConfig", "Quantizer",
           "abs_max_quantize", "abs_max_quantize_grouped_with_zero_point",
           "compute_float8_amax_history", "compute_float8_scale", "deserialize", "get",
           "pack_int4", "quantize_and_dequantize", "serialize", "unpack_int4"]
