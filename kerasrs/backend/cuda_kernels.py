"""Handwritten CUDA kernels for the CuPy backend. Imported only by ``cupy_backend``.

The sources live in ``kernel_sources`` (plain strings, checkable without a GPU); this module
turns them into ``cupy.ElementwiseKernel`` objects. Each kernel has a NumPy twin in
``base.Backend`` that is the reference in tests. Kernels are built on first call (CuPy compiles
and caches them per device).
"""

import functools

from kerasrs.backend.kernel_sources import ELEMENTWISE


@functools.lru_cache(maxsize=None)
def elementwise(name):
    """The compiled ``cupy.ElementwiseKernel`` called ``name`` (a key of ``ELEMENTWISE``)."""
    import cupy  # this module is reached only through the CuPy backend; import at first kernel

    in_params, out_params, body = ELEMENTWISE[name]
    return cupy.ElementwiseKernel(in_params, out_params, body, name)


def relu_grad():
    return elementwise("kerasrs_relu_grad")


def sigmoid():
    return elementwise("kerasrs_sigmoid")


def erf():
    return elementwise("kerasrs_erf")


SOURCES = {name: body for name, (_, _, body) in ELEMENTWISE.items()}
