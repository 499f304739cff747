"""Multi-tensor optimizer steps (Adam/AdamW/AMSGrad and SGD), in place over lists of arrays: the
NumPy twin, the numba kernels and the CUDA launcher of ``optimizer.cu``. One call updates every
variable of a model.

Keras 3's rules, term for term in every version, so float64 results agree to rounding. Weight
decay is not here: the optimizer applies it to the variables first
(`kerasrs.optimizers.Optimizer`), and Adam's bias correction arrives folded into ``alpha``,
computed once per step by `kerasrs.optimizers.Adam`.
"""

import numpy as np

from kerasrs.backend import cpu_threads
from kerasrs.backend.kernels import cuda
from kerasrs.backend.kernels.cpu import flat_ok, kernel, usable
from kerasrs.backend.kernels.cuda import all_contiguous, check, float_type, fusable

CUDA = cuda.each_float("adam_update", "sgd_update")


class Twin:
    """The reference versions (methods of `kerasrs.backend.base.Backend`)."""

    def adam_update(self, params, grads, ms, vs, alpha, beta_1, beta_2, epsilon, v_hats=None):
        """One Adam step over lists of arrays, in place (Kingma & Ba 2015, Algorithm 1, "epsilon
        hat" form), Keras 3's rule::

            m = m + (1 - beta_1) * (g - m)
            v = v + (1 - beta_2) * (g**2 - v)
            v_hat = max(v_hat, v); v = v_hat                    (amsgrad: if v_hats given)
            w = w - alpha * m / (sqrt(v) + epsilon)

        Args:
            params, grads, ms, vs: lists of same-shape float arrays (params, their gradients,
                first and second moments); ``params``, ``ms`` and ``vs`` are updated in place.
            alpha: the step size with the bias correction of step ``t``,
                ``lr * sqrt(1 - beta_2**t) / (1 - beta_1**t)``; a Python float.
            beta_1, beta_2, epsilon: Python floats.
            v_hats: None, or the amsgrad running maxima (updated in place).

        Returns:
            None.
        """
        xp = self.xp
        for i, (w, g, m, v) in enumerate(zip(params, grads, ms, vs)):
            m += (1.0 - beta_1) * (g - m)
            v += (1.0 - beta_2) * (g * g - v)
            if v_hats is not None:
                xp.maximum(v_hats[i], v, out=v_hats[i])
                v = v_hats[i]
            w -= alpha * m / (xp.sqrt(v) + epsilon)

    def sgd_update(self, params, grads, momentums, lr, momentum=0.0, nesterov=False):
        """One SGD step over lists of arrays, in place, Keras 3's rule::

            momentum == 0:  w = w - lr * g
            momentum > 0:   v = momentum * v - lr * g
                            w = w + v                            (classic)
                            w = w + momentum * v - lr * g        (nesterov; Sutskever et al. 2013)

        Args:
            params, grads: lists of same-shape float arrays; ``params`` updated in place.
            momentums: list of velocity arrays (updated in place), or None when momentum is 0.
            lr, momentum: Python floats; nesterov: bool.

        Returns:
            None.
        """
        for i, (w, g) in enumerate(zip(params, grads)):
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


# -- numba (flat arrays; scalars passed in the arrays' dtype) -------------------------------------
# Flat kernels slice their range first and loop from 0: a loop from a runtime ``start`` was not
# vectorized (Adam 0.71 vs 0.22 ms for 401k elements).
@kernel
def adam_range(w, g, m, v, v_hat, amsgrad, alpha, c1, c2, epsilon, start, stop):
    """Adam on elements ``start:stop`` (`Twin.adam_update`'s rule); ``c1 = 1 - beta_1``,
    ``c2 = 1 - beta_2``; with ``amsgrad`` the running maximum ``v_hat`` of ``v`` is the
    denominator (``v_hat`` unused otherwise). The flag is passed on as a constant, so each
    variant's loop is compiled (and vectorized) without the other's work."""
    if amsgrad:
        _adam_range(w, g, m, v, v_hat, True, alpha, c1, c2, epsilon, start, stop)
    else:
        _adam_range(w, g, m, v, v, False, alpha, c1, c2, epsilon, start, stop)


