"""Compile the kernel files with NVRTC without a GPU, through CuPy's low-level binding.

``cupy.RawModule`` and ``cupy.cuda.compiler`` ask the driver for the device's architecture
first, so they fail on a machine without a GPU; ``cupy_backends.cuda.libs.nvrtc`` calls the
NVRTC library directly (from the ``nvidia-cuda-nvrtc`` wheel), which needs no device.
"""

from kerasrs.backend import kernels
from kerasrs.backend.kernels import cuda

ARCHS = ("sm_75", "sm_90")
OPTIONS = cuda.OPTIONS  # as CupyBackend's loader


def nvrtc():
    from cupy_backends.cuda.libs import nvrtc as lib

    return lib


def compile_file(name, arch, text=None):
    """Compile kernel file ``name`` (or ``text`` in its place) for ``arch`` with every name
    expression of ``kernels.FILES[name]``.

    Returns:
        (ok, log, lowered): whether it compiled, NVRTC's log, and the mangled name of each
        instantiation (empty when it failed).
    """
    lib = nvrtc()
    prog = lib.createProgram(cuda.source(name, text), f"{name}.cu", [], [])
    try:
        exprs = kernels.FILES[name]
        for e in exprs:
            lib.addNameExpression(prog, e)
        try:
            lib.compileProgram(prog, [f"--gpu-architecture={arch}", *OPTIONS])
        except lib.NVRTCError:
            return False, lib.getProgramLog(prog), {}
        lowered = {e: lib.getLoweredName(prog, e) for e in exprs}
        assert lib.getPTX(prog)
        return True, lib.getProgramLog(prog), lowered
    finally:
        lib.destroyProgram(prog)
