"""Quantization (int8, int4) and LoRA of Dense, EinsumDense and Embedding: Keras's files load
and predict the same, Keras's layouts, dtype policies, errors and gradients."""

import pathlib

import numpy as np
import pytest

import kerasrs
from kerasrs import dtype_policies, layers, quantizers

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "keras_quantized"


def _model():
    """The fixture script's model, in kerasrs (same names, same layout)."""
    tokens = layers.Input((5,), dtype="int32", name="tokens")
    feats = layers.Input((5, 12), name="feats")
    x = layers.Embedding(20, 12, name="embed")(tokens)
    x = layers.Add(name="add")([x, feats])
    x = layers.EinsumDense("abc,cde->abde", (5, 2, 3), bias_axes="de", name="heads")(x)
    x = layers.Reshape((5, 6), name="merge")(x)
    x = layers.Dense(7, activation="relu", name="dense")(x)
    return kerasrs.Model([tokens, feats], layers.Dense(3, name="out")(x))


@pytest.mark.parametrize("name", ["int8", "int4", "int4_per_channel", "lora"])
def test_keras_quantized_files_predict_the_same(name):
    io = np.load(FIXTURES / f"{name}_io.npz")
    model = kerasrs.saving.load_model(FIXTURES / f"{name}.keras")
    np.testing.assert_allclose(model.predict([io["tokens"], io["feats"]], verbose=0), io["y"],
                               rtol=1e-5, atol=1e-6)


@pytest.mark.filterwarnings("ignore:Layer .* does not have a `quantize` method")
@pytest.mark.parametrize("name, config", [
    ("int8", "int8"), ("int4", quantizers.Int4QuantizationConfig(block_size=4)),
    ("int4_per_channel", quantizers.Int4QuantizationConfig(block_size=None))])
def test_keras_quantized_weights_load_into_a_model_quantized_here(name, config):
    io = np.load(FIXTURES / f"{name}_io.npz")
    model = _model()
    if isinstance(config, str):
        model.quantize(config)
    else:
        model.quantize(config=config)
    model.load_weights(FIXTURES / f"{name}.weights.h5")
    np.testing.assert_allclose(model.predict([io["tokens"], io["feats"]], verbose=0), io["y"],
                               rtol=1e-5, atol=1e-6)


def _dense(units=6, features=5, **kwargs):
    layer = layers.Dense(units, **kwargs)
    layer.build((None, features))
    return layer


def test_dense_int8_layout_policy_and_accuracy():
    layer = _dense()
    x = np.random.default_rng(0).standard_normal((4, 5)).astype("float32")
    before = layer(x).numpy()
    layer.quantize("int8")
    assert [(v.name, v.dtype.name, v.shape) for v in layer.weights] == [
        ("bias", "float32", (6,)), ("kernel", "int8", (5, 6)),
        ("kernel_scale", "float32", (6,))]
    assert layer.dtype_policy.name == "int8_from_float32"
    assert layer.quantization_mode == "int8"
    np.testing.assert_allclose(layer(x).numpy(), before, atol=0.05)
    store = {}
    layer.save_own_variables(store)  # Keras's saved order: kernel, bias, kernel_scale
    assert [np.asarray(store[k]).dtype.name for k in "012"] == ["int8", "float32", "float32"]


