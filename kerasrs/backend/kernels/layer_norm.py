"""Layer normalization over the last axis (Ba, Kiros and Hinton 2016) and its backward: the NumPy
twin, the numba kernels and the CUDA launcher of ``layer_norm.cu``."""

import math

import numpy as np

from kerasrs.backend import cpu_threads
from kerasrs.backend.kernels import cuda
from kerasrs.backend.kernels.cpu import reducing_kernel, usable
from kerasrs.backend.kernels.cuda import check, float_type, fusable, pow2_block

CUDA = cuda.each_float("layer_norm_fwd", "layer_norm_bwd", "layer_norm_bwd_params")


class Twin:
    """The reference versions (methods of `kerasrs.backend.base.Backend`)."""

    def layer_norm(self, x, gamma, beta, epsilon, out=None):
        """Layer normalization of each row: ``(x - mean) * rstd * gamma + beta``.

        Args:
            x: ``(n, d)`` float array (normalized over the last axis).
            gamma, beta: ``(d,)`` arrays or None (scale 1 / offset 0).
            epsilon: float added to the biased variance.
            out: optional contiguous ``(n, d)`` array of ``x``'s dtype for ``y``.

        Returns:
            ``(y, mean, rstd)``: ``y (n, d)`` of ``x``'s dtype; ``mean`` and ``rstd =
            1 / sqrt(var + epsilon)``, both ``(n,)`` in float32 (float64 for float64 ``x``).
        """
        xp = self.xp
        stat = np.float64 if x.dtype == np.float64 else np.float32
        xs = x.astype(stat)
        mean = xs.mean(axis=1)
        xc = xs - mean[:, None]
        rstd = 1 / xp.sqrt((xc * xc).mean(axis=1) + stat(epsilon))
        y = xc * rstd[:, None]
        if gamma is not None:
            y = y * gamma
        if beta is not None:
            y = y + beta
        if out is not None:
            out[...] = y
            return out, mean, rstd
        return y.astype(x.dtype), mean, rstd

    def layer_norm_grad(self, gy, x, gamma, mean, rstd, out=None):
        """Backward of `layer_norm`.

        With ``xhat = (x - mean) * rstd`` and ``g = gy * gamma``:
        ``gx = rstd * (g - mean_j(g) - xhat * mean_j(g * xhat))``.

        Args:
            gy: ``(n, d)`` gradient of ``y``.
            x: ``(n, d)`` the forward input.
            gamma: ``(d,)`` or None.
            mean, rstd: ``(n,)`` from `layer_norm`.
            out: optional contiguous ``(n, d)`` array of ``gy``'s dtype for ``gx``.

        Returns:
            ``(gx, ggamma, gbeta)``: ``gx (n, d)`` of ``gy``'s dtype; ``ggamma = sum_i gy *
            xhat`` and ``gbeta = sum_i gy``, both ``(d,)``.
        """
        stat = mean.dtype.type
        xhat = (x.astype(stat) - mean[:, None]) * rstd[:, None]
        g32 = gy.astype(stat)
        g = g32 if gamma is None else g32 * gamma
        gx = rstd[:, None] * (g - g.mean(axis=1, keepdims=True)
                              - xhat * (g * xhat).mean(axis=1, keepdims=True))
        ggamma = (g32 * xhat).sum(axis=0).astype(gy.dtype)
        gbeta = g32.sum(axis=0).astype(gy.dtype)
        if out is not None:
            out[...] = gx
            return out, ggamma, gbeta
        return gx.astype(gy.dtype), ggamma, gbeta


# -- numba (row sums in float64) --------------------------------------------------------------
@reducing_kernel
def layer_norm_rows(x, gamma, beta, epsilon, y, mean, rstd, start, stop):
    d = x.shape[1]
    for i in range(start, stop):
        xi, yi = x[i], y[i]
        s = 0.0
        for j in range(d):
            s += xi[j]
        mu = s / d
        q = 0.0
        for j in range(d):
            t = xi[j] - mu
            q += t * t
        r = 1 / math.sqrt(q / d + epsilon)
        mean[i] = mu
        rstd[i] = r
        for j in range(d):
            yi[j] = (xi[j] - mu) * r * gamma[j] + beta[j]


@reducing_kernel
def layer_norm_grad_rows(gy, x, gamma, mean, rstd, gx, acc, start, stop):
    """``gx`` for rows ``start:stop``; ``acc[0]``/``acc[1]`` += their gamma/beta gradients."""
    d = x.shape[1]
    pg, pb = acc[0], acc[1]
    for i in range(start, stop):
        mu, r = mean[i], rstd[i]
        xi, gyi, gxi = x[i], gy[i], gx[i]
        s1 = 0.0
        s2 = 0.0
        for j in range(d):
            xhat = (xi[j] - mu) * r
            g = gyi[j] * gamma[j]
            s1 += g
            s2 += g * xhat
            pg[j] += gyi[j] * xhat
            pb[j] += gyi[j]
        s1 /= d
        s2 /= d
        for j in range(d):
            xhat = (xi[j] - mu) * r
            gxi[j] = r * (gyi[j] * gamma[j] - s1 - xhat * s2)


