"""``activation(x @ kernel + bias)`` as one op: a dense projection over the last axes.

`projection` is the fast path of `kerasrs.layers.EinsumDense` (and so of MultiHeadAttention's
four projections): the contracted axes are folded into one 2-D GEMM on ``(rows, features)``,
the bias and activation (linear, relu, sigmoid or tanh) are applied to the GEMM's output in
place by the backend kernel ``bias_act``, and the backward is ``bias_act_grad`` (the
activation's derivative from the output, and the bias gradient as column sums, in one pass),
then one GEMM for the input and one for the kernel. Compared with ``matmul``, ``add`` and an
activation this records one op instead of three (or five, with the reshapes) and saves two
full-size temporaries. `kerasrs.layers.Dense` and `EinsumDense` use it.
"""

import numpy as np

from kerasrs.autodiff import Function
from kerasrs.ops import core


ACTIVATIONS = ("linear", "relu", "sigmoid", "tanh")  # the ones fused into the op


class _Projection(Function):
    """``y = act(x @ kernel (+ bias))``, contracting the last ``n_in`` axes of ``x`` with the
    first ``n_in`` axes of ``kernel``, as one 2-D GEMM; bias (shaped like the new axes) and
    activation in place. Backward: `bias_act_grad`, then one GEMM each for ``x`` and ``kernel``."""

    def __init__(self, n_in, activation="linear"):
        self.n_in, self.activation = n_in, activation

    def forward(self, x, kernel, *bias):
        k_in = int(np.prod(kernel.shape[:self.n_in]))
        self.x_shape, self.k_shape = x.shape, kernel.shape
        self.x2, self.w2 = x.reshape(-1, k_in), kernel.reshape(k_in, -1)
        y = self.x2 @ self.w2
        if bias or self.activation != "linear":
            self.backend.bias_act(y, bias[0].reshape(-1) if bias else None, self.activation,
                                  out=y)
        self.y = y if self.activation != "linear" else None
        return y.reshape(x.shape[:x.ndim - self.n_in] + kernel.shape[self.n_in:])

    def backward(self, gy):
        g2 = gy.reshape(self.x2.shape[0], self.w2.shape[1])  # explicit: rows may be 0
        need_bias = len(self.needs_grad) == 3 and self.needs_grad[2]
        gb = None
        if self.y is not None:  # g2 = gy * act'(y); the bias gradient comes from the same pass
            g2, gb = self.backend.bias_act_grad(self.y, g2, self.activation, need_bias)
        elif need_bias:
            gb = g2.sum(axis=0)
        gx = (g2 @ self.w2.T).reshape(self.x_shape) if self.needs_grad[0] else None
        gk = (self.x2.T @ g2).reshape(self.k_shape) if self.needs_grad[1] else None
        if len(self.needs_grad) == 2:
            return gx, gk
        return gx, gk, None if gb is None else gb.reshape(self.k_shape[self.n_in:])


def projection(x, kernel, bias=None, n_in=1, activation="linear"):
    """``activation(x @ kernel + bias)`` over the last ``n_in`` axes of ``x`` (Dense's and
    EinsumDense's common form).

    Args:
        x: Tensor ``(..., *kernel.shape[:n_in])``.
        kernel: Tensor; its first ``n_in`` axes are contracted, the others are new output axes.
        bias: None or a Tensor shaped ``kernel.shape[n_in:]``.
        n_in: how many axes are contracted.
        activation: "linear" (default), "relu", "sigmoid" or "tanh".

    Returns:
        Tensor ``x.shape[:-n_in] + kernel.shape[n_in:]``.

    Raises:
        ValueError: if the contracted axes or the bias shape do not match, or for another
            activation.
    """
    if activation not in ACTIVATIONS:
        raise ValueError(f"projection: activation must be one of {ACTIVATIONS}. Received: "
                         f"activation={activation!r}")
    xs, ks = np.shape(core.raw(x)), np.shape(core.raw(kernel))
    if tuple(xs[len(xs) - n_in:]) != tuple(ks[:n_in]):
        raise ValueError(f"projection: the last {n_in} axes of x must match the first {n_in} of "
                         f"the kernel. Received: x shape {xs}, kernel shape {ks}")
    if bias is not None and tuple(np.shape(core.raw(bias))) != tuple(ks[n_in:]):
        raise ValueError(f"projection: the bias must have shape {ks[n_in:]}. Received: "
                         f"bias shape {np.shape(core.raw(bias))}")
    return _Projection(n_in, activation).apply(x, kernel, *(() if bias is None else (bias,)))


__all__ = ["projection"]
