"""bfloat16 variables and layers (issue 23): a NumPy array's `.data` is a memoryview, which
cannot hold bfloat16; a Variable must read the array itself, and refuse non-numeric values."""

import ml_dtypes
import numpy as np
import pytest

import kerasrs
from kerasrs import layers


def test_bfloat16_variable_keeps_its_values_and_dtype():
    v = kerasrs.Variable(np.array([1.5, -2.0, 3.0], ml_dtypes.bfloat16))
    assert v.dtype == "bfloat16"
    np.testing.assert_array_equal(v.numpy().astype("float32"), [1.5, -2.0, 3.0])


@pytest.mark.parametrize("make, call", [
    (lambda: layers.Dense(4, dtype="bfloat16"), np.ones((2, 3), "float32")),
    (lambda: layers.Embedding(5, 4, dtype="bfloat16"), np.array([[1, 2]])),
])
def test_bfloat16_layers_build_and_run(make, call):
    layer = make()
    out = layer(call)
    assert out.dtype == "bfloat16"
    assert all(w.dtype == "bfloat16" for w in layer.weights)


def test_a_bfloat16_model_trains():
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(4, dtype="bfloat16"),
                                layers.Dense(1, dtype="bfloat16")])
    model.compile("sgd", "mse")
    loss = model.fit(np.ones((8, 3), "float32"), np.zeros((8, 1), "float32"), epochs=3,
                     verbose=0).history["loss"]
    assert np.all(np.isfinite(loss)) and loss[-1] < loss[0]


@pytest.mark.parametrize("value, dtype", [
    (np.array(["a", "b"]), "str"),
    (np.array([object()], dtype=object), "object"),
    (np.zeros(2, [("a", "f4")]), "void"),
])
def test_non_numeric_values_are_refused_naming_the_dtype(value, dtype):
    with pytest.raises(TypeError, match=f"'w'.*dtype {dtype}") as info:
        kerasrs.Variable(value, name="w")
    assert "memoryview" not in str(info.value)


@pytest.mark.parametrize("value, dtype", [
    (["a", "b"], "str"), ([1, "a"], "str"), ("abc", "str"), ({"a": 1}, "object"),
])
def test_non_numeric_python_values_are_refused_naming_the_argument_and_dtype(value, dtype):
    # NumPy's own "could not convert string to float" named neither the Variable nor the argument
    with pytest.raises(TypeError, match=rf"Variable 'w': `initializer` must be numbers.*dtype "
                                        rf"{dtype}.*Received: initializer="):
        kerasrs.Variable(value, name="w")
