"""The dtype promotion lattice (`kerasrs.backend.dtypes`) against real Keras 3's table.

``tests/fixtures/keras_promotion.json`` is written once by ``make_keras_promotion.py`` with
Keras 3.15: ``keras.backend.result_type`` for every pair of dtypes and weak Python types, as
Keras answers and without Keras's final narrowing of 64-bit results to 32 bits (kerasrs keeps
float64 and int64: see the module docstring)."""

import json
import pathlib

import numpy as np
import pytest

from kerasrs import backend
from kerasrs.backend import dtypes

TABLE = json.loads((pathlib.Path(__file__).parents[1] / "fixtures" / "keras_promotion.json")
                   .read_text(encoding="utf-8"))
WEAK = {"int": int, "float": float}
PAIRS = sorted(TABLE["lattice"])


def _ours(a, b):
    try:
        return dtypes.result_type(WEAK.get(a, a), WEAK.get(b, b))
    except ValueError:
        return "error"


@pytest.mark.parametrize("pair", PAIRS)
def test_promotion_table_matches_keras_lattice(pair):
    a, b = pair.split(",")
    assert _ours(a, b) == TABLE["lattice"][pair]
    assert _ours(b, a) == TABLE["lattice"][pair]  # symmetric


def test_promotion_table_matches_keras_below_64_bits():
    """Where no 64-bit dtype is involved, kerasrs's answer is Keras's answer, narrowing and all."""
    wide = ("64", "128")
    checked = 0
    for pair in PAIRS:
        if any(w in part for part in pair.split(",") for w in wide) or \
                TABLE["keras"][pair] != TABLE["lattice"][pair]:
            continue
        assert _ours(*pair.split(",")) == TABLE["keras"][pair], pair
        checked += 1
    assert checked > 60


def test_half_with_double_is_double():
    assert backend.result_type("float16", "float64") == "float64"
    assert backend.result_type("bfloat16", "float64") == "float64"


@pytest.mark.parametrize("dtype,scalar,expected", [
    ("int8", 1, "int8"), ("uint8", 3, "uint8"), ("int8", 1.5, "float32"),
    ("float16", 2.0, "float16"), ("bfloat16", 2.0, "bfloat16"), ("bfloat16", 2, "bfloat16"),
    ("bool", True, "bool"), ("bool", 1, "int32"), ("bool", 1.0, "float32"),
    ("float64", 1.0, "float64"), ("int64", 1, "int64")])
def test_python_scalars_are_weak(dtype, scalar, expected):
    assert dtypes.result_type(dtype, scalar) == expected
    assert dtypes.result_type(np.ones(2, backend.standardize_dtype(dtype)), type(scalar)) == \
        expected


def test_weak_results_resolve_by_floatx():
    assert dtypes.result_type(1, 2) == "int32" and dtypes.result_type(1, 2.0) == "float32"
    assert dtypes.result_type() == "float32" and dtypes.result_type(None) == "float32"
    backend.set_floatx("float64")
    try:
        assert dtypes.result_type(1.0) == "float64" and dtypes.result_type("int8", 1.5) == \
            "float64"
    finally:
        backend.set_floatx("float32")


def test_helper_rules():
    assert dtypes.float_type("int8") == "float32" and dtypes.float_type("float16") == "float16"
    assert dtypes.float_type("bool") == "float32" and dtypes.float_type("int64") == "float32"
    assert dtypes.sum_type("bool") == "int32" and dtypes.sum_type("uint8") == "uint32"
    assert dtypes.sum_type("int64") == "int64" and dtypes.sum_type("bfloat16") == "bfloat16"


def test_no_promotion_for_float8_and_strings():
    with pytest.raises(ValueError, match="float8"):
        dtypes.result_type("float8_e4m3fn", "float32")
    with pytest.raises(ValueError, match="not a dtype that ops promote"):
        dtypes.result_type("float32", np.dtype("U3"))
