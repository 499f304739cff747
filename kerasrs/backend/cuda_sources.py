"""The CUDA sources of the CuPy backend's kernels, as text (no CuPy import, no GPU needed).

Each ``cuda/<name>.cu`` file holds templated ``__global__`` kernels; ``FILES`` lists, per file,
the template instantiations the launchers use (the ``name_expressions`` given to
``cupy.RawModule``). ``source(name)`` is what every compiler sees, NVRTC on a GPU machine and
NVRTC/g++ in the CPU checks: ``cuda/common.cuh`` then the file, each after a ``#line 1``
directive naming it, so messages report each file's own name and line numbers.
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
    "bias_act": _each_float("bias_act", "bias_act_grad"),
    "im2col": _each_float("im2col", "col2im"),
    "max_pool": _each_float("max_pool", "max_pool_grad"),
    "layer_norm": _each_float("layer_norm_fwd", "layer_norm_bwd", "layer_norm_bwd_params"),
    "optimizer": _each_float("adam_update", "sgd_update"),
    "rnn_gates": _each_float("lstm_gates", "lstm_gates_grad", "gru_gates", "gru_gates_grad"),
}


@functools.cache
def read(filename):
    """Text of ``filename`` (e.g. "softmax_ce.cu") from the kerasrs.backend.cuda package data."""
    return resources.files("kerasrs.backend").joinpath("cuda", filename).read_text()


def source(name, text=None, common=None):
    """Full source of kernel file ``name`` (a key of FILES); ``text`` and ``common`` replace the
    texts of the file and of ``common.cuh`` (the tests plant errors that way)."""
    body = read(f"{name}.cu") if text is None else text
    common = read("common.cuh") if common is None else common
    return f'#line 1 "common.cuh"\n{common}\n#line 1 "{name}.cu"\n{body}'

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
