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

import cpu_cuda
import pytest

from kerasrs.backend.kernels import cuda

ROOT = pathlib.Path(__file__).resolve().parents[2]
SYNC_AFTER_STORE = "  buf[t] = v;\n  __syncthreads();\n"  # kr_block_reduce's first barrier


def _libtsan():
    if not cpu_cuda.have_compiler():
        return None
    out = subprocess.run(["g++", "-print-file-name=libtsan.so"], check=False,
                         capture_output=True, text=True)
    path = out.stdout.strip()
    return path if os.path.isabs(path) and os.path.exists(path) else None


LIBTSAN = _libtsan()
pytestmark = pytest.mark.skipif(LIBTSAN is None, reason="needs g++ with libtsan (apt g++)")

RUN = """
    import sys, json
    sys.path[:0] = json.loads(sys.argv[1])
    libs = json.loads(sys.argv[2])
    import numpy as np
    import cpu_cuda
    from kerasrs.backend import kernels
    k = kernels.Launcher(np, lambda name: cpu_cuda.CpuModule(libs[name]), max_block=64)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 200)).astype(np.float32)
    if "softmax_ce" in libs:
        loss, probs = k.softmax_cross_entropy(x, np.array([0, 5, 199]))
        k.softmax_cross_entropy_grad(probs, x, np.ones(3, np.float32))
    if "layer_norm" in libs:  # block reductions and column reductions with atomicAdd
        y, mean, rstd = k.layer_norm(x, x[0], x[1], 1e-3)
        k.layer_norm_grad(x, x, x[0], mean, rstd)
    if "bias_act" in libs:
        k.bias_act_grad(np.tanh(x), x, "tanh")
    if "embedding" in libs:  # atomicAdd on repeated rows
        k.embedding_grad(np.array([1, 1, 0, 1]), np.ones((4, 3), np.float32), 2)
    if "max_pool" in libs:
        y, arg = k.max_pool(x.reshape(1, 3, 200, 1), (2, 3), (1, 1), ((0, 0), (1, 1)))
        k.max_pool_grad(y, arg, (1, 3, 200, 1))
    print("done")
"""

# The kernel files with barriers or atomics, and what the clean run exercises of each.
SYNCHRONIZING = ("softmax_ce", "layer_norm", "bias_act", "embedding", "max_pool")


def _run_under_tsan(libs):
    """Run RUN in a child with the TSAN runtime, ``libs`` mapping kernel files to libraries."""
    env = {**os.environ, "LD_PRELOAD": LIBTSAN,
           "TSAN_OPTIONS": "halt_on_error=0 exitcode=66 report_signal_unsafe=0"}
    paths = json.dumps([str(ROOT), str(cpu_cuda.HERE)])
    libs = json.dumps({k: str(v) for k, v in libs.items()})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(RUN), paths, libs],
                          env=env, check=False, capture_output=True, text=True, timeout=600)


def test_planted_missing_syncthreads_is_a_reported_race():
    common = cuda.read("common.cuh")
    assert SYNC_AFTER_STORE in common
    planted = common.replace(SYNC_AFTER_STORE, "  buf[t] = v;\n", 1)
    out = _run_under_tsan({"softmax_ce": cpu_cuda.build("softmax_ce", common=planted,
                                                        sanitize=True)})
    assert "WARNING: ThreadSanitizer: data race" in out.stderr, out.stderr[-3000:]
    line = common.splitlines().index("  buf[t] = v;") + 1
    assert "kr_block_reduce" in out.stderr and f"common.cuh:{line}" in out.stderr  # located
    assert out.returncode == 66


def test_unmodified_kernels_are_race_free_under_tsan():
    out = _run_under_tsan({name: cpu_cuda.build(name, sanitize=True) for name in SYNCHRONIZING})
    assert out.returncode == 0 and "done" in out.stdout, out.stderr[-3000:]
    assert "ThreadSanitizer" not in out.stderr, out.stderr[-3000:]