class Cpu:
    """`NumpyBackend`'s compiled versions (2-D), falling back to `Twin` otherwise."""

    def layer_norm(self, x, gamma, beta, epsilon, out=None):
        if x.ndim != 2 or not usable(x):
            return super().layer_norm(x, gamma, beta, epsilon, out)
        x = np.ascontiguousarray(x)
        d = x.shape[1]
        gamma = np.ones(d, x.dtype) if gamma is None else np.ascontiguousarray(gamma, x.dtype)
        beta = np.zeros(d, x.dtype) if beta is None else np.ascontiguousarray(beta, x.dtype)
        stat = np.float64 if x.dtype == np.float64 else np.float32
        y = np.empty_like(x) if out is None else out
        mean, rstd = np.empty(x.shape[0], stat), np.empty(x.shape[0], stat)
        cpu_threads.split(layer_norm_rows.compiled(), x.shape[0], x, gamma, beta, float(epsilon),
                          y, mean, rstd, work_per_item=4 * d)
        return y, mean, rstd

    def layer_norm_grad(self, gy, x, gamma, mean, rstd, out=None):
        if gy.ndim != 2 or x.dtype != gy.dtype or not usable(gy):
            return super().layer_norm_grad(gy, x, gamma, mean, rstd, out)
        gy, x = np.ascontiguousarray(gy), np.ascontiguousarray(x)
        d = x.shape[1]
        gamma = np.ones(d, x.dtype) if gamma is None else np.ascontiguousarray(gamma, x.dtype)
        gx = np.empty_like(gy) if out is None else out
        mean, rstd = np.ascontiguousarray(mean), np.ascontiguousarray(rstd)
        parts = cpu_threads.bounds(gy.shape[0], 6 * d)
        partial = np.zeros((len(parts), 2, d))
        rows = layer_norm_grad_rows.compiled()
        cpu_threads.run([(rows, (gy, x, gamma, mean, rstd, gx, partial[i], *part))
                         for i, part in enumerate(parts)])
        sums = partial.sum(axis=0).astype(gy.dtype)
        return gx, sums[0], sums[1]


# -- CUDA ---------------------------------------------------------------------------------------
class Launch:
    """The launchers of ``layer_norm.cu`` (methods of `kerasrs.backend.kernels.Launcher`)."""

    def layer_norm(self, x, gamma, beta, epsilon, out=None):
        op = "layer_norm"
        check(op, "x", x, ndim=2)
        t = float_type(op, "x", x)
        n, d = x.shape
        for name, p in (("gamma", gamma), ("beta", beta)):
            if p is not None:
                check(op, name, p, dtype=x.dtype, shape=(d,))
        y = self.xp.empty_like(x) if out is None else out
        mean, rstd = self.xp.empty((n,), x.dtype), self.xp.empty((n,), x.dtype)
        if x.size:
            self.launch("layer_norm", f"layer_norm_fwd<{t}>", (n,),
                        (pow2_block(d, self.max_block),),
                        (x, x if gamma is None else gamma, x if beta is None else beta, y, mean,
                         rstd, np.int32(n), np.int32(d), x.dtype.type(epsilon),
                         np.int32(gamma is not None), np.int32(beta is not None)))
        return y, mean, rstd

    def layer_norm_grad(self, gy, x, gamma, mean, rstd, out=None):
        op = "layer_norm_grad"
        check(op, "x", x, ndim=2)
        t = float_type(op, "x", x)
        n, d = x.shape
        check(op, "gy", gy, dtype=x.dtype, shape=(n, d))
        if gamma is not None:
            check(op, "gamma", gamma, dtype=x.dtype, shape=(d,))
        check(op, "mean", mean, dtype=x.dtype, shape=(n,))
        check(op, "rstd", rstd, dtype=x.dtype, shape=(n,))
        gx = self.xp.empty_like(x) if out is None else out
        ggamma, gbeta = self.xp.zeros((d,), x.dtype), self.xp.zeros((d,), x.dtype)
        if x.size:
            self.launch("layer_norm", f"layer_norm_bwd<{t}>", (n,),
                        (pow2_block(d, self.max_block),),
                        (gy, x, x if gamma is None else gamma, mean, rstd, gx, np.int32(n),
                         np.int32(d), np.int32(gamma is not None)))
            grid, block = self._column_grid(n, d)
            self.launch("layer_norm", f"layer_norm_bwd_params<{t}>", grid, block,
                        (gy, x, mean, rstd, ggamma, gbeta, np.int32(n), np.int32(d)))
        return gx, ggamma, gbeta


class Cuda:
    """`CupyBackend`'s versions, falling back to `Twin` for mixed or other dtypes."""

    def layer_norm(self, x, gamma, beta, epsilon, out=None):
        if not fusable(x, gamma, beta):
            return super().layer_norm(x, gamma, beta, epsilon, out)
        return self.kernels.layer_norm(self._c(x), self._c(gamma), self._c(beta), epsilon, out)

    def layer_norm_grad(self, gy, x, gamma, mean, rstd, out=None):
        if not fusable(gy, x, gamma, mean, rstd):
            return super().layer_norm_grad(gy, x, gamma, mean, rstd, out)
        return self.kernels.layer_norm_grad(self._c(gy), self._c(x), self._c(gamma),
                                            self._c(mean), self._c(rstd), out)
