"""The backward of attention's softmax (and score scale): the NumPy twin and the numba kernel
(no CUDA kernel: on CuPy the twin's three array operations run)."""

from kerasrs.backend import cpu_threads
from kerasrs.backend.kernels.cpu import reducing_kernel, usable


class Twin:
    """The reference version (a method of `kerasrs.backend.base.Backend`)."""

    def attention_softmax_grad(self, dp, p, gy, o, scale):
        """Backward of attention's softmax (and score scale), in place on ``dp``.

        With ``o = P v`` the attention output, ``sum_s dP[s] P[s] = gy . o`` per query, so
        ``dS = (dP - gy . o) * P * scale`` needs no reduction over the scores (the softmax
        Jacobian-vector product, e.g. Bridle 1990; also the FlashAttention backward's ``D``).

        Args:
            dp: ``(batch, heads, q_seq, k_seq)`` gradient of the attention weights (including a
                dropout multiplier); overwritten with the gradient of the unscaled scores.
            p: ``(batch, heads, q_seq, k_seq)`` the softmax weights (0 where masked).
            gy: ``(batch, q_seq, heads, value_dim)`` gradient of the attention output.
            o: ``(batch, q_seq, heads, value_dim)`` the attention output.
            scale: float, the factor the scores were multiplied by.

        Returns:
            ``dp``.
        """
        row = (gy * o).sum(axis=-1).transpose(0, 2, 1)[..., None]  # (batch, heads, q_seq, 1)
        dp -= row.astype(dp.dtype, copy=False)
        dp *= p
        dp *= scale
        return dp


@reducing_kernel
def attention_softmax_grad_pairs(dp, p, gy, o, scale, start, stop):
    """`Twin.attention_softmax_grad` for the (batch, head) pairs ``start:stop``:
    ``dp = (dp - gy . o) * p * scale``, ``dp, p (B, N, T, S)``, ``gy, o (B, T, N, H)``."""
    heads, t_len = dp.shape[1], dp.shape[2]
    for bn in range(start, stop):
        b, n = bn // heads, bn % heads
        for t in range(t_len):
            g, v = gy[b, t, n], o[b, t, n]
            row = 0.0
            for h in range(g.size):
                row += g[h] * v[h]
            d, q = dp[b, n, t], p[b, n, t]
            for j in range(d.size):
                d[j] = (d[j] - row) * q[j] * scale


class Cpu:
    """`NumpyBackend`'s compiled version, falling back to `Twin` for mixed dtypes or ranks."""

    def attention_softmax_grad(self, dp, p, gy, o, scale):
        if dp.ndim != 4 or gy.ndim != 4 or not dp.dtype == p.dtype == gy.dtype == o.dtype or \
                not usable(dp):
            return super().attention_softmax_grad(dp, p, gy, o, scale)
        b, n, t, s = dp.shape
        cpu_threads.split(attention_softmax_grad_pairs.compiled(), b * n, dp, p, gy, o,
                          dp.dtype.type(scale), work_per_item=t * (3 * s + 2 * gy.shape[3]))
        return dp
