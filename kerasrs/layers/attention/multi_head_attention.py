"""`MultiHeadAttention` (Vaswani et al., 2017) with Keras 3's weights, masks and equations."""

import math
import string

import numpy as np

from kerasrs import initializers, ops
from kerasrs.layers.attention.einsum_dense import EinsumDense
from kerasrs.layers.base import Layer
from kerasrs.layers.layer_config import get_regularizer, serialize_regularizer
from kerasrs.layers.recurrent.cells import dropout_mask
from kerasrs.ops import attention as attention_ops
from kerasrs.ops import projection as projection_ops
from kerasrs.ops.core import constant, raw

_LETTERS = string.ascii_lowercase


def _proj_equation(free_dims, bound_dims, output_dims):
    """Keras's projection einsum: ``(free, bound) x (bound, out) -> (free, out)``, bias on out."""
    ins = _LETTERS[:free_dims + bound_dims]
    ker = _LETTERS[free_dims:free_dims + bound_dims + output_dims]
    out = _LETTERS[:free_dims] + _LETTERS[free_dims + bound_dims:free_dims + bound_dims +
                                          output_dims]
    return f"{ins},{ker}->{out}", out[free_dims:], len(out)


def _attention_equations(rank, attn_axes):
    """Keras's score and combine einsums for projected tensors of ``rank`` axes."""
    target = _LETTERS[:rank]
    batch_dims = tuple(i for i in range(rank) if i not in attn_axes + (rank - 1,))
    letters = iter(_LETTERS[rank:])
    source = "".join(target[i] if i in batch_dims or i == rank - 1 else next(letters)
                     for i in range(rank))
    product = "".join([target[i] for i in batch_dims] + [target[i] for i in attn_axes] +
                      [source[i] for i in attn_axes])
    return f"{source},{target}->{product}", f"{product},{source}->{target}", len(product)


