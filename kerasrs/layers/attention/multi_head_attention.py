"""`MultiHeadAttention` (Vaswani et al., 2017) with Keras 3's weights, masks, equations and
override points (``_compute_attention``, ``_compute_attention_mask``, ``_masked_softmax``)."""

import math
import string

import numpy as np

from kerasrs import constraints, initializers, ops
from kerasrs.backend import settings
from kerasrs.layers.attention.einsum_dense import EinsumDense
from kerasrs.layers.base import Layer
from kerasrs.layers.core import Dropout, Softmax, dropout_mask
from kerasrs.layers.layer_config import get_regularizer, serialize_regularizer
from kerasrs.layers.node import SymbolicTensor
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


def _positive(who, name, value, optional=False):
    if optional and value is None:
        return None
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{who}: Received an invalid value for argument `{name}`, expected a "
                         f"positive integer{' or `None`' if optional else ''}. Received: "
                         f"{name}={value!r}")
    return int(value)



def check_window_and_flash(who, sliding_window, flash_attention, dropout):
    """Keras's checks of ``sliding_window`` and ``flash_attention``; returns whether flash
    attention is on (the argument, else `kerasrs.config.is_flash_attention_enabled`).

    Raises:
        ValueError: for a ``sliding_window`` that is not None or a positive int, or dropout
            with flash attention (Keras's phrases).
    """
    if sliding_window is not None and (not isinstance(sliding_window, int) or
                                       isinstance(sliding_window, bool) or sliding_window <= 0):
        raise ValueError(f"{who}: `sliding_window` must be `None` or a positive integer. "
                         f"Received: sliding_window={sliding_window!r}")
    flash = bool(flash_attention or settings.is_flash_attention_enabled())
    if flash and dropout > 0.0:
        raise ValueError(f"{who}: Dropout is not supported when flash attention is enabled. "
                         f"Please set dropout to 0.0 to use flash attention. Received: "
                         f"dropout={dropout}")
    return flash


def combined_mask(query_mask, value_mask, key_mask, attention_mask, extra):
    """The boolean masks ANDed: ``attention_mask``, the query's mask on the query axis, the
    value's and key's on the key axis, then the ``extra`` masks (causal, window); or None."""
    parts = [] if attention_mask is None else [ops.cast(attention_mask, "bool")]
    if query_mask is not None:
        parts.append(ops.expand_dims(ops.cast(query_mask, "bool"), -1))
    parts += [ops.expand_dims(ops.cast(m, "bool"), -2) for m in (value_mask, key_mask)
              if m is not None]
    parts += extra
    if not parts:
        return None
    mask = parts[0]
    for part in parts[1:]:
        mask = ops.logical_and(mask, part)
    return mask


def causal_mask(query, value=None):
    """``(1, T, S)`` booleans, True where key ``j <= i`` for query ``i``."""
    t = query.shape[1]
    s = t if value is None else value.shape[1]
    return constant(np.tril(np.ones((t, s), bool))[None], getattr(query, "backend", None))


def sliding_window_mask(query, value, window):
    """``(1, T, S)`` booleans, True where ``|i - j| < window``."""
    t = query.shape[1]
    s = t if value is None else value.shape[1]
    rows, cols = np.arange(t)[:, None], np.arange(s)[None, :]
    return constant((np.abs(rows - cols) < window)[None], getattr(query, "backend", None))

