"""Keras 3's base-layer rules that Keras's own layer tests check (issue 20): state tracking,
argument validation, activity-regularizer scaling and the ``build`` signature."""

import numpy as np
import pytest

import kerasrs
from kerasrs import layers, metrics


class _Identity(layers.Layer):
    def call(self, x):
        return x


def test_activity_regularizer_is_divided_by_the_batch_size():
    layer = _Identity(activity_regularizer="l2")
    layer(np.full((5, 5), 2.0, "float32"))  # l2: 0.01 * sum(x**2) = 1.0, over 5 rows
    assert len(layer.losses) == 1
    np.testing.assert_allclose(layer.losses[0].numpy(), 0.2, rtol=1e-6)
    layer(np.zeros((0, 5), "float32"))
    np.testing.assert_allclose(layer.losses[0].numpy(), 0.0)


def test_a_symbolic_call_adds_no_loss():
    layer = _Identity(activity_regularizer="l1")
    layer(layers.Input(batch_shape=(2, 2)))
    assert layer.losses == []


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_trainable_must_be_a_bool(value):
    with pytest.raises(ValueError, match="to be a boolean"):
        layers.Dense(2, trainable=value)


def test_flags_are_passed_by_keyword():
    class Flagged(layers.Layer):
        def call(self, x, flag=False):
            return x if flag else x + 1

    x = np.ones((2, 3), "float32")
    with pytest.raises(ValueError, match="Only input tensors may be passed as positional"):
        Flagged()(x, True)
    np.testing.assert_allclose(Flagged()(x, flag=True).numpy(), x)
    np.testing.assert_allclose(Flagged()(x, None).numpy(), x + 1)  # None is an absent input


def test_build_with_several_arguments_names_each_call_argument():
    class NoSuffix(layers.Layer):
        def build(self, foo_shape, bar):
            pass

        def call(self, foo, bar):
            return foo

    class NoSuchArgument(layers.Layer):
        def build(self, foo_shape, baz_shape):
            pass

        def call(self, foo, bar):
            return foo

    foo, bar = np.ones((4, 1), "float32"), np.ones((4, 2), "float32")
    with pytest.raises(ValueError, match="argument `bar`, which does not end in `_shape`"):
        NoSuffix()(foo, bar)
    with pytest.raises(ValueError, match=r"`baz_shape`, but `call\(\)` does not have argument"):
        NoSuchArgument()(foo, bar)


def test_build_on_call_with_an_optional_input_left_out():
    class DictInputs(layers.Layer):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(2)

        def call(self, xs):
            out = self.dense(xs["x1"])
            return out if xs["x2"] is None else out + self.dense(xs["x2"])

    layer = DictInputs()
    layer({"x1": layers.Input(batch_shape=(3, 4)), "x2": None})
    assert len(layer.weights) == 2


def test_from_config_gives_the_constructor_a_policy_not_a_dict():
    seen = []

    class Recording(layers.Dense):
        def __init__(self, *args, **kwargs):
            seen.append(kwargs["dtype"])
            super().__init__(*args, **kwargs)

    Recording.from_config(layers.Dense(2, dtype="bfloat16").get_config())
    Recording.from_config(layers.Dense(2, dtype="int8_from_bfloat16").get_config())
    assert seen[0] == "bfloat16"
    assert seen[1].quantization_mode == "int8"


def test_no_weights_are_added_during_the_call_of_a_built_layer():
    class LateWeight(layers.Layer):
        def call(self, x):
            self.w = self.add_weight(shape=(), initializer="zeros")
            return x

    with pytest.raises(ValueError, match="cannot add new elements of state"):
        LateWeight()(np.ones((3, 2), "float32"))


def test_variables_assigned_as_attributes_are_weights():
    class Early(layers.Layer):
        def __init__(self):
            self.w = kerasrs.Variable(np.ones((2,), "float32"))  # before Layer.__init__
            super().__init__()
            self.v = kerasrs.Variable(np.zeros((3,), "float32"), trainable=False)
            self.dense = layers.Dense(2)
            self.alias = None

    layer = Early()
    assert [w.shape for w in layer.weights] == [(2,), (3,)]
    assert layer.trainable_weights[0] is layer.w
    assert layer.non_trainable_weights[0] is layer.v
    layer.dense.build((None, 4))
    layer.alias = layer.dense.kernel  # another layer's weight is not taken twice
    assert len(layer.weights) == 4 and len(layer._own_weights()) == 2


def test_metrics_held_in_attributes_are_listed():
    class WithMetric(layers.Layer):
        def __init__(self, inner=None):
            super().__init__()
            self.inner = inner or layers.Dense(3)
            self.metric = metrics.MeanSquaredError(name="my_metric")

        def call(self, x):
            return self.inner(x)

    layer = WithMetric(WithMetric())
    layer.build((1, 3))
    assert len(layer.metrics) == 2
    assert len(layer.metrics_variables) == 4  # total and count of each
    assert layer.non_trainable_variables == []


def test_recorded_arguments_do_not_replace_the_serialized_policy():
    class NoGetConfig(layers.Layer):
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units

        def call(self, x):
            return x

    config = NoGetConfig(3, dtype="float32").get_config()
    assert config["units"] == 3 and config["dtype"]["class_name"] == "DTypePolicy"
    assert NoGetConfig.from_config(config).get_config() == config


def test_each_call_argument_gets_its_own_mask_by_name():
    seen = {}

    class TwoInputs(layers.Layer):
        supports_masking = True

        def call(self, x1, x2, x1_mask=None, x2_mask=None):
            seen.update(x1_mask=x1_mask, x2_mask=x2_mask)
            return x2

    m1, m2 = np.array([True, False]), np.array([False, True])
    x1, x2 = layers.Masking()(np.ones((2, 3), "float32")), np.ones((2, 3), "float32")
    x1._keras_mask, x2 = m1, kerasrs.ops.convert_to_tensor(x2)
    x2._keras_mask = m2
    TwoInputs()(x1, x2)
    assert seen["x1_mask"] is m1 and seen["x2_mask"] is m2
    TwoInputs()(x1=(x1, x1), x2=x2)
    assert seen["x1_mask"] == (m1, m1)
    TwoInputs()(x1, np.ones((2, 3), "float32"))  # an argument without a mask gets None
    assert seen["x1_mask"] is m1 and seen["x2_mask"] is None


def test_stateless_call_uses_the_given_state_and_restores_the_layer():
    class Counter(layers.Layer):
        def __init__(self):
            super().__init__()
            self.total = self.add_weight(shape=(), initializer="zeros", trainable=False)
            self.w = self.add_weight(shape=(), initializer="zeros", regularizer="l1")

        def call(self, x):
            self.total.assign(self.total + kerasrs.ops.sum(x))
            return x * self.w

    layer = Counter()
    x = np.ones((2, 3), "float32")
    out, (total,), losses = layer.stateless_call([np.float32(2.0)], [np.float32(10.0)], x,
                                                 return_losses=True)
    np.testing.assert_allclose(out.numpy(), 2 * x)
    np.testing.assert_allclose(total.numpy(), 16.0)
    np.testing.assert_allclose(losses[0].numpy(), 0.02)  # l1(0.01) of the given w = 2
    assert float(layer.w.numpy()) == 0.0 and float(layer.total.numpy()) == 0.0
    with pytest.raises(ValueError, match="has 1 trainable_variables"):
        layer.stateless_call([], [np.float32(0.0)], x)
