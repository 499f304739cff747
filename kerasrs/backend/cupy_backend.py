"""The CuPy (NVIDIA GPU) backend. CuPy is imported only when this backend is first asked for."""

import numpy as np

from kerasrs.backend import base, cuda_kernels


def import_cupy():
    """Import CuPy and check that a GPU is present; the error says which of the two is missing."""
    try:
        import cupy
    except ImportError as e:
        raise ImportError(
            "The 'cupy' backend needs CuPy, which is not installed. Install it with "
            "`pip install kerasrs[cuda12]` (or [cuda13]), or use the 'numpy' backend."
        ) from e
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # the CUDA driver itself is missing or broken
        raise RuntimeError(
            f"The 'cupy' backend found CuPy but no usable NVIDIA GPU: {e}. Use the 'numpy' backend."
        ) from e
    if count == 0:
        raise RuntimeError("The 'cupy' backend found CuPy but no NVIDIA GPU. Use the 'numpy' "
                           "backend.")
    return cupy


def import_nccl():
    """CuPy's NCCL bindings (``cupy.cuda.nccl``), for data-parallel training on several GPUs.

    Raises:
        ImportError: if this CuPy was built without NCCL, with how to get it.
    """
    import_cupy()
    try:
        from cupy.cuda import nccl
    except ImportError as e:
        raise ImportError("kerasrs.distribution on the 'cupy' backend needs NCCL: install the "
                          "CuPy wheel for your CUDA version and `pip install nvidia-nccl-cu12` "
                          f"(or -cu13). Received: {e}") from e
    if not getattr(nccl, "available", True):
        raise ImportError("kerasrs.distribution on the 'cupy' backend needs NCCL, which this "
                          "CuPy cannot load: `pip install nvidia-nccl-cu12` (or -cu13). "
                          "Received: cupy.cuda.nccl.available is False")
    return nccl


