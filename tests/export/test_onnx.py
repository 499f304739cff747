"""``model.export(path, format="onnx")``: ONNX Runtime gives kerasrs's ``predict`` within 1e-5
on batches of 1, 7 and 128 for the benchmark models (benchmarks/models.py), the Keras reference
models m1, m2 and m4 (tests/fixtures/keras, their Keras weights), the notebooks' CNN and
transformer, and small models of the other lowered layers; every file passes
``onnx.checker.check_model``. An op without a lowering raises naming the layer and the op and
leaves no file; without the `onnx` package an ImportError names the extra."""

import builtins
import os
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import kerasrs  # noqa: E402
from kerasrs import layers, ops  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "keras")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import models as benchmark_models  # noqa: E402

sys.path.pop(0)
BATCHES = (1, 7, 128)
TOLERANCE = dict(rtol=1e-5, atol=1e-5)


def _session(path):
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def _data(shape, dtype, batch, rng):
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 10, (batch,) + shape).astype(dtype)
    return rng.standard_normal((batch,) + shape).astype(dtype)


def check_export(model, tmp_path, batches=BATCHES, name="model.onnx"):
    """Export ``model``, check the file and compare ONNX Runtime with ``predict``."""
    path = str(tmp_path / name)
    model.export(path, format="onnx", verbose=False)
    onnx.checker.check_model(onnx.load(path), full_check=True)
    session = _session(path)
    rng = np.random.default_rng(0)
    for batch in batches:
        xs = [_data(tuple(t.shape[1:]), t.dtype, batch, rng) for t in model.inputs]
        expected = model.predict(xs[0] if len(xs) == 1 else xs, verbose=0)
        expected = expected if isinstance(expected, (list, tuple)) else [expected]
        got = session.run(None, {i.name: x for i, x in zip(session.get_inputs(), xs)})
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.shape == e.shape
            np.testing.assert_allclose(g, e, **TOLERANCE, err_msg=f"batch {batch}")
    return session


# -- the benchmark, reference and notebook models --------------------------------------------------
@pytest.mark.parametrize("name", ["mlp", "cnn", "lstm", "transformer"])
def test_benchmark_models(name, tmp_path):
    model, _ = benchmark_models.kerasrs_network(name)
    session = check_export(model, tmp_path)
    assert session.get_inputs()[0].shape[0] == "batch"  # dynamic
    assert session.get_inputs()[0].name == model.inputs[0].name


@pytest.mark.parametrize("name", ["m1", "m2", "m4"])
def test_keras_reference_models(name, tmp_path):
    model = kerasrs.models.load_model(os.path.join(FIXTURES, f"{name}.h5"), compile=False)
    check_export(model, tmp_path)
    io = np.load(os.path.join(FIXTURES, f"{name}_io.npz"))
    path = str(tmp_path / "model.onnx")
    got = _session(path).run(None, {model.inputs[0].name: io["x"]})[0]
    np.testing.assert_allclose(got, io["y"], rtol=1e-5, atol=1e-5)  # Keras's own outputs


class PositionEmbedding(layers.Layer):
    """The notebook's learned position vectors (a custom layer: plain ops)."""

    def build(self, input_shape):
        self.embeddings = self.add_weight(name="embeddings", shape=tuple(input_shape[1:]),
                                          initializer="random_normal")

    def call(self, inputs):
        return ops.add(inputs, self.embeddings)


def _notebook_transformer():
    """notebooks/05_sequences_and_attention.ipynb's encoder (dropout removed in inference)."""
    inputs = layers.Input((28, 28))
    x = PositionEmbedding()(layers.Dense(64)(inputs))
    for _ in range(2):
        a = layers.MultiHeadAttention(4, 16, dropout=0.1)(x, x)
        x = layers.LayerNormalization(epsilon=1e-6)(layers.Add()([x, layers.Dropout(0.1)(a)]))
        f = layers.Dropout(0.1)(layers.Dense(64)(layers.Dense(128, activation="relu")(x)))
        x = layers.LayerNormalization(epsilon=1e-6)(layers.Add()([x, f]))
    x = layers.GlobalAveragePooling1D()(x)
    return kerasrs.Model(inputs, layers.Dense(10, activation="softmax")(layers.Dropout(0.1)(x)))


def test_notebook_transformer(tmp_path):
    check_export(_notebook_transformer(), tmp_path)


def test_notebook_cnn_feature_maps(tmp_path):
    """notebooks/04_convnets.ipynb's CNN and its three-output feature model."""
    model, _ = benchmark_models.kerasrs_network("cnn")
    names = [layer.name for layer in model.layers if "conv" in layer.name or "pool" in
             layer.name]
    features = kerasrs.Model(model.inputs, [model.get_layer(n).output for n in names])
    session = check_export(features, tmp_path, batches=(1, 7))
    assert len(session.get_outputs()) == len(names)


