"""A library must not change process-wide state: ``import kerasrs`` and a first small ``fit``
leave the process's threads, malloc settings, warnings filters, NumPy error state and
environment as they were; `cpu_threads`' pool threads appear only after a split with enough
work. Each check runs in a fresh interpreter."""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"),
                                reason="needs /proc to count threads")

_PRELUDE = textwrap.dedent("""
    import ctypes, os, sys, threading, warnings
    import numpy as np
    try:  # numba's CPU target loads scipy.linalg's BLAS when SciPy is installed, and SciPy's own
        import scipy.linalg  # OpenBLAS starts its thread pool then: the environment's, not ours
    except ImportError:
        pass

    def n_tasks():
        return len(os.listdir("/proc/self/task"))

    seen = []  # C functions looked up through ctypes (mallopt, malloc_trim, ...)
    _getattr, _getitem = ctypes.CDLL.__getattr__, ctypes.CDLL.__getitem__
    def _record_attr(self, name):
        seen.append(name)
        return _getattr(self, name)
    def _record_item(self, name):
        seen.append(name)
        return _getitem(self, name)
    ctypes.CDLL.__getattr__, ctypes.CDLL.__getitem__ = _record_attr, _record_item

    def state():
        return {"tasks": n_tasks(), "env": dict(os.environ), "filters": list(warnings.filters),
                "numpy err": np.geterr(), "switch": sys.getswitchinterval(),
                "threads": sorted(t.name for t in threading.enumerate())}

    def compare(before, after, what):
        for key in before:
            assert before[key] == after[key], f"{what} changed {key}: {before[key]} -> {after[key]}"
        bad = [name for name in seen if "malloc" in name or "mallopt" in name]
        assert not bad, f"{what} called {bad}"
""")


def _run(body):
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    result = subprocess.run([sys.executable, "-c", _PRELUDE + textwrap.dedent(body)],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_import_and_a_first_fit_change_no_process_state():
    _run("""
        before = state()
        import kerasrs
        compare(before, state(), "import kerasrs")
        assert "numba" not in sys.modules
        model = kerasrs.Sequential([kerasrs.layers.Input((4,)),
                                    kerasrs.layers.Dense(8, activation="relu"),
                                    kerasrs.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse")
        x = np.random.default_rng(0).standard_normal((64, 4)).astype("float32")
        model.fit(x, x[:, :1], batch_size=16, epochs=2, verbose=0)
        model.predict(x, verbose=0)
        compare(before, state(), "a first fit")
        assert "numba" in sys.modules  # the fit loaded the compiled kernels: that counts too
        assert not [t for t in threading.enumerate() if t.name.startswith("kerasrs-cpu")]
    """)


def test_pool_threads_start_only_after_a_split_with_enough_work():
    _run("""
        import kerasrs
        from kerasrs.backend import cpu_threads
        cpu_threads.threads = lambda: 2  # as on a 2-core machine, whatever this one has
        be = kerasrs.backend.get("numpy")
        before = state()
        be.relu(np.ones(1000, "float32"))  # one part: runs on the calling thread
        be.relu(np.ones((cpu_threads.GRAIN - 1,), "float32"))
        compare(before, state(), "a small kernel call")
        y = be.relu(np.ones((4 * cpu_threads.GRAIN,), "float32"))
        assert (y == 1).all()
        names = [t.name for t in threading.enumerate()]
        assert sum(n.startswith("kerasrs-cpu") for n in names) == 1, names
        assert n_tasks() == before["tasks"] + 1
        before = state()
        for _ in range(5):  # the pool is reused, not grown
            be.relu(np.ones((4 * cpu_threads.GRAIN,), "float32"))
        compare(before, state(), "more splits")
    """)
