"""`Layer._tracker` (the lock on adding weights during a call) and `Layer._untrack_variable`."""

import numpy as np
import pytest

from kerasrs import layers


class Growing(layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight(shape=(2,), name="w", initializer="ones")

    def call(self, x):
        if getattr(self, "grow", False):
            self.extra = self.add_weight(shape=(2,), name="extra", initializer="zeros")
            self.grow = False
        return x * self.w


def test_new_weights_during_the_call_need_an_unlocked_tracker():
    layer = Growing()
    layer(np.ones((1, 2), "float32"))
    assert layer._tracker.locked
    layer.grow = True
    with pytest.raises(ValueError, match="cannot add new elements of state"):
        layer(np.ones((1, 2), "float32"))
    layer._tracker.unlock()
    layer(np.ones((1, 2), "float32"))
    layer._tracker.lock()
    assert [v.path for v in layer.weights] == ["growing/w", "growing/extra"]


def test_untracked_variables_leave_the_weights_and_can_be_replaced():
    layer = Growing()
    layer(np.ones((1, 2), "float32"))
    assert layer._untrack_variable(layer.w) is None
    assert layer.weights == []
    layer.w = layer.add_weight(shape=(2,), initializer="zeros", dtype="int8", trainable=False)
    assert [(v.dtype, v.trainable) for v in layer.weights] == [("int8", False)]
    layer._untrack_variable(layer.w)  # twice: no error
    layer._untrack_variable(layer.w)
    assert layer.weights == []


def test_layers_lists_the_sublayers_found_in_attributes():
    class Holder(layers.Layer):
        def __init__(self):
            super().__init__()
            self.first = layers.Dense(2)
            self.by_name = {"second": layers.Dense(2)}
            self.in_list = [layers.Dense(2)]

        def build(self, input_shape):
            self.in_list.append(layers.Dense(2))

    holder = Holder()
    holder.build((1, 2))
    assert holder._layers == [holder.first, holder.by_name["second"]] + holder.in_list
    from kerasrs import Sequential
    seq = Sequential([layers.Dense(1)])
    assert seq._layers is seq.__dict__["_layers"]  # a model's own list, which it appends to


def test_add_weight_takes_keras_3s_positional_arguments():
    layer = layers.Layer()
    w = layer.add_weight((3, 4), "zeros", "float32")
    assert (w.shape, w.dtype) == ((3, 4), "float32")
    with pytest.raises(ValueError, match="`name` must be passed as a keyword argument"):
        layer.add_weight("kernel", shape=(2,))
    with pytest.raises(ValueError, match="`shape` was passed both positionally and as a "
                                         "keyword argument"):
        layer.add_weight((3,), shape=(3,))
    with pytest.raises(ValueError, match="`initializer` was passed both"):
        layer.add_weight((3,), "ones", initializer="zeros")
    with pytest.raises(TypeError, match="takes at most 3 positional arguments"):
        layer.add_weight((3,), "zeros", "float32", False)
