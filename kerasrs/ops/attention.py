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
from kerasrs.ops.activations import softmax
from kerasrs.ops.dispatch import op
from kerasrs.ops.layout import transpose


def large_negative(dtype):
    """The number added to masked scores: -1e9, or -3e4 for float16 (Keras's choice)."""
    return -3e4 if np.dtype(dtype) == np.float16 else -1e9


class _Attention(Function):
    """``o = dropout(masked_softmax(q k^T * scale)) v`` on ``(batch, seq, heads, dim)`` arrays.

    Inputs are ``q, k, v``, or one packed ``(batch, seq, heads * (2 key_dim + value_dim))``
    array (``split = (heads, key_dim, value_dim)``: the q, k and v features side by side, as one
    self-attention projection GEMM makes them); the gradient then comes back packed the same way.
    ``mask`` broadcasts to ``(batch, heads, q_seq, k_seq)`` (booleans, True = attend);
    ``keep`` is None or the dropout multiplier of the weights (0 or ``1 / (1 - rate)``).

    Backward uses ``sum_s dP * P = gy . o`` per query (the output already holds ``P v``), so the
    softmax gradient needs no reduction over the scores.
    """
    half_in_float32 = "cpu"

    def __init__(self, scale, mask, keep, split=None):
        self.scale, self.mask, self.keep, self.split = scale, mask, keep, split

    def _unpack(self, x):
        n, h, hv = self.split
        b, t, _ = x.shape
        return (x[..., :n * h].reshape(b, t, n, h), x[..., n * h:2 * n * h].reshape(b, t, n, h),
                x[..., 2 * n * h:].reshape(b, t, n, hv))

    def forward(self, *xs):
        xp = self.xp
        q, k, v = self._unpack(xs[0]) if self.split else xs
        self.qh = q.transpose(0, 2, 1, 3)  # (B, N, T, H) views, no copies
        self.kh, self.vh = k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3)
        s = self._scores(xp)
        if xp is not np:  # a GPU: the block-max shortcut's check would read the device
            self._softmax_shifted_by_row_max(xp, s)
        elif not self._softmax_shifted_by_block_max(xp, s):
            s = self._scores(xp)
            self._softmax_shifted_by_row_max(xp, s)
        if self.mask is not None:
            s *= self.mask
        self.p = s
        self.pd = s if self.keep is None else s * self.keep
        out = xp.empty(q.shape[:3] + v.shape[3:], s.dtype)
        self.oh = out.transpose(0, 2, 1, 3)
        xp.matmul(self.pd, self.vh, out=self.oh)
        return out

    def _scores(self, xp):
        """``q k^T * scale``, masked entries lowered by `large_negative`: ``(B, N, T, S)``."""
        s = xp.matmul(self.qh, self.kh.transpose(0, 1, 3, 2))
        s *= self.scale
        if self.mask is not None:
            s += xp.where(self.mask, 0.0, large_negative(s.dtype)).astype(s.dtype)
        return s

    @staticmethod
    def _softmax_shifted_by_row_max(xp, s):
        """Softmax over the last axis in place, shifted by each row's maximum."""
        s -= s.max(axis=-1, keepdims=True)
        xp.exp(s, out=s)
        s /= xp.matmul(s, xp.ones((s.shape[-1], 1), s.dtype))  # row sums as a GEMV

    def _softmax_shifted_by_block_max(self, xp, s):
        """Softmax over the last axis in place, shifted by each head's (T, S) block maximum:
        one reduction over a long contiguous axis instead of one per short row. Returns False
        (``s`` then holds garbage) if some row that is not fully masked underflowed, i.e. lies
        more than ~69 below its block's maximum, or a NaN (which the block maximum spreads to
        every row) came in; the caller then redoes it with row maxima.
        Used for float32/float64 only (float16's exp range is too small)."""
        if s.dtype.itemsize < 4:
            return False
        s -= s.reshape(s.shape[:2] + (s.shape[2] * s.shape[3],)).max(axis=-1)[..., None, None]
        xp.exp(s, out=s)
        total = xp.matmul(s, xp.ones((s.shape[-1], 1), s.dtype))  # row sums as a GEMV
        small = ~(total >= 1e-30)  # NaN too: row maxima keep a NaN in its own row
        if bool(small.any()):
            if self.mask is None or bool((small & self.mask.any(axis=-1, keepdims=True)).any()):
                return False
            total[small] = 1.0  # fully masked rows: the mask zeroes them afterwards
        s /= total
        return True

    def backward(self, gy):
        xp = self.xp
        b, t, n, hv = gy.shape
        gh = gy.transpose(0, 2, 1, 3)
        packed = self.split is not None
        if packed:
            g = xp.empty(self.qh.shape[:1] + self.qh.shape[2:3] +
                         (n * (2 * self.qh.shape[-1] + hv),), gy.dtype)
            gq, gk, gv = (a.transpose(0, 2, 1, 3) for a in self._unpack(g))
        else:
            gq, gk, gv = (xp.empty(a.shape[:1] + a.shape[2:3] + a.shape[1:2] + a.shape[3:],
                                   gy.dtype).transpose(0, 2, 1, 3) if need else None
                          for a, need in zip((self.qh, self.kh, self.vh), self.needs_grad))
        if gv is not None:
            xp.matmul(self.pd.transpose(0, 1, 3, 2), gh, out=gv)
        if gq is not None or gk is not None:
            dp = self.backend.empty(self.p.shape, gy.dtype)  # reused memory, this call's own
            xp.matmul(gh, self.vh.transpose(0, 1, 3, 2), out=dp)
            if self.keep is not None:
                dp *= self.keep
            # dS = (dP - gy . o) * P * scale; masked entries of P are 0: they get no gradient
            self.backend.attention_softmax_grad(dp, self.p, gy, self.oh.transpose(0, 2, 1, 3),
                                                self.scale)
            if gq is not None:
                xp.matmul(dp, self.kh, out=gq)
            if gk is not None:
                xp.matmul(dp.transpose(0, 1, 3, 2), self.qh, out=gk)
        if packed:
            return (g,)
        return tuple(None if a is None else a.transpose(0, 2, 1, 3) for a in (gq, gk, gv))


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
    mask = _check_mask(mask, (q.shape[0], q.shape[2], q.shape[1], k.shape[1]), q.backend)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    return _Attention(scale, mask, dropout_keep).apply(q, k, v)


