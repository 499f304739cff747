"""Every kernel file compiles under NVRTC for sm_75 and sm_90 with every template instantiation
the launchers use; a planted syntax error is reported with its file and line. No GPU needed:
these run in CI (``.ci/run`` installs cupy-cuda13x and the CUDA 13 NVRTC/runtime wheels)."""

import re

import nvrtc_check
import pytest

from kerasrs.backend import kernels
from kerasrs.backend.kernels import cuda

pytest.importorskip("cupy_backends.cuda.libs.nvrtc",
                    reason="needs cupy-cuda13x and nvidia-cuda-nvrtc (installed by .ci/run)")


@pytest.mark.parametrize("arch", nvrtc_check.ARCHS)
@pytest.mark.parametrize("name", sorted(kernels.FILES))
def test_kernel_file_compiles_with_every_instantiation(name, arch):
    ok, log, lowered = nvrtc_check.compile_file(name, arch)
    assert ok, log
    assert "warning" not in log, log
    assert sorted(lowered) == sorted(kernels.FILES[name])
    for expr, mangled in lowered.items():  # each instantiation exists, with its own type
        base = expr.split("<")[0]
        assert mangled.startswith("_Z") and base in mangled, (expr, mangled)
        if "<float>" in expr:
            assert f"{base}If" in mangled, (expr, mangled)
        if "<double>" in expr:
            assert f"{base}Id" in mangled, (expr, mangled)


def test_every_kernel_in_the_files_is_instantiated():
    """No __global__ template is left out of FILES (it would never be compiled for a type)."""
    for name, exprs in kernels.FILES.items():
        text = cuda.read(f"{name}.cu")
        found = set(re.findall(r"__global__ void (\w+)\(", text))
        assert found == {e.split("<")[0] for e in exprs}, name


def test_planted_syntax_error_is_reported_with_its_line():
    lines = cuda.read("softmax_ce.cu").splitlines()
    at = next(i for i, s in enumerate(lines) if "loss[row] = s;" in s)  # 0-based
    lines[at] = lines[at].replace("loss[row] = s;", "loss[row] = s +* ;")
    ok, log, _ = nvrtc_check.compile_file("softmax_ce", "sm_75", "\n".join(lines))
    assert not ok
    assert f"softmax_ce.cu({at + 1}): error" in log, log


def test_planted_error_in_common_header_names_the_header():
    text = cuda.read("common.cuh").replace("return expf(x);", "return expf(undeclared_b);")
    lib = nvrtc_check.nvrtc()
    src = cuda.source("embedding").replace(cuda.read("common.cuh"), text)
    prog = lib.createProgram(src, "embedding.cu", [], [])
    with pytest.raises(lib.NVRTCError):
        lib.compileProgram(prog, ["--gpu-architecture=sm_90"])
    line = next(i for i, s in enumerate(text.splitlines()) if "undeclared_b" in s) + 1
    assert f"common.cuh({line}): error" in lib.getProgramLog(prog)
    lib.destroyProgram(prog)
