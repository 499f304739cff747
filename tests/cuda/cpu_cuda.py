"""Build the CUDA kernel files for the CPU (g++ and cuda_cpu.h) and call them like CuPy does.

``module(name)`` compiles ``kerasrs/backend/kernels/<name>.cu`` (exactly the text NVRTC gets,
from ``kernels.cuda.source``) plus one registration line per name expression into a shared library,
and returns a `CpuModule`, whose ``get_function(expr)(grid, block, args)`` mirrors
``cupy.RawModule``. Arguments are checked against the C++ parameter types, so a launcher that
passes a Python int or the wrong dtype fails here instead of corrupting memory on a GPU.
"""

import ctypes
import hashlib
import pathlib
import shutil
import subprocess

import numpy as np

from kerasrs.backend import kernels
from kerasrs.backend.kernels import cuda

HERE = pathlib.Path(__file__).resolve().parent
HEADER = HERE / "cuda_cpu.h"
BUILD = pathlib.Path("/tmp") / "kerasrs-cuda-cpu"
FLAGS = ("-std=c++20", "-shared", "-fPIC", "-fvisibility=hidden", "-pthread", "-w")


def have_compiler():
    return shutil.which("g++") is not None


def translation_unit(name, text=None, common=None):
    """C++ source for kernel file ``name``: the emulation header, the kernels, registrations."""
    regs = "".join(f'static int kr_reg_{i} = kr_register("{e}", &{e});\n'
                   for i, e in enumerate(kernels.FILES[name]))
    return f'#include "{HEADER}"\n{cuda.source(name, text, common)}\n{regs}'


def build(name, text=None, common=None, sanitize=False, opt="-O1"):
    """Path of the shared library for ``name`` (cached by content). Raises on compile errors."""
    return build_source(name, translation_unit(name, text, common), sanitize, opt)


def build_source(name, src, sanitize=False, opt="-O1"):
    """Path of the shared library for the C++ translation unit ``src`` (cached by content);
    ``name`` labels the files and the compile errors."""
    flags = FLAGS + (opt,) + (("-fsanitize=thread", "-g") if sanitize else ())
    key = hashlib.sha256((src + HEADER.read_text() + " ".join(flags)).encode()).hexdigest()[:16]
    BUILD.mkdir(exist_ok=True)
    lib = BUILD / f"{name}-{key}.so"
    if not lib.exists():
        cpp = BUILD / f"{name}-{key}.cpp"
        cpp.write_text(src)
        tmp = lib.with_suffix(".tmp.so")
        out = subprocess.run(["g++", *flags, str(cpp), "-o", str(tmp)], check=False,
                             capture_output=True, text=True, timeout=300)
        if out.returncode:
            raise RuntimeError(f"g++ failed for {name}.cu:\n{out.stderr}")
        tmp.rename(lib)  # atomic: a concurrent reader never sees half a library
    return lib


class CpuFunction:
    def __init__(self, lib, expr):
        sig = lib.kr_signature(expr.encode())
        if sig is None:
            raise KeyError(f"no kernel {expr!r} in this module")
        self.lib, self.expr, self.params = lib, expr, sig.decode().split(",")[:-1]

    def __call__(self, grid, block, args):
        if len(args) != len(self.params):
            raise TypeError(f"{self.expr}: {len(self.params)} parameters, {len(args)} arguments")
        slots = (ctypes.c_void_p * len(args))()
        keep = []
        for i, (a, code) in enumerate(zip(args, self.params)):
            if isinstance(a, np.ndarray):
                want = code[1:]
                got = f"{a.dtype.kind}{a.dtype.itemsize}"
                if not code.startswith("p") or (want != got and not
                                                (want.startswith("p") and got == "u8")):
                    raise TypeError(f"{self.expr}: argument {i} is a {a.dtype} array, "
                                    f"parameter type {code}")
                if not a.flags.c_contiguous:
                    raise ValueError(f"{self.expr}: argument {i} is not C-contiguous")
                holder = ctypes.c_void_p(a.ctypes.data)
                keep.append(holder)
                slots[i] = ctypes.addressof(holder)
            elif isinstance(a, np.generic):
                got = f"{a.dtype.kind}{a.dtype.itemsize}"
                if got != code:
                    raise TypeError(f"{self.expr}: argument {i} is {a.dtype}, parameter {code}")
                buf = np.array(a)
                keep.append(buf)
                slots[i] = buf.ctypes.data
            else:
                raise TypeError(f"{self.expr}: argument {i} is {type(a).__name__}; pass NumPy "
                                "arrays or NumPy scalars of the parameter's exact type")
        grid, block = tuple(grid) + (1,) * (3 - len(grid)), tuple(block) + (1,) * (3 - len(block))
        if min(grid) < 1 or min(block) < 1 or np.prod(block) > 1024:
            raise ValueError(f"{self.expr}: bad launch configuration {grid} x {block}")
        if self.lib.kr_launch_by_name(self.expr.encode(), *grid, *block, slots):
            raise KeyError(self.expr)


class CpuModule:
    """``cupy.RawModule`` look-alike over a library built by `build`."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(str(path))
        self.lib.kr_signature.restype = ctypes.c_char_p
        self.lib.kr_signature.argtypes = [ctypes.c_char_p]
        self.lib.kr_launch_by_name.argtypes = [ctypes.c_char_p] + [ctypes.c_uint] * 6 + [
            ctypes.c_void_p]

    def get_function(self, expr):
        return CpuFunction(self.lib, expr)


def module(name, **kw):
    return CpuModule(build(name, **kw))
