"""One table of activation codes (`kernels.activations.CODES`) serves the NumPy twins, the numba
kernels and the CUDA sources: the CUDA text gets its ``#define``s from the table and handles
every code, and each implementation agrees with the twins for every code (the kernel tests in
tests/backend and tests/cuda run every activation through them)."""

import re

import numpy as np
import pytest

import kerasrs
from kerasrs.backend import kernels
from kerasrs.backend.kernels import activations, cuda


def test_every_kernel_file_gets_the_codes_from_the_table():
    for name in kernels.FILES:
        text = cuda.source(name)
        for act, code in activations.CODES.items():
            assert f"#define KR_ACT_{act.upper()} {code}\n" in text, (name, act)


@pytest.mark.parametrize("function", ["kr_activate", "kr_activate_grad"])
def test_common_header_handles_every_code_by_name(function):
    common = cuda.read("common.cuh")
    body = re.search(function + r"\(T \w+, int act\) \{(.*?)\n\}", common, re.S).group(1)
    cases = set(re.findall(r"case (\w+):", body))
    assert cases == {f"KR_ACT_{a.upper()}" for a in activations.CODES}, cases


def test_the_sets_of_each_kernel_are_in_the_table():
    assert set(activations.BIAS_ACT) <= set(activations.GATES) == set(activations.CODES)
    assert len(set(activations.CODES.values())) == len(activations.CODES)
    with pytest.raises(ValueError, match=r"bias_act: activation must be one of .*'gelu'"):
        activations.code("bias_act", "gelu")


@pytest.mark.parametrize("name", sorted(activations.CODES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_gate_kernels_match_the_twin_for_every_code(name, dtype):
    """Each code through the numba LSTM kernel (all five gates on one activation) against the
    twin, special values included."""
    pytest.importorskip("numba")
    be = kerasrs.backend.get("numpy")
    values = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -3.0, 3.0, 0.5, -0.5, 7.0, -7.0], dtype)
    z = np.tile(values, 4)[None].copy()
    c_prev = np.linspace(-2, 2, values.size, dtype=dtype)[None]
    with np.errstate(all="ignore"):
        want = kerasrs.backend.base.Backend.lstm_gates(be, z.copy(), c_prev, name, name)
        got = be.lstm_gates(z, c_prev, name, name)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)
