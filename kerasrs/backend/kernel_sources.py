"""CUDA sources of the CuPy backend's elementwise kernels, as plain strings (no CuPy import).

Kept apart from ``cuda_kernels`` so the sources can be checked on a machine without CuPy or a
GPU (tests compile them as C++ when a compiler is present). Each entry is
``name: (in_params, out_params, body)`` in ``cupy.ElementwiseKernel``'s syntax; ``T`` is the
floating-point type of the arrays. The NumPy twin of each kernel is the method of
``base.Backend`` with the name after the ``kerasrs_`` prefix.
"""

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
