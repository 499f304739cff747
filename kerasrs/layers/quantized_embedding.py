"""Quantized tables and LoRA for `Embedding` and `ReversibleEmbedding` (Keras 3's layouts).

* **int8**: ``embeddings`` int8 ``(input_dim, output_dim)``, one scale per row (token) in
  ``embeddings_scale (input_dim,)``; a lookup divides the rows by their scales.
* **int4**: rows of values in [-8, 7] packed two per byte along the output axis
  (``(input_dim, ceil(output_dim / 2))``); one scale per row, or, with ``block_size``, a scale
  and zero point per row and group of ``block_size`` output entries (``(input_dim, groups)``),
  the entry-to-group map ``g_idx (output_dim,)``.
* **ReversibleEmbedding** with ``tie_weights=False`` also quantizes ``reverse_embeddings
  (output_dim, input_dim)``: one scale per column (token), int4 packed along the output axis;
  the reverse call quantizes its inputs per row (``activation_quantizer``), as Keras.
* **LoRA**: ``embeddings + (alpha / rank) * lora_embeddings_a @ lora_embeddings_b``; saved
  merged (re-quantized), loaded with the LoRA weights at zero, as `kerasrs.layers.quantized`.
"""

import math

import numpy as np

from kerasrs import ops
from kerasrs.layers.quantized import QuantizedWeights, dequantize_table, quantize_table
from kerasrs.quantizers import config as qconfig
from kerasrs.quantizers import quantizers as q

_TABLE_MODES = ("int8", "int4")