def test_dense_int4_grouped_and_per_channel_layouts():
    grouped = _dense(units=5, features=10)
    grouped.quantize("int4", config=quantizers.Int4QuantizationConfig(block_size=4))
    assert [(v.name, v.shape) for v in grouped.weights] == [
        ("bias", (5,)), ("kernel", (10, 3)), ("kernel_scale", (3, 5)), ("kernel_zero", (3, 5)),
        ("g_idx", (10,))]
    np.testing.assert_array_equal(grouped.g_idx.numpy(), np.arange(10) // 4)
    assert grouped.dtype_policy.name == "int4/4_from_float32"
    per_channel = _dense(units=5, features=10)
    per_channel.quantize("int4", config=quantizers.Int4QuantizationConfig(block_size=None))
    assert [v.shape for v in per_channel.weights] == [(5,), (10, 3), (5,)]
    assert per_channel.dtype_policy.name == "int4/-1_from_float32"


def test_einsum_dense_int8_scale_follows_keras_layout():
    layer = layers.EinsumDense("abc,cde->abde", (5, 2, 3), bias_axes="de")
    layer.build((None, 5, 12))
    layer.quantize("int8")
    assert layer.kernel_scale.shape == (1, 1, 2, 3)  # the output's layout, as Keras saves it
    assert layer._kernel.shape == (12, 2, 3)


def test_embedding_int8_and_int4_tables():
    emb = layers.Embedding(7, 10)
    emb.build()
    ids = np.array([[0, 3, 6]])
    before = emb(ids).numpy()
    emb.quantize("int8")
    assert [(v.name, v.dtype.name, v.shape) for v in emb.weights] == [
        ("embeddings", "int8", (7, 10)), ("embeddings_scale", "float32", (7,))]
    np.testing.assert_allclose(emb(ids).numpy(), before, atol=1e-3)
    emb4 = layers.Embedding(7, 10)
    emb4.build()
    emb4.quantize("int4", config=quantizers.Int4QuantizationConfig(block_size=4))
    assert [v.shape for v in emb4.weights] == [(7, 5), (7, 3), (7, 3), (10,)]


def test_reversible_embedding_untied_quantizes_both_tables():
    layer = layers.ReversibleEmbedding(6, 4, tie_weights=False)
    layer.build()
    vectors = np.random.default_rng(1).standard_normal((2, 4)).astype("float32")
    before = layer(vectors, reverse=True).numpy()
    layer.quantize("int8")
    assert [v.name for v in layer.weights] == ["embeddings", "embeddings_scale",
                                               "reverse_embeddings", "reverse_embeddings_scale"]
    np.testing.assert_allclose(layer(vectors, reverse=True).numpy(), before, atol=0.02)


def test_quantize_errors_use_keras_phrases():
    with pytest.raises(ValueError, match="Cannot quantize a layer that isn't yet built"):
        layers.Dense(2).quantize("int8")
    layer = _dense()
    with pytest.raises(ValueError, match="Invalid quantization mode"):
        layer.quantize("int7")
    layer.quantize("int8")
    with pytest.raises(ValueError, match="is already quantized with dtype_policy="):
        layer.quantize("int4")

    class MyDense(layers.Dense):
        pass

    mine = MyDense(2)
    mine.build((None, 3))
    with pytest.raises(NotImplementedError, match="does not have a `quantize` method"):
        mine.quantize("int8")
    mine.quantize("int8", type_check=False)
    with pytest.raises(NotImplementedError, match="Invalid quantization mode"):
        _dense().quantized_build((3, 2), "int7")


def test_setting_a_quantized_policy_quantizes_a_built_layer():
    layer = _dense()
    layer.dtype_policy = "int8_from_float32"
    assert layer.kernel_scale.shape == (6,) and layer._kernel.dtype == np.int8
    built = layers.Dense(4, dtype="int4_from_float32")  # per channel: no block size in the name
    built.build((None, 3))
    assert [v.name for v in built.weights] == ["bias", "kernel", "kernel_scale"]


def test_quantized_dtype_policies_round_trip():
    for name in ("int8_from_float32", "int4/128_from_mixed_bfloat16", "float8_from_float32",
                 "gptq/4/8_from_float32", "awq/4/-1_from_float32"):
        policy = dtype_policies.get(name)
        assert policy.name == name
        assert dtype_policies.get(dtype_policies.serialize(policy)) == policy
    assert dtype_policies.get("int4/128_from_mixed_bfloat16").compute_dtype == "bfloat16"
    with pytest.raises(ValueError, match="float16"):
        dtype_policies.get("int8_from_mixed_float16")


def test_dtype_policy_map_by_path():
    policy_map = dtype_policies.DTypePolicyMap()
    policy_map["model/dense"] = "int8_from_float32"
    policy_map["model/enc.*"] = "bfloat16"
    assert policy_map["model/dense"].quantization_mode == "int8"
    assert policy_map["model/encoder/q"].name == "bfloat16"
    assert policy_map["other"].name == "float32"
    with pytest.raises(ValueError, match="already exist"):
        policy_map["model/dense"] = "float32"
    again = dtype_policies.get(dtype_policies.serialize(policy_map))
    assert again["model/dense"].name == "int8_from_float32"


def test_int8_gradient_passes_straight_through_the_input_rounding():
    layer = _dense(units=3, features=4, use_bias=False)
    layer.quantize("int8")
    x = kerasrs.Variable(np.random.default_rng(2).standard_normal((2, 4)).astype("float32"))
    with kerasrs.GradientTape() as tape:
        y = kerasrs.ops.sum(layer(x))
    grad = tape.gradient(y, x).numpy()
    kernel = layer._kernel.numpy() / layer.kernel_scale.numpy()
    np.testing.assert_allclose(grad, np.ones((2, 3)) @ kernel.T, rtol=1e-6)


def test_lora_trains_saves_merged_and_reloads_at_zero(tmp_path):
    layer = _dense(units=4, features=3, name="proj")
    layer.enable_lora(2)
    assert [v.name for v in layer.trainable_weights] == ["bias", "lora_kernel_a", "lora_kernel_b"]
    assert [v.name for v in layer.non_trainable_weights] == ["kernel"]
    assert layer.lora_kernel_a.path == "proj/lora_kernel_a"
    model = kerasrs.Sequential([layers.Input((3,)), layer])
    model.compile("sgd", "mse")
    x, y = np.random.default_rng(3).standard_normal((2, 32, 3)).astype("float32")[0], \
        np.ones((32, 4), "float32")
    b0 = layer.lora_kernel_b.numpy()
    model.fit(x, y, epochs=2, verbose=0)
    assert np.abs(layer.lora_kernel_b.numpy() - b0).max() > 0
    model.save(tmp_path / "lora.keras")
    loaded = kerasrs.saving.load_model(tmp_path / "lora.keras")
    assert loaded.layers[0].lora_enabled
    assert np.all(loaded.layers[0].lora_kernel_b.numpy() == 0)  # the delta is in the kernel
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="lora is already enabled"):
        layer.enable_lora(2)
    with pytest.raises(ValueError, match="isn't yet built"):
        layers.Dense(2).enable_lora(2)