class MultiHeadAttention(Layer):
    """Multi-head attention: per-head scaled dot products of projected queries and keys weight
    the projected values; the heads are projected back to the query's size.

    Args:
        num_heads: int > 0. key_dim: int > 0, the query/key size per head.
        value_dim: per-head value size (defaults to ``key_dim``).
        dropout: rate of dropout on the attention weights (training only).
        use_bias: biases in the four projections. Defaults to True.
        output_shape: the last axis (or axes) of the output; defaults to the query's last axis.
        attention_axes: axes attention runs over (default: all but batch, heads and features).
        kernel_initializer / bias_initializer / regularizers / constraints: for the four
            projections (`EinsumDense` sublayers ``query``, ``key``, ``value``,
            ``attention_output``).
        seed: int for the dropout generator.

    Call arguments:
        query ``(B, T, dim)``, value ``(B, S, dim_v)``, key ``(B, S, dim_k)`` (default: value);
        attention_mask: booleans ``(B, T, S)`` (or broadcastable), True = may attend;
        return_attention_scores: also return the weights ``(B, heads, T, S)``;
        training; use_causal_mask: query ``i`` attends only to keys ``j <= i``.
        Keras masks on query/value/key (``tensor._keras_mask``) are combined with these.

    Weights (Keras's layout): ``query/kernel (dim, heads, key_dim)``, ``query/bias (heads,
    key_dim)``, the same for ``key`` and ``value`` (``value_dim``), ``attention_output/kernel
    (heads, value_dim, out)``, ``attention_output/bias (out,)``.

    The 3-D case runs the projections as 2-D GEMMs and the attention core as one fused op
    (`kerasrs.ops.attention`); masked softmax rows never produce NaN, in float16 too.

    Raises:
        ValueError: for bad constructor arguments; on call, for query/value/key whose batch or
            sequence sizes disagree, a feature size other than the built one, or an
            ``attention_mask`` that does not broadcast to ``(B, T, S)``. Errors name the layer and
            the shapes.
    """

    supports_masking = True

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True,
                 output_shape=None, attention_axes=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 seed=None, flash_attention=None, sliding_window=None, use_gate=False, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        for arg, value in (("num_heads", num_heads), ("key_dim", key_dim)):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{self.name}: Invalid argument `{arg}`: it must be a positive "
                                 f"int. Received: {arg}={value!r}")
        if value_dim is not None and (not isinstance(value_dim, (int, np.integer)) or
                                      value_dim <= 0):
            raise ValueError(f"{self.name}: Invalid argument `value_dim`: it must be a positive "
                             f"int or None. Received: value_dim={value_dim!r}")
        if flash_attention or sliding_window is not None or use_gate:
            raise ValueError(f"{self.name}: flash_attention, sliding_window and use_gate are not "
                             f"supported. Received: flash_attention={flash_attention}, "
                             f"sliding_window={sliding_window}, use_gate={use_gate}")
        if not 0 <= dropout <= 1:
            raise ValueError(f"{self.name}: `dropout` must be in [0, 1]. Received: {dropout!r}")
        self.num_heads, self.key_dim = int(num_heads), int(key_dim)
        self.value_dim = int(value_dim) if value_dim else self.key_dim
        self.dropout, self.use_bias, self.seed = float(dropout), bool(use_bias), seed
        if isinstance(output_shape, int):
            output_shape = (output_shape,)
        self._output_shape = tuple(output_shape) if output_shape else None
        if isinstance(attention_axes, int):
            attention_axes = (attention_axes,)
        self.attention_axes = tuple(attention_axes) if attention_axes is not None else None
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = get_regularizer(kernel_regularizer)
        self.bias_regularizer = get_regularizer(bias_regularizer)
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint

    # The projections, as Keras exposes them (`EinsumDense` layers, made by `build`).
    query_dense = property(lambda self: self._query_dense)
    key_dense = property(lambda self: self._key_dense)
    value_dense = property(lambda self: self._value_dense)
    output_dense = property(lambda self: self._output_dense)

    def _dense(self, free, bound, out_dims, name):
        eq, bias_axes, rank = _proj_equation(free, bound, len(out_dims))
        return EinsumDense(eq, [None] * (rank - 1 - len(out_dims)) + list(out_dims),
                           bias_axes=bias_axes if self.use_bias else None, name=name,
                           dtype=self._dtype,
                           kernel_initializer=initializers.get(
                               initializers.serialize(self.kernel_initializer)),
                           bias_initializer=initializers.get(
                               initializers.serialize(self.bias_initializer)),
                           kernel_regularizer=self.kernel_regularizer,
                           bias_regularizer=self.bias_regularizer,
                           kernel_constraint=self.kernel_constraint,
                           bias_constraint=self.bias_constraint)

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        query_shape, value_shape, key_shape = map(tuple, (query_shape, value_shape, key_shape))
        self._check_ranks(query_shape, value_shape, key_shape)
        if value_shape[1:-1] != key_shape[1:-1]:
            raise ValueError(f"{self.name}: value and key must have the same shape except the "
                             f"last axis. Received: value_shape={value_shape}, "
                             f"key_shape={key_shape}")
        if len(query_shape) != len(value_shape):
            raise ValueError(f"{self.name}: query and value must have the same rank. Received: "
                             f"query_shape={query_shape}, value_shape={value_shape}")
        self._shapes = (query_shape[-1], value_shape[-1], key_shape[-1])
        heads_k, heads_v = (self.num_heads, self.key_dim), (self.num_heads, self.value_dim)
        self._query_dense = self._dense(len(query_shape) - 1, 1, heads_k, "query")
        self._query_dense.build(query_shape)
        self._key_dense = self._dense(len(key_shape) - 1, 1, heads_k, "key")
        self._key_dense.build(key_shape)
        self._value_dense = self._dense(len(value_shape) - 1, 1, heads_v, "value")
        self._value_dense.build(value_shape)
        rank = len(query_shape) + 1
        axes = self.attention_axes if self.attention_axes is not None else \
            tuple(range(1, rank - 2))
        self._axes = tuple(a if a >= 0 else rank - 1 + a for a in axes)
        self._dot_eq, self._combine_eq, self._scores_rank = _attention_equations(rank, self._axes)
        out = self._output_shape or (query_shape[-1],)
        self._output_dense = self._dense(len(query_shape) - 1, 2, out, "attention_output")
        self._output_dense.build(tuple(query_shape[:-1]) + heads_v)

    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None,
             attention_mask=None, return_attention_scores=False, training=None,
             use_causal_mask=False):
        value = self._convert_inputs(value)
        key_given = key is not None and key is not value
        key = value if key is None else self._convert_inputs(key)
        query_mask = query_mask if query_mask is not None else getattr(query, "_keras_mask", None)
        value_mask = value_mask if value_mask is not None else getattr(value, "_keras_mask", None)
        if key_mask is None and key_given:
            key_mask = getattr(key, "_keras_mask", None)
        self._check_inputs(query, value, key)
        mask = self._attention_mask(query, value, query_mask, value_mask, key_mask,
                                    attention_mask, use_causal_mask)
        fused = query.ndim == 3 and self._axes == (1,) and not return_attention_scores
        if fused:
            keep = None
            if training and self.dropout > 0:
                keep = dropout_mask(self, (query.shape[0], self.num_heads, query.shape[1],
                                           value.shape[1]), self.dropout, query.dtype,
                                    query.backend)
            mask = None if mask is None else mask[:, None]
            if value is query and key is value:  # self-attention: one GEMM for q, k and v
                out = attention_ops.packed_attention(
                    self._packed_projection(query), self.num_heads, self.key_dim,
                    self.value_dim, mask=mask, dropout_keep=keep)
            else:
                out = attention_ops.attention(self._query_dense(query), self._key_dense(key),
                                              self._value_dense(value), mask=mask,
                                              dropout_keep=keep)
            scores = None
        else:
            q, k, v = self._query_dense(query), self._key_dense(key), self._value_dense(value)
            out, scores = self._composed_attention(q, k, v, mask,
                                                   1.0 / math.sqrt(float(self.key_dim)), training)
        out = self._output_dense(out)
        return (out, scores) if return_attention_scores else out

    def _packed_projection(self, x):
        """The query, key and value projections of ``x`` as one GEMM: ``(B, T, heads * (2
        key_dim + value_dim))``, kernels and biases concatenated (Keras's weights unchanged)."""
        dense = (self._query_dense, self._key_dense, self._value_dense)
        return projection_ops.packed_projection(
            x, [e.kernel for e in dense], [e.bias for e in dense] if self.use_bias else None)

    def _check_ranks(self, query_shape, value_shape, key_shape):
        if min(len(query_shape), len(value_shape), len(key_shape)) < 3:
            raise ValueError(f"{self.name}: MultiHeadAttention expects query, value and key of "
                             "rank >= 3, (batch, seq, features); add a sequence axis (e.g. "
                             "x[:, None, :]) for single vectors. Received: query shape "
                             f"{tuple(query_shape)}, value shape {tuple(value_shape)}, key shape "
                             f"{tuple(key_shape)}")

    def _check_inputs(self, query, value, key):
        self._check_ranks(query.shape, value.shape, key.shape)
        if query.shape[0] != value.shape[0] or value.shape[0] != key.shape[0]:
            raise ValueError(f"{self.name}: query, value and key must have the same batch size. "
                             f"Received: query shape {query.shape}, value shape {value.shape}, "
                             f"key shape {key.shape}")
        if value.shape[1:-1] != key.shape[1:-1]:
            raise ValueError(f"{self.name}: value and key must have the same shape except the "
                             f"last axis. Received: value shape {value.shape}, key shape "
                             f"{key.shape}")
        got = (query.shape[-1], value.shape[-1], key.shape[-1])
        if got != self._shapes:
            raise ValueError(f"{self.name}: the layer was built for query/value/key feature "
                             f"sizes {self._shapes}. Received: query shape {query.shape}, "
                             f"value shape {value.shape}, key shape {key.shape}")

    def _attention_mask(self, query, value, query_mask, value_mask, key_mask, attention_mask,
                        use_causal_mask):
        """Keras's combined boolean mask ``(B, T, S)`` (or None): query, value, key, causal and
        explicit masks ANDed."""
        xp = query.backend.xp
        t, s = query.shape[1], value.shape[1]
        mask = None

        def combine(m):
            return m if mask is None else xp.logical_and(mask, m)

        if query_mask is not None:
            mask = combine(xp.asarray(raw(query_mask)).astype(bool)[..., :, None])
        for m in (value_mask, key_mask):
            if m is not None:
                mask = combine(xp.asarray(raw(m)).astype(bool)[..., None, :])
        if use_causal_mask:
            mask = combine(attention_ops.causal_mask(t, s, xp)[0])
        if attention_mask is not None:
            am = xp.asarray(raw(attention_mask)).astype(bool)
            try:
                ok = am.ndim <= query.ndim and np.broadcast_shapes(
                    am.shape, (query.shape[0],) + tuple(query.shape[1:-1]) + (s,)) is not None
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(f"{self.name}: attention_mask must have shape (batch, "
                                 f"query_len, key_len) = {(query.shape[0], t, s)} or broadcast "
                                 f"to it. Received: attention_mask shape {tuple(am.shape)}, "
                                 f"query shape {query.shape}, value shape {value.shape}")
            mask = combine(am)
        if mask is not None and query.ndim == 3:
            mask = xp.broadcast_to(mask, (query.shape[0], t, s))
        return mask

    def _composed_attention(self, q, k, v, mask, scale, training):
        """Keras's einsum formulation (any rank and attention axes); returns the weights too."""
        q = ops.multiply(q, scale)
        scores = ops.einsum(self._dot_eq, k, q)
        if mask is not None:
            mf = mask.astype(scores.dtype)
            for _ in range(scores.ndim - mf.ndim):
                mf = scores.backend.xp.expand_dims(mf, -len(self._axes) * 2 - 1)
            large = attention_ops.large_negative(scores.dtype)
            scores = ops.add(scores, constant((1.0 - mf) * scores.dtype.type(large),
                                              scores.backend))
        norm_axes = tuple(range(scores.ndim - len(self._axes), scores.ndim))
        weights = ops.softmax(scores, axis=norm_axes)
        if mask is not None:
            weights = ops.multiply(weights, constant(mf, scores.backend))
        final = weights
        if training and self.dropout > 0:
            keep = dropout_mask(self, weights.shape, self.dropout, weights.dtype, weights.backend)
            final = ops.multiply(weights, constant(keep, weights.backend))
        return ops.einsum(self._combine_eq, final, v), weights

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                "value_dim": self.value_dim, "dropout": self.dropout, "use_bias": self.use_bias,
                "use_gate": False,
                "output_shape": None if self._output_shape is None else list(self._output_shape),
                "attention_axes": None if self.attention_axes is None
                else list(self.attention_axes), "sliding_window": None,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": serialize_regularizer(self.kernel_regularizer),
                "bias_regularizer": serialize_regularizer(self.bias_regularizer),
                "kernel_constraint": None, "bias_constraint": None, "seed": self.seed}


__all__ = ["MultiHeadAttention"]
