"""`GroupedQueryAttention` (Ainslie et al. 2023, "GQA"): fewer key/value heads than query heads,
each key/value head shared by ``num_query_heads / num_key_value_heads`` query heads."""

import math

import numpy as np

from kerasrs import constraints, initializers, ops
from kerasrs.layers.attention.einsum_dense import EinsumDense
from kerasrs.layers.attention.multi_head_attention import (causal_mask, check_window_and_flash,
                                                          combined_mask, sliding_window_mask)
from kerasrs.layers.base import Layer
from kerasrs.layers.core import Dropout, Softmax, dropout_mask
from kerasrs.layers.layer_config import get_regularizer, serialize_regularizer
from kerasrs.layers.node import SymbolicTensor
from kerasrs.ops import attention as attention_ops
from kerasrs.ops.core import raw


class GroupedQueryAttention(Layer):
    """Grouped-query attention with Keras 3's arguments, weight layout and override points
    (``_compute_attention``, ``_compute_attention_mask``, ``_masked_softmax``).

    Args:
        head_dim: size of each attention head.
        num_query_heads, num_key_value_heads: head counts; the first must be a multiple of the
            second.
        dropout: dropout rate on the attention probabilities (training only).
        use_bias: whether the projections have biases.
        sliding_window: int > 0 or None: positions attend only to keys less than this far away.
        flash_attention: as `MultiHeadAttention`.
        kernel_*/bias_*/activity_regularizer: initializers, regularizers and constraints of the
            projections.
        use_gate: multiply the attention output by ``sigmoid(gate(query))`` before the output
            projection.
        seed: int for the dropout generator.

    Call: ``layer(query (B, T, dim), value (B, S, dim), key=None, attention_mask=None,
    use_causal_mask=False, return_attention_scores=False)`` -> (B, T, dim).

    Raises:
        ValueError: if ``num_query_heads`` is not a multiple of ``num_key_value_heads``, for a
            bad ``sliding_window``, dropout with flash attention, or inputs whose sizes
            disagree (Keras's phrases).
    """

    supports_masking = True

    def __init__(self, head_dim, num_query_heads, num_key_value_heads, dropout=0.0,
                 use_bias=True, sliding_window=None, flash_attention=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, use_gate=False, seed=None,
                 **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if num_query_heads % num_key_value_heads:
            raise ValueError(f"{self.name}: `num_query_heads` must be divisible by "
                             f"`num_key_value_heads` (a multiple of it). Received: "
                             f"num_query_heads={num_query_heads}, "
                             f"num_key_value_heads={num_key_value_heads}")
        self.head_dim, self.num_query_heads = head_dim, num_query_heads
        self.num_key_value_heads = num_key_value_heads
        self.num_repeats = num_query_heads // num_key_value_heads
        self.dropout, self.use_bias, self.use_gate = dropout, use_bias, use_gate
        self.sliding_window, self.seed = sliding_window, seed
        self._flash_attention = check_window_and_flash(self.name, sliding_window,
                                                       flash_attention, dropout)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = get_regularizer(kernel_regularizer)
        self.bias_regularizer = get_regularizer(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self._inverse_sqrt_head_dim = 1.0 / math.sqrt(float(head_dim))
        self._return_attention_scores = False

    def _dense(self, equation, heads, bias, name, **extra):
        kernel_init, bias_init = (init.__class__.from_config(init.get_config()) for init in
                                  (self.kernel_initializer, self.bias_initializer))
        return EinsumDense(equation, output_shape=heads, bias_axes=bias if self.use_bias
                           else None, name=name, dtype=self._dtype,
                           kernel_initializer=kernel_init, bias_initializer=bias_init,
                           kernel_regularizer=self.kernel_regularizer,
                           bias_regularizer=self.bias_regularizer,
                           activity_regularizer=self.activity_regularizer,
                           kernel_constraint=self.kernel_constraint,
                           bias_constraint=self.bias_constraint, **extra)

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        self.feature_dim = query_shape[-1]
        q_heads = (None, self.num_query_heads, self.head_dim)
        kv_heads = (None, self.num_key_value_heads, self.head_dim)
        self._query_dense = self._dense("bqm,muh->bquh", q_heads, "uh", "query")
        self._query_dense.build(query_shape)
        self._key_dense = self._dense("bkm,mvh->bkvh", kv_heads, "vh", "key")
        self._key_dense.build(key_shape)
        if self.use_gate:
            self._gate_dense = self._dense("bqm,muh->bquh", q_heads, "uh", "gate",
                                           activation="sigmoid")
            self._gate_dense.build(query_shape)
        self._value_dense = self._dense("bkm,mvh->bkvh", kv_heads, "vh", "value")
        self._value_dense.build(value_shape)
        self._softmax = Softmax(axis=-1, dtype=self._dtype)
        self._dropout_layer = Dropout(rate=self.dropout, dtype=self._dtype, seed=self.seed)
        self._dot_product_equation = "bquh,bkuh->buqk"
        self._combine_equation = "buqk,bkuh->bquh"
        self._output_dense = self._dense("bquh,uhm->bqm", (None, self.feature_dim), "m",
                                         "attention_output")
        self._output_dense.build((None, None, self.num_query_heads, self.head_dim))

    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None,
             attention_mask=None, return_attention_scores=False, training=None,
             use_causal_mask=False):
        self._return_attention_scores = return_attention_scores
        key = value if key is None else key
        self.compute_output_shape(tuple(query.shape), tuple(value.shape), tuple(key.shape))
        query_mask = getattr(query, "_keras_mask", None) if query_mask is None else query_mask
        value_mask = getattr(value, "_keras_mask", None) if value_mask is None else value_mask
        causal_only = (use_causal_mask and self.sliding_window is None and
                       type(self)._compute_attention is GroupedQueryAttention._compute_attention
                       and all(m is None for m in (query_mask, value_mask, key_mask,
                                                   attention_mask)))
        if not causal_only:
            attention_mask = self._compute_attention_mask(
                query, value, query_mask=query_mask, value_mask=value_mask, key_mask=key_mask,
                attention_mask=attention_mask, use_causal_mask=use_causal_mask)
        gate = self._gate_dense(query) if self.use_gate else None
        q = self._query_dense(query)
        k = ops.repeat(self._key_dense(key), self.num_repeats, axis=2)
        v = ops.repeat(self._value_dense(value), self.num_repeats, axis=2)
        extra = {"use_causal_mask": True} if causal_only else {}
        out, scores = self._compute_attention(q, k, v, attention_mask=attention_mask,
                                              training=training, **extra)
        out = self._output_dense(out if gate is None else ops.multiply(out, gate))
        return (out, scores) if return_attention_scores else out

    def compute_mask(self, inputs, mask=None):
        return mask  # the query's mask passes on to the output

    def _compute_attention_mask(self, query, value, query_mask=None, value_mask=None,
                                key_mask=None, attention_mask=None, use_causal_mask=False):
        """The ``(B, T, S)`` boolean mask of the inputs' masks, causality, the sliding window
        and ``attention_mask`` ANDed, or None (Keras's override point)."""
        extra = [self._compute_causal_mask(query, value)] if use_causal_mask else []
        if self.sliding_window is not None:
            extra.append(self._compute_sliding_window_mask(query, value))
        return combined_mask(query_mask, value_mask, key_mask, attention_mask, extra)

    def _compute_causal_mask(self, query, value=None):
        """``(1, T, S)`` booleans, True where key ``j <= i`` for query ``i``."""
        return causal_mask(query, value)

    def _compute_sliding_window_mask(self, query, value=None):
        """``(1, T, S)`` booleans, True where ``|i - j| < sliding_window``."""
        return sliding_window_mask(query, value, self.sliding_window)

    def _compute_attention(self, query, key, value, attention_mask=None, training=None,
                           use_causal_mask=False):
        """Attention on projected ``(B, T, heads, head_dim)`` tensors: ``(output, scores or
        None)`` (Keras's override point).

        Raises:
            ValueError: for returned scores with flash attention (Keras's constraint).
        """
        query, key, value = (self._convert_inputs(t) for t in (query, key, value))
        if attention_mask is not None and not hasattr(attention_mask, "shape"):
            attention_mask = np.asarray(attention_mask)
        if self._flash_attention and self._return_attention_scores:
            raise ValueError(f"{self.name}: Returning attention scores is not supported when "
                             "flash attention is enabled. Please disable flash attention to "
                             "access attention scores.")
        if use_causal_mask:
            causal = self._compute_causal_mask(query, value)
            attention_mask = causal if attention_mask is None else ops.logical_and(
                ops.cast(attention_mask, "bool"), causal)
        if query.ndim == 4 and not self._return_attention_scores:
            keep = None
            if training and self.dropout > 0:
                keep = dropout_mask(self._dropout_layer.seed_generator,
                                    (query.shape[0], self.num_query_heads, query.shape[1],
                                     key.shape[1]), self.dropout, query.dtype, query.backend)
            mask = None
            if attention_mask is not None:
                mask = query.backend.xp.asarray(raw(attention_mask)).astype(bool)
                mask = mask if mask.ndim == 4 else mask[..., None, :, :] if mask.ndim == 3 \
                    else mask
            out = attention_ops.attention(query, key, value, mask=mask,
                                          scale=self._inverse_sqrt_head_dim, dropout_keep=keep)
            return out, None
        query = ops.multiply(query, self._inverse_sqrt_head_dim)
        scores = ops.einsum(self._dot_product_equation, query, key)
        scores = self._masked_softmax(scores, attention_mask=attention_mask)
        final = self._dropout_layer(scores, training=training) if self.dropout > 0 else scores
        return ops.einsum(self._combine_equation, final, value), scores

    def _masked_softmax(self, scores, attention_mask=None):
        if attention_mask is not None:
            for _ in range(scores.ndim - len(attention_mask.shape)):
                attention_mask = ops.expand_dims(attention_mask, -3)
        return self._softmax(scores, mask=attention_mask)

    def compute_output_shape(self, query_shape, value_shape=None, key_shape=None):
        """The query's shape.

        Raises:
            ValueError: if query and value feature sizes differ, or value and key differ in
                other than their last axis (Keras's phrases).
        """
        value_shape = tuple(query_shape) if value_shape is None else tuple(value_shape)
        if query_shape[-1] != value_shape[-1]:
            raise ValueError(f"{self.name}: The last dimension of `query_shape` and "
                             f"`value_shape` must be equal, but are {query_shape[-1]}, "
                             f"{value_shape[-1]}. Received: query_shape={tuple(query_shape)}, "
                             f"value_shape={value_shape}")
        key_shape = value_shape if key_shape is None else tuple(key_shape)
        if value_shape[1:-1] != key_shape[1:-1]:
            raise ValueError(f"{self.name}: All dimensions of `value` and `key`, except the last "
                             f"one, must be equal. Received: value_shape={value_shape} and "
                             f"key_shape={key_shape}")
        return tuple(query_shape)

    def compute_output_spec(self, query, value, key=None, query_mask=None, value_mask=None,
                            key_mask=None, attention_mask=None, return_attention_scores=False,
                            training=None, use_causal_mask=False):
        shape = self.compute_output_shape(query.shape, value.shape,
                                          None if key is None else key.shape)
        out = SymbolicTensor(shape, self.compute_dtype)
        if not return_attention_scores:
            return out
        kv_len = value.shape[1] if key is None else key.shape[1]
        scores = (query.shape[0], self.num_query_heads, query.shape[1], kv_len)
        return out, SymbolicTensor(scores, self.compute_dtype)

    def get_config(self):
        return {**super().get_config(), "head_dim": self.head_dim,
                "num_query_heads": self.num_query_heads,
                "num_key_value_heads": self.num_key_value_heads, "use_bias": self.use_bias,
                "use_gate": self.use_gate, "sliding_window": self.sliding_window,
                "dropout": self.dropout,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": serialize_regularizer(self.kernel_regularizer),
                "bias_regularizer": serialize_regularizer(self.bias_regularizer),
                "activity_regularizer": serialize_regularizer(self.activity_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint),
                "seed": self.seed}


GroupQueryAttention = GroupedQueryAttention  # Keras exports the class under this name

__all__ = ["GroupQueryAttention", "GroupedQueryAttention"]
