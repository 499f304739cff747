"""The Layer base class: naming, weights, freezing, get/set_weights, losses, calls and masks."""

import numpy as np
import pytest

import kerasrs
from kerasrs import layers, ops


@pytest.fixture(autouse=True)
def fresh_names():
    kerasrs.utils.clear_session()


class ScaleShift(layers.Layer):
    """A custom layer written the way users write them (STYLE.md 2.2)."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def build(self, input_shape):
        self.gamma = self.add_weight((input_shape[-1],), "ones", name="gamma")
        self.beta = self.add_weight((input_shape[-1],), "zeros", name="beta")
        self.count = self.add_weight((), "zeros", name="count", trainable=False)

    def call(self, inputs, training=None):
        self.seen_training = training
        return inputs * self.gamma + self.beta

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


def test_default_names_are_unique_per_prefix_and_reset_by_clear_session():
    names = [layers.Dense(2).name, layers.Dense(2).name, ScaleShift().name,
             layers.Dense(2).name, layers.InputLayer(shape=(2,)).name]
    assert names == ["dense", "dense_1", "scale_shift", "dense_2", "input_layer"]
    kerasrs.utils.clear_session()
    assert layers.Dense(2).name == "dense"
    assert layers.Dense(2, name="head").name == "head"


def test_deferred_build_creates_weights_with_paths_and_shapes():
    layer = layers.Dense(3)
    assert not layer.built and layer.weights == []
    y = layer(np.ones((4, 5)))
    assert layer.built and y.shape == (4, 3) and y.dtype == np.float32
    assert [(w.path, w.shape) for w in layer.weights] == [("dense/kernel", (5, 3)),
                                                         ("dense/bias", (3,))]
    assert layer.count_params() == 18


def test_add_weight_accepts_keras_positional_order():
    class K(layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight((input_shape[-1], 2), "ones", name="w")

        def call(self, x):
            return ops.matmul(x, self.w)

    layer = K()
    assert layer(np.ones((1, 3))).numpy().tolist() == [[3.0, 3.0]]
    assert layer.w.path == "k/w"


def test_weights_order_and_trainable_split():
    layer = ScaleShift()
    layer(np.ones((2, 3)))
    assert [w.name for w in layer.weights] == ["gamma", "beta", "count"]
    assert [w.name for w in layer.trainable_weights] == ["gamma", "beta"]
    assert [w.name for w in layer.non_trainable_weights] == ["count"]


def test_freezing_sets_variables_untrainable_and_back():
    layer = ScaleShift()
    layer(np.ones((2, 3)))
    layer.trainable = False
    assert layer.trainable_weights == [] and len(layer.non_trainable_weights) == 3
    assert not layer.gamma.trainable
    layer.trainable = True
    assert [w.name for w in layer.trainable_weights] == ["gamma", "beta"]
    assert not layer.count.trainable


def test_frozen_weights_get_no_gradient():
    layer = layers.Dense(2)
    x = np.ones((1, 3), "float32")
    layer(x)
    layer.trainable = False
    with kerasrs.GradientTape() as tape:
        y = ops.sum(layer(x))
    assert tape.gradient(y, layer.kernel) is None


def test_get_and_set_weights_round_trip_and_clear_errors():
    layer = layers.Dense(2)
    layer(np.ones((1, 3)))
    values = [np.arange(6, dtype="float32").reshape(3, 2), np.array([1.0, -1.0], "float32")]
    layer.set_weights(values)
    got = layer.get_weights()
    assert all(np.array_equal(a, b) for a, b in zip(got, values))
    got[0][0, 0] = 100.0  # a copy, not a view
    assert layer.kernel.numpy()[0, 0] == 0.0
    with pytest.raises(ValueError, match=r"has 2 weights.*1 arrays"):
        layer.set_weights(values[:1])
    with pytest.raises(ValueError, match=r"'dense/kernel' has shape \(3, 2\).*\(2, 3\)"):
        layer.set_weights([np.zeros((2, 3)), np.zeros(2)])
    assert np.array_equal(layer.kernel.numpy(), values[0])  # nothing assigned on error


def test_count_params_before_build_raises():
    with pytest.raises(ValueError, match="not built"):
        layers.Dense(2).count_params()


def test_regularizer_losses_are_recomputed_and_activity_losses_cleared_per_call():
    layer = layers.Dense(2, kernel_initializer="ones",
                         kernel_regularizer=kerasrs.regularizers.L2(0.1),
                         activity_regularizer=kerasrs.regularizers.L1(0.5))
    layer(np.ones((1, 3), "float32"))
    values = sorted(float(v) for v in layer.losses)
    assert values == pytest.approx([0.1 * 6, 0.5 * 6])  # L2 on six ones; L1 on outputs [3, 3]
    layer(np.zeros((1, 3), "float32"))
    values = sorted(float(v) for v in layer.losses)
    assert values == pytest.approx([0.0, 0.6])  # the activity loss is the new call's only
    layer.kernel.assign(np.full((3, 2), 2.0))
    assert sorted(float(v) for v in layer.losses)[1] == pytest.approx(0.1 * 24)


def test_training_flag_is_passed_only_when_declared_and_inherited_by_sublayers():
    class Outer(layers.Layer):
        def __init__(self):
            super().__init__()
            self.inner = ScaleShift()

        def call(self, x, training=None):
            return self.inner(x)

    outer = Outer()
    outer(np.ones((1, 2)), training=True)
    assert outer.inner.seen_training is True
    outer(np.ones((1, 2)))
    assert outer.inner.seen_training is None
    assert [w.path for w in outer.weights] == ["outer/scale_shift/gamma", "outer/scale_shift/beta",
                                               "outer/scale_shift/count"]


def test_sublayers_in_lists_are_tracked():
    class Stack(layers.Layer):
        def __init__(self):
            super().__init__()
            self.blocks = [layers.Dense(3), layers.Dense(2)]

        def call(self, x):
            for block in self.blocks:
                x = block(x)
            return x

    stack = Stack()
    stack(np.ones((1, 4)))
    assert len(stack.weights) == 4 and stack.count_params() == 4 * 3 + 3 + 3 * 2 + 2


def test_input_spec_error_names_layer_and_both_shapes():
    layer = layers.Dense(2)
    layer(np.ones((1, 64)))
    with pytest.raises(ValueError, match=r"dense: .*axis -1 .* value 64.*Received: input shape "
                                         r"\(32, 10\)"):
        layer(np.ones((32, 10)))


def test_float_inputs_cast_to_layer_dtype_and_float64_layers():
    layer = layers.Dense(2)
    assert layer(np.ones((1, 3), "float64")).dtype == np.float32
    layer64 = layers.Dense(2, dtype="float64")
    assert layer64(np.ones((1, 3), "float32")).dtype == np.float64
    assert layer64.kernel.dtype == np.float64


def test_build_with_named_shape_arguments():
    class Pair(layers.Layer):
        def build(self, query_shape, value_shape):
            self.shapes = (query_shape, value_shape)

        def call(self, query, value):
            return query + ops.sum(value)

    layer = Pair()
    layer(np.ones((2, 3)), np.ones((2, 5)))
    assert layer.shapes == ((2, 3), (2, 5))
    assert layer.get_build_config() == {"shapes_dict": {"query_shape": [2, 3],
                                                        "value_shape": [2, 5]}}


def test_custom_layer_config_round_trip():
    layer = ScaleShift(axis=1, name="ss", trainable=False)
    config = layer.get_config()
    assert config["axis"] == 1 and config["name"] == "ss" and config["trainable"] is False
    clone = ScaleShift.from_config(config)
    assert (clone.axis, clone.name, clone.trainable) == (1, "ss", False)
    restored = layers.deserialize(layers.serialize(clone))
    assert isinstance(restored, ScaleShift) and restored.axis == 1


def test_unknown_constructor_argument_is_a_type_error():
    with pytest.raises(TypeError, match=r"Dense: unexpected keyword argument\(s\) \['unit'\]"):
        layers.Dense(2, unit=3)


def test_mask_travels_on_tensors_through_mask_supporting_layers():
    emb = layers.Embedding(5, 2, mask_zero=True)
    ids = np.array([[1, 0, 3]])
    h = emb(ids)
    out = layers.Dense(2)(h)  # Dense supports masking: the mask passes through
    assert out._keras_mask.numpy().tolist() == [[True, False, True]]
    out2 = layers.Flatten()(h)  # Flatten does not: the mask is dropped
    assert getattr(out2, "_keras_mask", None) is None
