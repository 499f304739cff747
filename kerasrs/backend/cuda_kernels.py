"""Launchers of the handwritten CUDA kernels (``kerasrs/backend/cuda/*.cu``).

`Kernels` validates every argument (dtype, rank, shape, C-contiguity), returns early on empty
input, allocates outputs with its array module, picks the grid, casts each scalar to the exact
C type of the kernel parameter and launches through ``module.get_function(expr)(grid, block,
args)``, CuPy's ``RawKernel`` calling convention. The module comes from a loader:
``cupy.RawModule`` on a GPU (`cupy_loader`), or the g++-built CPU emulation of the same sources
in the tests, so the launch code below is exercised without a GPU too.

Each launcher has a NumPy twin, the method of the same name in ``base.Backend``.
"""

import functools

import numpy as np

from kerasrs.backend import base, cuda_sources

CTYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}


def cupy_loader(name):
    """The compiled ``cupy.RawModule`` for kernel file ``name`` (CuPy caches the binaries)."""
    import cupy  # reached only through the CuPy backend

    return cupy.RawModule(code=cuda_sources.source(name), options=("-std=c++17",),
                          name_expressions=cuda_sources.FILES[name])


@functools.cache
def elementwise(name):
    """The ``cupy.ElementwiseKernel`` called ``name`` (a key of ``cuda_sources.ELEMENTWISE``)."""
    import cupy

    in_params, out_params, body = cuda_sources.ELEMENTWISE[name]
    return cupy.ElementwiseKernel(in_params, out_params, body, name)


def _check(op, name, a, ndim=None, dtype=None, shape=None):
    """Raise unless ``a`` has rank ``ndim``, ``dtype`` (a dtype or a kind letter), ``shape``
    and is C-contiguous: a kernel reads raw memory, so a mismatch would be silent garbage."""
    if dtype is not None:
        ok = a.dtype.kind in dtype if isinstance(dtype, str) else a.dtype == dtype
        if not ok:
            raise TypeError(f"{op}: `{name}` has dtype {a.dtype}; expected "
                            f"{dtype if not isinstance(dtype, str) else 'kind ' + dtype!r}.")
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{op}: `{name}` must have rank {ndim}. Received shape {a.shape}.")
    if shape is not None and tuple(a.shape) != tuple(shape):
        raise ValueError(f"{op}: `{name}` must have shape {tuple(shape)}. Received {a.shape}.")
    if not a.flags.c_contiguous:
        raise ValueError(f"{op}: `{name}` must be C-contiguous (shape {a.shape}, strides "
                         f"{a.strides}).")


def _float(op, name, a):
    if a.dtype not in CTYPES:
        raise TypeError(f"{op}: `{name}` must be float32 or float64 for the CUDA kernel. "
                        f"Received dtype={a.dtype}.")
    return CTYPES[a.dtype]


def _labels(op, labels, dtype, n, c):
    """Checked ``(labels, sparse)`` for a softmax cross-entropy over (n, c) scores: int32 class
    ids of shape (n,) (sparse) or ``dtype`` one-hot rows of shape (n, c)."""
    sparse = labels.ndim == 1
    if sparse:
        _check(op, "labels", labels, dtype="iu", shape=(n,))
        return labels.astype(np.int32, copy=False), sparse
    _check(op, "labels", labels, dtype=dtype, shape=(n, c))
    return labels, sparse


def _pow2_block(n, max_block):
    """Threads per block for a row reduction: a power of two, 32 <= b <= max_block, ~n."""
    b = 32
    while b < n and b < max_block:
        b *= 2
    return b


