"""The CUDA sources of the CuPy backend's kernels, as text (no CuPy import, no GPU needed).

Each ``cuda/<name>.cu`` file holds templated ``__global__`` kernels; ``FILES`` lists, per file,
the template instantiations the launchers use (the ``name_expressions`` given to
``cupy.RawModule``). ``source(name)`` is what every compiler sees, NVRTC on a GPU machine and
NVRTC/g++ in the CPU checks: ``cuda/common.cuh``, then a ``#line 1`` directive so messages
report the ``.cu`` file's own line numbers, then the file.
"""

import functools
from importlib import resources

FLOATS = ("float", "double")


def _each_float(*kernels):
    return tuple(f"{k}<{t}>" for k in kernels for t in FLOATS)


FILES = {
    "softmax_ce": _each_float("softmax_ce_sparse_fwd", "softmax_ce_dense_fwd",
                              "softmax_ce_sparse_bwd", "softmax_ce_dense_bwd"),
    "dropout": ("philox4x32_10",) + _each_float("dropout_mask"),
    "embedding": _each_float("embedding_grad"),
}


@functools.lru_cache(maxsize=None)
def read(filename):
    """Text of ``filename`` (e.g. "softmax_ce.cu") from the ``kerasrs/backend/cuda`` package data."""
    return resources.files("kerasrs.backend").joinpath("cuda", filename).read_text()


def source(name, text=None):
    """Full source of kernel file ``name`` (a key of FILES); ``text`` replaces the file's text."""
    body = read(f"{name}.cu") if text is None else text
    return f'{read("common.cuh")}\n#line 1 "{name}.cu"\n{body}'

# One-liners stay ``cupy.ElementwiseKernel``s: ``name: (in_params, out_params, body)`` in its
# syntax, ``T`` the float type. The NumPy twin is the Backend method named after "kerasrs_".
ELEMENTWISE = {
    # relu'(0) = 0, as PyTorch: the gradient flows only where the output is positive.
    "kerasrs_relu_grad": ("T y, T gy", "T gx", "gx = y > (T)0 ? gy : (T)0"),
    # Branch on the sign so exp never overflows.
    "kerasrs_sigmoid": (
        "T x",
        "T y",
        "double e = exp(-fabs((double)x)); y = x >= (T)0 ? (T)(1 / (1 + e)) : (T)(e / (1 + e))",
    ),
    # CUDA's erf is accurate to 2 ulp in float64 (CUDA C Programming Guide, math functions).
    "kerasrs_erf": ("T x", "T y", "y = erf(x)"),
}