def test_int4_pack_unpack_round_trip():
    values = np.array([[-3, 7, 2], [-8, 1, 0], [5, -1, -8]], dtype="int8")
    for axis in (0, 1):
        packed, _, length = quantizers.pack_int4(values, axis=axis)
        assert packed.shape[axis] == 2 and length == 3
        np.testing.assert_array_equal(quantizers.unpack_int4(packed, 3, axis=axis).numpy(),
                                      values)


def test_abs_max_quantize_maps_max_to_the_top_of_the_range():
    values, scale = quantizers.abs_max_quantize(np.array([[1.0, -4.0], [0.5, 0.25]]), axis=-1)
    np.testing.assert_array_equal(values.numpy(), [[32, -127], [127, 63]])  # 63.5 - epsilon
    assert scale.shape == (2, 1)


def test_variable_numpy_is_a_snapshot():
    var = kerasrs.Variable(np.zeros(3, "float32"))
    before = var.numpy()
    var.assign(np.ones(3, "float32"))
    assert before.tolist() == [0.0, 0.0, 0.0]


def test_a_model_input_takes_other_batch_sizes():
    model = kerasrs.Sequential([layers.Dense(2)])
    model.build((64, 3))
    assert model.predict(np.ones((5, 3), "float32"), verbose=0).shape == (5, 2)


def test_an_unbuilt_model_of_built_layers_saves_and_reloads(tmp_path):
    layer = _dense(units=2, features=3)
    model = kerasrs.Sequential([layer])
    with pytest.warns(UserWarning, match="not been built"):
        model.save(tmp_path / "m.keras")
    loaded = kerasrs.saving.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(loaded.layers[0].kernel.numpy(), layer.kernel.numpy())


def test_from_config_errors_are_type_errors_with_keras_phrase():
    with pytest.raises(TypeError, match="`input_dim` must be a positive integer"):
        layers.Embedding.from_config({"input_dim": 3.7, "output_dim": 8})
