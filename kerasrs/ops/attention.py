"""Fused scaled dot-product attention with a masked softmax that never produces NaN.

`dot_product_attention` (Keras's ``keras.ops.dot_product_attention`` signature and layout
``(batch, seq, heads, head_dim)``) is one `Function`: ``softmax(mask(q k^T * scale)) v`` with a
hand-written backward, so a tape records one op for the whole attention core instead of about
ten (transposes, two batched matmuls, mask, softmax, dropout). Batched matmuls run on strided
views of the ``(batch, seq, heads, dim)`` arrays, without transposed copies of q, k and v.

Masked softmax (Keras's ``Softmax`` layer with a mask, as ``MultiHeadAttention`` uses it):
masked scores get a large negative number added (``-1e9``, or ``-3e4`` in float16 so the sum
stays finite) and masked probabilities are then set to exactly 0. A query row whose keys are
all masked therefore gets all-zero weights (an output of 0) and zero gradients, never NaN, in
float16 too.
"""

import math

import numpy as np

from kerasrs.autodiff import Function, convert_to_tensor
from kerasrs.ops import core


def large_negative(dtype):
    """The number added to masked scores: -1e9, or -3e4 for float16 (Keras's choice)."""
    return -3e4 if np.dtype(dtype) == np.float16 else -1e9


class _Attention(Function):
    """``o = dropout(masked_softmax(q k^T * scale)) v`` on ``(batch, seq, heads, dim)`` arrays.

    ``mask`` broadcasts to ``(batch, heads, q_seq, k_seq)`` (booleans, True = attend);
    ``keep`` is None or the dropout multiplier of the weights (0 or ``1 / (1 - rate)``).
    """

    def __init__(self, scale, mask, keep):
        self.scale, self.mask, self.keep = scale, mask, keep

    def forward(self, q, k, v):
        xp = self.xp
        self.qh = q.transpose(0, 2, 1, 3)  # (B, N, T, H) views
        self.kh, self.vh = k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3)
        s = xp.matmul(self.qh, self.kh.transpose(0, 1, 3, 2))
        s *= self.scale
        if self.mask is not None:
            s += xp.where(self.mask, 0.0, large_negative(s.dtype)).astype(s.dtype)
        s -= s.max(axis=-1, keepdims=True)
        xp.exp(s, out=s)
        s /= s.sum(axis=-1, keepdims=True)
        if self.mask is not None:
            s *= self.mask
        self.p = s
        self.pd = s if self.keep is None else s * self.keep
        return xp.ascontiguousarray(xp.matmul(self.pd, self.vh).transpose(0, 2, 1, 3))

    def backward(self, gy):
        xp = self.xp
        gh = gy.transpose(0, 2, 1, 3)
        gv = xp.matmul(self.pd.transpose(0, 1, 3, 2), gh).transpose(0, 2, 1, 3) \
            if self.needs_grad[2] else None
        if not (self.needs_grad[0] or self.needs_grad[1]):
            return None, None, gv
        dp = xp.matmul(gh, self.vh.transpose(0, 1, 3, 2))
        if self.keep is not None:
            dp *= self.keep
        if self.mask is not None:
            dp *= self.mask
        p = self.p  # masked entries are 0, so they get no gradient
        ds = dp - (dp * p).sum(axis=-1, keepdims=True)
        ds *= p
        ds *= self.scale
        gq = xp.matmul(ds, self.kh).transpose(0, 2, 1, 3) if self.needs_grad[0] else None
        gk = xp.matmul(ds.transpose(0, 1, 3, 2), self.qh).transpose(0, 2, 1, 3) \
            if self.needs_grad[1] else None
        return gq, gk, gv