class Kernels:
    """The named kernels over one module loader and array module.

    Args:
        xp: array module of inputs and outputs (cupy; numpy for the CPU emulation).
        loader: ``loader(file_name)`` -> module with ``get_function(name_expression)``.
        max_block: most threads per block (at most 256, ``KR_MAX_BLOCK`` in common.cuh).
        max_grid: most blocks of a grid-stride launch (the CPU tests lower it to get
            several passes of the loop).
    """

    def __init__(self, xp, loader, max_block=256, max_grid=4096):
        if not 32 <= max_block <= 256 or max_block & (max_block - 1):
            raise ValueError(f"max_block must be a power of two in [32, 256]. Got {max_block}")
        self.xp, self._loader, self.max_block, self.max_grid = xp, loader, max_block, max_grid
        self._modules = {}

    def launch(self, file, expr, grid, block, args):
        module = self._modules.get(file)
        if module is None:
            module = self._modules[file] = self._loader(file)
        module.get_function(expr)(grid, block, args)

    def _grid(self, total):
        """(grid, block) for a grid-stride loop over ``total`` items."""
        block = self.max_block
        return (min(-(-total // block), self.max_grid),), (block,)

    # -- softmax cross-entropy ---------------------------------------------------------------
    def softmax_cross_entropy(self, logits, labels):
        op = "softmax_cross_entropy"
        _check(op, "logits", logits, ndim=2)
        t = _float(op, "logits", logits)
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
                    (_pow2_block(c, self.max_block),),
                    (logits, labels, loss, probs, np.int32(n), np.int32(c)))
        return loss, probs

    def softmax_cross_entropy_grad(self, probs, labels, gloss):
        op = "softmax_cross_entropy_grad"
        _check(op, "probs", probs, ndim=2)
        t = _float(op, "probs", probs)
        n, c = probs.shape
        _check(op, "gloss", gloss, dtype=probs.dtype, shape=(n,))
        labels, sparse = _labels(op, labels, probs.dtype, n, c)
        out = self.xp.empty_like(probs)
        if out.size == 0:
            return out
        kind = "sparse" if sparse else "dense"
        self.launch("softmax_ce", f"softmax_ce_{kind}_bwd<{t}>", (n,),
                    (_pow2_block(c, self.max_block),),
                    (probs, labels, gloss, out, np.int32(n), np.int32(c)))
        return out

    # -- dropout -----------------------------------------------------------------------------
    def dropout_mask(self, shape, rate, seed, offset=0, dtype="float32"):
        dtype = np.dtype(dtype)
        t = _float("dropout_mask", "dtype", np.empty(0, dtype))
        if not 0 <= rate < 1:
            raise ValueError(f"dropout_mask: `rate` must be in [0, 1). Received: rate={rate!r}")
        base._split64(seed), base._split64(offset)  # both must fit in 64 bits
        out = self.xp.empty(tuple(shape), dtype)
        if out.size == 0:
            return out
        grid, block = self._grid(-(-out.size // 4))
        self.launch("dropout", f"dropout_mask<{t}>", grid, block,
                    (out, np.int64(out.size), np.uint64(seed), np.uint64(offset),
                     np.uint32(base.dropout_threshold(rate)), dtype.type(1 / (1 - rate))))
        return out

    def philox4x32_10(self, counters, keys):
        """Raw Philox4x32-10 blocks: counters (n, 4) and keys (n, 2) uint32 -> (n, 4) uint32."""
        _check("philox4x32_10", "counters", counters, ndim=2, dtype=np.uint32)
        n = counters.shape[0]
        _check("philox4x32_10", "counters", counters, shape=(n, 4))
        _check("philox4x32_10", "keys", keys, dtype=np.uint32, shape=(n, 2))
        out = self.xp.empty((n, 4), np.uint32)
        if n:
            self.launch("dropout", "philox4x32_10", (-(-n // 32),), (32,),
                        (counters, keys, out, np.int32(n)))
        return out

    # -- embedding gradient ------------------------------------------------------------------
    def embedding_grad(self, indices, gy, input_dim):
        op = "embedding_grad"
        _check(op, "indices", indices, dtype="iu")
        _check(op, "gy", gy)
        t = _float(op, "gy", gy)
        if tuple(gy.shape[:-1]) != tuple(indices.shape) or gy.ndim == 0:
            raise ValueError(f"{op}: `gy` must have shape indices.shape + (dim,) = "
                             f"{indices.shape} + (dim,). Received {gy.shape}.")
        dim = gy.shape[-1]
        out = self.xp.zeros((int(input_dim), dim), gy.dtype)
        if gy.size == 0 or out.size == 0:
            return out
        grid, block = self._grid(gy.size)
        self.launch("embedding", f"embedding_grad<{t}>", grid, block,
                    (indices.astype(np.int32, copy=False), gy, out, np.int64(gy.size),
                     np.int32(dim), np.int32(input_dim)))
        return out

    # -- bias + activation -------------------------------------------------------------------
    def bias_act(self, x, bias, activation="linear", out=None):
        op = "bias_act"
        _check(op, "x", x, ndim=2)
        t = _float(op, "x", x)
        _n, c = x.shape
        act = _activation(op, activation)
        if bias is not None:
            _check(op, "bias", bias, dtype=x.dtype, shape=(c,))
        y = self.xp.empty_like(x) if out is None else out
        _check(op, "out", y, dtype=x.dtype, shape=x.shape)
        if x.size:
            grid, block = self._grid(x.size)
            self.launch("bias_act", f"bias_act<{t}>", grid, block,
                        (x, x if bias is None else bias, y, np.int64(x.size), np.int32(c),
                         np.int32(bias is not None), np.int32(act)))
        return y

    def bias_act_grad(self, y, gy, activation="linear", need_bias=True, out=None):
        op = "bias_act_grad"
        _check(op, "y", y, ndim=2)
        t = _float(op, "y", y)
        n, c = y.shape
        _check(op, "gy", gy, dtype=y.dtype, shape=y.shape)
        act = _activation(op, activation)
        gx = self.xp.empty_like(gy) if out is None else out
        _check(op, "out", gx, dtype=y.dtype, shape=y.shape)
        gbias = self.xp.zeros((c,), y.dtype) if need_bias else None
        if y.size:
            tiles = -(-c // 32)
            slices = max(1, min(-(-n // 64), self.max_grid // tiles))
            self.launch("bias_act", f"bias_act_grad<{t}>", (tiles, slices), (32, 8),
                        (y, gy, gx, gx if gbias is None else gbias, np.int32(n), np.int32(c),
                         np.int32(act), np.int32(need_bias)))
        return gx, gbias

    # -- im2col / col2im / max pooling ---------------------------------------------------------
    def im2col(self, x, window, strides, dilation, padding, out=None):
        op = "im2col"
        _check(op, "x", x)
        t = _float(op, "x", x)
        g = _geometry(op, x.shape, window, strides, dilation, padding)
        rows = x.shape[0] * g["o1"] * g["o2"] * g["o3"]
        shape = (rows, g["k1"] * g["k2"] * g["k3"] * g["c"])
        cols = self.xp.empty(shape, x.dtype) if out is None else out
        _check(op, "out", cols, dtype=x.dtype, shape=shape)
        if cols.size:
            grid, block = self._grid(cols.size)
            self.launch("im2col", f"im2col<{t}>", grid, block,
                        (x, cols, np.int64(cols.size), *_ints(g)))
        return cols

    def col2im(self, cols, x_shape, window, strides, dilation, padding):
        op = "col2im"
        _check(op, "cols", cols, ndim=2)
        t = _float(op, "cols", cols)
        g = _geometry(op, x_shape, window, strides, dilation, padding)
        rows = x_shape[0] * g["o1"] * g["o2"] * g["o3"]
        _check(op, "cols", cols, shape=(rows, g["k1"] * g["k2"] * g["k3"] * g["c"]))
        x = self.xp.empty(tuple(x_shape), cols.dtype)
        if x.size:
            grid, block = self._grid(x.size)
            self.launch("im2col", f"col2im<{t}>", grid, block,
                        (cols, x, np.int64(x.size), *_ints(g)))
        return x

    def max_pool(self, x, pool_size, strides, padding):
        op = "max_pool"
        _check(op, "x", x)
        t = _float(op, "x", x)
        g = _geometry(op, x.shape, pool_size, strides, (1,) * len(pool_size), padding)
        outs = tuple(g[f"o{a + 1}"] for a in range(len(pool_size)))
        y = self.xp.empty((x.shape[0], *outs, x.shape[-1]), x.dtype)
        argmax = self.xp.empty(y.shape, np.int32)
        if y.size:
            if np.prod(x.shape[1:]) >= 2 ** 31:
                raise ValueError(f"{op}: a sample of {x.shape[1:]} has too many elements for "
                                 "int32 argmax indices.")
            grid, block = self._grid(y.size)
            ints = _ints(g)
            del ints[10:13]  # pooling has no dilation
            self.launch("max_pool", f"max_pool<{t}>", grid, block,
                        (x, y, argmax, np.int64(y.size), *ints))
        return y, argmax

    def max_pool_grad(self, gy, argmax, x_shape):
        op = "max_pool_grad"
        _check(op, "gy", gy)
        t = _float(op, "gy", gy)
        _check(op, "argmax", argmax, dtype=np.int32, shape=gy.shape)
        if len(x_shape) != gy.ndim or x_shape[0] != gy.shape[0]:
            raise ValueError(f"{op}: x_shape {tuple(x_shape)} does not match gy {gy.shape}.")
        gx = self.xp.zeros(tuple(x_shape), gy.dtype)
        if gy.size and gx.size:
            grid, block = self._grid(gy.size)
            self.launch("max_pool", f"max_pool_grad<{t}>", grid, block,
                        (gy, argmax, gx, np.int64(gy.size), np.int64(gy.size // gy.shape[0]),
                         np.int64(gx.size // gx.shape[0])))
        return gx

    # -- layer normalization -----------------------------------------------------------------
    def layer_norm(self, x, gamma, beta, epsilon):
        op = "layer_norm"
        _check(op, "x", x, ndim=2)
        t = _float(op, "x", x)
        n, d = x.shape
        for name, p in (("gamma", gamma), ("beta", beta)):
            if p is not None:
                _check(op, name, p, dtype=x.dtype, shape=(d,))
        y = self.xp.empty_like(x)
        mean, rstd = self.xp.empty((n,), x.dtype), self.xp.empty((n,), x.dtype)
        if x.size:
            self.launch("layer_norm", f"layer_norm_fwd<{t}>", (n,),
                        (_pow2_block(d, self.max_block),),
                        (x, x if gamma is None else gamma, x if beta is None else beta, y, mean,
                         rstd, np.int32(n), np.int32(d), x.dtype.type(epsilon),
                         np.int32(gamma is not None), np.int32(beta is not None)))
        return y, mean, rstd

    def layer_norm_grad(self, gy, x, gamma, mean, rstd):
        op = "layer_norm_grad"
        _check(op, "x", x, ndim=2)
        t = _float(op, "x", x)
        n, d = x.shape
        _check(op, "gy", gy, dtype=x.dtype, shape=(n, d))
        if gamma is not None:
            _check(op, "gamma", gamma, dtype=x.dtype, shape=(d,))
        _check(op, "mean", mean, dtype=x.dtype, shape=(n,))
        _check(op, "rstd", rstd, dtype=x.dtype, shape=(n,))
        gx = self.xp.empty_like(x)
        ggamma, gbeta = self.xp.zeros((d,), x.dtype), self.xp.zeros((d,), x.dtype)
        if x.size:
            self.launch("layer_norm", f"layer_norm_bwd<{t}>", (n,),
                        (_pow2_block(d, self.max_block),),
                        (gy, x, x if gamma is None else gamma, mean, rstd, gx, np.int32(n),
                         np.int32(d), np.int32(gamma is not None)))
            tiles = -(-d // 32)
            slices = max(1, min(-(-n // 64), self.max_grid // tiles))
            self.launch("layer_norm", f"layer_norm_bwd_params<{t}>", (tiles, slices), (32, 8),
                        (gy, x, mean, rstd, ggamma, gbeta, np.int32(n), np.int32(d)))
        return gx, ggamma, gbeta

    # -- multi-tensor optimizer updates ------------------------------------------------------
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

    def upload(self, host):
        """A device copy of a small host array (CupyBackend replaces it by a pinned async copy)."""
        return self.xp.asarray(host)

    def _check_lists(self, op, params, **lists):
        """The C type of ``params`` after checking every list matches them array by array."""
        if not params:
            return None
        t = _float(op, "params[0]", params[0])
        for name, arrays in {"params": params, **lists}.items():
            if arrays is None:
                continue
            if len(arrays) != len(params):
                raise ValueError(f"{op}: {len(arrays)} {name} for {len(params)} params.")
            for i, (a, w) in enumerate(zip(arrays, params)):
                _check(op, f"{name}[{i}]", a, dtype=params[0].dtype, shape=w.shape)
        return t

    def adam_update(self, params, grads, ms, vs, lr, beta_1, beta_2, epsilon, step,
                    weight_decay=0.0, v_hats=None, chunk=65536):
        op = "adam_update"
        t = self._check_lists(op, params, grads=grads, ms=ms, vs=vs, v_hats=v_hats)
        if t is None or not any(p.size for p in params):
            return
        cast = params[0].dtype.type
        alpha = lr * (1.0 - beta_2 ** step) ** 0.5 / (1.0 - beta_1 ** step)
        lists = [params, grads, ms, vs, vs if v_hats is None else v_hats]
        (pw, pg, pm, pv, ph, sizes, ids, starts), blocks = self._tables(lists, chunk)
        self.launch("optimizer", f"adam_update<{t}>", (blocks,), (self.max_block,),
                    (pw, pg, pm, pv, ph, sizes, ids, starts, np.int64(chunk),
                     cast(1.0 - beta_1), cast(1.0 - beta_2), cast(epsilon), cast(alpha),
                     cast(weight_decay * lr), np.int32(v_hats is not None)))

    def sgd_update(self, params, grads, momentums, lr, momentum=0.0, nesterov=False,
                   weight_decay=0.0, chunk=65536):
        op = "sgd_update"
        t = self._check_lists(op, params, grads=grads, momentums=momentums if momentum else None)
        if t is None or not any(p.size for p in params):
            return
        cast = params[0].dtype.type
        lists = [params, grads, momentums if momentum else params]
        (pw, pg, pm, sizes, ids, starts), blocks = self._tables(lists, chunk)
        self.launch("optimizer", f"sgd_update<{t}>", (blocks,), (self.max_block,),
                    (pw, pg, pm, sizes, ids, starts, np.int64(chunk), cast(lr), cast(momentum),
                     np.int32(bool(nesterov)), cast(weight_decay * lr)))

    # -- recurrent gates ---------------------------------------------------------------------
    def _gates(self, op, n_gates, gates, *others):
        _check(op, "gates", gates, ndim=2)
        t = _float(op, "gates", gates)
        n, width = gates.shape
        if width % n_gates:
            raise ValueError(f"{op}: gates width {width} is not {n_gates} * units.")
        u = width // n_gates
        for name, a, k in others:
            _check(op, name, a, dtype=gates.dtype, shape=(n, k * u))
        return t, n, u

    def lstm_gates(self, z, c_prev, activation="tanh", recurrent_activation="sigmoid"):
        op = "lstm_gates"
        t, n, u = self._gates(op, 4, z, ("c_prev", c_prev, 1))
        acts = _activation(op, activation), _activation(op, recurrent_activation)
        h, c, tc = (self.xp.empty_like(c_prev) for _ in range(3))
        if h.size:
            grid, block = self._grid(h.size)
            self.launch("rnn_gates", f"lstm_gates<{t}>", grid, block,
                        (z, c_prev, h, c, tc, np.int32(n), np.int32(u), *map(np.int32, acts)))
        return h, c, tc

    def lstm_gates_grad(self, gates, c_prev, tc, dh, dc, activation="tanh",
                        recurrent_activation="sigmoid"):
        op = "lstm_gates_grad"
        t, n, u = self._gates(op, 4, gates, ("c_prev", c_prev, 1), ("tc", tc, 1), ("dh", dh, 1),
                              ("dc", dc, 1))
        acts = _activation(op, activation), _activation(op, recurrent_activation)
        dz, dc_prev = self.xp.empty_like(gates), self.xp.empty_like(c_prev)
        if dc_prev.size:
            grid, block = self._grid(dc_prev.size)
            self.launch("rnn_gates", f"lstm_gates_grad<{t}>", grid, block,
                        (gates, c_prev, tc, dh, dc, dz, dc_prev, np.int32(n), np.int32(u),
                         *map(np.int32, acts)))
        return dz, dc_prev

    def gru_gates(self, xz, hz, h_prev, activation="tanh", recurrent_activation="sigmoid"):
        op = "gru_gates"
        t, n, u = self._gates(op, 3, xz, ("hz", hz, 3), ("h_prev", h_prev, 1))
        acts = _activation(op, activation), _activation(op, recurrent_activation)
        h = self.xp.empty_like(h_prev)
        if h.size:
            grid, block = self._grid(h.size)
            self.launch("rnn_gates", f"gru_gates<{t}>", grid, block,
                        (xz, hz, h_prev, h, np.int32(n), np.int32(u), *map(np.int32, acts)))
        return h

    def gru_gates_grad(self, gates, hz, h_prev, dh, activation="tanh",
                       recurrent_activation="sigmoid"):
        op = "gru_gates_grad"
        t, n, u = self._gates(op, 3, gates, ("hz", hz, 3), ("h_prev", h_prev, 1), ("dh", dh, 1))
        acts = _activation(op, activation), _activation(op, recurrent_activation)
        dxz, dhz, dh_prev = (self.xp.empty_like(gates), self.xp.empty_like(gates),
                             self.xp.empty_like(h_prev))
        if dh_prev.size:
            grid, block = self._grid(dh_prev.size)
            self.launch("rnn_gates", f"gru_gates_grad<{t}>", grid, block,
                        (gates, hz, h_prev, dh, dxz, dhz, dh_prev, np.int32(n), np.int32(u),
                         *map(np.int32, acts)))
        return dxz, dhz, dh_prev


ACTIVATIONS = {"linear": 0, "relu": 1, "sigmoid": 2, "tanh": 3}  # codes of common.cuh


def _activation(op, name):
    if name not in ACTIVATIONS:
        raise ValueError(f"{op}: activation must be one of {tuple(ACTIVATIONS)}. "
                         f"Received: {name!r}")
    return ACTIVATIONS[name]


def _address(a):
    """Device (or host) address of an array's first element."""
    data = a.data
    return data.ptr if hasattr(data, "ptr") else a.ctypes.data


def _geometry(op, x_shape, window, strides, dilation, padding):
    """Sizes of a channels-last window operation, padded to three spatial axes."""
    spatial = tuple(x_shape[1:-1])
    r = len(spatial)
    if not 1 <= r <= 3 or not all(len(v) == r for v in (window, strides, dilation, padding)):
        raise ValueError(f"{op}: x of shape {tuple(x_shape)} needs 1 to 3 spatial axes and one "
                         f"window/stride/dilation/padding entry per axis. Received "
                         f"window={window}, strides={strides}, dilation={dilation}, "
                         f"padding={padding}.")
    g = {"c": int(x_shape[-1])}
    for a in range(3):
        d, k, s, dl, (pb, pa) = ((spatial[a], window[a], strides[a], dilation[a], padding[a])
                                 if a < r else (1, 1, 1, 1, (0, 0)))
        o = (d + pb + pa - ((k - 1) * dl + 1)) // s + 1
        if k < 1 or s < 1 or dl < 1 or pb < 0 or pa < 0 or o < 0:
            raise ValueError(f"{op}: bad window geometry on spatial axis {a}: size {d}, window "
                             f"{k}, stride {s}, dilation {dl}, padding {(pb, pa)}.")
        g.update({f"d{a + 1}": d, f"k{a + 1}": k, f"s{a + 1}": s, f"dl{a + 1}": dl,
                  f"p{a + 1}": pb, f"o{a + 1}": o})
    return g


def _ints(g):
    """The kernels' geometry arguments, in their parameter order, as int32."""
    names = ("d1", "d2", "d3", "c", "k1", "k2", "k3", "s1", "s2", "s3", "dl1", "dl2", "dl3",
             "p1", "p2", "p3", "o1", "o2", "o3")
    return [np.int32(g[k]) for k in names]
