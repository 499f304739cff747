"""The ``cupy_standin`` fixture: the CuPy backend on the test-only CuPy stand-in (standin.py),
whose kernels run through g++ and the CPU runner of tests/cuda. Under
``KERASRS_CUDA_CHECKS=required`` (CI) a skip for a missing g++ is a failure (tests/conftest.py)."""

import shutil

import cuda_coverage
import pytest
import standin

from kerasrs import backend as backend_module


@pytest.fixture
def cupy_standin():
    """The stand-in installed as ``cupy``, a fresh "cupy" backend on it, zeroed copy counts;
    yields the stand-in module. The real CuPy (if any) and the backend cache come back after."""
    if shutil.which("g++") is None:
        pytest.skip("the CuPy stand-in's kernels need g++ (C++20)")
    with standin.installed() as cp:
        old = backend_module._instances.pop("cupy", None)
        try:
            backend_module.get("cupy")
            standin.reset_stats()
            yield cp
        finally:
            backend_module._instances.pop("cupy", None)
            if old is not None:
                backend_module._instances["cupy"] = old


def pytest_configure(config):
    """``KERASRS_STANDIN_COVERAGE=1`` (CI): measure and report the CUDA half's line coverage
    under these tests (cuda_coverage.py)."""
    if cuda_coverage.ENABLED and not config.pluginmanager.has_plugin("kerasrs-cuda-coverage"):
        config.pluginmanager.register(cuda_coverage.Plugin(), "kerasrs-cuda-coverage")
