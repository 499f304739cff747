"""The NumPy (CPU) backend. The plain compositions in `base.Backend` are the reference; this
class overrides the named kernels that are on training's hot path with versions that allocate
nothing per call (reused scratch buffers, ``out=`` everywhere)."""

import math
import threading
import warnings

import numpy as np

from kerasrs.backend import base, cpu_threads, memory


class NumpyBackend(base.Backend):
    name = "numpy"
    xp = np
    array_type = np.ndarray

    def __init__(self):
        super().__init__()
        self._local = threading.local()  # scratch buffers per thread: threads may train at once

    def to_numpy(self, x):
        return np.asarray(x)

    def empty(self, shape, dtype="float32"):
        return memory.empty(shape, dtype)

    def seed(self, seed):
        self.rng = np.random.default_rng(seed)

    def scratch(self, shape, dtype, slot=0):
        """A reusable uninitialized array of ``shape`` and ``dtype``: one flat buffer per
        ``(dtype, slot)``, grown to the largest request and viewed in the asked shape. The
        contents are overwritten by the next request for the same slot in the same thread.
        Reusing memory on hot paths saves faulting in fresh pages every step."""
        size = math.prod(shape)
        key = (np.dtype(dtype).str, slot)
        buffers = self._local.__dict__.setdefault("buffers", {})
        buf = buffers.get(key)
        if buf is None or buf.size < size:
            buf = buffers[key] = np.empty(max(size, 1), dtype)
        return buf[:size].reshape(shape)

    # -- compiled kernels (numba), each falling back to the NumPy twin in base.Backend ------------
    def dropout_mask(self, shape, rate, seed, offset=0, dtype="float32"):
        dtype = np.dtype(dtype)
        kernel = _philox()
        if kernel is None or dtype.type not in (np.float32, np.float64) or not 0 <= rate < 1:
            return super().dropout_mask(shape, rate, seed, offset, dtype)
        out = memory.empty(tuple(shape), dtype)
        words = [np.uint64(w) for w in base._split64(seed) + base._split64(offset)]
        cpu_threads.split(kernel.dropout_mask, (out.size + 3) // 4, out.reshape(-1), *words,
                          np.uint64(base.dropout_threshold(rate)), dtype.type(1 / (1 - rate)),
                          work_per_item=16)  # a Philox block costs ~16 copies of an element
        return out

    def relu(self, x):
        k = _compiled_for(x)
        if k is None or not x.flags.c_contiguous:
            return super().relu(x)
        y = memory.empty(x.shape, x.dtype)
        cpu_threads.split(k.relu, x.size, x.reshape(-1), y.reshape(-1))
        return y

    def relu_grad(self, y, gy):
        k = _compiled_for(gy)
        if k is None or y.shape != gy.shape or y.dtype != gy.dtype:
            return super().relu_grad(y, gy)
        shape = gy.shape  # (np.ascontiguousarray turns a 0-d array into 1-d)
        y, gy = np.ascontiguousarray(y), np.ascontiguousarray(gy)
        gx = memory.empty(shape, gy.dtype)
        cpu_threads.split(k.relu_grad, gx.size, y.reshape(-1), gy.reshape(-1), gx.reshape(-1))
        return gx

    def bias_act(self, x, bias, activation="linear", out=None):
        k = _compiled_for(x)
        if k is None or x.ndim != 2 or activation not in _CODES:
            return super().bias_act(x, bias, activation, out)
        x = np.ascontiguousarray(x)
        bias = np.zeros(x.shape[1], x.dtype) if bias is None else \
            np.ascontiguousarray(bias, dtype=x.dtype)
        work = x.shape[1] * _COST[activation]
        if out is not None and (out is x or _same_array(out, x)):
            cpu_threads.split(k.bias_act_inplace, x.shape[0], out, bias, _CODES[activation],
                              work_per_item=work)
            return out
        if out is not None and np.may_share_memory(out, x):
            x = x.copy()
        target = out if out is not None and out.flags.c_contiguous else np.empty_like(x)
        cpu_threads.split(k.bias_act, x.shape[0], x, bias, _CODES[activation], target,
                          work_per_item=work)
        return _into(out, target)

    def bias_act_grad(self, y, gy, activation="linear", need_bias=True, out=None):
        k = _compiled_for(gy)
        if k is None or gy.ndim != 2 or activation not in _CODES or y.dtype != gy.dtype:
            return super().bias_act_grad(y, gy, activation, need_bias, out)
        y, gy = np.ascontiguousarray(y), np.ascontiguousarray(gy)
        target = out if out is not None and out.flags.c_contiguous else \
            memory.empty(gy.shape, gy.dtype)
        parts = cpu_threads.bounds(gy.shape[0], gy.shape[1])
        partial = np.zeros((len(parts), gy.shape[1]))
        cpu_threads.run([(k.bias_act_grad, (y, gy, _CODES[activation], target, partial[i], *part))
                         for i, part in enumerate(parts)])
        gbias = partial.sum(axis=0).astype(gy.dtype) if need_bias else None
        return _into(out, target), gbias

    def adam_update(self, params, grads, ms, vs, lr, beta_1, beta_2, epsilon, step,
                    weight_decay=0.0, v_hats=None):
        alpha = lr * math.sqrt(1.0 - beta_2 ** step) / (1.0 - beta_1 ** step)
        items = []  # (kernel, args, size): one split over all variables
        for i, (w, g, m, v) in enumerate(zip(params, grads, ms, vs)):
            v_hat = v_hats[i] if v_hats is not None else v
            k = _compiled_for(w)  # per variable: float16/bfloat16 ones take the NumPy rule
            if k is None or not _flat_ok(w, m, v, v_hat):
                super().adam_update([w], [g], [m], [v], lr, beta_1, beta_2, epsilon, step,
                                    weight_decay, None if v_hats is None else [v_hat])
                continue
            f = w.dtype.type  # scalars in the arrays' dtype: float32 stays float32 (and SIMD)
            g = np.ascontiguousarray(g, dtype=w.dtype)
            flat = [a.reshape(-1) for a in (w, g, m, v, v_hat)]
            items.append((k.adam, (*flat, v_hats is not None, f(alpha), f(1.0 - beta_1),
                                   f(1.0 - beta_2), f(epsilon), f(weight_decay * lr)), w.size))
        cpu_threads.split_many(items, work_per_item=4)

    def sgd_update(self, params, grads, momentums, lr, momentum=0.0, nesterov=False,
                   weight_decay=0.0):
        items = []  # (kernel, args, size): one split over all variables
        for i, (w, g) in enumerate(zip(params, grads)):
            v = momentums[i] if momentum else w  # (w: unused placeholder of the right type)
            k = _compiled_for(w)  # per variable: float16/bfloat16 ones take the NumPy rule
            if k is None or not _flat_ok(w, v):
                super().sgd_update([w], [g], None if not momentum else [v], lr, momentum,
                                   nesterov, weight_decay)
                continue
            f = w.dtype.type
            g = np.ascontiguousarray(g, dtype=w.dtype)
            items.append((k.sgd, (w.reshape(-1), g.reshape(-1), v.reshape(-1), f(lr),
                                  f(momentum), bool(nesterov), f(weight_decay * lr)), w.size))
        cpu_threads.split_many(items, work_per_item=2)

    def layer_norm(self, x, gamma, beta, epsilon):
        k = _compiled_for(x)
        if k is None or x.ndim != 2:
            return super().layer_norm(x, gamma, beta, epsilon)
        x = np.ascontiguousarray(x)
        d = x.shape[1]
        gamma = np.ones(d, x.dtype) if gamma is None else np.ascontiguousarray(gamma, x.dtype)
        beta = np.zeros(d, x.dtype) if beta is None else np.ascontiguousarray(beta, x.dtype)
        stat = np.float64 if x.dtype == np.float64 else np.float32
        y = np.empty_like(x)
        mean, rstd = np.empty(x.shape[0], stat), np.empty(x.shape[0], stat)
        cpu_threads.split(k.layer_norm, x.shape[0], x, gamma, beta, float(epsilon), y, mean, rstd,
                          work_per_item=4 * d)
        return y, mean, rstd

    def layer_norm_grad(self, gy, x, gamma, mean, rstd):
        k = _compiled_for(gy)
        if k is None or gy.ndim != 2 or x.dtype != gy.dtype:
            return super().layer_norm_grad(gy, x, gamma, mean, rstd)
        gy, x = np.ascontiguousarray(gy), np.ascontiguousarray(x)
        d = x.shape[1]
        gamma = np.ones(d, x.dtype) if gamma is None else np.ascontiguousarray(gamma, x.dtype)
        gx = np.empty_like(gy)
        mean, rstd = np.ascontiguousarray(mean), np.ascontiguousarray(rstd)
        parts = cpu_threads.bounds(gy.shape[0], 6 * d)
        partial = np.zeros((len(parts), 2, d))
        cpu_threads.run([(k.layer_norm_grad, (gy, x, gamma, mean, rstd, gx, partial[i], *part))
                         for i, part in enumerate(parts)])
        sums = partial.sum(axis=0).astype(gy.dtype)
        return gx, sums[0], sums[1]

    def attention_softmax_grad(self, dp, p, gy, o, scale):
        k = _compiled_for(dp)
        if k is None or dp.ndim != 4 or gy.ndim != 4 or \
                not dp.dtype == p.dtype == gy.dtype == o.dtype:
            return super().attention_softmax_grad(dp, p, gy, o, scale)
        b, n, t, s = dp.shape
        cpu_threads.split(k.attention_softmax_grad, b * n, dp, p, gy, o, dp.dtype.type(scale),
                          work_per_item=t * (3 * s + 2 * gy.shape[3]))
        return dp

    def conv2d(self, x, kernel, bias, activation, window, strides, dilation, padding):
        # In blocks of samples whose column matrix fits in the cache (_CONV_CHUNK_BYTES): the
        # columns are written, multiplied and the bias and activation applied while they are
        # still in L2, instead of an 85 MB column matrix going to DRAM and back.
        k = _compiled_for(x)
        if k is None or activation not in _CODES or x.dtype != kernel.dtype:
            return super().conv2d(x, kernel, bias, activation, window, strides, dilation,
                                  padding)
        x, kernel = np.ascontiguousarray(x), np.ascontiguousarray(kernel)
        outs, chunks, cols = self._conv_blocks(x, window, strides, dilation, padding,
                                               kernel.shape[0])
        rows = outs[0] * outs[1]
        y = memory.empty((x.shape[0] * rows, kernel.shape[1]), x.dtype)
        fused = bias is not None or activation != "linear"
        bias = np.zeros(kernel.shape[1], x.dtype) if bias is None else \
            np.ascontiguousarray(bias, x.dtype)
        for s0, s1 in chunks:
            c, yc = cols[:(s1 - s0) * rows], y[s0 * rows:s1 * rows]
            k.im2col(x[s0:s1], *window, *strides, *dilation, padding[0][0], padding[1][0],
                     *outs, c, 0, (s1 - s0) * outs[0])
            np.matmul(c, kernel, out=yc)
            if fused:
                k.bias_act_inplace(yc, bias, _CODES[activation], 0, yc.shape[0])
        return y

    def conv2d_grad(self, x, kernel, y, gy, activation, window, strides, dilation, padding,
                    need_x=True, need_kernel=True, need_bias=True):
        # The same blocks as `conv2d`: per block, the activation's derivative, the columns
        # (written again: cheaper than keeping 85 MB), the kernel gradient's share, and the
        # input gradient as one GEMM into the column buffer and the col2im kernel.
        k = _compiled_for(gy)
        if k is None or activation not in _CODES or not x.dtype == kernel.dtype == gy.dtype:
            return super().conv2d_grad(x, kernel, y, gy, activation, window, strides, dilation,
                                       padding, need_x, need_kernel, need_bias)
        x, kernel = np.ascontiguousarray(x), np.ascontiguousarray(kernel)
        gy = np.ascontiguousarray(gy)
        outs, chunks, cols = self._conv_blocks(x, window, strides, dilation, padding,
                                               kernel.shape[0])
        rows, filters = outs[0] * outs[1], kernel.shape[1]
        gk = np.zeros(kernel.shape, x.dtype) if need_kernel else None
        part = np.empty(kernel.shape, x.dtype)
        gb = np.zeros(filters)  # float64 sums
        gx = memory.empty(x.shape, x.dtype) if need_x else None
        g_buf = self.scratch((cols.shape[0], filters), x.dtype, slot="conv2d_grad")
        geometry = (*window, *strides, *dilation, padding[0][0], padding[1][0], *outs)
        for s0, s1 in chunks:
            m = (s1 - s0) * rows
            g, c = gy[s0 * rows:s1 * rows], cols[:m]
            if activation != "linear":
                k.bias_act_grad(y[s0 * rows:s1 * rows], g, _CODES[activation], g_buf[:m], gb,
                                0, m)
                g = g_buf[:m]
            elif need_bias:
                gb += g.sum(axis=0)
            if need_kernel:
                k.im2col(x[s0:s1], *geometry, c, 0, (s1 - s0) * outs[0])
                gk += np.matmul(c.T, g, out=part)
            if need_x:
                np.matmul(g, kernel.T, out=c)
                k.col2im(c, *geometry, gx[s0:s1], 0, s1 - s0)
        return gx, gk, gb.astype(x.dtype) if need_bias else None

    def _conv_blocks(self, x, window, strides, dilation, padding, k_rows):
        """Output size, sample blocks and the column buffer (this thread's scratch) of a
        blocked `conv2d`."""
        outs = base._window_out([n + b + a for n, (b, a) in zip(x.shape[1:3], padding)],
                                window, strides, dilation)
        per = max(1, _CONV_CHUNK_BYTES // max(outs[0] * outs[1] * k_rows * x.itemsize, 1))
        chunks = [(s, min(s + per, x.shape[0])) for s in range(0, x.shape[0], per)]
        cols = self.scratch((min(per, x.shape[0]) * outs[0] * outs[1], k_rows), x.dtype,
                            slot="conv2d")
        return outs, chunks, cols

    def max_pool(self, x, pool_size, strides, padding):
        k = _compiled_for(x)
        if k is None or x.ndim != 4:
            return super().max_pool(x, pool_size, strides, padding)
        x = np.ascontiguousarray(x)
        outs = base._window_out([n + b + a for n, (b, a) in zip(x.shape[1:3], padding)],
                                pool_size, strides, (1, 1))
        y = memory.empty((x.shape[0], *outs, x.shape[3]), x.dtype)
        argmax = memory.empty(y.shape, np.int32)
        cpu_threads.split(k.max_pool2d, x.shape[0] * outs[0], x, *pool_size, *strides,
                          padding[0][0], padding[1][0], y, argmax,
                          work_per_item=outs[1] * x.shape[3] * pool_size[0] * pool_size[1])
        return y, argmax

    def max_pool_grad(self, gy, argmax, x_shape):
        k = _compiled_for(gy)
        if k is None:
            return super().max_pool_grad(gy, argmax, x_shape)
        n, per_out = x_shape[0], math.prod(gy.shape[1:])
        gx = memory.empty((n, math.prod(x_shape[1:])), gy.dtype)  # zeroed by the kernel
        cpu_threads.split(k.max_pool_grad, n, np.ascontiguousarray(gy).reshape(n, per_out),
                          np.ascontiguousarray(argmax).reshape(n, per_out), gx,
                          work_per_item=gx.shape[1])
        return gx.reshape(x_shape)

    def im2col(self, x, window, strides, dilation, padding, out=None):
        k = _compiled_for(x)
        if k is None or x.ndim != 4:
            return super().im2col(x, window, strides, dilation, padding, out)
        x = np.ascontiguousarray(x)
        outs = base._window_out([n + b + a for n, (b, a) in zip(x.shape[1:3], padding)],
                                window, strides, dilation)
        shape = (x.shape[0] * outs[0] * outs[1], window[0] * window[1] * x.shape[3])
        target = out if out is not None and out.flags.c_contiguous else memory.empty(shape, x.dtype)
        cpu_threads.split(k.im2col, x.shape[0] * outs[0], x, *window, *strides, *dilation,
                          padding[0][0], padding[1][0], *outs, target,
                          work_per_item=outs[1] * shape[1])
        return _into(out, target)

    def col2im(self, cols, x_shape, window, strides, dilation, padding):
        k = _compiled_for(cols)
        if k is None or len(x_shape) != 4:
            return super().col2im(cols, x_shape, window, strides, dilation, padding)
        outs = base._window_out([n + b + a for n, (b, a) in zip(x_shape[1:3], padding)],
                                window, strides, dilation)
        gx = memory.empty(x_shape, cols.dtype)  # zeroed by the kernel
        cpu_threads.split(k.col2im, x_shape[0], np.ascontiguousarray(cols), *window, *strides,
                          *dilation, padding[0][0], padding[1][0], *outs, gx,
                          work_per_item=cols.size // max(x_shape[0], 1))
        return gx

    def lstm_gates(self, z, c_prev, activation="tanh", recurrent_activation="sigmoid",
                   out=None):
        k = _compiled_for(z)
        arrays = (z, c_prev) + (() if out is None else out)
        if k is None or not _gate_kernel_ok(z, arrays, activation, recurrent_activation):
            return super().lstm_gates(z, c_prev, activation, recurrent_activation, out)
        h, c, tc = out if out is not None else (np.empty(c_prev.shape, z.dtype) for _ in range(3))
        cpu_threads.split(k.lstm_gates, z.shape[0], z, c_prev,
                          *_gate_codes(activation, recurrent_activation), h, c, tc,
                          work_per_item=c_prev.shape[1] * _LSTM_COST)
        return h, c, tc

    def lstm_gates_grad(self, gates, c_prev, tc, dh, dc, activation="tanh",
                        recurrent_activation="sigmoid", out=None):
        k = _compiled_for(gates)
        arrays = (gates, c_prev, tc, dh, dc) + (() if out is None else out)
        if k is None or not _gate_kernel_ok(gates, arrays, activation, recurrent_activation):
            return super().lstm_gates_grad(gates, c_prev, tc, dh, dc, activation,
                                           recurrent_activation, out)
        dz, dc_prev = out if out is not None else (np.empty(gates.shape, gates.dtype),
                                                    np.empty(c_prev.shape, gates.dtype))
        cpu_threads.split(k.lstm_gates_grad, gates.shape[0], gates, c_prev, tc, dh, dc,
                          *_gate_codes(activation, recurrent_activation), dz, dc_prev,
                          work_per_item=c_prev.shape[1] * _LSTM_GRAD_COST)
        return dz, dc_prev

    def gru_gates(self, xz, hz, h_prev, activation="tanh", recurrent_activation="sigmoid",
                  out=None):
        k = _compiled_for(xz)
        arrays = (xz, hz, h_prev) + (() if out is None else (out,))
        if k is None or not _gate_kernel_ok(xz, arrays, activation, recurrent_activation):
            return super().gru_gates(xz, hz, h_prev, activation, recurrent_activation, out)
        h = out if out is not None else np.empty(h_prev.shape, xz.dtype)
        cpu_threads.split(k.gru_gates, xz.shape[0], xz, hz, h_prev,
                          *_gate_codes(activation, recurrent_activation), h,
                          work_per_item=h_prev.shape[1] * _GRU_COST)
        return h

    def gru_gates_grad(self, gates, hz, h_prev, dh, activation="tanh",
                       recurrent_activation="sigmoid", out=None):
        k = _compiled_for(gates)
        arrays = (gates, hz, h_prev, dh) + (() if out is None else out)
        if k is None or not _gate_kernel_ok(gates, arrays, activation, recurrent_activation):
            return super().gru_gates_grad(gates, hz, h_prev, dh, activation,
                                          recurrent_activation, out)
        dxz, dhz, dh_prev = out if out is not None else (
            np.empty(gates.shape, gates.dtype), np.empty(gates.shape, gates.dtype),
            np.empty(h_prev.shape, gates.dtype))
        cpu_threads.split(k.gru_gates_grad, gates.shape[0], gates, hz, h_prev, dh,
                          *_gate_codes(activation, recurrent_activation), dxz, dhz, dh_prev,
                          work_per_item=h_prev.shape[1] * _GRU_GRAD_COST)
        return dxz, dhz, dh_prev


_CODES = {"linear": 0, "relu": 1, "sigmoid": 2, "tanh": 3}
_GATE_CODES = {**_CODES, "hard_sigmoid": 4}  # the recurrent gate kernels know one more
# Work per LSTM cell in element copies (measured: forward 77 us, backward ~45 us for 128 x 128
# cells): a 128 x 128 step stays on one thread (splitting it measured 10 % slower per training
# step); larger batches or units are split.
_LSTM_COST, _LSTM_GRAD_COST = 10, 6
_GRU_COST, _GRU_GRAD_COST = 7, 6  # three gates, no cell state
_CONV_CHUNK_BYTES = 1 << 23  # column block of a blocked conv2d (2-8 MB measured alike)
_COST = {"linear": 1, "relu": 1, "sigmoid": 8, "tanh": 8}  # work per element, in copies
_kernels = []  # [module] once numba imported, [None] if it is missing
_kernels_lock = threading.Lock()


def _philox():
    """The numba Philox module (`philox_cpu`), or None without numba (the twin is used)."""
    if compiled_kernels() is None:  # numba missing: warned once there
        return None
    from kerasrs.backend import philox_cpu

    return philox_cpu


def compiled_kernels():
    """The `cpu_kernels` module, or None (with one warning) when numba is not installed."""
    if not _kernels:
        with _kernels_lock:  # two threads' first calls: one import, one warning
            if not _kernels:
                _kernels.append(_import_kernels())
    return _kernels[0]


def _import_kernels():
    try:
        from kerasrs.backend import cpu_kernels
    except ImportError as e:
        warnings.warn(f"kerasrs: the compiled CPU kernels need numba ({e}); using the slower "
                      "plain-NumPy versions. Install numba to train faster.", RuntimeWarning,
                      stacklevel=4)
        return None
    return cpu_kernels


def _compiled_for(x):
    """The kernels module if ``x`` is a float32/float64 array and numba is there, else None."""
    if x.dtype.type not in (np.float32, np.float64):
        return None
    return compiled_kernels()


def _gate_codes(*activations):
    return tuple(_GATE_CODES[a] for a in activations)


def _gate_kernel_ok(z, arrays, *activations):
    """True when a recurrent gate kernel applies: 2-D arrays of ``z``'s dtype, known
    activations."""
    return (z.ndim == 2 and all(a.ndim == 2 and a.dtype == z.dtype for a in arrays)
            and all(a in _GATE_CODES for a in activations))


def _flat_ok(*arrays):
    """True when every array is C-contiguous with one dtype (so ``reshape(-1)`` is a view)."""
    return all(a.flags.c_contiguous and a.dtype == arrays[0].dtype for a in arrays)


def _same_array(a, b):
    """True when ``a`` and ``b`` are the same C-contiguous memory with one shape and dtype."""
    return (a.flags.c_contiguous and b.flags.c_contiguous and a.shape == b.shape
            and a.dtype == b.dtype and a.ctypes.data == b.ctypes.data)


def _into(out, result):
    if out is None or out is result:
        return result
    out[...] = result
    return out
