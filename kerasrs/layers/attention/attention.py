"""`Attention` (Luong-style dot product) and `AdditiveAttention` (Bahdanau-style), as Keras 3.

Both take ``[query (B, Tq, dim), value (B, Tv, dim_v), key (B, Tv, dim) (optional)]`` and masks
``[query_mask (B, Tq), value_mask (B, Tv)]``. Scores of masked keys get a large number subtracted
(1e9, or 65504 in float16, as Keras) before the softmax, so a partly masked row gives them weight
0 and a fully masked row gives uniform weights: never NaN. Outputs at masked query positions
are 0.
"""

import numpy as np

from kerasrs import ops, random
from kerasrs.layers.base import Layer
from kerasrs.layers.core import dropout_mask
from kerasrs.ops.core import constant, raw


class Attention(Layer):
    """Dot-product attention: ``softmax(q k^T) v`` (Luong et al., 2015).

    Args:
        use_scale: learn a scalar ``scale`` multiplying the scores (init 1). Defaults to False.
        score_mode: "dot" (``q k^T``) or "concat" (``sum(tanh(q + k))`` times a learned
            scalar ``concat_score_weight``).
        dropout: rate of dropout on the attention weights (training only). seed: int.

    Call: ``layer([query, value(, key)], mask=[query_mask, value_mask],
    return_attention_scores=False, training=False, use_causal_mask=False)``.
    Output: ``(B, Tq, dim_v)``; with ``return_attention_scores`` also the weights
    ``(B, Tq, Tv)``.

    Raises:
        ValueError: for inputs that are not a list of 2 or 3 tensors, masks that are not a list
            of 2 or 3, query/key feature sizes that differ (dot scores need equal sizes), batch
            or length mismatches, or masks of the wrong shape; errors name the layer and shapes.
    """

    supports_masking = True

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError(f"{self.name}: Invalid value for argument score_mode. Expected one of "
                             f"{{'dot', 'concat'}}. Received: score_mode={score_mode!r}")
        self.use_scale, self.score_mode = bool(use_scale), score_mode
        self.dropout, self.seed = float(dropout), seed
        if self.dropout > 0:
            self.seed_generator = random.SeedGenerator(seed)

    def build(self, input_shape):
        self._validate(input_shape)
        self.scale = self.add_weight((), "ones", name="scale") if self.use_scale else None
        self.concat_score_weight = self.add_weight((), "ones", name="concat_score_weight") \
            if self.score_mode == "concat" else None

    def _validate(self, inputs, mask=None):
        if not isinstance(inputs, (list, tuple)) or not 2 <= len(inputs) <= 3 or any(
                x is None or isinstance(x, (int, np.integer)) for x in inputs):  # one shape
            raise ValueError(f"{self.name}: the layer must be called on a list of length 2 or 3, "
                             f"[query, value] or [query, value, key]. Received: "
                             f"{type(inputs).__name__} of length "
                             f"{len(inputs) if isinstance(inputs, (list, tuple)) else 'n/a'}")
        if mask is not None and (not isinstance(mask, (list, tuple)) or not 2 <= len(mask) <= 3):
            raise ValueError(f"{self.name}: the layer mask must be a list of length 2 or 3, "
                             f"[query_mask, value_mask] or [query_mask, value_mask, key_mask]. "
                             f"Received: mask={mask!r}")

    def _check_shapes(self, q, v, k):
        shapes = f"query shape {q.shape}, value shape {v.shape}, key shape {k.shape}"
        if q.ndim < 3 or q.ndim != v.ndim or v.ndim != k.ndim:
            raise ValueError(f"{self.name}: query, value and key must be (batch, length, dim) "
                             f"tensors of one rank. Received: {shapes}")
        if q.shape[0] != v.shape[0] or k.shape[0] != v.shape[0] or k.shape[-2] != v.shape[-2]:
            raise ValueError(f"{self.name}: query, value and key must have the same batch size, "
                             f"and key and value the same length. Received: {shapes}")
        if q.shape[-1] != k.shape[-1]:
            raise ValueError(f"{self.name}: the query and key feature sizes must match (the "
                             f"scores compare them). Received: {shapes}")

    def _calculate_scores(self, query, key):
        """``(B, Tq, Tv)`` scores of ``query`` (B, Tq, dim) against ``key`` (B, Tv, dim) (Keras's
        hook: a subclass overrides it for another score function)."""
        q, k = ops.convert_to_tensor(query), ops.convert_to_tensor(key)
        if self.score_mode == "dot":
            axes = tuple(range(k.ndim - 2)) + (k.ndim - 1, k.ndim - 2)
            scores = ops.matmul(q, ops.transpose(k, axes))
            return scores if self.scale is None else ops.multiply(scores, self.scale)
        s = ops.add(ops.expand_dims(q, -2), ops.expand_dims(k, -3))
        if self.scale is not None:
            s = ops.multiply(self.scale, s)
        return ops.multiply(self.concat_score_weight, ops.sum(ops.tanh(s), axis=-1))

    def _mask(self, name, m, expected, be):
        if m is None:
            return None
        m = be.xp.asarray(raw(m)).astype(bool)
        if tuple(m.shape) != tuple(expected):
            raise ValueError(f"{self.name}: {name} must have shape {tuple(expected)}. "
                             f"Received: {name} shape {tuple(m.shape)}")
        return m

    def call(self, inputs, mask=None, training=False, return_attention_scores=False,
             use_causal_mask=False):
        self._validate(inputs, mask)
        q, v = inputs[0], inputs[1]
        k = inputs[2] if len(inputs) > 2 else v
        self._check_shapes(q, v, k)
        be = q.backend
        q_mask = self._mask("query_mask", mask[0], q.shape[:-1], be) if mask else None
        v_mask = self._mask("value_mask", mask[1], v.shape[:-1], be) if mask else None
        scores = self._calculate_scores(q, k)
        keep = self._calculate_score_mask(scores, v_mask, use_causal_mask)
        if keep is not None:
            big = 65504.0 if scores.dtype == np.float16 else 1.0e9
            drop = be.xp.broadcast_to(~keep, scores.shape)
            scores = ops.where(constant(drop, be), ops.subtract(scores, big), scores)
        weights = ops.softmax(scores, axis=-1)
        if training and self.dropout > 0:  # the returned scores are the dropped ones (Keras)
            weights = ops.multiply(weights, constant(dropout_mask(
                self.seed_generator, weights.shape, self.dropout, weights.dtype, be), be))
        out = ops.matmul(weights, v)
        if q_mask is not None:
            out = ops.multiply(out, constant(q_mask[..., None].astype(out.dtype), be))
        return (out, weights) if return_attention_scores else out

    @staticmethod
    def _calculate_score_mask(scores, v_mask, use_causal_mask):
        """Where the ``(B, Tq, Tv)`` ``scores`` count (a bool array), or None when all do: the
        value mask ``(B, Tv)`` per key, and with ``use_causal_mask`` only keys at or before
        each query position (``(1, Tq, Tv)`` when there is no value mask)."""
        xp = np if isinstance(scores, np.ndarray) else scores.backend.xp
        keep = None if v_mask is None else xp.asarray(raw(v_mask)).astype(bool)[..., None, :]
        if use_causal_mask:
            causal = xp.tril(xp.ones((1,) + tuple(scores.shape[-2:]), dtype=bool))
            keep = causal if keep is None else xp.logical_and(keep, causal)
        return keep

    def compute_mask(self, inputs, mask=None):
        if mask is None or mask[0] is None:
            return None
        return mask[0]

    def get_config(self):
        return {**super().get_config(), "use_scale": self.use_scale,
                "score_mode": self.score_mode, "dropout": self.dropout, "seed": self.seed}


class AdditiveAttention(Attention):
    """Additive attention (Bahdanau et al., 2015): scores ``sum(scale * tanh(q + k), -1)``.

    Args:
        use_scale: learn a per-feature ``scale`` of shape ``(dim,)`` (glorot_uniform init).
            Defaults to True.
        dropout: rate of dropout on the attention weights. seed: int.

    Call, output and errors: as `Attention`.
    """

    def __init__(self, use_scale=True, dropout=0.0, **kwargs):
        kwargs.pop("score_mode", None)
        super().__init__(use_scale=use_scale, dropout=dropout, **kwargs)

    def build(self, input_shape):
        self._validate(input_shape)
        self.scale = self.add_weight((input_shape[0][-1],), "glorot_uniform", name="scale") \
            if self.use_scale else None
        self.concat_score_weight = None

    def _calculate_scores(self, query, key):
        t = ops.tanh(ops.add(ops.expand_dims(query, -2), ops.expand_dims(key, -3)))
        if self.scale is not None:
            t = ops.multiply(self.scale, t)
        return ops.sum(t, axis=-1)

    def get_config(self):
        config = super().get_config()
        config.pop("score_mode")
        return config


__all__ = ["Attention", "AdditiveAttention"]
