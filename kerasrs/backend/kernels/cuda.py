"""The CUDA side of the kernel families: the source every compiler sees, the launcher base class,
and the checks and helpers the launchers and `CupyBackend`'s overrides share. No CuPy import:
the array module and the module loader are passed in (CuPy on a GPU; NumPy and a g++-built CPU
emulation of the same sources in the tests, so the launch code is exercised without a GPU).

Each family's ``<name>.cu`` holds templated ``__global__`` kernels; the family module lists the
template instantiations its launchers use (``CUDA``, the ``name_expressions`` given to
``cupy.RawModule``). `source` is what every compiler sees, NVRTC on a GPU machine and NVRTC/g++
in the CPU checks: the activation codes (`activations.cuda_defines`), ``common.cuh``, then the
file, each after a ``#line 1`` directive naming it, so messages report each file's own name and
line numbers.
"""

import functools
from importlib import resources

import numpy as np

from kerasrs.backend.kernels import activations

FLOATS = ("float", "double")
CTYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
KERNEL_DTYPES = tuple(CTYPES)  # the dtypes the kernels take
OPTIONS = ("-std=c++17",)  # NVRTC options, on a GPU and in the NVRTC checks


def each_float(*kernels):
    """The float and double instantiation of each templated kernel: ``"k<float>", ...``."""
    return tuple(f"{k}<{t}>" for k in kernels for t in FLOATS)


@functools.cache
def read(filename):
    """Text of ``filename`` (e.g. "softmax_ce.cu") from the kerasrs.backend.kernels package."""
    return resources.files("kerasrs.backend.kernels").joinpath(filename).read_text()


def source(name, text=None, common=None):
    """Full source of kernel file ``name`` (``<name>.cu``); ``text`` and ``common`` replace the
    texts of the file and of ``common.cuh`` (the tests plant errors that way)."""
    body = read(f"{name}.cu") if text is None else text
    common = read("common.cuh") if common is None else common
    return (f'#line 1 "activations.py"\n{activations.cuda_defines()}\n'
            f'#line 1 "common.cuh"\n{common}\n#line 1 "{name}.cu"\n{body}')


class LauncherBase:
    """Launches over one module loader and array module; `kernels.Launcher` adds each family's
    launchers (``Launch`` classes).

    A launcher validates every argument (dtype, rank, shape, C-contiguity), returns early on
    empty input, allocates outputs with its array module, picks the grid, casts each scalar to
    the exact C type of the kernel parameter and launches through
    ``module.get_function(expr)(grid, block, args)``, CuPy's ``RawKernel`` calling convention.

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

    def _column_grid(self, n, c):
        """(grid, block) of a column reduction over (n, c): 32 columns x 8 row lanes per block,
        column tiles x row slices of at least 64 rows."""
        tiles = -(-c // 32)
        return (tiles, max(1, min(-(-n // 64), self.max_grid // tiles))), (32, 8)

    def upload(self, host):
        """A device copy of a small host array (CupyBackend replaces it by a pinned async copy)."""
        return self.xp.asarray(host)


def check(op, name, a, ndim=None, dtype=None, shape=None):
    """Raise unless ``a`` has rank ``ndim``, ``dtype`` (a dtype or a kind letter), ``shape``
    and is C-contiguous: a kernel reads raw memory, so a mismatch would be silent garbage."""
    if dtype is not None:
        ok = a.dtype.kind in dtype if isinstance(dtype, str) else a.dtype == dtype
        if not ok:
            want = f"kind {dtype!r}" if isinstance(dtype, str) else np.dtype(dtype).name
            raise TypeError(f"{op}: `{name}` has dtype {a.dtype}; expected {want}.")
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{op}: `{name}` must have rank {ndim}. Received shape {a.shape}.")
    if shape is not None and tuple(a.shape) != tuple(shape):
        raise ValueError(f"{op}: `{name}` must have shape {tuple(shape)}. Received {a.shape}.")
    if not a.flags.c_contiguous:
        raise ValueError(f"{op}: `{name}` must be C-contiguous (shape {a.shape}, strides "
                         f"{a.strides}).")


def float_type(op, name, a):
    """The C type ("float" or "double") of ``a``'s dtype; TypeError for another dtype."""
    if a.dtype not in CTYPES:
        raise TypeError(f"{op}: `{name}` must be float32 or float64 for the CUDA kernel. "
                        f"Received dtype={a.dtype}.")
    return CTYPES[a.dtype]


def pow2_block(n, max_block):
    """Threads per block for a row reduction: a power of two, 32 <= b <= max_block, ~n."""
    b = 32
    while b < n and b < max_block:
        b *= 2
    return b


# -- helpers of CupyBackend's overrides ---------------------------------------------------------
def fusable(*arrays):
    """True if every array (None skipped) is float32, or every one float64."""
    dts = {a.dtype for a in arrays if a is not None}
    return len(dts) == 1 and dts.pop() in CTYPES


def all_contiguous(arrays):
    return all(a.flags.c_contiguous for a in arrays)


def copy_back(a, working):
    """Write an in-place kernel's result into ``a`` when it worked on a contiguous copy."""
    if working is not a:
        a[...] = working
