"""Core, reshaping and merge layers: shapes, config round trips, values and gradients."""

import json

import numpy as np
import pytest

import kerasrs
from kerasrs import layers, ops
from kerasrs.testing import check_gradients


@pytest.fixture(autouse=True)
def fresh_names():
    kerasrs.utils.clear_session()


def _x(shape, seed=0, dtype="float32"):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


# (layer factory, input shapes (with batch), expected output shape)
CASES = [
    (lambda: layers.Dense(4, activation="relu"), [(2, 3)], (2, 4)),
    (lambda: layers.Dense(4), [(2, 5, 3)], (2, 5, 4)),
    (lambda: layers.Activation("tanh"), [(2, 3)], (2, 3)),
    (lambda: layers.Dropout(0.3, seed=1), [(2, 3)], (2, 3)),
    (lambda: layers.Identity(), [(2, 3)], (2, 3)),
    (lambda: layers.Flatten(), [(2, 3, 4)], (2, 12)),
    (lambda: layers.Flatten(data_format="channels_first"), [(2, 3, 4, 5)], (2, 60)),
    (lambda: layers.Reshape((4, -1)), [(2, 3, 4)], (2, 4, 3)),
    (lambda: layers.Permute((2, 1)), [(2, 3, 4)], (2, 4, 3)),
    (lambda: layers.RepeatVector(3), [(2, 4)], (2, 3, 4)),
    (lambda: layers.Rescaling(1 / 255, offset=-1.0), [(2, 3)], (2, 3)),
    (lambda: layers.Masking(0.0), [(2, 3, 4)], (2, 3, 4)),
    (lambda: layers.Softmax(axis=1), [(2, 3)], (2, 3)),
    (lambda: layers.Add(), [(2, 3), (2, 3)], (2, 3)),
    (lambda: layers.Subtract(), [(2, 3), (2, 3)], (2, 3)),
    (lambda: layers.Multiply(), [(2, 3), (2, 1)], (2, 3)),
    (lambda: layers.Average(), [(2, 3), (2, 3), (2, 3)], (2, 3)),
    (lambda: layers.Maximum(), [(2, 3), (2, 3)], (2, 3)),
    (lambda: layers.Minimum(), [(2, 3), (2, 3)], (2, 3)),
    (lambda: layers.Concatenate(axis=1), [(2, 3), (2, 5)], (2, 8)),
    (lambda: layers.Dot(axes=1), [(2, 3), (2, 3)], (2, 1)),
    (lambda: layers.Dot(axes=(2, 2), normalize=True), [(2, 4, 3), (2, 5, 3)], (2, 4, 5)),
]


def _call(layer, shapes):
    xs = [_x(s, seed=i) for i, s in enumerate(shapes)]
    return layer(xs if len(xs) > 1 else xs[0])


@pytest.mark.parametrize("make, shapes, expected", CASES)
def test_output_shape_eager_and_symbolic(make, shapes, expected):
    assert _call(make(), shapes).shape == expected
    symbolic = [layers.Input(s[1:]) for s in shapes]
    out = make()(symbolic if len(symbolic) > 1 else symbolic[0])
    assert out.shape == (None,) + expected[1:]


@pytest.mark.parametrize("make, shapes, expected", CASES)
def test_config_round_trip_through_json(make, shapes, expected):
    layer = make()
    config = json.loads(json.dumps(layers.serialize(layer)))
    clone = layers.deserialize(config)
    assert type(clone) is type(layer) and clone.get_config() == layer.get_config()
    out = _call(layer, shapes)
    clone_out = _call(clone, shapes)
    if layer.weights:
        clone.set_weights(layer.get_weights())
        clone_out = _call(clone, shapes)
    np.testing.assert_allclose(clone_out.numpy(), out.numpy(), rtol=1e-6)


def test_embedding_and_lambda_shapes_and_configs():
    emb = layers.Embedding(10, 3)
    assert emb(np.array([[1, 2, 9]])).shape == (1, 3, 3)
    assert layers.Embedding(10, 3)(layers.Input((None,), dtype="int32")).shape == (None, None, 3)
    assert layers.deserialize(layers.serialize(emb)).get_config() == emb.get_config()
    lam = layers.Lambda(lambda t: ops.concatenate([t, t], axis=-1))
    assert lam(layers.Input((None, 3))).shape == (None, None, 6)
    assert lam(np.ones((2, 5, 3))).shape == (2, 5, 6)


def test_dense_values_and_gradients_in_float64():
    layer = layers.Dense(3, activation="tanh", dtype="float64")
    x = _x((4, 5), dtype="float64")
    layer(x)
    layer.bias.assign(_x((3,), 2, "float64"))
    k, b = layer.kernel.numpy(), layer.bias.numpy()
    np.testing.assert_allclose(layer(x).numpy(), np.tanh(x @ k + b), rtol=1e-12)
    # inputs and weights: check_gradients perturbs the Variables' data in place
    check_gradients(lambda t, kernel, bias: layer(t), [x, layer.kernel, layer.bias])


