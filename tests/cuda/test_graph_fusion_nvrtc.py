"""The CUDA source kerasrs.graph generates for fused elementwise groups compiles under NVRTC for
the architectures the kernel files target, in float32 and float64, with scalar and inlined
inputs (inf included). No GPU needed; in CI .ci/run installs the NVRTC wheels."""

import nvrtc_check
import pytest

from kerasrs import graph
from kerasrs.graph import cuda_codegen

pytest.importorskip("cupy_backends.cuda.libs.nvrtc",
                    reason="needs cupy-cuda13x and nvidia-cuda-nvrtc (installed by .ci/run)")


def _group_source(dtype):
    text = f"""graph {{
      %0 = input {{name='x'}} : {dtype}[8,4]
      %1 = input {{name='s'}} : {dtype}[]
      %2 = parameter {{name='w'}} : {dtype}[8,4]
      %3 = multiply(%0, %1) : {dtype}[8,4]
      %4 = constant {{value=inf}} : float64[]
      %5 = minimum(%3, %4) : {dtype}[8,4]
      %6 = sqrt(%5) : {dtype}[8,4]
      %7 = absolute(%6) : {dtype}[8,4]
      %8 = maximum(%7, %2) : {dtype}[8,4]
      %9 = subtract(%2, %8) : {dtype}[8,4]
      %10 = divide(%9, %1) : {dtype}[8,4]
      %11 = reciprocal(%10) : {dtype}[8,4]
      output 'y' = %11
      update 'w' = %10
    }}"""
    parsed = graph.parse(text)
    types = [n.type for n in parsed.nodes]
    groups = graph.fusion.groups(parsed, types, set(range(3, 12)) - {4}, parsed.roots())
    assert len(groups) == 1
    return cuda_codegen.cuda_source(parsed, groups[0], types)


@pytest.mark.parametrize("arch", nvrtc_check.ARCHS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_group_source_compiles(arch, dtype):
    source, name, kinds = _group_source(dtype)
    assert kinds == ["full", "scalar", "weak", "full"]
    lib = nvrtc_check.nvrtc()
    program = lib.createProgram(source, f"{name}.cu", [], [])
    try:
        lib.compileProgram(program, [f"--gpu-architecture={arch}", *nvrtc_check.OPTIONS,
                                     *cuda_codegen.NVRTC_OPTIONS])
        log = lib.getProgramLog(program)
        assert lib.getPTX(program)
    except lib.NVRTCError:
        pytest.fail(lib.getProgramLog(program))
    finally:
        lib.destroyProgram(program)
    assert "warning" not in log, log


def test_a_planted_error_in_the_template_text_fails_to_compile():
    source, name, _ = _group_source("float32")
    lib = nvrtc_check.nvrtc()
    program = lib.createProgram(source.replace("sqrt(", "sqrtt("), f"{name}.cu", [], [])
    with pytest.raises(lib.NVRTCError):
        lib.compileProgram(program, ["--gpu-architecture=sm_75", *nvrtc_check.OPTIONS])
    assert "sqrtt" in lib.getProgramLog(program)
    lib.destroyProgram(program)
