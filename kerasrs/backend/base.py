"""The interface every backend implements: an array module, dtypes, an RNG and named kernels."""

import itertools
import math

import numpy as np


class Backend:
    """One array library (NumPy or CuPy) behind a common interface.

    Attributes:
        name: "numpy" or "cupy".
        xp: the array module (``numpy`` or ``cupy``).
        array_type: the array class this backend owns, used to tell which backend made an array.
    """

    name = None
    xp = None
    array_type = None

    def __init__(self):
        self.rng = None
        self.seed(None)

    # -- arrays and transfer -------------------------------------------------------------------
    def asarray(self, x, dtype=None):
        """Array on this backend's device, without a copy where possible."""
        return self.xp.asarray(x, dtype=dtype)

    def to_numpy(self, x):
        """Host NumPy copy (or view, on the CPU) of an array of this backend."""
        raise NotImplementedError

    def is_array(self, x):
        return isinstance(x, self.array_type)

    def empty(self, shape, dtype="float32"):
        """An uninitialized C-contiguous array for a hot path's result; the NumPy backend
        reuses the memory of large ones from step to step (`kerasrs.backend.memory`)."""
        return self.xp.empty(shape, dtype)

    # -- random numbers ------------------------------------------------------------------------
    def seed(self, seed):
        """Re-seed this backend's generator (None: from OS entropy)."""
        raise NotImplementedError

    def scatter_add(self, a, key, values):
        """In place ``a[key] += values``, summing where ``key`` repeats an index (unlike ``+=``)."""
        self.xp.add.at(a, key, values)

    # -- fused kernels: NumPy versions are the reference, other backends override ------------------
    def relu(self, x):
        """``max(x, 0)`` elementwise, a new array of ``x``'s shape and dtype."""
        return self.xp.maximum(x, 0)

    def relu_grad(self, y, gy):
        """Gradient of relu from its output: ``gy * (y > 0)`` (relu'(0) = 0, as PyTorch)."""
        return gy * (y > 0)

    def sigmoid(self, x):
        """Logistic function, computed without overflow for large ``|x|``."""
        xp = self.xp
        e = xp.exp(-xp.abs(x))
        return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)

    def erf(self, x):
        """The error function ``2/sqrt(pi) * integral_0^x exp(-t**2) dt``, elementwise.

        Float64-accurate (max abs error about 1e-15; the tests require < 1e-12 against
        ``math.erf``) without SciPy. Computed in float64 and returned in ``x``'s float dtype:

        * ``|x| < 2``: ``2/sqrt(pi) exp(-x^2) sum_k 2^k x^(2k+1) / (2k+1)!!`` (Abramowitz &
          Stegun 7.1.6), a series of positive terms (no cancellation), 30 terms in Horner form.
        * ``|x| >= 2``: ``1 - erfc(x)`` with erfc's continued fraction (A&S 7.1.14)
          ``exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))``, 45 levels,
          evaluated bottom-up.

        erf is odd, so both are applied to ``|x|`` and the sign is copied back.
        """
        xp = self.xp
        is_float = x.dtype.kind == "f" or x.dtype.name == "bfloat16"
        a = xp.abs(xp.asarray(x, dtype=np.float64))
        out = xp.empty_like(a)
        small = a < 2.0
        s = a[small]
        t = s * s
        p = xp.full_like(s, _ERF_SERIES[0])
        for c in _ERF_SERIES[1:]:
            p *= t
            p += c
        out[small] = _TWO_OVER_SQRT_PI * xp.exp(-t) * s * p
        b = a[~small]
        f = b.copy()
        for k in range(_ERF_CF_LEVELS, 0, -1):
            f = b + (k / 2) / f
        clipped = xp.minimum(b, 10.0)  # erfc(10) ~ 2e-45: no overflow in b*b, same result
        out[~small] = 1.0 - xp.exp(-clipped * clipped) / (_SQRT_PI * f)
        y = xp.copysign(out, xp.asarray(x, dtype=np.float64))
        return y.astype(x.dtype if is_float else np.float32, copy=False)  # ints give float32

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

    def dropout_mask(self, shape, rate, seed, offset=0, dtype="float32"):
        """Inverted-dropout multiplier: 0 with probability ``rate``, else ``1 / (1 - rate)``.

        Bits from the counter-based generator Philox4x32-10 (Salmon et al., "Parallel random
        numbers: as easy as 1, 2, 3", SC 2011): element e is word ``e % 4`` of
        ``philox(counter=(e // 4, offset), key=seed)`` (64-bit halves as two 32-bit words); it is
        kept when its top 24 bits ``u`` satisfy ``u >= ceil(rate * 2**24)``. The mask depends only
        on (seed, offset, shape), so the CUDA kernel gives the same bits.

        Args:
            shape: output shape. rate: float in [0, 1). seed, offset: ints in [0, 2**64).
            dtype: float dtype of the result.
        """
        xp = self.xp
        n = math.prod(shape)
        b = xp.arange((n + 3) // 4, dtype=np.uint64)
        ctr = [b & _MASK32, b >> np.uint64(32)]
        ctr += [xp.full_like(b, v) for v in _split64(offset)]
        words = philox4x32_10(xp, ctr, _split64(seed))
        bits = xp.stack(words, axis=1).reshape(-1)[:n]
        keep = (bits >> np.uint64(8)) >= np.uint64(dropout_threshold(rate))
        return xp.where(keep, 1 / (1 - rate), 0).astype(dtype).reshape(shape)

    def embedding_grad(self, indices, gy, input_dim):
        """Gradient of an embedding table: ``out[indices[i]] += gy[i]`` summed over repeats.

        Args: indices int (...); gy ``indices.shape + (dim,)``; input_dim rows of the table.
        Returns: (input_dim, dim) in ``gy``'s dtype. Ids outside ``[0, input_dim)`` add nothing.
        """
        xp = self.xp
        dim = gy.shape[-1]
        flat = indices.reshape(-1)
        rows = gy.reshape(-1, dim)
        valid = (flat >= 0) & (flat < input_dim)
        out = xp.zeros((input_dim, dim), dtype=gy.dtype)
        self.scatter_add(out, flat[valid], rows[valid])
        return out

    # -- named fused kernels (see KERNELS.md): the plain xp compositions below are the reference
    # twins; NumpyBackend and CupyBackend override them with fused versions tested against these.
    # Arrays may be non-contiguous; outputs are new arrays unless an ``out`` is passed.
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
        xp = self.xp
        if activation not in _BIAS_ACTIVATIONS:
            raise ValueError(f"bias_act: activation must be one of {_BIAS_ACTIVATIONS}. "
                             f"Received: activation={activation!r}")
        y = x if bias is None else x + bias
        if activation == "relu":
            y = xp.maximum(y, 0)
        elif activation == "sigmoid":
            y = self.sigmoid(y)
        elif activation == "tanh":
            y = xp.tanh(y)
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
        xp = self.xp
        if activation == "relu":
            gx = gy * (y > 0)
        elif activation == "sigmoid":
            gx = gy * (y * (1 - y))
        elif activation == "tanh":
            gx = gy * (1 - y * y)
        elif activation == "linear":
            gx = gy.copy()
        else:
            raise ValueError(f"bias_act_grad: activation must be one of {_BIAS_ACTIVATIONS}. "
                             f"Received: activation={activation!r}")
        gx = gx.astype(gy.dtype, copy=False)
        if out is not None:
            out[...] = gx
            gx = out
        gbias = gx.sum(axis=0) if need_bias else None
        return gx, gbias

    def im2col(self, x, window, strides, dilation, padding, out=None):
        """Column matrix of all windows of a zero-padded channels-last input.

        Args:
            x: ``(n, *spatial, c)`` array (1, 2 or 3 spatial axes; 1-D convolutions may pass
                ``H = 1``).
            window, strides, dilation: tuples with one int per spatial axis.
            padding: tuple of ``(before, after)`` zero-padding pairs, one per spatial axis.
            out: optional reused buffer of the result's shape and dtype.

        Returns:
            ``(n * prod(out_spatial), prod(window) * c)``: row ``(b, *o)`` holds the window at
            output position ``o`` of sample ``b``, window positions row-major, channels fastest
            (so it multiplies a kernel ``(*window, c, filters)`` reshaped to 2-D). The output size
            per axis is ``(n_pad - ((k - 1) * d + 1)) // s + 1``.
        """
        xp = self.xp
        xpad = xp.pad(x, ((0, 0), *padding, (0, 0)))
        outs = _window_out(xpad.shape[1:-1], window, strides, dilation)
        cols = xp.empty((x.shape[0], *outs, *window, x.shape[-1]), x.dtype)
        for pos in itertools.product(*(range(k) for k in window)):
            src = tuple(slice(p * d, p * d + s * (o - 1) + 1, s)
                        for p, d, s, o in zip(pos, dilation, strides, outs))
            cols[(slice(None),) * (1 + len(window)) + pos] = xpad[(slice(None), *src)]
        cols = cols.reshape(-1, math.prod(window) * x.shape[-1])
        if out is None:
            return cols
        out[...] = cols
        return out

    def col2im(self, cols, x_shape, window, strides, dilation, padding):
        """Adjoint of `im2col`: each column entry is added back to the input element it came
        from (entries that came from padding are dropped).

        Args:
            cols: ``(n * prod(out_spatial), prod(window) * c)``, laid out as `im2col` writes.
            x_shape: ``(n, *spatial, c)``, the unpadded input's shape.
            window, strides, dilation, padding: as in `im2col`.

        Returns:
            ``(n, *spatial, c)`` array of ``cols``'s dtype.
        """
        xp = self.xp
        padded = tuple(n + b + a for n, (b, a) in zip(x_shape[1:-1], padding))
        outs = _window_out(padded, window, strides, dilation)
        c6 = cols.reshape(x_shape[0], *outs, *window, x_shape[-1])
        gx = xp.zeros((x_shape[0], *padded, x_shape[-1]), cols.dtype)
        for pos in itertools.product(*(range(k) for k in window)):
            dst = tuple(slice(p * d, p * d + s * (o - 1) + 1, s)
                        for p, d, s, o in zip(pos, dilation, strides, outs))
            gx[(slice(None), *dst)] += c6[(slice(None),) * (1 + len(window)) + pos]
        inner = tuple(slice(b, b + n) for n, (b, _) in zip(x_shape[1:-1], padding))
        return gx[(slice(None), *inner)]

    def conv2d(self, x, kernel, bias, activation, window, strides, dilation, padding):
        """``activation(im2col(x) @ kernel + bias)``: a 2-D convolution, channels last.

        Args:
            x: ``(n, h, w, c)``. kernel: ``(kh * kw * c, filters)`` (the 4-D kernel reshaped).
            bias: ``(filters,)`` or None. activation: "linear", "relu", "sigmoid" or "tanh".
            window, strides, dilation, padding: as in `im2col` (two spatial axes).

        Returns:
            ``(n * oh * ow, filters)``, rows in `im2col`'s order.
        """
        cols = self.im2col(x, window, strides, dilation, padding)
        y = cols @ kernel
        if bias is not None or activation != "linear":
            self.bias_act(y, bias, activation, out=y)
        return y

    def conv2d_grad(self, x, kernel, y, gy, activation, window, strides, dilation, padding,
                    need_x=True, need_kernel=True, need_bias=True):
        """Gradients of `conv2d` from its output ``y`` and the output gradient ``gy`` (both
        ``(n * oh * ow, filters)``; ``y`` is used only for a non-linear activation).

        Returns:
            ``(gx (n, h, w, c) or None, gkernel (kh * kw * c, filters) or None,
            gbias (filters,) or None)``.
        """
        gb = None
        if activation != "linear":
            gy, gb = self.bias_act_grad(y, gy, activation, need_bias)
        elif need_bias:
            gb = gy.sum(axis=0)
        gk = self.im2col(x, window, strides, dilation, padding).T @ gy if need_kernel else None
        gx = self.col2im(gy @ kernel.T, x.shape, window, strides, dilation, padding) \
            if need_x else None
        return gx, gk, gb if need_bias else None

    def max_pool(self, x, pool_size, strides, padding):
        """Max over windows of a channels-last input; padding never wins.

        Args:
            x: ``(n, *spatial, c)`` float array.
            pool_size, strides: tuples, one int per spatial axis.
            padding: tuple of ``(before, after)`` pairs, one per spatial axis.

        Returns:
            ``(y, argmax)``: ``y (n, *out_spatial, c)``; ``argmax`` int32 of ``y``'s shape, the
            winner's flat index into ``x[b].ravel()`` (within its sample ``b``). Ties go to the
            first window position in row-major order (so a window of ``-inf`` picks its first
            element); a NaN beats any number (the first NaN of the window wins: NaN propagates
            as in ``np.maximum``). A window entirely in the padding gives ``-inf`` and -1.
        """
        xp = self.xp
        n, c = x.shape[0], x.shape[-1]
        xpad = xp.pad(x, ((0, 0), *padding, (0, 0)), constant_values=-xp.inf)
        flat = xp.arange(math.prod(x.shape[1:]), dtype=np.int32).reshape(x.shape[1:])
        fpad = xp.pad(flat, (*padding, (0, 0)), constant_values=-1)
        outs = _window_out(xpad.shape[1:-1], pool_size, strides, (1,) * len(pool_size))
        y = xp.full((n, *outs, c), -xp.inf, x.dtype)
        argmax = xp.full((n, *outs, c), -1, np.int32)  # -1: no valid element seen yet
        for pos in itertools.product(*(range(k) for k in pool_size)):
            src = tuple(slice(p, p + s * (o - 1) + 1, s) for p, s, o in zip(pos, strides, outs))
            part, index = xpad[(slice(None), *src)], fpad[src]
            # the first valid element; later, one that is larger or NaN while y is not NaN
            better = (index >= 0) & ((argmax < 0) | (~(part <= y) & (y == y)))
            y = xp.where(better, part, y)
            argmax = xp.where(better, index, argmax)
        return y, argmax.astype(np.int32)

    def max_pool_grad(self, gy, argmax, x_shape):
        """Backward of `max_pool`: each ``gy`` element is added to its window's winner.

        Args:
            gy: ``(n, *out_spatial, c)`` gradient of the pooled output.
            argmax: int32 indices from `max_pool`.
            x_shape: the pooled input's shape ``(n, *spatial, c)``.

        Returns:
            ``(n, *spatial, c)`` array of ``gy``'s dtype (overlapping windows add up; an
            argmax of -1, a window entirely in the padding, adds nothing).
        """
        xp = self.xp
        n = x_shape[0]
        gx = xp.zeros((n, math.prod(x_shape[1:])), gy.dtype)
        per_out = math.prod(argmax.shape[1:])  # (reshape(n, -1) fails for an empty batch)
        rows = xp.broadcast_to(xp.arange(n)[:, None], (n, per_out))
        index = argmax.reshape(n, per_out)
        valid = index >= 0
        self.scatter_add(gx, (rows[valid], index[valid]), gy.reshape(n, per_out)[valid])
        return gx.reshape(x_shape)

    def layer_norm(self, x, gamma, beta, epsilon):
        """Layer normalization of each row (Ba et al. 2016): ``(x - mean) * rstd * gamma + beta``.

        Args:
            x: ``(n, d)`` float array (normalized over the last axis).
            gamma, beta: ``(d,)`` arrays or None (scale 1 / offset 0).
            epsilon: float added to the biased variance.

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
        return y.astype(x.dtype), mean, rstd

    def layer_norm_grad(self, gy, x, gamma, mean, rstd):
        """Backward of `layer_norm`.

        With ``xhat = (x - mean) * rstd`` and ``g = gy * gamma``:
        ``gx = rstd * (g - mean_j(g) - xhat * mean_j(g * xhat))``.

        Args:
            gy: ``(n, d)`` gradient of ``y``.
            x: ``(n, d)`` the forward input.
            gamma: ``(d,)`` or None.
            mean, rstd: ``(n,)`` from `layer_norm`.

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
        return gx.astype(gy.dtype), ggamma, gbeta

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

    def adam_update(self, params, grads, ms, vs, lr, beta_1, beta_2, epsilon, step,
                    weight_decay=0.0, v_hats=None):
        """One Adam/AdamW step over lists of arrays, in place (Kingma & Ba 2015, Algorithm 1,
        "epsilon hat" form; AdamW's decoupled decay from Loshchilov & Hutter 2019), Keras 3's
        rule::

            w = w - w * weight_decay * lr                       (if weight_decay)
            m = m + (1 - beta_1) * (g - m)
            v = v + (1 - beta_2) * (g**2 - v)
            v_hat = max(v_hat, v); v = v_hat                    (amsgrad: if v_hats given)
            w = w - alpha * m / (sqrt(v) + epsilon),  alpha = lr * sqrt(1 - beta_2**step)
                                                                   / (1 - beta_1**step)

        Args:
            params, grads, ms, vs: lists of same-shape float arrays (params, their gradients,
                first and second moments); ``params``, ``ms`` and ``vs`` are updated in place.
            lr, beta_1, beta_2, epsilon, weight_decay: Python floats.
            step: the 1-based step number ``t`` of the bias correction.
            v_hats: None, or the amsgrad running maxima (updated in place).

        Returns:
            None.
        """
        xp = self.xp
        alpha = lr * math.sqrt(1.0 - beta_2 ** step) / (1.0 - beta_1 ** step)
        for i, (w, g, m, v) in enumerate(zip(params, grads, ms, vs)):
            if weight_decay:
                w -= w * (weight_decay * lr)
            m += (1.0 - beta_1) * (g - m)
            v += (1.0 - beta_2) * (g * g - v)
            if v_hats is not None:
                xp.maximum(v_hats[i], v, out=v_hats[i])
                v = v_hats[i]
            w -= alpha * m / (xp.sqrt(v) + epsilon)

    def sgd_update(self, params, grads, momentums, lr, momentum=0.0, nesterov=False,
                   weight_decay=0.0):
        """One SGD step over lists of arrays, in place, Keras 3's rule::

            w = w - w * weight_decay * lr                       (if weight_decay)
            momentum == 0:  w = w - lr * g
            momentum > 0:   v = momentum * v - lr * g
                            w = w + v                            (classic)
                            w = w + momentum * v - lr * g        (nesterov; Sutskever et al. 2013)

        Args:
            params, grads: lists of same-shape float arrays; ``params`` updated in place.
            momentums: list of velocity arrays (updated in place), or None when momentum is 0.
            lr, momentum, weight_decay: Python floats; nesterov: bool.

        Returns:
            None.
        """
        for i, (w, g) in enumerate(zip(params, grads)):
            if weight_decay:
                w -= w * (weight_decay * lr)
            if not momentum:
                w -= lr * g
                continue
            v = momentums[i]
            v *= momentum
            v -= lr * g
            if nesterov:
                w += momentum * v - lr * g
            else:
                w += v

    def lstm_gates(self, z, c_prev, activation="tanh", recurrent_activation="sigmoid",
                   out=None):
        """The gate arithmetic of one LSTM step (Hochreiter & Schmidhuber 1997; Keras's cell).

        ``i, f, c~, o`` are the four column blocks of ``z`` (Keras gate order)::

            i = ract(z_i); f = ract(z_f); c~ = act(z_c); o = ract(z_o)
            c = f * c_prev + i * c~;  h = o * act(c)

        Args:
            z: ``(n, 4 units)`` pre-activations ``x @ kernel + h_prev @ recurrent_kernel + bias``;
                overwritten in place by the activated gates ``[i, f, c~, o]`` (the backward
                pass needs them).
            c_prev: ``(n, units)`` previous cell state.
            activation, recurrent_activation: "tanh", "sigmoid", "relu", "linear" or
                "hard_sigmoid".
            out: optional ``(h, c, tc)`` arrays ``(n, units)`` to write into.

        Returns:
            ``(h, c, tc)``, each ``(n, units)``: output, new cell state and ``act(c)``.
        """
        xp = self.xp
        u = c_prev.shape[1]
        for k, name in enumerate((recurrent_activation, recurrent_activation, activation,
                                  recurrent_activation)):
            z[:, k * u:(k + 1) * u] = self._gate(z[:, k * u:(k + 1) * u], name)
        i, f, g, o = (z[:, k * u:(k + 1) * u] for k in range(4))
        c = f * c_prev + i * g
        tc = self._gate(c, activation)
        h = o * tc
        return _write_out(out, (h, c, tc))

    def lstm_gates_grad(self, gates, c_prev, tc, dh, dc, activation="tanh",
                        recurrent_activation="sigmoid", out=None):
        """Backward of `lstm_gates` for one step (derivatives from the activations' outputs).

        Args:
            gates: ``(n, 4 units)`` activated gates from `lstm_gates`.
            c_prev, tc: ``(n, units)``: the step's previous cell state and ``act(c)``.
            dh: ``(n, units)`` gradient of ``h``.
            dc: ``(n, units)`` gradient of ``c`` from later steps (not yet including ``dh``'s).
            activation, recurrent_activation: as in `lstm_gates`.
            out: optional ``(dz, dc_prev)`` arrays to write into.

        Returns:
            ``(dz, dc_prev)``: ``dz (n, 4 units)`` gradient of the pre-activations ``z``;
            ``dc_prev (n, units)`` gradient of ``c_prev``.
        """
        u = c_prev.shape[1]
        i, f, g, o = (gates[:, k * u:(k + 1) * u] for k in range(4))
        dc_total = dc + dh * o * self._gate_derivative(tc, activation)
        dz = self.xp.concatenate([
            dc_total * g * self._gate_derivative(i, recurrent_activation),
            dc_total * c_prev * self._gate_derivative(f, recurrent_activation),
            dc_total * i * self._gate_derivative(g, activation),
            dh * tc * self._gate_derivative(o, recurrent_activation)], axis=1)
        return _write_out(out, (dz.astype(gates.dtype, copy=False), dc_total * f))

    def gru_gates(self, xz, hz, h_prev, activation="tanh", recurrent_activation="sigmoid",
                  out=None):
        """The gate arithmetic of one GRU step, ``reset_after=True`` form (Keras's default and
        CuDNN's; Cho et al. 2014 with the reset applied after the recurrent product)::

            z = ract(xz_z + hz_z); r = ract(xz_r + hz_r); hh = act(xz_h + r * hz_h)
            h = z * h_prev + (1 - z) * hh

        Args:
            xz: ``(n, 3 units)`` input projection ``x @ kernel + input_bias`` (blocks z, r, h);
                overwritten in place by the activated gates ``[z, r, hh]``.
            hz: ``(n, 3 units)`` recurrent projection ``h_prev @ recurrent_kernel +
                recurrent_bias``; not modified (the backward pass needs its h block).
            h_prev: ``(n, units)``.
            activation, recurrent_activation: "tanh", "sigmoid", "relu", "linear" or
                "hard_sigmoid".
            out: optional ``(n, units)`` array for ``h``.

        Returns:
            ``h``, ``(n, units)``.
        """
        u = h_prev.shape[1]
        z = self._gate(xz[:, :u] + hz[:, :u], recurrent_activation)
        r = self._gate(xz[:, u:2 * u] + hz[:, u:2 * u], recurrent_activation)
        hh = self._gate(xz[:, 2 * u:] + r * hz[:, 2 * u:], activation)
        xz[:, :u], xz[:, u:2 * u], xz[:, 2 * u:] = z, r, hh
        return _write_out(None if out is None else (out,), (z * h_prev + (1 - z) * hh,))[0]

    def gru_gates_grad(self, gates, hz, h_prev, dh, activation="tanh",
                       recurrent_activation="sigmoid", out=None):
        """Backward of `gru_gates` for one step.

        Args:
            gates: ``(n, 3 units)`` activated gates ``[z, r, hh]`` from `gru_gates`.
            hz: ``(n, 3 units)`` the step's recurrent projection.
            h_prev: ``(n, units)``; dh: ``(n, units)`` gradient of ``h``.
            activation, recurrent_activation: as in `gru_gates`.
            out: optional ``(dxz, dhz, dh_prev)`` arrays to write into.

        Returns:
            ``(dxz, dhz, dh_prev)``: gradients of ``xz`` and ``hz`` ``(n, 3 units)``, and the
            direct part ``dh * z`` of ``h_prev``'s gradient (the caller adds
            ``dhz @ recurrent_kernel.T``).
        """
        u = h_prev.shape[1]
        z, r, hh = gates[:, :u], gates[:, u:2 * u], gates[:, 2 * u:]
        dhh = dh * (1 - z) * self._gate_derivative(hh, activation)
        dzz = dh * (h_prev - hh) * self._gate_derivative(z, recurrent_activation)
        dr = dhh * hz[:, 2 * u:] * self._gate_derivative(r, recurrent_activation)
        xp = self.xp
        dxz = xp.concatenate([dzz, dr, dhh], axis=1).astype(gates.dtype, copy=False)
        dhz = xp.concatenate([dzz, dr, dhh * r], axis=1).astype(gates.dtype, copy=False)
        return _write_out(out, (dxz, dhz, dh * z))

    def _gate(self, x, name):
        """A gate activation (tanh/sigmoid/relu/linear/hard_sigmoid) of a new array."""
        if name == "sigmoid":
            return self.sigmoid(x)
        if name == "tanh":
            return self.xp.tanh(x)
        if name == "relu":
            return self.xp.maximum(x, 0)
        if name == "linear":
            return x.copy()
        if name == "hard_sigmoid":  # Keras 3: relu6(x + 3) / 6
            return (self.xp.clip(x + 3, 0, 6) * (1 / 6)).astype(x.dtype, copy=False)
        raise ValueError(f"recurrent gates: activation must be one of {_GATE_ACTIVATIONS}. "
                         f"Received: {name!r}")

    def _gate_derivative(self, y, name):
        """The derivative of a gate activation from its output ``y``."""
        if name == "sigmoid":
            return y * (1 - y)
        if name == "tanh":
            return 1 - y * y
        if name == "relu":
            return (y > 0).astype(y.dtype)
        if name == "hard_sigmoid":
            return (((y > 0) & (y < 1)) * (1 / 6)).astype(y.dtype)
        return self.xp.ones_like(y)

    def __repr__(self):
        return f"<kerasrs backend {self.name!r}>"


_BIAS_ACTIVATIONS = ("linear", "relu", "sigmoid", "tanh")
_GATE_ACTIVATIONS = ("tanh", "sigmoid", "relu", "linear", "hard_sigmoid")


def _window_out(padded, window, strides, dilation):
    """Output size per spatial axis of a sliding window over a padded input."""
    return tuple((n - ((k - 1) * d + 1)) // s + 1
                 for n, k, s, d in zip(padded, window, strides, dilation))


def _write_out(out, values):
    """``values`` as a tuple, copied into the ``out`` arrays when given."""
    if out is None:
        return tuple(values)
    for o, v in zip(out, values):
        o[...] = v
    return tuple(out)


_SQRT_PI = 1.7724538509055159
_TWO_OVER_SQRT_PI = 1.1283791670955126
_ERF_CF_LEVELS = 45


def _erf_series_coefficients(n=30):
    """``2^k / (2k+1)!!`` for k = n-1 ... 0 (highest first, for Horner)."""
    coeffs = [1.0]
    for k in range(1, n):
        coeffs.append(coeffs[-1] * 2.0 / (2 * k + 1))
    return coeffs[::-1]


_ERF_SERIES = _erf_series_coefficients()


def numpy_dtype(dtype):
    """The NumPy dtype for a name or dtype object; "bfloat16" comes from ml_dtypes."""
    if isinstance(dtype, str) and dtype == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype)