class MultiHeadAttention(Layer):
    """Multi-head attention: per-head scaled dot products of projected queries and keys weight
    the projected values; the heads are projected back to the query's size.

    Args:
        num_heads: int > 0. key_dim: int > 0, the query/key size per head.
        value_dim: per-head value size (defaults to ``key_dim``).
        dropout: rate of dropout on the attention weights (training only).
        use_bias: biases in the projections. Defaults to True.
        output_shape: the last axis (or axes) of the output; defaults to the query's last axis.
        attention_axes: axes attention runs over (default: all but batch, heads and features).
        sliding_window: int > 0 or None: a query attends only to keys less than this many
            positions away (with ``use_causal_mask``, the causal sliding window of Mistral).
        flash_attention: request the fused attention kernel (kerasrs computes the same numbers
            either way; Keras's constraints apply: no dropout, no returned scores); None follows
            `kerasrs.config.is_flash_attention_enabled`.
        kernel_initializer / bias_initializer / regularizers / constraints: for the projections
            (`EinsumDense` sublayers ``query``, ``key``, ``value``, ``gate``,
            ``attention_output``).
        use_gate: multiply the attention output per head by ``sigmoid(gate(query))`` before the
            output projection (gated attention).
        seed: int for the dropout generator.

    Call arguments:
        query ``(B, T, dim)``, value ``(B, S, dim_v)``, key ``(B, S, dim_k)`` (default: value);
        attention_mask: booleans ``(B, T, S)`` (or broadcastable, or per head ``(B, heads, T,
        S)``), True = may attend; return_attention_scores: also return the weights ``(B, heads,
        T, S)``; training; use_causal_mask: query ``i`` attends only to keys ``j <= i``.
        Keras masks on query/value/key (``tensor._keras_mask``) are combined with these.

    Weights (Keras's layout): ``query/kernel (dim, heads, key_dim)``, ``query/bias (heads,
    key_dim)``, the same for ``key`` and ``value`` (``value_dim``) and ``gate``,
    ``attention_output/kernel (heads, value_dim, out)``, ``attention_output/bias (out,)``.

    Self-attention on 3-D inputs runs the three projections as one GEMM, and the attention
    core is one fused op (`kerasrs.ops.attention`); masked softmax rows never produce NaN, in
    float16 too.

    Raises:
        ValueError: for bad constructor arguments (Keras's phrases); on call, for query/value/
            key whose batch or sequence sizes disagree, a feature size other than the built one,
            or an ``attention_mask`` that does not broadcast. Errors name the layer and shapes.
    """

    supports_masking = True

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True,
                 output_shape=None, attention_axes=None, sliding_window=None, flash_attention=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, use_gate=False, seed=None,
                 **kwargs):
        who = kwargs.get("name") or "multi_head_attention"
        self.num_heads = _positive(who, "num_heads", num_heads)
        self.key_dim = _positive(who, "key_dim", key_dim)
        self.value_dim = _positive(who, "value_dim", value_dim, optional=True) or self.key_dim
        super().__init__(**kwargs)
        # as Keras: the projections regularize their outputs; the layer's own output is not
        self._activity_regularizer = get_regularizer(activity_regularizer)
        self.dropout, self.use_bias, self.use_gate = float(dropout), bool(use_bias), use_gate
        if output_shape:
            if isinstance(output_shape, (int, np.integer)):
                output_shape = (int(output_shape),)
            if not isinstance(output_shape, (list, tuple)):
                raise ValueError(f"{self.name}: Invalid `output_shape`: {output_shape!r}. When "
                                 "specified, the `output_shape` should be of type tuple, list, "
                                 "or int.")
            output_shape = tuple(output_shape)
        self._output_shape = output_shape or None
        if isinstance(attention_axes, int):
            attention_axes = (attention_axes,)
        elif attention_axes is not None and not isinstance(attention_axes, (list, tuple)):
            raise ValueError(f"{self.name}: `attention_axes` must be an int, list, or tuple. "
                             f"Received: attention_axes={attention_axes!r}")
        self.attention_axes = None if attention_axes is None else tuple(attention_axes)
        self._flash_attention = check_window_and_flash(self.name, sliding_window,
                                                       flash_attention, self.dropout)
        self._sliding_window = sliding_window
        self.seed = seed
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = get_regularizer(kernel_regularizer)
        self.bias_regularizer = get_regularizer(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self._inverse_sqrt_key_dim = 1.0 / math.sqrt(float(self.key_dim))

    # The projections, as Keras exposes them (`EinsumDense` layers, made by `build`).
    query_dense = property(lambda self: self._query_dense)
    key_dense = property(lambda self: self._key_dense)
    value_dense = property(lambda self: self._value_dense)
    output_dense = property(lambda self: self._output_dense)

    def _dense(self, free, bound, out_dims, name, **extra):
        eq, bias_axes, rank = _proj_equation(free, bound, len(out_dims))
        kernel_init, bias_init = (init.__class__.from_config(init.get_config()) for init in
                                  (self.kernel_initializer, self.bias_initializer))
        return EinsumDense(eq, [None] * (rank - 1 - len(out_dims)) + list(out_dims),
                           bias_axes=bias_axes if self.use_bias else None, name=name,
                           dtype=self._dtype, kernel_initializer=kernel_init,
                           bias_initializer=bias_init, kernel_regularizer=self.kernel_regularizer,
                           bias_regularizer=self.bias_regularizer,
                           activity_regularizer=self._activity_regularizer,
                           kernel_constraint=self.kernel_constraint,
                           bias_constraint=self.bias_constraint, **extra)

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        query_shape, value_shape, key_shape = map(tuple, (query_shape, value_shape, key_shape))
        if value_shape[1:-1] != key_shape[1:-1]:
            raise ValueError(f"{self.name}: All dimensions of `value` and `key`, except the last "
                             f"one, must be equal (value and key must have the same shape except "
                             f"the last axis). Received: value_shape={value_shape} and "
                             f"key_shape={key_shape}")
        self._check_ranks(query_shape, value_shape, key_shape)
        if len(query_shape) != len(value_shape):
            raise ValueError(f"{self.name}: query and value must have the same rank. Received: "
                             f"query_shape={query_shape}, value_shape={value_shape}")
        self._shapes = (query_shape[-1], value_shape[-1], key_shape[-1])
        heads_k, heads_v = (self.num_heads, self.key_dim), (self.num_heads, self.value_dim)
        self._query_dense = self._dense(len(query_shape) - 1, 1, heads_k, "query")
        self._query_dense.build(query_shape)
        self._key_dense = self._dense(len(key_shape) - 1, 1, heads_k, "key")
        self._key_dense.build(key_shape)
        if self.use_gate:
            self._gate_dense = self._dense(len(query_shape) - 1, 1, heads_v, "gate",
                                           activation="sigmoid")
            self._gate_dense.build(query_shape)
        self._value_dense = self._dense(len(value_shape) - 1, 1, heads_v, "value")
        self._value_dense.build(value_shape)
        self._build_attention(len(query_shape) + 1)
        out = self._output_shape or (query_shape[-1],)
        self._output_dense = self._dense(len(query_shape) - 1, 2, out, "attention_output")
        self._output_dense.build(tuple(query_shape[:-1]) + heads_v)

    def _build_attention(self, rank):
        """The attention axes, equations, softmax and dropout of projected tensors of
        ``rank`` axes (Keras's override point)."""
        axes = self.attention_axes if self.attention_axes is not None else \
            tuple(range(1, rank - 2))
        self._axes = self._attention_axes = tuple(a if a >= 0 else rank - 1 + a for a in axes)
        self._dot_product_equation, self._combine_equation, scores_rank = \
            _attention_equations(rank, self._axes)
        norm_axes = tuple(range(scores_rank - len(self._axes), scores_rank))
        self._softmax = Softmax(axis=norm_axes, dtype=self._dtype)
        self._dropout_layer = Dropout(rate=self.dropout, dtype=self._dtype, seed=self.seed)

    # -- the call ---------------------------------------------------------------------------------
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
        default = type(self)._compute_attention is MultiHeadAttention._compute_attention
        causal_only = (use_causal_mask and default and self._sliding_window is None and
                       all(m is None for m in (query_mask, value_mask, key_mask,
                                               attention_mask)))
        if not causal_only:
            attention_mask = self._compute_attention_mask(
                query, value, query_mask=query_mask, value_mask=value_mask, key_mask=key_mask,
                attention_mask=attention_mask, use_causal_mask=use_causal_mask)
        if default and not return_attention_scores and self._packable(query, value, key):
            out = self._packed_self_attention(query, attention_mask, causal_only, training)
            return self._output_dense(out)
        gate = self._gate_dense(query) if self.use_gate else None
        q, k, v = self._query_dense(query), self._key_dense(key), self._value_dense(value)
        extra = {"use_causal_mask": True} if causal_only else {}
        out, scores = self._compute_attention(q, k, v, attention_mask, training,
                                              return_attention_scores, **extra)
        out = self._output_dense(out if gate is None else ops.multiply(out, gate))
        return (out, scores) if return_attention_scores else out

    def compute_mask(self, inputs, mask=None):
        return mask  # the query's mask passes on to the output

    def _packable(self, query, value, key):
        """Self-attention on 3-D inputs with float projections: one GEMM for q, k and v."""
        dense = (self._query_dense, self._key_dense, self._value_dense)
        return (value is query and key is value and query.ndim == 3 and self._axes == (1,) and
                not self.use_gate and all(e.quantization_mode is None for e in dense))

    def _packed_self_attention(self, x, mask, causal, training):
        dense = (self._query_dense, self._key_dense, self._value_dense)
        qkv = projection_ops.packed_projection(
            x, [e.kernel for e in dense], [e.bias for e in dense] if self.use_bias else None)
        t = x.shape[1]
        keep = self._dropout_keep((x.shape[0], self.num_heads, t, t), x, training)
        return attention_ops.packed_attention(qkv, self.num_heads, self.key_dim, self.value_dim,
                                              mask=self._heads_mask(mask, causal, t, t, x),
                                              dropout_keep=keep)

    def _dropout_keep(self, shape, like, training):
        if not (training and self.dropout > 0):
            return None
        return dropout_mask(self._dropout_layer.seed_generator, shape, self.dropout, like.dtype,
                            like.backend)

    def _heads_mask(self, mask, causal, t, s, like):
        """The mask as booleans broadcasting to ``(B, heads, T, S)`` (or None)."""
        if causal:
            return attention_ops.causal_mask(t, s, like.backend.xp)
        if mask is None:
            return None
        mask = like.backend.xp.asarray(raw(mask)).astype(bool, copy=False)  # a traced input stays one
        return mask if mask.ndim == 4 else mask[..., None, :, :] if mask.ndim >= 3 else mask

    def _compute_attention(self, query, key, value, attention_mask=None, training=None,
                           return_attention_scores=False, use_causal_mask=False):
        """Attention on projected ``(B, T, heads, dim)`` tensors (Keras's override point):
        ``(output, scores or None)``.

        Raises:
            ValueError: for returned scores with flash attention (Keras's constraint).
        """
        query, key, value = (self._convert_inputs(t) for t in (query, key, value))
        if attention_mask is not None and not hasattr(attention_mask, "shape"):
            attention_mask = np.asarray(attention_mask)
        if self._flash_attention and return_attention_scores:
            raise ValueError(f"{self.name}: Returning attention scores is not supported when "
                             "flash attention is enabled. Please disable flash attention to "
                             "access attention scores.")
        if use_causal_mask:
            causal = self._compute_causal_mask(query, value)
            attention_mask = causal if attention_mask is None else ops.logical_and(
                ops.cast(attention_mask, "bool"), causal)
        if query.ndim == 4 and not return_attention_scores:
            t, s = query.shape[1], key.shape[1]
            keep = self._dropout_keep((query.shape[0], self.num_heads, t, s), query, training)
            out = attention_ops.attention(query, key, value, scale=self._inverse_sqrt_key_dim,
                                          mask=self._heads_mask(attention_mask, False, t, s,
                                                                query),
                                          dropout_keep=keep)
            return out, None
        query = ops.multiply(query, self._inverse_sqrt_key_dim)
        scores = ops.einsum(self._dot_product_equation, key, query)
        scores = self._masked_softmax(scores, attention_mask)
        final = self._dropout_layer(scores, training=training) if self.dropout > 0 else scores
        return ops.einsum(self._combine_equation, final, value), scores

    def _masked_softmax(self, attention_scores, attention_mask=None):
        """Softmax over the key axes; masked weights exactly 0 (Keras's override point)."""
        if attention_mask is not None:
            axis = -len(self._axes) * 2 - 1
            for _ in range(attention_scores.ndim - len(attention_mask.shape)):
                attention_mask = ops.expand_dims(attention_mask, axis)
        return self._softmax(attention_scores, mask=attention_mask)

    def _compute_attention_mask(self, query, value, query_mask=None, value_mask=None,
                                key_mask=None, attention_mask=None, use_causal_mask=False):
        """Keras's combined boolean mask ``(B, T, S)`` (or None): query, value, key, causal,
        sliding-window and explicit masks ANDed (Keras's override point).

        Raises:
            ValueError: for an ``attention_mask`` that does not broadcast, naming the shapes.
        """
        if attention_mask is not None:
            self._check_attention_mask(attention_mask, query, value)
        extra = [self._compute_causal_mask(query, value)] if use_causal_mask else []
        if self._sliding_window is not None:
            extra.append(self._compute_sliding_window_mask(query, value))
        return combined_mask(query_mask, value_mask, key_mask, attention_mask, extra)

    def _check_attention_mask(self, mask, query, value):
        t, s = query.shape[1], value.shape[1]
        shape = tuple(np.shape(raw(mask)))
        target = (query.shape[0],) + tuple(query.shape[1:-1]) + (s,)
        if len(shape) == 4 and query.ndim == 3:  # per head
            target = (query.shape[0], self.num_heads, t, s)
        try:
            ok = len(shape) <= len(target) and np.broadcast_shapes(shape, target) == target
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"{self.name}: attention_mask must have shape (batch, query_len, "
                             f"key_len) = {(query.shape[0], t, s)} or broadcast to it. Received: "
                             f"attention_mask shape {shape}, query shape {tuple(query.shape)}, "
                             f"value shape {tuple(value.shape)}")

    def _compute_causal_mask(self, query, value=None):
        """``(1, T, S)`` booleans, True where key ``j <= i`` for query ``i``."""
        return causal_mask(query, value)

    def _compute_sliding_window_mask(self, query, value=None):
        """``(1, T, S)`` booleans, True where ``|i - j| < sliding_window``."""
        return sliding_window_mask(query, value, self._sliding_window)

    # -- checks -----------------------------------------------------------------------------------
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

    def compute_output_shape(self, query_shape, value_shape=None, key_shape=None):
        """The query's shape with the last axis ``output_shape`` (default: the query's).

        Raises:
            ValueError: if value and key differ in other than their last axis.
        """
        query_shape = tuple(query_shape)
        value_shape = query_shape if value_shape is None else tuple(value_shape)
        key_shape = value_shape if key_shape is None else tuple(key_shape)
        if value_shape[1:-1] != key_shape[1:-1]:
            raise ValueError(f"{self.name}: All dimensions of `value` and `key`, except the last "
                             f"one, must be equal. Received: value_shape={value_shape} and "
                             f"key_shape={key_shape}")
        return query_shape[:-1] + self._output_shape if self._output_shape else query_shape

    def compute_output_spec(self, query, value, key=None, query_mask=None, value_mask=None,
                            key_mask=None, attention_mask=None, return_attention_scores=False,
                            training=None, use_causal_mask=False):
        """The symbolic output (and scores ``(batch dims, heads, query axes, key axes)``)."""
        shape = self.compute_output_shape(query.shape, value.shape,
                                          None if key is None else key.shape)
        out = SymbolicTensor(shape, self.compute_dtype)
        if not return_attention_scores:
            return out
        rank = len(query.shape) + 1
        projected = tuple(query.shape[:-1]) + (self.num_heads, self.key_dim)
        axes = self._axes
        batch = [projected[i] for i in range(rank) if i not in axes and i != rank - 1]
        scores = batch + [query.shape[a] for a in axes] + [value.shape[a] for a in axes]
        return out, SymbolicTensor(scores, self.compute_dtype)

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                "value_dim": self.value_dim, "dropout": self.dropout, "use_bias": self.use_bias,
                "use_gate": self.use_gate,
                "output_shape": None if self._output_shape is None else list(self._output_shape),
                "attention_axes": None if self.attention_axes is None
                else list(self.attention_axes), "sliding_window": self._sliding_window,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": serialize_regularizer(self.kernel_regularizer),
                "bias_regularizer": serialize_regularizer(self.bias_regularizer),
                "activity_regularizer": serialize_regularizer(self._activity_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint),
                "seed": self.seed}


__all__ = ["MultiHeadAttention"]
