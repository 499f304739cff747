"""`GroupedQueryAttention` (Ainslie et al. 2023, "GQA"): fewer key/value heads than query heads,
each key/value head shared by ``num_query_heads / num_key_value_heads`` query heads."""

import numpy as np

from kerasrs import constraints, initializers, ops, regularizers
from kerasrs.layers.attention.einsum_dense import EinsumDense
from kerasrs.layers.base import Layer
from kerasrs.layers.core import Dropout


class GroupedQueryAttention(Layer):
    """Grouped-query attention with Keras 3's arguments and weight layout.

    Args:
        head_dim: size of each attention head.
        num_query_heads, num_key_value_heads: head counts; the first must be a multiple of the
            second.
        dropout: dropout rate on the attention probabilities (training only).
        use_bias: whether the projections have biases.
        sliding_window: optional int: positions attend only to keys less than this far away.
        use_gate: multiply the attention output by ``sigmoid(gate(query))`` before the output
            projection.
        kernel_*/bias_*: initializers, regularizers and constraints of the projections.

    Call: ``layer(query (B, T, dim), value (B, S, dim), key=None, attention_mask=None,
    use_causal_mask=False, return_attention_scores=False)`` -> (B, T, dim).

    Raises:
        ValueError: if ``num_query_heads`` is not a multiple of ``num_key_value_heads``.
    """

    def __init__(self, head_dim, num_query_heads, num_key_value_heads, dropout=0.0,
                 use_bias=True, sliding_window=None, flash_attention=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, use_gate=False, seed=None,
                 **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if num_query_heads % num_key_value_heads:
            raise ValueError(f"{self.name}: num_query_heads ({num_query_heads}) must be a "
                             f"multiple of num_key_value_heads ({num_key_value_heads}).")
        self.head_dim, self.num_query_heads = head_dim, num_query_heads
        self.num_key_value_heads = num_key_value_heads
        self.num_repeats = num_query_heads // num_key_value_heads
        self.dropout, self.use_bias, self.sliding_window = dropout, use_bias, sliding_window
        self.flash_attention, self.use_gate, self.seed = flash_attention, use_gate, seed
        self._common = dict(kernel_initializer=kernel_initializer,
                            bias_initializer=bias_initializer,
                            kernel_regularizer=kernel_regularizer,
                            bias_regularizer=bias_regularizer, kernel_constraint=kernel_constraint,
                            bias_constraint=bias_constraint)

    def _dense(self, equation, shape, bias, name, **extra):
        return EinsumDense(equation, output_shape=shape, bias_axes=bias if self.use_bias else None,
                           name=name, **self._common, **extra)

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        dim = query_shape[-1]
        self._query_dense = self._dense("bqm,muh->bquh", (None, self.num_query_heads,
                                                           self.head_dim), "uh", "query")
        self._query_dense.build(query_shape)
        self._key_dense = self._dense("bkm,mvh->bkvh", (None, self.num_key_value_heads,
                                                         self.head_dim), "vh", "key")
        self._key_dense.build(key_shape)
        if self.use_gate:
            self._gate_dense = self._dense("bqm,muh->bquh", (None, self.num_query_heads,
                                                              self.head_dim), "uh", "gate",
                                           activation="sigmoid")
            self._gate_dense.build(query_shape)
        self._value_dense = self._dense("bkm,mvh->bkvh", (None, self.num_key_value_heads,
                                                           self.head_dim), "vh", "value")
        self._value_dense.build(value_shape)
        self._dropout_layer = Dropout(self.dropout, seed=self.seed)
        self._output_dense = self._dense("bquh,uhm->bqm", (None, dim), "m", "attention_output")
        self._output_dense.build((None, None, self.num_query_heads, self.head_dim))

    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None,
             attention_mask=None, return_attention_scores=False, training=None,
             use_causal_mask=False):
        key = value if key is None else key
        query_mask = getattr(query, "_keras_mask", None) if query_mask is None else query_mask
        value_mask = getattr(value, "_keras_mask", None) if value_mask is None else value_mask
        mask = self._attention_mask(query.shape[1], value.shape[1], query_mask, value_mask,
                                    key_mask, attention_mask, use_causal_mask)
        gate = self._gate_dense(query) if self.use_gate else None
        q = self._query_dense(query) * (1.0 / np.sqrt(self.head_dim))
        k = ops.repeat(self._key_dense(key), self.num_repeats, axis=2)
        v = ops.repeat(self._value_dense(value), self.num_repeats, axis=2)
        scores = ops.einsum("bquh,bkuh->buqk", q, k)
        if mask is not None:
            scores = ops.where(ops.expand_dims(mask, 1), scores, -1e9)
        probs = ops.softmax(scores, axis=-1)
        dropped = self._dropout_layer(probs, training=training) if self.dropout else probs
        out = ops.einsum("buqk,bkuh->bquh", dropped, v)
        out = self._output_dense(out * gate if gate is not None else out)
        return (out, probs) if return_attention_scores else out

    def _attention_mask(self, t, s, query_mask, value_mask, key_mask, attention_mask, causal):
        """The (B or 1, T, S) bool mask from the inputs' masks, the explicit mask, causality
        and the sliding window (all ANDed), or None."""
        parts = []
        if query_mask is not None:
            parts.append(ops.expand_dims(ops.cast(query_mask, "bool"), -1))
        for m in (value_mask, key_mask):
            if m is not None:
                parts.append(ops.expand_dims(ops.cast(m, "bool"), -2))
        if attention_mask is not None:
            parts.append(ops.cast(attention_mask, "bool"))
        rows, cols = np.arange(t)[:, None], np.arange(s)[None, :]
        if causal:
            parts.append((cols <= rows + (s - t))[None])
        if self.sliding_window is not None:
            parts.append((np.abs(rows - cols) < self.sliding_window)[None])
        if not parts:
            return None
        mask = parts[0]
        for p in parts[1:]:
            mask = ops.logical_and(mask, p)
        return mask

    def compute_output_shape(self, query_shape, value_shape=None, key_shape=None):
        return tuple(query_shape)

    def get_config(self):
        c = self._common
        return {**super().get_config(), "head_dim": self.head_dim,
                "num_query_heads": self.num_query_heads,
                "num_key_value_heads": self.num_key_value_heads, "use_bias": self.use_bias,
                "dropout": self.dropout, "sliding_window": self.sliding_window,
                "use_gate": self.use_gate, "seed": self.seed,
                "flash_attention": self.flash_attention,
                "kernel_initializer": initializers.serialize(initializers.get(
                    c["kernel_initializer"])),
                "bias_initializer": initializers.serialize(initializers.get(
                    c["bias_initializer"])),
                "kernel_regularizer": regularizers.serialize(c["kernel_regularizer"])
                if c["kernel_regularizer"] else None,
                "bias_regularizer": regularizers.serialize(c["bias_regularizer"])
                if c["bias_regularizer"] else None,
                "kernel_constraint": constraints.serialize(constraints.get(
                    c["kernel_constraint"])),
                "bias_constraint": constraints.serialize(constraints.get(c["bias_constraint"]))}


GroupQueryAttention = GroupedQueryAttention  # Keras exports the class under this name

__all__ = ["GroupQueryAttention", "GroupedQueryAttention"]