# -- the other layers ------------------------------------------------------------------------------
def _seq(shape, *stack, dtype="float32"):
    return kerasrs.Sequential([layers.Input(shape, dtype=dtype), *stack])


LAYER_MODELS = {
    "convolutions": lambda: _seq(
        (12, 12, 3), layers.DepthwiseConv2D(3, padding="same", depth_multiplier=2),
        layers.SeparableConv2D(4, 3, strides=2, activation="relu"),
        layers.Conv2DTranspose(3, 3, strides=2, padding="same"),
        layers.Conv2DTranspose(2, 2, strides=3, padding="valid", activation="sigmoid"),
        layers.AveragePooling2D(2, padding="same"), layers.MaxPooling2D(2, strides=1),
        layers.GlobalMaxPooling2D()),
    "channels_first": lambda: _seq(
        (3, 9, 9), layers.Conv2D(4, 3, padding="same", data_format="channels_first",
                                 dilation_rate=2),
        layers.MaxPooling2D(2, data_format="channels_first"),
        layers.GlobalAveragePooling2D(data_format="channels_first")),
    "conv1d_3d": lambda: _seq(
        (10, 3), layers.Conv1D(4, 3, activation="gelu", padding="causal"),
        layers.MaxPooling1D(2), layers.Reshape((5, 2, 2, 1)), layers.Conv3D(2, 2, padding="same"),
        layers.AveragePooling3D(1), layers.Flatten()),
    "normalizations": lambda: _seq(
        (6, 5), layers.BatchNormalization(), layers.Dropout(0.5),
        layers.LayerNormalization(axis=[-2, -1]), layers.Rescaling(0.5, 1.0),
        layers.Normalization(mean=1.0, variance=2.0), layers.Permute((2, 1)),
        layers.Reshape((-1,)), layers.Identity()),
    "activations": lambda: _seq(
        (8,), *[layers.Dense(8, activation=a) for a in (
            "relu", "gelu", "sigmoid", "tanh", "swish", "softplus", "softsign", "relu6",
            "hard_sigmoid", "hard_swish", "mish", "exponential", "linear")],
        layers.Activation("log_softmax"), layers.Dense(4, activation="softmax")),
    "transposed_and_1d": lambda: _seq(
        (5, 2), layers.Conv1DTranspose(3, 3, strides=2, padding="same"),
        layers.DepthwiseConv1D(3, strides=2, padding="same"), layers.SeparableConv1D(2, 2),
        layers.Reshape((2, 2, 2, 1)), layers.Conv3DTranspose(2, 2, strides=2)),
    "reshaping": lambda: _seq(
        (6, 6, 2), layers.ZeroPadding2D(1), layers.UpSampling2D(2), layers.Cropping2D(2),
        layers.MaxPooling2D(3, strides=2, padding="same"), layers.Flatten(),
        layers.RepeatVector(3), layers.TimeDistributed(layers.Dense(2)),
        layers.Bidirectional(layers.LSTM(2))),
    "einsum_group_norm": lambda: _seq(
        (4, 6), layers.EinsumDense("abc,cde->abde", output_shape=(4, 2, 3), bias_axes="de"),
        layers.Reshape((4, 6)), layers.GroupNormalization(groups=3), layers.PReLU(),
        layers.Softmax(axis=1), layers.ReLU(max_value=0.5, negative_slope=0.1),
        layers.SpatialDropout1D(0.3), layers.GaussianNoise(0.1), layers.GaussianDropout(0.1)),
    "embedding": lambda: _seq((5,), layers.Embedding(10, 3), layers.Flatten(),
                              layers.Dense(2), dtype="int32"),
    "recurrent": lambda: _seq(
        (6, 3), layers.GRU(4, return_sequences=True), layers.GRU(3, reset_after=False,
                                                                 return_sequences=True),
        layers.SimpleRNN(5, return_sequences=True, go_backwards=True),
        layers.LSTM(4, activation="relu")),
}


@pytest.mark.parametrize("name", sorted(LAYER_MODELS))
def test_layers(name, tmp_path):
    model = LAYER_MODELS[name]()
    for layer in model.layers:  # non-trivial statistics for BatchNormalization
        if isinstance(layer, layers.BatchNormalization):
            layer.moving_mean.assign(np.linspace(-1, 1, 5).astype("float32"))
            layer.moving_variance.assign(np.linspace(0.5, 2, 5).astype("float32"))
    check_export(model, tmp_path)


class _Argmax(layers.Layer):
    """Comparisons, argmax, logical ops and casts (ops without a gradient)."""

    def call(self, x):
        best = ops.cast(ops.argmax(x, axis=-1), "float32")
        positive = ops.logical_and(ops.greater(x, 0.0), ops.not_equal(x, 1.0))
        return ops.concatenate([best[:, None], ops.cast(positive, "float32"),
                                ops.round(x * 3.0), ops.var(x, axis=-1, keepdims=True)], axis=-1)


