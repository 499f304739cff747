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

import math

import numpy as np

from kerasrs.autodiff import Function, Tensor
from kerasrs.ops import core


ACTIVATIONS = ("linear", "relu", "sigmoid", "tanh")  # the ones fused into the op


class _Projection(Function):
    """``y = act(x @ kernel (+ bias))``, contracting the last ``n_in`` axes of ``x`` with the
    first ``n_in`` axes of ``kernel``, as one 2-D GEMM; bias (shaped like the new axes) and
    activation in place. Backward: `bias_act_grad`, then one GEMM each for ``x`` and ``kernel``."""
    half_in_float32 = "cpu"
    writes_out = True
    writes_grad_out = (0, 1)  # the input's and the kernel's (not the bias's, a column sum)

    def __init__(self, n_in, activation="linear"):
        self.n_in, self.activation = n_in, activation

    def forward(self, x, kernel, *bias):
        x, kernel = core.promote(x, kernel)  # integer inputs take the kernel's float dtype
        k_in = math.prod(kernel.shape[:self.n_in])
        self.x_shape, self.k_shape = x.shape, kernel.shape
        self.x2, self.w2 = x.reshape(-1, k_in), kernel.reshape(k_in, -1)
        out = self.out
        if out is not None and out.dtype == self.x2.dtype == self.w2.dtype:
            y = self.xp.matmul(self.x2, self.w2, out=out.reshape(self.x2.shape[0], -1))
        else:
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
        elif need_bias:  # column sums as a GEMV: 2-6x NumPy's axis-0 reduction here
            gb = self.xp.ones(g2.shape[0], g2.dtype) @ g2
        out_x, out_k = (self.grad_out or (None, None))[:2]
        gx = _matmul(self.xp, g2, self.w2.T, out_x).reshape(self.x_shape) \
            if self.needs_grad[0] else None
        gk = None
        if self.needs_grad[1]:  # a sum over all rows: OpenBLAS splits it over its threads
            # better with the wider matrix first (2 threads, 3584 rows: 64x192 0.42 -> 0.34 ms)
            x2 = self.x2
            gk = (g2.T @ x2).T if g2.shape[1] > x2.shape[1] else \
                _matmul(self.xp, x2.T, g2, out_k)
            gk = gk.reshape(self.k_shape)
        if len(self.needs_grad) == 2:
            return gx, gk
        return gx, gk, None if gb is None else gb.reshape(self.k_shape[self.n_in:])


def _matmul(xp, a, b, out):
    """``a @ b`` (2-D), into ``out`` (contiguous) when it is given with the result's element
    count and dtype (`Function.writes_out`)."""
    if out is not None and out.dtype == a.dtype == b.dtype and \
            out.size == a.shape[0] * b.shape[1]:
        return xp.matmul(a, b, out=out.reshape(a.shape[0], b.shape[1]))
    return a @ b


class _PackedProjection(_Projection):
    """`_Projection` with the kernel (and bias) given as ``n`` parts side by side: inputs are
    ``x, kernel_1..kernel_n[, bias_1..bias_n]``, each kernel ``(d, ...)`` flattened to
    ``(d, -1)``. The parts are concatenated inside the op (small weight copies), so the tape
    records one op instead of the reshapes and concatenations; the gradients are split back."""

    def __init__(self, n):
        super().__init__(1)
        self.n = n

    def forward(self, x, *params):
        xp, n, d = self.xp, self.n, x.shape[-1]
        kernels, biases = params[:n], params[n:]
        self.k_shapes = [k.shape for k in kernels]
        self.widths = [k.size // d for k in kernels]
        kernel = xp.concatenate([k.reshape(d, -1) for k in kernels], axis=1)
        bias = (xp.concatenate([b.reshape(-1) for b in biases]),) if biases else ()
        return super().forward(x, kernel, *bias)

    writes_grad_out = ()  # the packed kernel's gradient is split into parts (fresh arrays)

    def backward(self, gy):
        needs, n = self.needs_grad, self.n
        has_bias = len(needs) > n + 1
        self.needs_grad = [needs[0], any(needs[1:n + 1])] + ([any(needs[n + 1:])] if has_bias
                                                             else [])
        gx, gk, *gb = super().backward(gy)
        self.needs_grad = needs
        cuts = [int(c) for c in np.cumsum(self.widths)[:-1]]
        kernels = [None] * n if gk is None else [
            g.reshape(shape) for g, shape in zip(self.xp.split(gk, cuts, axis=1), self.k_shapes)]
        if not has_bias:
            return (gx, *kernels)
        biases = [None] * n if gb[0] is None else self.xp.split(gb[0], cuts)
        return (gx, *kernels, *biases)


def packed_projection(x, kernels, biases=None):
    """``x @ concatenate(kernels) + concatenate(biases)`` over the last axis of ``x``, as one
    op: several projections of the same input (self-attention's query, key and value) in one
    GEMM, with the weights kept separate.

    Args:
        x: Tensor ``(..., d)``.
        kernels: list of Tensors, each ``(d, ...)``.
        biases: None or a list of Tensors, one per kernel, each with ``kernel.size / d``
            elements.

    Returns:
        Tensor ``x.shape[:-1] + (sum of the kernels' widths,)``, the parts side by side.

    Raises:
        ValueError: if a kernel's first axis is not ``d`` or a bias has the wrong size.
    """
    d = _shape(x)[-1]
    kernels = list(kernels)
    widths = []
    for k in kernels:
        ks = _shape(k)
        if not ks or ks[0] != d:
            raise ValueError(f"packed_projection: every kernel must start with the input's last "
                             f"axis {d}. Received: x shape {_shape(x)}, kernel shape "
                             f"{ks}")
        widths.append(math.prod(ks[1:]))
    biases = list(biases) if biases is not None else []
    if biases and [math.prod(_shape(b)) for b in biases] != widths:
        raise ValueError(f"packed_projection: each bias must have its kernel's width {widths}. "
                         f"Received: bias shapes {[_shape(b) for b in biases]}")
    return _PackedProjection(len(kernels)).apply(x, *kernels, *biases)


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
    xs, ks = _shape(x), _shape(kernel)
    if tuple(xs[len(xs) - n_in:]) != tuple(ks[:n_in]):
        raise ValueError(f"projection: the last {n_in} axes of x must match the first {n_in} of "
                         f"the kernel. Received: x shape {xs}, kernel shape {ks}")
    if bias is not None and tuple(_shape(bias)) != tuple(ks[n_in:]):
        raise ValueError(f"projection: the bias must have shape {ks[n_in:]}. Received: "
                         f"bias shape {np.shape(core.raw(bias))}")
    return _Projection(n_in, activation).apply(x, kernel, *(() if bias is None else (bias,)))


def _shape(x):
    return x.data.shape if isinstance(x, Tensor) else np.shape(core.raw(x))
