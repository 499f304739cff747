"""The CUDA checks without a GPU skip when g++/libtsan or the NVRTC wheels are missing, except
under ``KERASRS_CUDA_CHECKS=required`` (set by ``.ci/run``), where a skip would hide them: there
each such skip is turned into a failure."""

import os

import pytest

REQUIRED = os.environ.get("KERASRS_CUDA_CHECKS") == "required"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if REQUIRED and report.skipped and item.get_closest_marker("gpu") is None:
        report.outcome = "failed"
        report.longrepr = f"KERASRS_CUDA_CHECKS=required, but this check skipped: " \
                          f"{report.longrepr}"