class CupyBackend(base.Backend):
    """CuPy arrays on the current GPU; the named kernels run as handwritten CUDA
    (``kerasrs/backend/cuda/*.cu`` through `cuda_kernels.Kernels`).

    Each override falls back to the reference composition in `base.Backend` for what the
    kernels do not take: dtypes other than float32/float64, mixed dtypes, activations other than
    the four the kernels know, and in-place arguments that are not C-contiguous. Other inputs
    that are not C-contiguous are copied once.
    """

    name = "cupy"

    def __init__(self):
        cp = import_cupy()
        self.xp = cp
        self.array_type = cp.ndarray
        self._kernels = None
        super().__init__()

    @property
    def kernels(self):
        """The launchers, built on first use; each .cu file is compiled on its first launch."""
        if self._kernels is None:
            self._kernels = cuda_kernels.Kernels(self.xp, cuda_kernels.cupy_loader)
            self._kernels.upload = self._upload
        return self._kernels

    def _upload(self, host):
        """Device copy of a small host array without a device sync: staged in pinned memory and
        copied asynchronously on the current stream (CuPy's pinned pool keeps the staging
        buffer until the copy is done)."""
        cp = self.xp
        pinned = cp.cuda.alloc_pinned_memory(host.nbytes)
        staged = np.frombuffer(pinned, host.dtype, host.size).reshape(host.shape)
        staged[...] = host
        out = cp.empty(host.shape, host.dtype)
        out.set(staged, stream=cp.cuda.get_current_stream())
        return out

    def asarray(self, x, dtype=None):
        return self.xp.asarray(x, dtype=dtype)

    def to_numpy(self, x):
        return self.xp.asnumpy(x)

    def seed(self, seed):
        self.rng = self.xp.random.default_rng(seed)
        self.host_rng = np.random.default_rng(seed)

    def scatter_add(self, a, key, values):
        import cupyx

        cupyx.scatter_add(a, key, values)

    # -- one-line ElementwiseKernels ---------------------------------------------------------
    def relu_grad(self, y, gy):
        return cuda_kernels.elementwise("kerasrs_relu_grad")(y, gy)

    def sigmoid(self, x):
        return cuda_kernels.elementwise("kerasrs_sigmoid")(x)

    def erf(self, x):
        kernel = cuda_kernels.elementwise("kerasrs_erf")
        if x.dtype.kind != "f" or x.dtype.itemsize < 4:  # half/int inputs: compute in float32
            return kernel(x.astype(self.xp.float32)).astype(
                x.dtype if x.dtype.kind == "f" else self.xp.float32)
        return kernel(x)

    # -- the named fused kernels -------------------------------------------------------------
    def _fusable(self, *arrays):
        """True if every array (None skipped) is float32, or every one float64."""
        dts = {a.dtype for a in arrays if a is not None}
        return len(dts) == 1 and dts.pop() in _KERNEL_DTYPES

    def _c(self, a):
        return a if a is None else self.xp.ascontiguousarray(a)

    def softmax_cross_entropy(self, logits, labels):
        if not self._fusable(logits, None if labels.ndim == 1 else labels):
            return super().softmax_cross_entropy(logits, labels)
        return self.kernels.softmax_cross_entropy(self._c(logits), self._c(labels))

    def softmax_cross_entropy_grad(self, probs, labels, gloss):
        if not self._fusable(probs, gloss, None if labels.ndim == 1 else labels):
            return super().softmax_cross_entropy_grad(probs, labels, gloss)
        return self.kernels.softmax_cross_entropy_grad(self._c(probs), self._c(labels),
                                                       self._c(gloss))

    def dropout_mask(self, shape, rate, seed, offset=0, dtype="float32"):
        if np.dtype(dtype) not in _KERNEL_DTYPES:
            return super().dropout_mask(shape, rate, seed, offset, dtype)
        return self.kernels.dropout_mask(shape, rate, seed, offset, dtype)

    def embedding_grad(self, indices, gy, input_dim):
        if not self._fusable(gy):
            return super().embedding_grad(indices, gy, input_dim)
        return self.kernels.embedding_grad(self._c(indices), self._c(gy), input_dim)

    def bias_act(self, x, bias, activation="linear", out=None):
        if not self._fusable(x, bias) or activation not in _ACTIVATIONS:
            return super().bias_act(x, bias, activation, out)
        direct = out if out is not None and out.flags.c_contiguous else None
        y = self.kernels.bias_act(self._c(x), self._c(bias), activation, out=direct)
        return _into(out, y)

    def bias_act_grad(self, y, gy, activation="linear", need_bias=True, out=None):
        if not self._fusable(y, gy) or activation not in _ACTIVATIONS:
            return super().bias_act_grad(y, gy, activation, need_bias, out)
        direct = out if out is not None and out.flags.c_contiguous else None
        gx, gbias = self.kernels.bias_act_grad(self._c(y), self._c(gy), activation, need_bias,
                                               out=direct)
        return _into(out, gx), gbias

    def im2col(self, x, window, strides, dilation, padding, out=None):
        if not self._fusable(x) or x.ndim - 2 > 3:
            return super().im2col(x, window, strides, dilation, padding, out)
        direct = out if out is not None and out.flags.c_contiguous else None
        cols = self.kernels.im2col(self._c(x), window, strides, dilation, padding, out=direct)
        return _into(out, cols)

    def col2im(self, cols, x_shape, window, strides, dilation, padding):
        if not self._fusable(cols) or len(x_shape) - 2 > 3:
            return super().col2im(cols, x_shape, window, strides, dilation, padding)
        return self.kernels.col2im(self._c(cols), x_shape, window, strides, dilation, padding)

    def max_pool(self, x, pool_size, strides, padding):
        if not self._fusable(x) or x.ndim - 2 > 3:
            return super().max_pool(x, pool_size, strides, padding)
        return self.kernels.max_pool(self._c(x), pool_size, strides, padding)

    def max_pool_grad(self, gy, argmax, x_shape):
        if not self._fusable(gy) or len(x_shape) - 2 > 3:
            return super().max_pool_grad(gy, argmax, x_shape)
        argmax = self._c(argmax.astype(np.int32, copy=False))
        return self.kernels.max_pool_grad(self._c(gy), argmax, x_shape)

    def layer_norm(self, x, gamma, beta, epsilon):
        if not self._fusable(x, gamma, beta):
            return super().layer_norm(x, gamma, beta, epsilon)
        return self.kernels.layer_norm(self._c(x), self._c(gamma), self._c(beta), epsilon)

    def layer_norm_grad(self, gy, x, gamma, mean, rstd):
        if not self._fusable(gy, x, gamma, mean, rstd):
            return super().layer_norm_grad(gy, x, gamma, mean, rstd)
        return self.kernels.layer_norm_grad(self._c(gy), self._c(x), self._c(gamma),
                                            self._c(mean), self._c(rstd))

    def adam_update(self, params, grads, ms, vs, lr, beta_1, beta_2, epsilon, step,
                    weight_decay=0.0, v_hats=None):
        in_place = list(params) + list(ms) + list(vs) + list(v_hats or [])
        if not self._fusable(*in_place, *grads) or not _contiguous(in_place):
            return super().adam_update(params, grads, ms, vs, lr, beta_1, beta_2, epsilon,
                                       step, weight_decay, v_hats)
        self.kernels.adam_update(params, [self._c(g) for g in grads], ms, vs, lr, beta_1,
                                 beta_2, epsilon, step, weight_decay, v_hats)

    def sgd_update(self, params, grads, momentums, lr, momentum=0.0, nesterov=False,
                   weight_decay=0.0):
        in_place = list(params) + (list(momentums) if momentum else [])
        if not self._fusable(*in_place, *grads) or not _contiguous(in_place):
            return super().sgd_update(params, grads, momentums, lr, momentum, nesterov,
                                      weight_decay)
        self.kernels.sgd_update(params, [self._c(g) for g in grads], momentums, lr, momentum,
                                nesterov, weight_decay)

    def lstm_gates(self, z, c_prev, activation="tanh", recurrent_activation="sigmoid",
                   out=None):
        if not self._fusable(z, c_prev) or {activation, recurrent_activation} - _ACTIVATIONS:
            return super().lstm_gates(z, c_prev, activation, recurrent_activation, out)
        zc = self._c(z)  # z is updated in place: a strided z goes through a contiguous copy
        res = self.kernels.lstm_gates(zc, self._c(c_prev), activation, recurrent_activation)
        _copy_back(z, zc)
        return base._write_out(out, res)

    def lstm_gates_grad(self, gates, c_prev, tc, dh, dc, activation="tanh",
                        recurrent_activation="sigmoid", out=None):
        if (not self._fusable(gates, c_prev, tc, dh, dc)
                or {activation, recurrent_activation} - _ACTIVATIONS):
            return super().lstm_gates_grad(gates, c_prev, tc, dh, dc, activation,
                                           recurrent_activation, out)
        res = self.kernels.lstm_gates_grad(*map(self._c, (gates, c_prev, tc, dh, dc)),
                                           activation, recurrent_activation)
        return base._write_out(out, res)

    def gru_gates(self, xz, hz, h_prev, activation="tanh", recurrent_activation="sigmoid",
                  out=None):
        if (not self._fusable(xz, hz, h_prev)
                or {activation, recurrent_activation} - _ACTIVATIONS):
            return super().gru_gates(xz, hz, h_prev, activation, recurrent_activation, out)
        xc = self._c(xz)  # updated in place, as z in lstm_gates
        h = self.kernels.gru_gates(xc, self._c(hz), self._c(h_prev), activation,
                                   recurrent_activation)
        _copy_back(xz, xc)
        return base._write_out(None if out is None else (out,), (h,))[0]

    def gru_gates_grad(self, gates, hz, h_prev, dh, activation="tanh",
                       recurrent_activation="sigmoid", out=None):
        if (not self._fusable(gates, hz, h_prev, dh)
                or {activation, recurrent_activation} - _ACTIVATIONS):
            return super().gru_gates_grad(gates, hz, h_prev, dh, activation,
                                          recurrent_activation, out)
        res = self.kernels.gru_gates_grad(*map(self._c, (gates, hz, h_prev, dh)), activation,
                                          recurrent_activation)
        return base._write_out(out, res)


_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_ACTIVATIONS = frozenset(cuda_kernels.ACTIVATIONS)


def _contiguous(arrays):
    return all(a.flags.c_contiguous for a in arrays)


def _copy_back(a, working):
    """Write an in-place kernel's result into ``a`` when it worked on a contiguous copy."""
    if working is not a:
        a[...] = working


def _into(out, result):
    """``result``, copied into ``out`` first when the kernel could not write there directly."""
    if out is None or out is result:
        return result
    out[...] = result
    return out
