"""Shared fixtures: run a test body on every available backend (CuPy tests skip without a GPU).

``pytest --gpu`` says a GPU is expected: a ``gpu``-marked test that would skip (no CuPy, no
device) fails instead, so a GPU run cannot pass by skipping everything.
"""

import importlib.util
import os
import pathlib
import shutil
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
        config.kerasrs_standin = _standin().installed()  # (kept: closing it uninstalls)
        config.kerasrs_standin.__enter__()


def _standin():
    """tests/cupy_standin/standin.py, imported once as ``standin``."""
    if "standin" not in sys.modules:
        path = pathlib.Path(__file__).parent / "cupy_standin" / "standin.py"
        spec = importlib.util.spec_from_file_location("standin", path)
        module = sys.modules["standin"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules["standin"]


# The stand-in runs a kernel's blocks one after another, each on as many OS threads as the block
# has: the fixture's stand-in cases of the kernel-heavy directories take minutes, so they count
# as slow (the op, layer and saving cases take seconds and run in CI).
SLOW_STANDIN_DIRS = ("backend", "graph", "cuda")


def pytest_collection_modifyitems(config, items):
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if params.get("backend") == "standin" and item.path.parent.name in SLOW_STANDIN_DIRS:
            item.add_marker(pytest.mark.slow)


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


@pytest.fixture(params=["numpy", pytest.param("cupy", marks=pytest.mark.gpu), "standin"])
def backend(request):
    """The backend a test body runs on: NumPy, CuPy (a GPU), and the CuPy backend on the
    CuPy stand-in (tests/cupy_standin), so the cupy side of these tests runs without a GPU.
    The stand-in case skips where the "cupy" case runs it already: on a GPU, or with the
    whole session on the stand-in (``KERASRS_CUPY_STANDIN=1``)."""
    if request.param == "standin":
        yield from _standin_backend()
        return
    if not kerasrs.backend.is_available(request.param):
        pytest.skip(f"{request.param} backend not available")
    with kerasrs.backend.using(request.param) as be:
        yield be


def _standin_backend():
    if kerasrs.backend.is_available("cupy"):
        pytest.skip("the 'cupy' case runs this (a GPU, or the session-wide stand-in)")
    if shutil.which("g++") is None:
        pytest.skip("the CuPy stand-in's kernels need g++ (C++20)")
    instances = kerasrs.backend._instances
    with _standin().installed():
        old = instances.pop("cupy", None)
        try:
            with kerasrs.backend.using("cupy") as be:
                yield be
        finally:
            instances.pop("cupy", None)
            if old is not None:
                instances["cupy"] = old


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
