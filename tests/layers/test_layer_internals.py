"""The `Layer` internals Keras's own tests and users' code read: `_flatten_layers`, seed
generators, built-at-construction, keyword-only inputs, `autocast`, `compute_output_spec`."""

import numpy as np
import pytest

import kerasrs
from kerasrs import layers


class _Outer(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.block = _Block()
        self.head = layers.Dense(2)

    def call(self, x):
        return self.head(self.block(x))


class _Block(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.inner = layers.Dense(3)
        self.drop = layers.Dropout(0.5, seed=1)

    def call(self, x, training=False):
        return self.drop(self.inner(x), training=training)


def test_flatten_layers_takes_keras_include_self_and_recursive():
    outer = _Outer()
    assert outer._flatten_layers(True, True) == [outer, outer.block, outer.block.inner,
                                                 outer.block.drop, outer.head]
    assert outer._flatten_layers(False, True)[0] is outer.block
    assert outer._flatten_layers(include_self=False, recursive=False) == [outer.block, outer.head]
    assert outer._flatten_layers(True, False) == [outer, outer.block, outer.head]


@pytest.mark.parametrize("make", [
    lambda: layers.Dropout(0.3), lambda: layers.GaussianNoise(0.1),
    lambda: layers.GaussianDropout(0.2), lambda: layers.AlphaDropout(0.2),
    lambda: layers.SpatialDropout1D(0.2), lambda: layers.Attention(dropout=0.1),
    lambda: _built_mha(dropout=0.1), lambda: layers.SimpleRNNCell(3),
    lambda: layers.LSTMCell(3), lambda: layers.GRUCell(3)])
def test_random_layers_own_one_seed_generator(make):
    layer = make()
    gens = [g for sub in layer._flatten_layers(True, True) for g in sub._seed_generators]
    assert len(gens) == 1 and isinstance(gens[0], kerasrs.random.SeedGenerator)
    state = gens[0].state
    assert state.name == "seed_generator_state" and not state.trainable
    # Keras's split: the seed state is state (variables) but no weight
    assert any(v is state for v in layer.non_trainable_variables)
    assert any(v is state for v in layer.variables)
    assert all(w is not state for w in layer.weights)


def _built_mha(**kwargs):
    """MultiHeadAttention keeps its generator in its `Dropout` sublayer (made by build)."""
    layer = layers.MultiHeadAttention(2, 4, **kwargs)
    layer.build((None, 3, 4), (None, 3, 4))
    return layer


def test_no_seed_generator_without_randomness():
    assert layers.Dropout(0.0)._seed_generators == []
    assert layers.Dense(2)._seed_generators == []
    assert layers.Attention()._seed_generators == []


def test_seeded_dropout_masks_advance_and_repeat():
    x = np.ones((4, 64), "float32")
    a, b = layers.Dropout(0.5, seed=7), layers.Dropout(0.5, seed=7)
    first, second = a(x, training=True).numpy(), a(x, training=True).numpy()
    assert not np.array_equal(first, second)  # the generator's counter advanced
    np.testing.assert_array_equal(first, b(x, training=True).numpy())
    assert int(a._seed_generators[0].state.numpy()[1]) == 2


def test_seeded_noise_layers_repeat_and_advance():
    x = np.ones((4, 16), "float32")
    for cls in (layers.GaussianNoise, layers.GaussianDropout, layers.AlphaDropout):
        a, b = cls(0.3, seed=3), cls(0.3, seed=3)
        first = a(x, training=True).numpy()
        np.testing.assert_array_equal(first, b(x, training=True).numpy())
        assert not np.array_equal(first, a(x, training=True).numpy())


def test_unseeded_dropout_follows_set_random_seed():
    x = np.ones((4, 64), "float32")
    kerasrs.utils.set_random_seed(3)
    first = layers.Dropout(0.5)(x, training=True).numpy()
    kerasrs.utils.set_random_seed(3)
    np.testing.assert_array_equal(first, layers.Dropout(0.5)(x, training=True).numpy())


def test_seed_generator_keras_config_and_validation():
    gen = kerasrs.random.SeedGenerator(5, name="g")
    assert gen.get_config() == {"seed": 5, "name": "g"}
    assert kerasrs.random.SeedGenerator(None).get_config()["seed"] is None
    np.testing.assert_array_equal(gen.next(), [5, 0])
    np.testing.assert_array_equal(gen.next(), [5, 1])
    with pytest.raises(ValueError, match="must be an integer"):
        kerasrs.random.SeedGenerator("x")


@pytest.mark.parametrize("make", [
    layers.Identity, lambda: layers.Activation("relu"), layers.ReLU, layers.ELU,
    layers.LeakyReLU, layers.Softmax, layers.Masking, lambda: layers.Dropout(0.2),
    lambda: layers.GaussianNoise(0.1), layers.ActivityRegularization, layers.MaxPooling2D,
    layers.GlobalAveragePooling1D, layers.UnitNormalization])
def test_stateless_layers_are_built_at_construction(make):
    layer = make()
    assert layer.built

    class WithBuild(type(layer)):  # a subclass with its own build still builds on first call
        def build(self, input_shape):
            pass

    args = {"Activation": ("relu",), "Dropout": (0.2,), "GaussianNoise": (0.1,)}
    assert not WithBuild(*args.get(type(layer).__name__, ())).built


def test_user_layer_without_build_is_not_built_before_a_call():
    class Plain(layers.Layer):
        def call(self, x):
            return x

    layer = Plain()
    assert not layer.built
    layer(np.ones((1, 2), "float32"))
    assert layer.built


def test_keyword_only_inputs():
    q, v = np.ones((2, 3, 4), "float32"), np.ones((2, 5, 4), "float32")
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=2)
    assert mha(query=q, value=v).shape == (2, 3, 4)
    sym = mha(query=layers.Input((3, 4)), value=layers.Input((5, 4)))
    assert sym.shape == (None, 3, 4)
    assert layers.Dense(2)(inputs=np.ones((1, 3), "float32")).shape == (1, 2)


def test_symbolic_tensor_takes_keras_sparse_and_ragged_arguments():
    t = layers.KerasTensor((None, 3), "float32", sparse=False, ragged=False)
    assert (t.sparse, t.ragged, t.shape) == (False, False, (None, 3))
    with pytest.raises(ValueError, match="sparse"):
        layers.KerasTensor((2,), sparse=True)


def test_autocast_false_keeps_input_dtype():
    x = np.ones((1, 2), "float64")
    assert layers.Identity()(x).dtype == "float32"
    assert layers.Identity(autocast=False)(x).dtype == "float64"
    assert layers.Identity().autocast is True


def test_compute_output_spec_gives_symbolic_outputs():
    dense = layers.Dense(4, dtype="mixed_float16")
    spec = dense.compute_output_spec(layers.KerasTensor((None, 3), "float16"))
    assert isinstance(spec, layers.KerasTensor)
    assert (spec.shape, spec.dtype) == ((None, 4), "float16")
    assert dense.built
