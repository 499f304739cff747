"""ThreadSanitizer sees the CPU emulation's threads and barriers: a kernel with a planted missing
__syncthreads() is reported as a data race, the unmodified kernel is not.

The kernels are built with ``-fsanitize=thread`` and run in a child interpreter with the TSAN
runtime preloaded (it must be loaded before any thread starts)."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from kerasrs.backend import cuda_sources

import cpu_cuda

ROOT = pathlib.Path(__file__).resolve().parents[2]
SYNC_AFTER_STORE = "  buf[t] = v;\n  __syncthreads();\n"  # kr_block_reduce's first barrier


def _libtsan():
    if not cpu_cuda.have_compiler():
        return None
    out = subprocess.run(["g++", "-print-file-name=libtsan.so"], capture_output=True, text=True)
    path = out.stdout.strip()
    return path if os.path.isabs(path) and os.path.exists(path) else None


LIBTSAN = _libtsan()
pytestmark = pytest.mark.skipif(LIBTSAN is None, reason="needs g++ with libtsan (apt g++)")

RUN = """
    import sys, json
    sys.path[:0] = json.loads(sys.argv[1])
    import numpy as np
    import cpu_cuda
    from kerasrs.backend import cuda_kernels
    lib = sys.argv[2]
    k = cuda_kernels.Kernels(np, lambda name: cpu_cuda.CpuModule(lib), max_block=64)
    x = np.random.default_rng(0).standard_normal((3, 200)).astype(np.float32)
    loss, probs = k.softmax_cross_entropy(x, np.array([0, 5, 199]))
    print("done", float(loss.sum()))
"""


def _run_under_tsan(lib):
    env = {**os.environ, "LD_PRELOAD": LIBTSAN,
           "TSAN_OPTIONS": "halt_on_error=0 exitcode=66 report_signal_unsafe=0"}
    paths = json.dumps([str(ROOT), str(cpu_cuda.HERE)])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(RUN), paths, str(lib)],
                          env=env, capture_output=True, text=True, timeout=600)


def test_planted_missing_syncthreads_is_a_reported_race():
    common = cuda_sources.read("common.cuh")
    assert SYNC_AFTER_STORE in common
    planted = common.replace(SYNC_AFTER_STORE, "  buf[t] = v;\n", 1)
    out = _run_under_tsan(cpu_cuda.build("softmax_ce", common=planted, sanitize=True))
    assert "WARNING: ThreadSanitizer: data race" in out.stderr, out.stderr[-3000:]
    assert "kr_block_reduce" in out.stderr  # the race is located in the planted function
    assert out.returncode == 66


def test_unmodified_kernel_is_race_free_under_tsan():
    out = _run_under_tsan(cpu_cuda.build("softmax_ce", sanitize=True))
    assert out.returncode == 0 and "done" in out.stdout, out.stderr[-3000:]
    assert "ThreadSanitizer" not in out.stderr, out.stderr[-3000:]
