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


@functools.lru_cache(maxsize=None)
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
        sparse = labels.ndim == 1
        if sparse:
            _check(op, "labels", labels, dtype="iu", shape=(n,))
            labels = labels.astype(np.int32, copy=False)
        else:
            _check(op, "labels", labels, dtype=logits.dtype, shape=(n, c))
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
        sparse = labels.ndim == 1
        if sparse:
            _check(op, "labels", labels, dtype="iu", shape=(n,))
            labels = labels.astype(np.int32, copy=False)
        else:
            _check(op, "labels", labels, dtype=probs.dtype, shape=(n, c))
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