# -- Philox4x32-10, vectorized over uint64 arrays holding 32-bit words ----------------------------
_MASK32 = np.uint64(0xFFFFFFFF)
_PHILOX_M = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)


def _split64(v):
    """(low, high) 32-bit words of a non-negative int below 2**64."""
    v = int(v)
    if not 0 <= v < 2 ** 64:
        raise ValueError(f"Philox seeds and offsets must be in [0, 2**64). Received: {v}")
    return v & 0xFFFFFFFF, v >> 32


def dropout_threshold(rate):
    """The 24-bit threshold for keeping an element: ``ceil(rate * 2**24)`` (exact for rates in
    [0, 1), so ``u / 2**24 >= rate`` is decided on integers, the same on host and device)."""
    return math.ceil(rate * (1 << 24))


def philox4x32_10(xp, counter, key):
    """Philox4x32-10 (Salmon et al. 2011): four counter words (uint64 arrays of 32-bit values)
    and two key words (ints) to four output words, elementwise."""
    x0, x1, x2, x3 = counter
    k0, k1 = key
    for _ in range(10):
        p0 = _PHILOX_M[0] * x0  # 32 x 32 -> 64-bit products, exact in uint64
        p1 = _PHILOX_M[1] * x2
        x0, x1, x2, x3 = ((p1 >> np.uint64(32)) ^ x1 ^ np.uint64(k0), p1 & _MASK32,
                          (p0 >> np.uint64(32)) ^ x3 ^ np.uint64(k1), p0 & _MASK32)
        k0, k1 = (k0 + _PHILOX_W[0]) & 0xFFFFFFFF, (k1 + _PHILOX_W[1]) & 0xFFFFFFFF
    return x0, x1, x2, x3
