"""Bias + activation, the epilogue of a Dense/conv GEMM, and its backward: the NumPy twin, the
numba kernels and the CUDA launcher of ``bias_act.cu``."""

import numpy as np

from kerasrs.backend import cpu_threads, memory
from kerasrs.backend.kernels import activations, cuda
from kerasrs.backend.kernels.activations import (BIAS_ACT, CODES, LINEAR, RELU, SIGMOID, TANH,
                                                 act, act_grad)
from kerasrs.backend.kernels.cpu import into, kernel, same_array, usable
from kerasrs.backend.kernels.cuda import check, float_type, fusable

CUDA = cuda.each_float("bias_act", "bias_act_grad")


class Twin:
    """The reference versions (methods of `kerasrs.backend.base.Backend`). Arrays may be
    non-contiguous; outputs are new arrays unless an ``out`` is passed."""

    def bias_act(self, x, bias, activation="linear", out=None):
        """``activation(x + bias)`` over rows: the epilogue of a Dense/conv GEMM.

        Args:
            x: ``(n, c)`` float array (channels last).
            bias: ``(c,)`` array or None (no bias).
            activation: "linear", "relu", "sigmoid" or "tanh".
            out: optional ``(n, c)`` array for the result; may be ``x`` itself (in place).

        Returns:
            ``y``, shape ``(n, c)``, dtype of ``x``.

        Raises:
            ValueError: for another activation name.
        """
        activations.code("bias_act", activation, BIAS_ACT)
        y = x if bias is None else x + bias
        if activation != "linear":
            y = activations.activate(self, y, activation)
        y = y.astype(x.dtype, copy=False)
        if out is None:
            return y.copy() if y is x else y
        out[...] = y
        return out

    def bias_act_grad(self, y, gy, activation="linear", need_bias=True, out=None):
        """Backward of `bias_act`, with the activation's derivative taken from its output ``y``.

        Args:
            y: ``(n, c)`` output of `bias_act`.
            gy: ``(n, c)`` gradient of ``y``.
            activation: as in `bias_act` (relu'(0) = 0; sigmoid' = y (1 - y); tanh' = 1 - y**2).
            need_bias: whether to return the bias gradient (the column sums of ``gx``).
            out: optional ``(n, c)`` array for ``gx``; may be ``gy`` itself.

        Returns:
            ``(gx, gbias)``: ``gx (n, c)`` the gradient of the pre-activation ``x + bias``,
            ``gbias (c,)`` (None when not ``need_bias``).
        """
        activations.code("bias_act_grad", activation, BIAS_ACT)
        if activation == "linear":
            gx = gy.copy()
        elif activation == "relu":
            gx = gy * (y > 0)
        else:
            gx = gy * activations.derivative(self, y, activation)
        gx = gx.astype(gy.dtype, copy=False)
        if out is not None:
            out[...] = gx
            gx = out
        gbias = gx.sum(axis=0) if need_bias else None
        return gx, gbias


# -- numba ------------------------------------------------------------------------------------
# A loop that branches on a runtime activation code is vectorized only for the cheapest codes;
# each kernel calls its row loop with a constant code, which LLVM inlines and vectorizes
# (3584 x 128 float32: sigmoid 3.0 -> 0.32 ms, tanh 3.3 -> 0.42 ms).
@kernel
def bias_act_rows(x, bias, code, out, start, stop):
    """``out[i] = act(x[i] + bias)`` for rows ``start:stop``."""
    if code == RELU:
        _bias_act_rows(x, bias, RELU, out, start, stop)
    elif code == SIGMOID:
        _bias_act_rows(x, bias, SIGMOID, out, start, stop)
    elif code == TANH:
        _bias_act_rows(x, bias, TANH, out, start, stop)
    else:
        _bias_act_rows(x, bias, LINEAR, out, start, stop)


@kernel
def _bias_act_rows(x, bias, code, out, start, stop):
    c = x.shape[1]
    for i in range(start, stop):
        for j in range(c):
            out[i, j] = act(x[i, j] + bias[j], code)


@kernel
def bias_act_inplace(y, bias, code, start, stop):
    """`bias_act_rows` with ``out`` = ``x``: one array, so LLVM vectorizes without an overlap
    check (which fails for two arguments on the same memory, leaving a scalar loop 4x slower)."""
    if code == RELU:
        _bias_act_inplace_rows(y, bias, RELU, start, stop)
    elif code == SIGMOID:
        _bias_act_inplace_rows(y, bias, SIGMOID, start, stop)
    elif code == TANH:
        _bias_act_inplace_rows(y, bias, TANH, start, stop)
    else:
        _bias_act_inplace_rows(y, bias, LINEAR, start, stop)


@kernel
def _bias_act_inplace_rows(y, bias, code, start, stop):
    c = y.shape[1]
    for i in range(start, stop):
        for j in range(c):
            y[i, j] = act(y[i, j] + bias[j], code)


@kernel
def bias_act_grad_rows(y, gy, code, out, acc, start, stop):
    """``out = gy * act'(y)`` for rows ``start:stop``; ``acc`` += their column sums."""
    if code == RELU:
        _bias_act_grad_rows(y, gy, RELU, out, acc, start, stop)
    elif code == SIGMOID:
        _bias_act_grad_rows(y, gy, SIGMOID, out, acc, start, stop)
    elif code == TANH:
        _bias_act_grad_rows(y, gy, TANH, out, acc, start, stop)
    else:
        _bias_act_grad_rows(y, gy, LINEAR, out, acc, start, stop)