def test_dense_on_3d_input_gradients():
    layer = layers.Dense(2, dtype="float64")
    x = _x((2, 3, 4), dtype="float64")
    layer(x)
    check_gradients(lambda t, kernel, bias: layer(t), [x, layer.kernel, layer.bias])


def test_dense_bias_gradient_is_sum_over_batch_c12():
    layer = layers.Dense(2, dtype="float64")
    x = _x((3, 4), dtype="float64")
    gy = _x((3, 2), 1, "float64")
    with kerasrs.GradientTape() as tape:
        y = layer(x)
    gb = tape.gradient(y, layer.bias, output_gradients=gy)
    np.testing.assert_allclose(gb.numpy(), gy.sum(axis=0), rtol=1e-12)


@pytest.mark.parametrize("make, shapes", [
    (lambda: layers.Add(dtype="float64"), [(2, 3), (2, 3)]),
    (lambda: layers.Subtract(dtype="float64"), [(2, 3), (2, 3)]),
    (lambda: layers.Multiply(dtype="float64"), [(2, 3), (2, 1)]),
    (lambda: layers.Average(dtype="float64"), [(2, 3), (2, 3)]),
    (lambda: layers.Maximum(dtype="float64"), [(2, 3), (2, 3)]),
    (lambda: layers.Minimum(dtype="float64"), [(2, 3), (2, 3)]),
    (lambda: layers.Concatenate(axis=-1, dtype="float64"), [(2, 3), (2, 2)]),
    (lambda: layers.Dot(axes=1, dtype="float64"), [(2, 3), (2, 3)]),
    (lambda: layers.Dot(axes=(1, 2), normalize=True, dtype="float64"), [(2, 3, 4), (2, 5, 3)]),
])
def test_merge_layer_gradients(make, shapes):
    layer = make()
    xs = [_x(s, seed=i, dtype="float64") for i, s in enumerate(shapes)]
    check_gradients(lambda *ts: layer(list(ts)), xs)


@pytest.mark.parametrize("make, shape", [
    (lambda: layers.Flatten(dtype="float64"), (2, 3, 4)),
    (lambda: layers.Reshape((2, 6), dtype="float64"), (2, 3, 4)),
    (lambda: layers.Permute((2, 1), dtype="float64"), (2, 3, 4)),
    (lambda: layers.RepeatVector(3, dtype="float64"), (2, 4)),
    (lambda: layers.Rescaling(0.5, 1.0, dtype="float64"), (2, 3)),
    (lambda: layers.Activation("gelu", dtype="float64"), (2, 3)),
    (lambda: layers.Softmax(dtype="float64"), (2, 3)),
])
def test_reshaping_and_activation_layer_gradients(make, shape):
    layer = make()
    check_gradients(lambda t: layer(t), [_x(shape, dtype="float64")])


def test_embedding_gradient_and_rows():
    emb = layers.Embedding(6, 2, dtype="float64")
    ids = np.array([[0, 5, 5]])
    out = emb(ids)
    check_gradients(lambda table: emb(ids), [emb.embeddings])
    np.testing.assert_array_equal(out.numpy()[0], emb.embeddings.numpy()[[0, 5, 5]])
    with kerasrs.GradientTape() as tape:
        y = ops.sum(emb(ids))
    g = tape.gradient(y, emb.embeddings).numpy()
    assert g[5].tolist() == [2.0, 2.0] and g[0].tolist() == [1.0, 1.0] and g[1:5].sum() == 0


def test_embedding_out_of_range_ids_fail_loudly_c23(backend):
    with kerasrs.backend.using(backend.name):
        emb = layers.Embedding(input_dim=10, output_dim=3)
        ids = backend.asarray(np.array([[1, 10]]))
        with pytest.raises(ValueError, match=r"\[0, 10\).*Received: id 10"):
            emb(kerasrs.Tensor(ids))
        with pytest.raises(ValueError, match=r"\[0, 10\).*Received: id -1"):
            emb(kerasrs.Tensor(backend.asarray(np.array([[-1]]))))
        out = emb(kerasrs.Tensor(backend.asarray(np.array([[0, 9]]))))
        assert out.shape == (1, 2, 3)
        np.testing.assert_array_equal(out.numpy()[0], emb.embeddings.numpy()[[0, 9]])


def test_dropout_only_during_training_c15():
    layer = layers.Dropout(0.5, seed=1)
    x = np.ones((1, 1000), "float32")
    assert np.array_equal(layer(x, training=False).numpy(), x)
    assert np.array_equal(layer(x).numpy(), x)
    y = layer(x, training=True).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0}
    assert 0.45 <= (y == 0).mean() <= 0.55
    model = kerasrs.Sequential([layers.Input((1000,)), layers.Dropout(0.5)])
    for _ in range(2):
        assert np.array_equal(model.predict(x, verbose=0), x)


