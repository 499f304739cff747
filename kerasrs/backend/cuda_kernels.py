"""Handwritten CUDA kernels for the CuPy backend. Imported only by ``cupy_backend``.

Each kernel has a NumPy twin in ``base.Backend`` that is the reference in tests.
Kernels are built on first call (CuPy compiles and caches them per device).
"""

import functools

import cupy as cp


@functools.lru_cache(maxsize=None)
def relu_grad():
    return cp.ElementwiseKernel(
        "T y, T gy", "T gx", "gx = y > (T)0 ? gy : (T)0", "kerasrs_relu_grad"
    )


@functools.lru_cache(maxsize=None)
def sigmoid():
    # Branch on the sign so exp never overflows.
    return cp.ElementwiseKernel(
        "T x",
        "T y",
        "T e = exp(-fabs((double)x)); y = x >= (T)0 ? (T)(1 / (1 + e)) : (T)(e / (1 + e))",
        "kerasrs_sigmoid",
    )


SOURCES = {
    "kerasrs_relu_grad": "gx = y > (T)0 ? gy : (T)0",
}
