"""Shared fixtures: run a test body on every available backend (CuPy tests skip without a GPU)."""

import numpy as np
import pytest

import kerasrs


@pytest.fixture(params=["numpy", pytest.param("cupy", marks=pytest.mark.gpu)])
def backend(request):
    if not kerasrs.backend.is_available(request.param):
        pytest.skip(f"{request.param} backend not available")
    with kerasrs.backend.using(request.param) as be:
        yield be


@pytest.fixture
def rng():
    return np.random.default_rng(0)