@kernel
def _bias_act_grad_rows(y, gy, code, out, acc, start, stop):
    c = y.shape[1]
    for i in range(start, stop):
        for j in range(c):
            g = gy[i, j] * act_grad(y[i, j], code)
            out[i, j] = g
            acc[j] += g


COST = {"linear": 1, "relu": 1, "sigmoid": 8, "tanh": 8}  # work per element, in copies


class Cpu:
    """`NumpyBackend`'s compiled versions, falling back to `Twin` for what they do not take."""

    def bias_act(self, x, bias, activation="linear", out=None):
        if x.ndim != 2 or activation not in BIAS_ACT or not usable(x):
            return super().bias_act(x, bias, activation, out)
        x = np.ascontiguousarray(x)
        bias = np.zeros(x.shape[1], x.dtype) if bias is None else \
            np.ascontiguousarray(bias, dtype=x.dtype)
        work = x.shape[1] * COST[activation]
        if out is not None and (out is x or same_array(out, x)):
            cpu_threads.split(bias_act_inplace.compiled(), x.shape[0], out, bias,
                              CODES[activation], work_per_item=work)
            return out
        if out is not None and np.may_share_memory(out, x):
            x = x.copy()
        target = out if out is not None and out.flags.c_contiguous else np.empty_like(x)
        cpu_threads.split(bias_act_rows.compiled(), x.shape[0], x, bias, CODES[activation],
                          target, work_per_item=work)
        return into(out, target)

    def bias_act_grad(self, y, gy, activation="linear", need_bias=True, out=None):
        if gy.ndim != 2 or activation not in BIAS_ACT or y.dtype != gy.dtype or not usable(gy):
            return super().bias_act_grad(y, gy, activation, need_bias, out)
        y, gy = np.ascontiguousarray(y), np.ascontiguousarray(gy)
        target = out if out is not None and out.flags.c_contiguous else \
            memory.empty(gy.shape, gy.dtype)
        parts = cpu_threads.bounds(gy.shape[0], gy.shape[1])
        partial = np.zeros((len(parts), gy.shape[1]))
        rows = bias_act_grad_rows.compiled()
        cpu_threads.run([(rows, (y, gy, CODES[activation], target, partial[i], *part))
                         for i, part in enumerate(parts)])
        gbias = partial.sum(axis=0).astype(gy.dtype) if need_bias else None
        return into(out, target), gbias


# -- CUDA ---------------------------------------------------------------------------------------
class Launch:
    """The launchers of ``bias_act.cu`` (methods of `kerasrs.backend.kernels.Launcher`)."""

    def bias_act(self, x, bias, activation="linear", out=None):
        op = "bias_act"
        check(op, "x", x, ndim=2)
        t = float_type(op, "x", x)
        _n, c = x.shape
        code = activations.code(op, activation, BIAS_ACT)
        if bias is not None:
            check(op, "bias", bias, dtype=x.dtype, shape=(c,))
        y = self.xp.empty_like(x) if out is None else out
        check(op, "out", y, dtype=x.dtype, shape=x.shape)
        if x.size:
            grid, block = self._grid(x.size)
            self.launch("bias_act", f"bias_act<{t}>", grid, block,
                        (x, x if bias is None else bias, y, np.int64(x.size), np.int32(c),
                         np.int32(bias is not None), np.int32(code)))
        return y

    def bias_act_grad(self, y, gy, activation="linear", need_bias=True, out=None):
        op = "bias_act_grad"
        check(op, "y", y, ndim=2)
        t = float_type(op, "y", y)
        n, c = y.shape
        check(op, "gy", gy, dtype=y.dtype, shape=y.shape)
        code = activations.code(op, activation, BIAS_ACT)
        gx = self.xp.empty_like(gy) if out is None else out
        check(op, "out", gx, dtype=y.dtype, shape=y.shape)
        gbias = self.xp.zeros((c,), y.dtype) if need_bias else None
        if y.size:
            grid, block = self._column_grid(n, c)
            self.launch("bias_act", f"bias_act_grad<{t}>", grid, block,
                        (y, gy, gx, gx if gbias is None else gbias, np.int32(n), np.int32(c),
                         np.int32(code), np.int32(need_bias)))
        return gx, gbias


class Cuda:
    """`CupyBackend`'s versions, falling back to `Twin` for what the kernels do not take; an
    ``out`` that is not C-contiguous is filled by a copy."""

    def bias_act(self, x, bias, activation="linear", out=None):
        if not fusable(x, bias) or activation not in BIAS_ACT:
            return super().bias_act(x, bias, activation, out)
        direct = out if out is not None and out.flags.c_contiguous else None
        y = self.kernels.bias_act(self._c(x), self._c(bias), activation, out=direct)
        return into(out, y)

    def bias_act_grad(self, y, gy, activation="linear", need_bias=True, out=None):
        if not fusable(y, gy) or activation not in BIAS_ACT:
            return super().bias_act_grad(y, gy, activation, need_bias, out)
        direct = out if out is not None and out.flags.c_contiguous else None
        gx, gbias = self.kernels.bias_act_grad(self._c(y), self._c(gy), activation, need_bias,
                                               out=direct)
        return into(out, gx), gbias
