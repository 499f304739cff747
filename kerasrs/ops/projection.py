"""``x @ kernel + bias`` as one op: a dense projection over the last axes, bias added in place.

`projection` is the fast path of `kerasrs.layers.EinsumDense` (and so of MultiHeadAttention's
four projections): the contracted axes are folded into one 2-D GEMM on ``(rows, features)``,
the bias is added to the GEMM's output in place, and the backward is one GEMM for the input,
one for the kernel and one column sum for the bias. Compared with ``matmul`` followed by
``add`` this records one op instead of two (or four, with the reshapes) and saves a full-size
temporary. Any layer computing ``x @ kernel + bias`` (Dense too) can use it.
"""

import numpy as np

from kerasrs.autodiff import Function
from kerasrs.ops import core


class _Projection(Function):
    """``y = x @ kernel (+ bias)``, contracting the last ``n_in`` axes of ``x`` with the first
    ``n_in`` axes of ``kernel``, as one 2-D GEMM; the bias (shaped like the new axes) is added
    in place. Backward: one GEMM each for ``x`` and ``kernel``, one column sum for ``bias``."""
    half_in_float32 = "cpu"

    def __init__(self, n_in):
        self.n_in = n_in

    def forward(self, x, kernel, *bias):
        k_in = int(np.prod(kernel.shape[:self.n_in]))
        self.x_shape, self.k_shape = x.shape, kernel.shape
        self.x2, self.w2 = x.reshape(-1, k_in), kernel.reshape(k_in, -1)
        y = self.x2 @ self.w2
        if bias:
            y += bias[0].reshape(-1)
        return y.reshape(x.shape[:x.ndim - self.n_in] + kernel.shape[self.n_in:])

    def backward(self, gy):
        g2 = gy.reshape(self.x2.shape[0], -1)
        gx = (g2 @ self.w2.T).reshape(self.x_shape) if self.needs_grad[0] else None
        gk = (self.x2.T @ g2).reshape(self.k_shape) if self.needs_grad[1] else None
        if len(self.needs_grad) == 2:
            return gx, gk
        gb = g2.sum(axis=0).reshape(self.k_shape[self.n_in:]) if self.needs_grad[2] else None
        return gx, gk, gb


def projection(x, kernel, bias=None, n_in=1):
    """``x @ kernel + bias`` over the last ``n_in`` axes of ``x`` (EinsumDense's common form).

    Args:
        x: Tensor ``(..., *kernel.shape[:n_in])``.
        kernel: Tensor; its first ``n_in`` axes are contracted, the others are new output axes.
        bias: None or a Tensor shaped ``kernel.shape[n_in:]``.
        n_in: how many axes are contracted.

    Returns:
        Tensor ``x.shape[:-n_in] + kernel.shape[n_in:]``.

    Raises:
        ValueError: if the contracted axes or the bias shape do not match.
    """
    xs, ks = np.shape(core.raw(x)), np.shape(core.raw(kernel))
    if tuple(xs[len(xs) - n_in:]) != tuple(ks[:n_in]):
        raise ValueError(f"projection: the last {n_in} axes of x must match the first {n_in} of "
                         f"the kernel. Received: x shape {xs}, kernel shape {ks}")
    if bias is not None and tuple(np.shape(core.raw(bias))) != tuple(ks[n_in:]):
        raise ValueError(f"projection: the bias must have shape {ks[n_in:]}. Received: "
                         f"bias shape {np.shape(core.raw(bias))}")
    return _Projection(n_in).apply(x, kernel, *(() if bias is None else (bias,)))


__all__ = ["projection"]