def packed_attention(qkv, num_heads, key_dim, value_dim, mask=None, scale=None,
                     dropout_keep=None):
    """`attention` on one packed self-attention projection (one GEMM for q, k and v).

    Args:
        qkv: Tensor ``(batch, seq, heads * (2 key_dim + value_dim))``: the query, key and value
            features side by side (each block ordered ``(heads, dim)``).
        num_heads, key_dim, value_dim: the block sizes.
        mask, scale, dropout_keep: as `attention`.

    Returns:
        Tensor ``(batch, seq, heads, value_dim)``.

    Raises:
        ValueError: if ``qkv`` is not 3-D with ``heads * (2 key_dim + value_dim)`` features, or
            the mask does not broadcast to ``(batch, heads, seq, seq)``.
    """
    x = convert_to_tensor(qkv)
    width = num_heads * (2 * key_dim + value_dim)
    if x.ndim != 3 or x.shape[-1] != width:
        raise ValueError(f"packed_attention: expected (batch, seq, {width}) features. "
                         f"Received: shape {x.shape}")
    scores_shape = (x.shape[0], num_heads, x.shape[1], x.shape[1])
    mask = _check_mask(mask, scores_shape, x.backend)
    scale = 1.0 / math.sqrt(key_dim) if scale is None else float(scale)
    return _Attention(scale, mask, dropout_keep, (num_heads, key_dim, value_dim)).apply(x)


def _check_mask(mask, scores_shape, be):
    """The mask as a boolean array broadcastable to the scores (None if absent or all True;
    kept while a graph traces: the next batch's mask may not be all True)."""
    if mask is None:
        return None
    mask = be.xp.asarray(core.raw(mask)).astype(bool, copy=False)  # a traced constant stays one
    try:
        np.broadcast_shapes(mask.shape, scores_shape)
    except ValueError:
        raise ValueError("dot_product_attention: the mask must broadcast to (batch, heads, "
                         f"q_seq, k_seq) = {scores_shape}. Received: mask shape "
                         f"{tuple(mask.shape)}") from None
    return None if not core._tracers_var.get() and bool(mask.all()) else mask


def causal_mask(q_len, k_len, xp=np):
    """``(1, 1, q_len, k_len)`` booleans: query ``i`` may attend to keys ``j <= i`` (made from
    shapes only, so declared a constant to a tracing `kerasrs.graph`)."""
    return core.constant(xp.tril(xp.ones((q_len, k_len), dtype=bool))[None, None], None).data


@op
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
    xp = q.backend.xp
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    s = core.matmul(transpose(q, (0, 2, 1, 3)), transpose(k, (0, 2, 3, 1)))
    s = core.add(core.multiply(s, scale), bias)
    if mask is None:
        p = softmax(s, axis=-1)
    else:
        m = xp.asarray(core.raw(mask)).astype(bool)
        s = core.add(s, core.constant(xp.where(m, 0.0, large_negative(s.dtype)).astype(s.dtype),
                                      q.backend))
        p = core.multiply(softmax(s, axis=-1), core.constant(m.astype(s.dtype), q.backend))
    return transpose(core.matmul(p, transpose(v, (0, 2, 1, 3))), (0, 2, 1, 3))
