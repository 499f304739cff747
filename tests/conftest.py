"""Shared fixtures: run a test body on every available backend (CuPy tests skip without a GPU).

``pytest --gpu`` says a GPU is expected: a ``gpu``-marked test that would skip (no CuPy, no
device) fails instead, so a GPU run cannot pass by skipping everything.
"""

import importlib.util
import os
import pathlib
import sys

import numpy as np
import pytest

import kerasrs


# The CUDA checks without a GPU (tests/cuda, tests/cupy_standin) skip when g++/libtsan or the
# NVRTC wheels are missing, except under KERASRS_CUDA_CHECKS=required (set by .ci/run), where a
# skip would hide them: there each such skip is a failure.
CUDA_CHECKS_REQUIRED = os.environ.get("KERASRS_CUDA_CHECKS") == "required"
CUDA_CHECK_DIRS = ("cuda", "cupy_standin")


def pytest_addoption(parser):
    parser.addoption("--gpu", action="store_true", default=False,
                     help="expect a CUDA device: gpu-marked tests fail instead of skipping")


def pytest_configure(config):
    """``KERASRS_CUPY_STANDIN=1``: the whole session's ``cupy`` is the test-only stand-in
    (tests/cupy_standin/standin.py), so the gpu-marked tests run without a GPU (``-m gpu``)."""
    if os.environ.get("KERASRS_CUPY_STANDIN") == "1" and "standin" not in sys.modules:
        path = pathlib.Path(__file__).parent / "cupy_standin" / "standin.py"
        spec = importlib.util.spec_from_file_location("standin", path)
        standin = sys.modules["standin"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(standin)
        config.kerasrs_standin = standin.installed()  # (kept: closing it uninstalls)
        config.kerasrs_standin.__enter__()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and item.config.getoption("--gpu") and \
            item.get_closest_marker("gpu") is not None:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"--gpu given, but this gpu test skipped: {reason}"
    elif report.skipped and CUDA_CHECKS_REQUIRED and item.path.parent.name in CUDA_CHECK_DIRS \
            and item.get_closest_marker("gpu") is None and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"KERASRS_CUDA_CHECKS=required, but this check skipped: " \
                          f"{report.longrepr}"


@pytest.fixture(params=["numpy", pytest.param("cupy", marks=pytest.mark.gpu)])
def backend(request):
    if not kerasrs.backend.is_available(request.param):
        pytest.skip(f"{request.param} backend not available")
    with kerasrs.backend.using(request.param) as be:
        yield be


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def config_round_trip():
    """A checker: ``check(layer)`` asserts that the layer's config survives ``from_config``
    and ``layers.serialize``/``deserialize`` unchanged (same class, equal config)."""
    def check(layer):
        config = layer.get_config()
        assert type(layer).from_config(config).get_config() == config
        again = kerasrs.layers.deserialize(kerasrs.layers.serialize(layer))
        assert type(again) is type(layer) and again.get_config() == config
    return check