def test_dropout_noise_shape_drops_whole_features():
    y = layers.Dropout(0.5, noise_shape=(None, 1, 6), seed=3)(np.ones((4, 5, 6)), training=True)
    y = y.numpy()
    assert np.all(y == y[:, :1, :])  # the same mask for every step


def test_dropout_rejects_bad_rate():
    with pytest.raises(ValueError, match="rate=1.5"):
        layers.Dropout(1.5)


def test_masked_softmax_c09():
    x = np.array([[1.0, 2.0, 3.0]], "float32")
    mask = np.array([[True, True, False]])
    out = layers.Softmax()(x, mask=mask).numpy()
    np.testing.assert_allclose(out, [[0.268941, 0.731059, 0.0]], atol=1e-6)
    out16 = layers.Softmax(dtype="float16")(x.astype("float16"), mask=mask).numpy()
    assert out16.dtype == np.float16 and np.all(np.isfinite(out16))
    np.testing.assert_allclose(out16.astype("float32"), [[0.268941, 0.731059, 0.0]], atol=1e-3)
    xt = kerasrs.Tensor(x)
    with kerasrs.GradientTape() as tape:
        tape.watch(xt)
        y = layers.Softmax()(xt, mask=mask)[0, 0]
    np.testing.assert_allclose(tape.gradient(y, xt).numpy(), [[0.196612, -0.196612, 0.0]],
                               atol=1e-6)


def test_masking_layer_zeroes_padding_steps_and_sets_mask():
    x = np.array([[[1.0, 2.0], [0.0, 0.0], [3.0, 0.0]]], "float32")
    out = layers.Masking(0.0)(x)
    np.testing.assert_array_equal(out.numpy(), x)
    assert out._keras_mask.numpy().tolist() == [[True, False, True]]
    out = layers.Masking(1.0)(np.ones((1, 2, 2)))
    assert out.numpy().sum() == 0 and not out._keras_mask.numpy().any()


def test_reshape_size_mismatch_names_layer_and_shapes():
    with pytest.raises(ValueError, match=r"reshape: cannot reshape a sample of shape \(3, 4\)"):
        layers.Reshape((5,))(np.ones((2, 3, 4)))


def test_merge_errors_name_the_layer_and_shapes():
    with pytest.raises(ValueError, match=r"add: .*do not broadcast"):
        layers.Add()([np.ones((2, 3)), np.ones((2, 4))])
    with pytest.raises(ValueError, match=r"subtract: .*called on exactly 2 inputs"):
        layers.Subtract()([np.ones((2, 3))] * 3)
    with pytest.raises(ValueError, match=r"concatenate: the layer requires inputs with matching"):
        layers.Concatenate(axis=-1)([layers.Input((2, 3)), layers.Input((4, 3))])


def test_concatenate_merges_masks():
    a = layers.Embedding(5, 2, mask_zero=True)(np.array([[1, 0]]))
    b = kerasrs.Tensor(np.ones((1, 2, 3), "float32"))
    out = layers.Concatenate()([a, b])
    assert out.shape == (1, 2, 5) and out._keras_mask.numpy().tolist() == [[True, True]]
    out = layers.Add()([a, layers.Embedding(5, 2, mask_zero=True)(np.array([[0, 2]]))])
    assert out._keras_mask.numpy().tolist() == [[True, True]]  # Keras: the OR of the masks


def test_dot_values_match_numpy():
    a, b = _x((2, 3, 4)), _x((2, 5, 4), 1)
    out = layers.Dot(axes=2)([a, b]).numpy()
    np.testing.assert_allclose(out, np.einsum("bik,bjk->bij", a, b), rtol=1e-5)
    out = layers.Dot(axes=1, normalize=True)([_x((2, 3)), _x((2, 3), 1)]).numpy()
    u, v = _x((2, 3)), _x((2, 3), 1)
    cos = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    np.testing.assert_allclose(out[:, 0], cos, rtol=1e-5)


def test_lambda_config_stores_python_code_and_refuses_it_in_safe_mode():
    layer = layers.Lambda(lambda t: t * 2.0)
    config = layer.get_config()
    assert config["function"]["class_name"] == "__lambda__"
    with pytest.raises(ValueError, match="safe_mode=False"):
        layers.Lambda.from_config(config)
    clone = layers.Lambda.from_config(config, safe_mode=False)
    assert clone(np.ones((1, 2))).numpy().tolist() == [[2.0, 2.0]]
    named = layers.Lambda(np.negative).get_config()["function"]
    assert named["class_name"] == "function" and named["config"] == "negative"


def test_symbolic_tensors_have_no_values():
    x = layers.Input((3,))
    assert (x + 1).shape == (None, 3)  # operators record op nodes (tests/layers/test_symbolic_ops)
    for convert in (bool, float, np.asarray):
        with pytest.raises(TypeError, match="has no values"):
            convert(x)
