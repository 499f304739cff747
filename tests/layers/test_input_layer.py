"""`InputLayer` with an existing symbolic tensor, NumPy sizes and Keras's attributes (issue 20)."""

import numpy as np
import pytest

from kerasrs import layers
from kerasrs.layers.node import SymbolicTensor


def test_input_tensor_is_used_as_the_output():
    tensor = SymbolicTensor((2, 3), "float32")
    layer = layers.InputLayer(input_tensor=tensor)
    assert layer.output is tensor and layer.batch_shape == (2, 3) and layer.dtype == "float32"
    layers.InputLayer(shape=(3,), batch_size=2, sparse=False, dtype="float32",
                      input_tensor=tensor)  # agreeing arguments are fine


@pytest.mark.parametrize("arg, value", [("shape", (2, 4)), ("batch_shape", (2, 4)),
                                        ("batch_size", 5), ("dtype", "float16"),
                                        ("sparse", True)])
def test_arguments_contradicting_the_input_tensor_are_refused(arg, value):
    with pytest.raises(ValueError, match=f"cannot provide an incompatible `{arg}`"):
        layers.InputLayer(input_tensor=SymbolicTensor((2, 3), "float32"), **{arg: value})


def test_input_tensor_must_be_symbolic():
    with pytest.raises(ValueError, match="Argument `input_tensor` must be a KerasTensor"):
        layers.InputLayer(shape=(2, 3), input_tensor=np.zeros((2, 3)))


def test_numpy_sizes_and_keras_attributes():
    layer = layers.InputLayer(shape=(np.int64(32),))
    assert layer.batch_shape == (None, 32) and type(layer.batch_shape[1]) is int
    assert layer.sparse is False and layer.ragged is False
    assert layer.call() is None


def test_wrapper_refuses_what_is_not_a_layer():
    with pytest.raises(ValueError, match="supplied to Wrapper isn't a supported layer type"):
        layers.Wrapper("not a layer")
