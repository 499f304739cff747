"""Fused softmax cross-entropy, forward and backward: the NumPy twin and the CUDA launcher of
``softmax_ce.cu`` (no numba kernel: NumPy's row reductions are as fast on the CPU)."""

import numpy as np

from kerasrs.backend.kernels import cuda
from kerasrs.backend.kernels.cuda import check, float_type, fusable, pow2_block

CUDA = cuda.each_float("softmax_ce_sparse_fwd", "softmax_ce_dense_fwd", "softmax_ce_sparse_bwd",
                       "softmax_ce_dense_bwd")


class Twin:
    """The reference versions (methods of `kerasrs.backend.base.Backend`)."""

    def softmax_cross_entropy(self, logits, labels):
        """Row-wise softmax and cross-entropy of ``logits`` (n, c) against ``labels``.

        ``labels`` are int class ids (n,) (sparse) or float targets (n, c) (dense). Each row's
        log-sum-exp is taken around its max ``m``, ``ls = log(sum(exp(x - m)))``, so exp never
        overflows, and the loss is formed from the shifted logits, so huge logits keep their
        precision.

        Returns:
            (loss, probs): loss (n,) ``ls - (x[label] - m)`` or ``sum(t * (ls - (x - m)))``, the
            softmax probabilities (n, c), both in ``logits``' dtype. A sparse id outside
            ``[0, c)`` gives a NaN loss (the op checks ids before calling).
        """
        xp = self.xp
        m = logits.max(axis=1, keepdims=True)
        m = xp.where(xp.isneginf(m), 0, m).astype(logits.dtype, copy=False)  # all -inf rows
        shifted = logits - m  # losses from shifted logits: huge logits keep their precision
        ls = xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))
        probs = xp.exp(shifted - ls)
        if labels.ndim == 1:
            c = logits.shape[1]
            valid = (labels >= 0) & (labels < c)
            picked = xp.take_along_axis(shifted, xp.where(valid, labels, 0)[:, None], axis=1)
            loss = xp.where(valid, ls[:, 0] - picked[:, 0], xp.nan)
        else:
            loss = (labels * (ls - shifted)).sum(axis=1)
        return loss.astype(logits.dtype, copy=False), probs

    def softmax_cross_entropy_grad(self, probs, labels, gloss):
        """Gradient wrt the logits: ``gloss[:, None] * (sum(t) * probs - t)`` (t one-hot if sparse).

        Args: probs (n, c) from `softmax_cross_entropy`; labels as there; gloss (n,).
        Returns: (n, c) in ``probs``' dtype.
        """
        xp = self.xp
        if labels.ndim == 1:
            g = probs.copy()
            g[xp.arange(len(labels)), labels] -= 1
        else:
            g = labels.sum(axis=1, keepdims=True) * probs - labels
        return (gloss[:, None] * g).astype(probs.dtype, copy=False)


# -- CUDA ---------------------------------------------------------------------------------------
def _labels(op, labels, dtype, n, c):
    """Checked ``(labels, sparse)`` for a softmax cross-entropy over (n, c) scores: int32 class
    ids of shape (n,) (sparse) or ``dtype`` one-hot rows of shape (n, c)."""
    sparse = labels.ndim == 1
    if sparse:
        check(op, "labels", labels, dtype="iu", shape=(n,))
        return labels.astype(np.int32, copy=False), sparse
    check(op, "labels", labels, dtype=dtype, shape=(n, c))
    return labels, sparse


class Launch:
    """The launchers of ``softmax_ce.cu`` (methods of `kerasrs.backend.kernels.Launcher`)."""

    def softmax_cross_entropy(self, logits, labels):
        op = "softmax_cross_entropy"
        check(op, "logits", logits, ndim=2)
        t = float_type(op, "logits", logits)
        n, c = logits.shape
        labels, sparse = _labels(op, labels, logits.dtype, n, c)
        loss = self.xp.empty((n,), logits.dtype)
        probs = self.xp.empty_like(logits)
        if c == 0:
            raise ValueError(f"{op}: `logits` needs at least one class. Received {logits.shape}.")
        if n == 0:
            return loss, probs
        kind = "sparse" if sparse else "dense"
        self.launch("softmax_ce", f"softmax_ce_{kind}_fwd<{t}>", (n,),
                    (pow2_block(c, self.max_block),),
                    (logits, labels, loss, probs, np.int32(n), np.int32(c)))
        return loss, probs

    def softmax_cross_entropy_grad(self, probs, labels, gloss):
        op = "softmax_cross_entropy_grad"
        check(op, "probs", probs, ndim=2)
        t = float_type(op, "probs", probs)
        n, c = probs.shape
        check(op, "gloss", gloss, dtype=probs.dtype, shape=(n,))
        labels, sparse = _labels(op, labels, probs.dtype, n, c)
        out = self.xp.empty_like(probs)
        if out.size == 0:
            return out
        kind = "sparse" if sparse else "dense"
        self.launch("softmax_ce", f"softmax_ce_{kind}_bwd<{t}>", (n,),
                    (pow2_block(c, self.max_block),),
                    (probs, labels, gloss, out, np.int32(n), np.int32(c)))
        return out


class Cuda:
    """`CupyBackend`'s versions (``self._c``: a C-contiguous copy where needed), falling back
    to `Twin` for what the kernels do not take."""

    def softmax_cross_entropy(self, logits, labels):
        if not fusable(logits, None if labels.ndim == 1 else labels):
            return super().softmax_cross_entropy(logits, labels)
        return self.kernels.softmax_cross_entropy(self._c(logits), self._c(labels))

    def softmax_cross_entropy_grad(self, probs, labels, gloss):
        if not fusable(probs, gloss, None if labels.ndim == 1 else labels):
            return super().softmax_cross_entropy_grad(probs, labels, gloss)
        return self.kernels.softmax_cross_entropy_grad(self._c(probs), self._c(labels),
                                                       self._c(gloss))