@kernel
def _adam_range(w, g, m, v, v_hat, amsgrad, alpha, c1, c2, epsilon, start, stop):
    w, g, m, v, v_hat = w[start:stop], g[start:stop], m[start:stop], v[start:stop], \
        v_hat[start:stop]
    for i in range(w.size):
        gi = g[i]
        mi = m[i] + c1 * (gi - m[i])
        vi = v[i] + c2 * (gi * gi - v[i])
        m[i] = mi
        v[i] = vi
        if amsgrad:
            vi = max(v_hat[i], vi)
            v_hat[i] = vi
        w[i] = w[i] - alpha * mi / (np.sqrt(vi) + epsilon)


@kernel
def sgd_range(w, g, v, lr, momentum, nesterov, start, stop):
    w, g, v = w[start:stop], g[start:stop], v[start:stop]
    for i in range(w.size):
        step = lr * g[i]
        if momentum == 0:
            w[i] = w[i] - step
        else:
            vi = momentum * v[i] - step
            v[i] = vi
            w[i] = w[i] + (momentum * vi - step if nesterov else vi)


class Cpu:
    """`NumpyBackend`'s compiled versions: one `cpu_threads.split_many` over all variables;
    a variable the kernels do not take (float16/bfloat16, not C-contiguous) gets the twin."""

    def adam_update(self, params, grads, ms, vs, alpha, beta_1, beta_2, epsilon, v_hats=None):
        items, rest = [], []  # (kernel, args, size) for one split; the twin's variables
        adam = None
        for i, (w, g, m, v) in enumerate(zip(params, grads, ms, vs)):
            v_hat = v_hats[i] if v_hats is not None else v
            if not flat_ok(w, m, v, v_hat) or not usable(w):
                rest.append(i)
                continue
            adam = adam or adam_range.compiled()
            f = w.dtype.type  # scalars in the arrays' dtype: float32 stays float32 (and SIMD)
            g = np.ascontiguousarray(g, dtype=w.dtype)
            flat = [a.reshape(-1) for a in (w, g, m, v, v_hat)]
            items.append((adam, (*flat, v_hats is not None, f(alpha), f(1.0 - beta_1),
                                 f(1.0 - beta_2), f(epsilon)), w.size))
        cpu_threads.split_many(items, work_per_item=4)
        if rest:
            pick = lambda arrays: None if arrays is None else [arrays[i] for i in rest]
            super().adam_update(pick(params), pick(grads), pick(ms), pick(vs), alpha, beta_1,
                                beta_2, epsilon, pick(v_hats))

    def sgd_update(self, params, grads, momentums, lr, momentum=0.0, nesterov=False):
        items, rest = [], []
        sgd = None
        for i, (w, g) in enumerate(zip(params, grads)):
            v = momentums[i] if momentum else w  # (w: unused placeholder of the right type)
            if not flat_ok(w, v) or not usable(w):
                rest.append(i)
                continue
            sgd = sgd or sgd_range.compiled()
            f = w.dtype.type
            g = np.ascontiguousarray(g, dtype=w.dtype)
            items.append((sgd, (w.reshape(-1), g.reshape(-1), v.reshape(-1), f(lr), f(momentum),
                                bool(nesterov)), w.size))
        cpu_threads.split_many(items, work_per_item=2)
        if rest:
            super().sgd_update([params[i] for i in rest], [grads[i] for i in rest],
                               [momentums[i] for i in rest] if momentum else None, lr, momentum,
                               nesterov)


# -- CUDA: each block owns a chunk of one tensor, found through address tables ------------------
def _address(a):
    """Device (or host) address of an array's first element."""
    data = a.data
    return data.ptr if hasattr(data, "ptr") else a.ctypes.data


