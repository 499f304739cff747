"""Keras's quantization hooks of `kerasrs.Layer`: ``quantize``, ``quantized_build``,
``quantized_call`` and the per-mode ``_<mode>_call``s that `Dense`, `EinsumDense` and
`Embedding` implement (`kerasrs.layers.quantized`); the others raise NotImplementedError.

A mixin of `Layer` (kerasrs/layers/base.py), which wraps ``quantize`` so that it resolves its
config and checks the layer (`_check_quantize_args`) first.
"""

from kerasrs import dtype_policies


class LayerQuantization:
    """The quantization hooks (see the module docstring)."""

    def quantize(self, mode=None, type_check=True, config=None):
        """Quantize the layer's weights in place (``"int8"``, ``"int4"``, ``"float8"``,
        ``"gptq"``, ``"awq"``); see `kerasrs.layers.quantized`.

        Raises:
            ValueError: for an unknown mode, an unbuilt or already quantized layer, or int8
                with a float16 compute dtype.
            NotImplementedError: for a layer that cannot be quantized.
        """
        raise self._not_implemented_error(self.quantize)

    def quantized_build(self, input_shape, mode):
        raise self._not_implemented_error(self.quantized_build)

    def _check_quantize_args(self, mode, compute_dtype):
        if not self.built:
            raise ValueError(f"Cannot quantize a layer that isn't yet built. Layer "
                             f"'{self.name}' (of type '{type(self).__name__}') is not built yet.")
        if getattr(self, "_is_quantized", False):
            raise ValueError(f"Layer '{self.name}' is already quantized with dtype_policy="
                             f"'{self.dtype_policy.name}'. Received: mode={mode}")
        if mode not in dtype_policies.QUANTIZATION_MODES:
            raise ValueError(f"{self.name}: Invalid quantization mode. Expected one of "
                             f"{dtype_policies.QUANTIZATION_MODES}. Received: mode={mode}")
        if mode == "int8" and compute_dtype == "float16":
            raise ValueError(f"{self.name}: Quantization mode='{mode}' doesn't work well with "
                             "compute_dtype='float16'. Consider loading model/layer with "
                             "another dtype policy such as 'mixed_bfloat16' or 'mixed_float16' "
                             "before calling `quantize()`.")

    def quantized_call(self, *args, **kwargs):
        """The call of a quantized layer: ``_<mode>_call``."""
        mode = self.quantization_mode
        if mode not in dtype_policies.QUANTIZATION_MODES:
            raise self._quantization_mode_error(mode)
        return getattr(self, f"_{mode}_call")(*args, **kwargs)

    def _int8_call(self, *args, **kwargs):
        raise self._not_implemented_error(self._int8_call)

    def _int4_call(self, *args, **kwargs):
        raise self._not_implemented_error(self._int4_call)

    def _float8_call(self, *args, **kwargs):
        raise self._not_implemented_error(self._float8_call)

    def _gptq_call(self, *args, **kwargs):
        raise self._not_implemented_error(self._gptq_call)

    def _awq_call(self, *args, **kwargs):
        raise self._not_implemented_error(self._awq_call)

    def _not_implemented_error(self, attr, msg=None):
        name = attr.__name__ if callable(attr) else str(attr)
        kind = "method" if callable(attr) else "attribute"
        return NotImplementedError(f"Layer {type(self).__name__} does not have a `{name}` "
                                   f"{kind} implemented.{' ' + msg if msg else ''}")

    def _quantization_mode_error(self, mode):
        return NotImplementedError(f"{self.name}: Invalid quantization mode. Expected one of "
                                   f"{dtype_policies.QUANTIZATION_MODES}. Received: "
                                   f"quantization_mode={mode}")