def test_ops_without_gradient(tmp_path):
    check_export(_seq((5,), _Argmax()), tmp_path)


def test_merging_and_cross_attention(tmp_path):
    a, b = layers.Input((4, 6), name="queries"), layers.Input((3, 6), name="memory")
    attended = layers.MultiHeadAttention(2, 3, value_dim=4)(a, b)
    pooled = layers.GlobalAveragePooling1D()(b)
    merged = layers.Concatenate()([layers.Multiply()([a, a]), layers.Subtract()([a, attended]),
                                   layers.Average()([a, attended]),
                                   layers.Maximum()([a, attended])])
    model = kerasrs.Model([a, b], [merged, layers.Add()([pooled, pooled])])
    session = check_export(model, tmp_path)
    assert [i.name for i in session.get_inputs()] == ["queries", "memory"]


def test_lstm_states_as_outputs(tmp_path):
    inputs = layers.Input((5, 2))
    outputs = layers.LSTM(3, return_sequences=True, return_state=True, go_backwards=True)(inputs)
    check_export(kerasrs.Model(inputs, list(outputs)), tmp_path)


# -- signature, errors, the file -------------------------------------------------------------------
def test_fixed_batch_signature_and_opset(tmp_path):
    model, _ = benchmark_models.kerasrs_network("mlp")
    path = str(tmp_path / "fixed.onnx")
    kerasrs.export.export_onnx(model, path, verbose=False, opset_version=17,
                               input_signature=[layers.InputSpec(shape=(3, 784))])
    proto = onnx.load(path)
    assert proto.opset_import[0].version == 17
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_value == 3
    with pytest.raises(ValueError, match="opset_version"):
        model.export(path, opset_version=3)
    with pytest.raises(ValueError, match="only the batch axis"):
        model.export(path, input_signature=[layers.InputSpec(shape=(None, None))])
    with pytest.raises(ValueError, match=r"input_signature for input '.*' does not fit the "
                                         r"model: expected shape \(None, 784\)\. Received: "
                                         r"shape \(None, 7\)"):
        model.export(path, input_signature=[layers.InputSpec(shape=(None, 7))])


def test_other_formats_and_arguments_are_refused(tmp_path):
    model, _ = benchmark_models.kerasrs_network("mlp")
    with pytest.raises(ValueError, match="tf_saved_model"):
        model.export(str(tmp_path / "m"), format="tf_saved_model")
    with pytest.raises(TypeError, match="jax2tf_kwargs"):
        model.export(str(tmp_path / "m"), jax2tf_kwargs={})
    assert os.listdir(tmp_path) == []


class _Sorted(layers.Layer):
    def call(self, x):
        return ops.sort(x, axis=-1)


def test_unsupported_op_names_layer_and_op_and_leaves_no_file(tmp_path, monkeypatch):
    from kerasrs.export import onnx_lowering

    model = _seq((4,), layers.Dense(4, name="first"), layers.Dense(2, name="to_drop"))
    monkeypatch.delitem(onnx_lowering.LOWERINGS, "projection")  # as if Dense had none
    path = tmp_path / "model.onnx"
    path.write_bytes(b"the previous file")
    with pytest.raises(NotImplementedError, match=r"layer 'sequential\w*/first'.*'projection'"):
        model.export(str(path))
    assert path.read_bytes() == b"the previous file"
    assert os.listdir(tmp_path) == ["model.onnx"]  # no temporary file left


def test_unsupported_op_in_custom_layer(tmp_path):
    model = _seq((4,), _Sorted(name="sorter"))
    with pytest.raises(kerasrs.graph.TraceError, match=r"layer 'sequential\w*/sorter'.*'sort'"):
        model.export(str(tmp_path / "model.onnx"))
    assert os.listdir(tmp_path) == []


def test_missing_onnx_names_the_extra(tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_onnx(name, *args, **kwargs):
        if name == "onnx" or name.startswith("onnx."):
            raise ImportError("No module named 'onnx'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_onnx)
    model, _ = benchmark_models.kerasrs_network("mlp")
    with pytest.raises(ImportError, match=r"pip install kerasrs\[onnx\]"):
        model.export(str(tmp_path / "model.onnx"))
    assert os.listdir(tmp_path) == []


def test_any_traced_inference_graph():
    """`kerasrs.export.graph_to_onnx` lowers a graph traced from a plain function (batch fixed)."""
    graph = kerasrs.graph.trace(lambda x: ops.tanh(x) * 2.0 + 1, np.ones((4, 3), "float32"))
    proto = kerasrs.export.graph_to_onnx(graph)
    onnx.checker.check_model(proto, full_check=True)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.linspace(-2, 2, 12, dtype="float32").reshape(4, 3)
    np.testing.assert_allclose(session.run(["output"], {"x": x})[0], np.tanh(x) * 2 + 1,
                               rtol=1e-6)