class Launch:
    """The launchers of ``optimizer.cu`` (methods of `kerasrs.backend.kernels.Launcher`)."""

    def _tables(self, lists, chunk):
        """Address tables of ``lists`` (lists of arrays), then sizes, chunk tensor ids and chunk
        starts, uploaded as one uint64 array; returns its views and the number of chunks."""
        sizes = [a.size for a in lists[0]]
        counts = [-(-s // chunk) for s in sizes]
        ids = [k for k, c in enumerate(counts) for _ in range(c)]
        starts = [i * chunk for c in counts for i in range(c)]
        host = np.array([_address(a) for arrays in lists for a in arrays] + sizes + ids + starts,
                        np.uint64)
        table = self.upload(host)
        m, k = len(sizes), len(ids)
        views = [table[i * m:(i + 1) * m] for i in range(len(lists) + 1)]
        rest = (len(lists) + 1) * m
        return views + [table[rest:rest + k], table[rest + k:]], k

    def _check_lists(self, op, params, **lists):
        """The C type of ``params`` after checking every list matches them array by array."""
        if not params:
            return None
        t = float_type(op, "params[0]", params[0])
        for name, arrays in {"params": params, **lists}.items():
            if arrays is None:
                continue
            if len(arrays) != len(params):
                raise ValueError(f"{op}: {len(arrays)} {name} for {len(params)} params.")
            for i, (a, w) in enumerate(zip(arrays, params)):
                check(op, f"{name}[{i}]", a, dtype=params[0].dtype, shape=w.shape)
        return t

    def adam_update(self, params, grads, ms, vs, alpha, beta_1, beta_2, epsilon, v_hats=None,
                    chunk=65536):
        op = "adam_update"
        t = self._check_lists(op, params, grads=grads, ms=ms, vs=vs, v_hats=v_hats)
        if t is None or not any(p.size for p in params):
            return
        cast = params[0].dtype.type
        lists = [params, grads, ms, vs, vs if v_hats is None else v_hats]
        (pw, pg, pm, pv, ph, sizes, ids, starts), blocks = self._tables(lists, chunk)
        self.launch("optimizer", f"adam_update<{t}>", (blocks,), (self.max_block,),
                    (pw, pg, pm, pv, ph, sizes, ids, starts, np.int64(chunk),
                     cast(1.0 - beta_1), cast(1.0 - beta_2), cast(epsilon), cast(alpha),
                     np.int32(v_hats is not None)))

    def sgd_update(self, params, grads, momentums, lr, momentum=0.0, nesterov=False,
                   chunk=65536):
        op = "sgd_update"
        t = self._check_lists(op, params, grads=grads, momentums=momentums if momentum else None)
        if t is None or not any(p.size for p in params):
            return
        cast = params[0].dtype.type
        lists = [params, grads, momentums if momentum else params]
        (pw, pg, pm, sizes, ids, starts), blocks = self._tables(lists, chunk)
        self.launch("optimizer", f"sgd_update<{t}>", (blocks,), (self.max_block,),
                    (pw, pg, pm, sizes, ids, starts, np.int64(chunk), cast(lr), cast(momentum),
                     np.int32(bool(nesterov))))


class Cuda:
    """`CupyBackend`'s versions, falling back to `Twin` for mixed or other dtypes and for
    parameters or slots that are not C-contiguous (the kernels update them in place)."""

    def adam_update(self, params, grads, ms, vs, alpha, beta_1, beta_2, epsilon, v_hats=None):
        in_place = list(params) + list(ms) + list(vs) + list(v_hats or [])
        if not fusable(*in_place, *grads) or not all_contiguous(in_place):
            return super().adam_update(params, grads, ms, vs, alpha, beta_1, beta_2, epsilon,
                                       v_hats)
        self.kernels.adam_update(params, [self._c(g) for g in grads], ms, vs, alpha, beta_1,
                                 beta_2, epsilon, v_hats)

    def sgd_update(self, params, grads, momentums, lr, momentum=0.0, nesterov=False):
        in_place = list(params) + (list(momentums) if momentum else [])
        if not fusable(*in_place, *grads) or not all_contiguous(in_place):
            return super().sgd_update(params, grads, momentums, lr, momentum, nesterov)
        self.kernels.sgd_update(params, [self._c(g) for g in grads], momentums, lr, momentum,
                                nesterov)