class EmbeddingQuantization(QuantizedWeights):
    """Mixin of `Embedding`: the table lives in ``self._embeddings``; the host provides
    ``_lookup_ids(inputs)`` (the ids as an int Tensor, checked against ``input_dim``)."""

    _WEIGHTS = {"embeddings": "_embeddings"}
    _LORA = ("lora_embeddings_a", "lora_embeddings_b")
    _SERIALIZED = {None: ("embeddings",), "int8": ("embeddings", "embeddings_scale"),
                   "int4": ("embeddings", "embeddings_scale", "embeddings_zero", "g_idx")}

    @property
    def embeddings(self):
        """The table (int4: the unpacked integers), plus the LoRA delta when LoRA is on."""
        if not self.built:
            raise AttributeError(f"{self.name}: You must build the layer before accessing "
                                 "`embeddings`.")
        table = self._embeddings
        if self.quantization_mode == "int4":
            table = q.unpack_int4(table, self.output_dim, axis=-1)
        if self.lora_enabled:
            table = ops.cast(ops.add(table, self._lora_delta()), self.compute_dtype)
        return table

    def enable_lora(self, rank, lora_alpha=None, a_initializer="he_uniform",
                    b_initializer="zeros"):
        """Freeze the table and learn a low-rank delta ``(lora_alpha / rank) * a @ b``.

        Raises:
            ValueError: with an embeddings constraint, before the layer is built, or when LoRA
                is already on.
        """
        self._check_lora(self.embeddings_constraint, "embedding")
        self._add_lora_weights(self._LORA, ((self.input_dim, rank), (rank, self.output_dim)),
                               (a_initializer, b_initializer), self.embeddings_regularizer,
                               self._embeddings, rank, lora_alpha)

    def _quantization_mode_error(self, mode):
        return NotImplementedError(f"{self.name}: Invalid quantization mode. Expected one of "
                                   f"{_TABLE_MODES}. Received: quantization_mode={mode}")

    # -- quantize ---------------------------------------------------------------------------------
    def quantize(self, mode=None, type_check=True, config=None):
        """Quantize the built layer's table(s) in place (see the module docstring).

        Raises:
            NotImplementedError: for float8/GPTQ/AWQ, or a subclass defined outside kerasrs
                unless ``type_check=False``.
        """
        self._check_type(type_check)
        if mode not in _TABLE_MODES:
            raise self._quantization_mode_error(mode)
        self.quantization_config = config
        block = config.block_size if isinstance(config, qconfig.Int4QuantizationConfig) else None
        quantizer = config.weight_quantizer if config is not None else None
        values = self._quantized_tables(mode, block, quantizer)
        self._drop("_embeddings")
        self._drop_float_extras()
        self.quantized_build((self.input_dim, self.output_dim), mode, config)
        for name, value in values.items():
            getattr(self, name).assign(value)
        self._set_quantized_policy(mode, config)

    def _quantized_tables(self, mode, block, quantizer):
        """``{attribute: array}`` of the quantized forward table (extended by subclasses)."""
        values, scale, zero = quantize_table(self._embeddings.numpy(), mode, 1, block, quantizer)
        out = {"_embeddings": q.pack_int4(values, axis=-1)[0] if mode == "int4" else values,
               "embeddings_scale": scale}
        if zero is not None:
            out["embeddings_zero"] = zero
        return out

    def _drop_float_extras(self):
        """Drop float variables the quantized build replaces (ReversibleEmbedding's)."""

    def quantized_build(self, embeddings_shape, mode, config=None):
        """Create the variables of ``mode``.

        Raises:
            NotImplementedError: for a mode other than int8/int4.
        """
        if mode not in _TABLE_MODES:
            raise self._quantization_mode_error(mode)
        rows, cols = embeddings_shape
        if mode == "int8":
            self._embeddings = self._frozen("embeddings", (rows, cols), "int8")
            self.embeddings_scale = self._frozen("embeddings_scale", (rows,), initializer="ones")
        else:
            block = qconfig.block_size_for(self, config)
            self._int4_block_size = block
            groups = self._int4_groups = None if block is None or block == -1 else block
            self._orig_output_dim = cols
            self._embeddings = self._frozen("embeddings", (rows, (cols + 1) // 2), "int8")
            shape = (rows,) if groups is None else (rows, math.ceil(cols / groups))
            self.embeddings_scale = self._frozen("embeddings_scale", shape, initializer="ones")
            if groups is not None:
                self.embeddings_zero = self._frozen("embeddings_zero", shape, "int8")
                self.g_idx = self._frozen("g_idx", (cols,), "float32")
                self.g_idx.assign(np.arange(cols, dtype="float32") // groups)
        self._is_quantized = True

    # -- quantized lookups --------------------------------------------------------------------------
    def _int8_call(self, inputs, training=None):
        ids = self._lookup_ids(inputs)
        rows = ops.divide(ops.cast(ops.take(self._embeddings, ids, axis=0), self.compute_dtype),
                          ops.expand_dims(ops.take(self.embeddings_scale, ids, axis=0), -1))
        return self._with_lora(ids, rows)

    def _int4_call(self, inputs, training=None):
        ids = self._lookup_ids(inputs)
        values = ops.take(q.unpack_int4(self._embeddings, self.output_dim, axis=-1), ids, axis=0)
        scale = ops.take(self.embeddings_scale, ids, axis=0)
        if self._int4_groups is None:
            rows = ops.divide(ops.cast(values, self.compute_dtype), ops.expand_dims(scale, -1))
        else:
            rows = dequantize_table(values, scale, ops.take(self.embeddings_zero, ids, axis=0),
                                    self.g_idx, -1, self.compute_dtype)
        return self._with_lora(ids, rows)

    def _with_lora(self, ids, rows):
        if not self.lora_enabled:
            return rows
        low = ops.matmul(ops.take(self.lora_embeddings_a, ids, axis=0), self.lora_embeddings_b)
        return ops.cast(ops.add(rows, ops.multiply(low, self.lora_alpha / self.lora_rank)),
                        self.compute_dtype)

    def _merged_lora_values(self):
        """The table with the LoRA delta merged (re-quantized in the layer's mode)."""
        mode = self.quantization_mode
        delta = np.asarray(self._lora_delta().numpy())
        if mode is None:
            return {"embeddings": np.asarray(self.embeddings.numpy())}
        table = self._embeddings if mode == "int8" else \
            q.unpack_int4(self._embeddings, self.output_dim, axis=-1)
        zero = getattr(self, "embeddings_zero", None)
        merged = np.asarray(dequantize_table(table, self.embeddings_scale, zero,
                                             getattr(self, "g_idx", None), 1,
                                             "float32").numpy()) + delta
        values, scale, zero = quantize_table(merged, mode, 1, getattr(self, "_int4_groups",
                                                                        None))
        out = {"embeddings": q.pack_int4(values, axis=-1)[0] if mode == "int4" else values,
               "embeddings_scale": scale}
        if zero is not None:
            out["embeddings_zero"] = zero
        return out


class ReverseQuantization(EmbeddingQuantization):
    """Mixin of `ReversibleEmbedding`: also the untied ``reverse_embeddings`` and the
    quantized reverse call (see the module docstring)."""

    _SERIALIZED = {
        None: ("embeddings", "reverse_embeddings"),
        "int8": ("embeddings", "embeddings_scale", "reverse_embeddings",
                 "reverse_embeddings_scale"),
        "int4": ("embeddings", "embeddings_scale", "embeddings_zero", "g_idx",
                 "reverse_embeddings", "reverse_embeddings_scale", "reverse_embeddings_zero"),
    }

    def _quantized_tables(self, mode, block, quantizer):
        out = super()._quantized_tables(mode, block, quantizer)
        if not self.tie_weights:
            values, scale, zero = quantize_table(self.reverse_embeddings.numpy(), mode, 0, block,
                                                 quantizer)
            out["reverse_embeddings"] = q.pack_int4(values, axis=0)[0] if mode == "int4" else \
                values
            out["reverse_embeddings_scale"] = scale
            if zero is not None:
                out["reverse_embeddings_zero"] = zero
        return out

    def _drop_float_extras(self):
        if not self.tie_weights:
            self._drop("reverse_embeddings")

    def quantized_build(self, embeddings_shape, mode, config=None):
        super().quantized_build(embeddings_shape, mode, config)
        self.inputs_quantizer = qconfig.QuantizationConfig.activation_quantizer_or_default(
            config, q.AbsMaxQuantizer(axis=-1))
        if self.tie_weights:
            return
        rows, cols = embeddings_shape
        packed = cols if mode == "int8" else (cols + 1) // 2
        self.reverse_embeddings = self._frozen("reverse_embeddings", (packed, rows), "int8")
        groups = None if mode == "int8" else self._int4_groups
        shape = (rows,) if groups is None else (math.ceil(cols / groups), rows)
        self.reverse_embeddings_scale = self._frozen("reverse_embeddings_scale", shape,
                                                     initializer="ones")
        if groups is not None:  # float32, as Keras creates it
            self.reverse_embeddings_zero = self._frozen("reverse_embeddings_zero", shape)

    def _reverse_table(self):
        """``(values (output_dim, input_dim), scale, zero or None)``, unpacked."""
        mode = self.quantization_mode
        if self.tie_weights:
            values = ops.transpose(self._embeddings)
            scale = self.embeddings_scale
            zero = getattr(self, "embeddings_zero", None)
            if zero is not None:
                scale, zero = ops.transpose(scale), ops.transpose(zero)
        else:
            values = self.reverse_embeddings
            scale = self.reverse_embeddings_scale
            zero = getattr(self, "reverse_embeddings_zero", None)
        if mode == "int4":
            values = q.unpack_int4(values, self.output_dim, axis=0)
        return values, scale, zero

    def _quantized_reverse(self, inputs):
        """The logits of a quantized layer's reverse call (before the soft cap)."""
        values, scale, zero = self._reverse_table()
        dtype = self.compute_dtype
        in_scale = None
        if self.inputs_quantizer:
            q_in, in_scale = self.inputs_quantizer(inputs)
            in_scale = ops.stop_gradient(in_scale)
            scaled = ops.multiply(inputs, in_scale)
            inputs = ops.add(ops.cast(q_in, dtype), ops.subtract(scaled,
                                                                 ops.stop_gradient(scaled)))
        if zero is None:
            logits = ops.matmul(inputs, ops.cast(values, dtype))
            return ops.divide(logits, scale if in_scale is None else
                              ops.multiply(in_scale, scale))
        table = dequantize_table(values, scale, zero, self.g_idx, 0, dtype)
        logits = ops.matmul(inputs, table)
        return logits if in_scale is None else ops.divide(logits, in_scale)
