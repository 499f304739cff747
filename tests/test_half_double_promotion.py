"""Half x double (issue 23): matmul, dot, tensordot and einsum of float16 with float64 promote
as addition does (float64); casting the result back to float16 turned 1e5 into inf."""

import numpy as np
import pytest

import kerasrs
from kerasrs import ops

HALF = np.float16([[5e4]])
DOUBLE = np.float64([[4.0]])

PRODUCTS = {
    "matmul": lambda a, b: ops.matmul(a, b),
    "dot": lambda a, b: ops.dot(a, b),
    "tensordot": lambda a, b: ops.tensordot(a, b, axes=1),
    "einsum": lambda a, b: ops.einsum("ij,jk->ik", a, b),
}


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_half_times_double_is_double_and_finite(name):
    out = PRODUCTS[name](HALF, DOUBLE)
    assert out.dtype == ops.add(HALF, DOUBLE).dtype == "float64"
    np.testing.assert_allclose(np.asarray(out).reshape(-1), [2e5], rtol=1e-3)


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_half_times_half_stays_half(name):
    assert PRODUCTS[name](HALF / 4, HALF / 4e4).dtype == "float16"


def test_the_half_input_gets_a_half_gradient():
    w = kerasrs.Variable(HALF / 1e4, dtype="float16")
    with kerasrs.GradientTape() as tape:
        loss = ops.sum(ops.matmul(w, DOUBLE))
    grad = tape.gradient(loss, w)
    assert grad.dtype == "float16"
    np.testing.assert_allclose(np.asarray(grad, "float32"), [[4.0]])