def attention(query, key, value, mask=None, scale=None, dropout_keep=None):
    """The fused attention core (`dot_product_attention` plus a dropout multiplier).

    Args:
        query: float Tensor ``(batch, q_seq, heads, head_dim)``.
        key: ``(batch, k_seq, heads, head_dim)``. value: ``(batch, k_seq, heads, value_dim)``.
        mask: bool array/Tensor broadcastable to ``(batch, heads, q_seq, k_seq)``, True where a
            query may attend to a key; or None.
        scale: factor of the scores; defaults to ``1 / sqrt(head_dim)``.
        dropout_keep: None or an array of the scores' shape (or broadcastable) multiplying the
            attention weights (0 or ``1 / (1 - rate)``: inverted dropout).

    Returns:
        Tensor ``(batch, q_seq, heads, value_dim)``.

    Raises:
        ValueError: for inputs that are not 4-D, or whose batch, head, sequence or head
            dimensions disagree, or a mask that does not broadcast to the scores' shape.
    """
    q, k, v = (convert_to_tensor(t) for t in (query, key, value))
    if not (q.ndim == k.ndim == v.ndim == 4):
        raise ValueError("dot_product_attention: query, key and value must be 4-D (batch, seq, "
                         f"heads, dim). Received: shapes {q.shape}, {k.shape}, {v.shape}")
    if q.shape[0] != k.shape[0] or q.shape[2] != k.shape[2] or q.shape[3] != k.shape[3] or \
            k.shape[:3] != v.shape[:3]:
        raise ValueError("dot_product_attention: query and key must agree in batch, heads and "
                         "head_dim, key and value in batch, seq and heads. Received: shapes "
                         f"query {q.shape}, key {k.shape}, value {v.shape}")
    scores_shape = (q.shape[0], q.shape[2], q.shape[1], k.shape[1])
    if mask is not None:
        mask = q.backend.xp.asarray(core.raw(mask)).astype(bool)
        try:
            np.broadcast_shapes(mask.shape, scores_shape)
        except ValueError:
            raise ValueError("dot_product_attention: the mask must broadcast to (batch, heads, "
                             f"q_seq, k_seq) = {scores_shape}. Received: mask shape "
                             f"{tuple(mask.shape)}") from None
        if bool(mask.all()):
            mask = None
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    return _Attention(scale, mask, dropout_keep).apply(q, k, v)


def causal_mask(q_len, k_len, xp=np):
    """``(1, 1, q_len, k_len)`` booleans: query ``i`` may attend to keys ``j <= i``."""
    return xp.tril(xp.ones((q_len, k_len), dtype=bool))[None, None]


def dot_product_attention(query, key, value, bias=None, mask=None, scale=None, is_causal=False,
                          flash_attention=None, attn_logits_soft_cap=None):
    """Scaled dot-product attention, Keras's ``keras.ops.dot_product_attention``.

    ``softmax(q k^T * scale + bias) v`` per head, with a masked softmax that gives zeros (not
    NaN) for fully masked rows (see the module docstring).

    Args:
        query: ``(batch, q_seq, heads, head_dim)``. key: ``(batch, k_seq, heads, head_dim)``.
        value: ``(batch, k_seq, heads, value_dim)``.
        bias: optional scores bias broadcastable to ``(batch, heads, q_seq, k_seq)`` (then the
            computation is composed of ops rather than fused).
        mask: optional booleans broadcastable to ``(batch, heads, q_seq, k_seq)``.
        scale: defaults to ``1 / sqrt(head_dim)``.
        is_causal: also mask keys after each query position.
        flash_attention, attn_logits_soft_cap: accepted for Keras compatibility; must be
            None/False and None.

    Returns:
        Tensor ``(batch, q_seq, heads, value_dim)``.

    Raises:
        ValueError: as `attention`, or for flash attention / a soft cap.
    """
    if flash_attention or attn_logits_soft_cap is not None:
        raise ValueError("dot_product_attention: flash attention and logit soft caps are not "
                         f"supported. Received: flash_attention={flash_attention}, "
                         f"attn_logits_soft_cap={attn_logits_soft_cap}")
    q, k = convert_to_tensor(query), convert_to_tensor(key)
    xp = q.backend.xp
    if is_causal:
        c = causal_mask(q.shape[1], k.shape[1], xp)
        mask = c if mask is None else xp.logical_and(xp.asarray(core.raw(mask)), c)
    if bias is None:
        return attention(q, k, value, mask=mask, scale=scale)
    return _composed(q, k, convert_to_tensor(value), bias, mask, scale)


def _composed(q, k, v, bias, mask, scale):
    """The same computation as `_Attention`, composed of ops (for a learned ``bias``)."""
    from kerasrs import ops

    xp = q.backend.xp
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    s = ops.matmul(ops.transpose(q, (0, 2, 1, 3)), ops.transpose(k, (0, 2, 3, 1)))
    s = ops.add(ops.multiply(s, scale), bias)
    if mask is None:
        p = ops.softmax(s, axis=-1)
    else:
        m = xp.asarray(core.raw(mask)).astype(bool)
        s = ops.add(s, core.constant(xp.where(m, 0.0, large_negative(s.dtype)).astype(s.dtype),
                                     q.backend))
        p = ops.multiply(ops.softmax(s, axis=-1), core.constant(m.astype(s.dtype), q.backend))
    return ops.transpose(ops.matmul(p, ops.transpose(v, (0, 2, 1, 3))), (0, 2, 1, 3))


__all__ = ["dot_product_attention"]
