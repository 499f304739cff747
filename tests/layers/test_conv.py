"""Convolution layers: shapes in both data formats, values against NumPy and Keras, Keras's
asymmetric "same" padding (behaviour case C25), configs, float64 gradients, and bad inputs."""

import doctest

import numpy as np
import pytest

import kerasrs
from kerasrs import layers
from kerasrs.layers import conv as conv_module
from kerasrs.layers import conv_transpose as conv_transpose_module
from kerasrs.layers import depthwise as depthwise_module
from kerasrs.testing import check_gradients


# -- helpers ------------------------------------------------------------------------------------
def gradient_check(layer, x, names, **call_kwargs):
    """float64 check of ``layer(x)`` w.r.t. the input and the weights called ``names``."""
    values = [getattr(layer, n).numpy() for n in names]

    def fn(inputs, *weights):
        saved = {n: getattr(layer, n) for n in names}
        try:
            for n, w in zip(names, weights):
                setattr(layer, n, w)
            return layer(inputs, **call_kwargs)
        finally:
            for n, w in saved.items():
                setattr(layer, n, w)

    check_gradients(fn, [x, *values], atol=1e-6, rtol=1e-5)


def round_trip(layer, x):
    """A layer rebuilt from ``get_config()`` with the same weights gives the same outputs."""
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    y = layer(x).numpy()
    clone(x)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(clone(x).numpy(), y, rtol=1e-6)
    again = layers.deserialize(layers.serialize(layer))
    assert type(again) is type(layer) and again.get_config() == config


def tf_same_pads(n, k, s, d=1):
    """TensorFlow's "same" padding (before, after) along one axis, computed independently."""
    out = -(-n // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
    return total // 2, total - total // 2


def ref_conv2d(x, k, strides=(1, 1), padding="valid", dilation=(1, 1)):
    """Direct NumPy cross-correlation, channels_last, loops over kernel taps only."""
    if padding == "same":
        ph = tf_same_pads(x.shape[1], k.shape[0], strides[0], dilation[0])
        pw = tf_same_pads(x.shape[2], k.shape[1], strides[1], dilation[1])
        x = np.pad(x, ((0, 0), ph, pw, (0, 0)))
    kh, kw = k.shape[:2]
    oh = (x.shape[1] - (kh - 1) * dilation[0] - 1) // strides[0] + 1
    ow = (x.shape[2] - (kw - 1) * dilation[1] - 1) // strides[1] + 1
    y = np.zeros((x.shape[0], oh, ow, k.shape[-1]))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, i * dilation[0]:i * dilation[0] + strides[0] * (oh - 1) + 1:strides[0],
                      j * dilation[1]:j * dilation[1] + strides[1] * (ow - 1) + 1:strides[1]]
            y += patch @ k[i, j]
    return y


@pytest.fixture
def x4(rng):
    return rng.standard_normal((2, 7, 6, 3)).astype("float32")


# -- behaviour case C25 -------------------------------------------------------------------------
def test_c25_conv2d_same_padding_with_stride_2_is_asymmetric():
    layer = layers.Conv2D(1, 3, strides=2, padding="same", use_bias=False)
    layer.build((None, 2, 2, 1))
    layer.set_weights([np.arange(9, dtype="float32").reshape(3, 3, 1, 1)])
    assert layer(np.ones((1, 2, 2, 1), "float32")).numpy().item() == 8.0
    assert layer(np.ones((1, 1, 1, 1), "float32")).numpy().item() == 4.0
    layer.set_weights([np.ones((3, 3, 1, 1), "float32")])
    y = layer(np.arange(16, dtype="float32").reshape(1, 4, 4, 1)).numpy()
    np.testing.assert_array_equal(y[0, :, :, 0], [[45, 39], [66, 50]])


# -- Conv1D/2D/3D -------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [
    dict(filters=4, kernel_size=3),
    dict(filters=4, kernel_size=(3, 2), strides=2, padding="same"),
    dict(filters=5, kernel_size=2, strides=(2, 3), padding="valid"),
    dict(filters=4, kernel_size=3, dilation_rate=2, padding="same"),
    dict(filters=6, kernel_size=3, groups=3, padding="same"),
])
def test_conv2d_matches_numpy_and_compute_output_shape(x4, kwargs):
    layer = layers.Conv2D(**kwargs, bias_initializer="random_normal")
    y = layer(x4)
    assert y.shape == layer.compute_output_shape(x4.shape)
    assert layer.kernel.shape == layer.kernel_size + (3 // layer.groups, layer.filters)
    k, b = layer.kernel.numpy(), layer.bias.numpy()
    g, cg, fg = layer.groups, 3 // layer.groups, layer.filters // layer.groups
    want = np.concatenate([ref_conv2d(x4[..., i * cg:(i + 1) * cg], k[..., i * fg:(i + 1) * fg],
                                      layer.strides, layer.padding, layer.dilation_rate)
                           for i in range(g)], axis=-1) + b
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cls, shape, kwargs", [
    (layers.Conv1D, (2, 9, 3), dict(kernel_size=3, strides=2)),
    (layers.Conv1D, (2, 9, 3), dict(kernel_size=4, padding="same")),
    (layers.Conv2D, (2, 7, 6, 3), dict(kernel_size=(3, 2), strides=2, padding="same")),
    (layers.Conv3D, (2, 5, 4, 6, 3), dict(kernel_size=2, strides=(1, 2, 2))),
])
def test_channels_first_is_the_transposed_channels_last(rng, cls, shape, kwargs):
    x = rng.standard_normal(shape).astype("float32")
    last = cls(4, activation="relu", bias_initializer="random_normal", **kwargs)
    y_last = last(x).numpy()
    first = cls(4, activation="relu", data_format="channels_first", **kwargs)
    x_first = np.moveaxis(x, -1, 1)
    first(x_first)
    first.set_weights(last.get_weights())  # the kernel layout is the same for both formats
    y_first = first(x_first).numpy()
    assert y_first.shape == first.compute_output_shape(x_first.shape)
    np.testing.assert_allclose(np.moveaxis(y_first, 1, -1), y_last, rtol=1e-5, atol=1e-6)


def test_conv1d_causal_padding_sees_only_the_past():
    layer = layers.Conv1D(1, 3, padding="causal", dilation_rate=2, use_bias=False)
    layer.build((None, 6, 1))
    layer.set_weights([np.array([1.0, 10.0, 100.0], "float32").reshape(3, 1, 1)])
    y = layer(np.arange(1, 7, dtype="float32").reshape(1, 6, 1)).numpy().ravel()
    # y[t] = x[t - 4] + 10 x[t - 2] + 100 x[t], with zeros before the start
    np.testing.assert_array_equal(y, [100, 200, 310, 420, 531, 642])
    assert layer.compute_output_shape((None, 6, 1)) == (None, 6, 1)


def test_conv3d_matches_sum_of_conv2d_slices(rng):
    x = rng.standard_normal((1, 4, 5, 5, 2)).astype("float32")
    layer = layers.Conv3D(3, (2, 3, 3), use_bias=False)
    y = layer(x).numpy()
    k = layer.kernel.numpy()
    want = np.stack([sum(ref_conv2d(x[:, d + i], k[i]) for i in range(2)) for d in range(3)], 1)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


# -- transposed, depthwise, separable -----------------------------------------------------------
def test_conv2d_transpose_matches_keras_values():
    # Values from Keras 3.15 (torch backend) for this kernel and input.
    x = np.arange(1, 5, dtype="float32").reshape(1, 2, 2, 1)
    kernel = np.arange(9, dtype="float32").reshape(3, 3, 1, 1)
    same = layers.Conv2DTranspose(1, 3, strides=2, padding="same", use_bias=False)
    same.build(x.shape)
    same.set_weights([kernel])
    np.testing.assert_array_equal(same(x).numpy()[0, :, :, 0], [
        [0, 1, 2, 2], [3, 4, 11, 8], [6, 10, 26, 18], [9, 12, 27, 16]])
    valid = layers.Conv2DTranspose(1, 3, strides=2, use_bias=False)
    valid.build(x.shape)
    valid.set_weights([kernel])
    np.testing.assert_array_equal(valid(x).numpy()[0, :, :, 0], [
        [0, 1, 2, 2, 4], [3, 4, 11, 8, 10], [6, 10, 26, 18, 24], [9, 12, 27, 16, 20],
        [18, 21, 48, 28, 32]])


@pytest.mark.parametrize("padding, want", [
    ("same", [2, 5, 8, 9, 14]), ("valid", [1, 2, 5, 8, 9, 14, 9, 12, 0])])
def test_conv1d_transpose_output_padding_matches_keras(padding, want):
    layer = layers.Conv1DTranspose(1, 4, strides=2, padding=padding, output_padding=1,
                                   use_bias=False)
    layer.build((1, 3, 1))
    layer.set_weights([np.arange(1, 5, dtype="float32").reshape(4, 1, 1)])
    y = layer(np.arange(1, 4, dtype="float32").reshape(1, 3, 1))
    np.testing.assert_array_equal(y.numpy().ravel(), want)
    assert layer.compute_output_shape((1, 3, 1)) == y.shape


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("kwargs", [dict(strides=2), dict(strides=2, padding="same"),
                                    dict(strides=(2, 1), output_padding=(1, 0)),
                                    dict(dilation_rate=2)])
def test_conv2d_transpose_shapes_and_kernel_layout(rng, data_format, kwargs):
    shape = (2, 4, 5, 3) if data_format == "channels_last" else (2, 3, 4, 5)
    layer = layers.Conv2DTranspose(6, 3, data_format=data_format, **kwargs)
    y = layer(rng.standard_normal(shape).astype("float32"))
    assert layer.kernel.shape == (3, 3, 6, 3)  # (kh, kw, filters, in): swapped vs Conv2D
    assert y.shape == layer.compute_output_shape(shape)


def test_depthwise_conv2d_filters_each_channel_separately(x4):
    layer = layers.DepthwiseConv2D(3, depth_multiplier=2, padding="same",
                                   bias_initializer="random_normal")
    y = layer(x4).numpy()
    k, b = layer.kernel.numpy(), layer.bias.numpy()
    assert k.shape == (3, 3, 3, 2) and b.shape == (6,)
    want = np.concatenate([ref_conv2d(x4[..., c:c + 1], k[:, :, c:c + 1, :], padding="same")
                           for c in range(3)], axis=-1) + b  # channel c*2+m
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    assert y.shape == layer.compute_output_shape(x4.shape)


def test_separable_conv2d_is_depthwise_then_pointwise(x4):
    layer = layers.SeparableConv2D(5, 3, strides=2, depth_multiplier=2,
                                   bias_initializer="random_normal")
    y = layer(x4).numpy()
    assert [w.name for w in layer.weights] == ["depthwise_kernel", "pointwise_kernel", "bias"]
    dk, pk, b = layer.get_weights()
    assert dk.shape == (3, 3, 3, 2) and pk.shape == (1, 1, 6, 5)
    depth = np.concatenate([ref_conv2d(x4[..., c:c + 1], dk[:, :, c:c + 1, :], (2, 2))
                            for c in range(3)], axis=-1)
    np.testing.assert_allclose(y, depth @ pk[0, 0] + b, rtol=1e-5, atol=1e-5)
    assert y.shape == layer.compute_output_shape(x4.shape)


def test_depthwise_and_separable_1d_shapes(rng):
    x = rng.standard_normal((2, 8, 3)).astype("float32")
    assert layers.DepthwiseConv1D(3, depth_multiplier=2)(x).shape == (2, 6, 6)
    assert layers.SeparableConv1D(4, 3, padding="same")(x).shape == (2, 8, 4)
    first = layers.SeparableConv1D(4, 3, data_format="channels_first")
    assert first(np.moveaxis(x, -1, 1)).shape == (2, 4, 6)


# -- configs ------------------------------------------------------------------------------------
@pytest.mark.parametrize("make, shape", [
    (lambda: layers.Conv1D(3, 2, padding="causal", dilation_rate=2, activation="relu",
                           kernel_regularizer="l2"), (2, 6, 2)),
    (lambda: layers.Conv2D(4, (2, 3), strides=2, padding="same", groups=2, use_bias=False,
                           data_format="channels_first"), (2, 4, 5, 5)),
    (lambda: layers.Conv3D(2, 2), (1, 3, 3, 3, 2)),
    (lambda: layers.Conv1DTranspose(3, 3, strides=2, output_padding=1), (2, 4, 2)),
    (lambda: layers.Conv2DTranspose(3, 2, strides=2, padding="same"), (2, 3, 3, 2)),
    (lambda: layers.Conv3DTranspose(2, 2), (1, 2, 2, 2, 1)),
    (lambda: layers.DepthwiseConv2D(2, depth_multiplier=3, activation="tanh"), (2, 4, 4, 2)),
    (lambda: layers.DepthwiseConv1D(2), (2, 4, 2)),
    (lambda: layers.SeparableConv2D(3, 2, padding="same"), (2, 4, 4, 2)),
    (lambda: layers.SeparableConv1D(3, 2, depth_multiplier=2), (2, 5, 2)),
])
def test_config_round_trip(rng, make, shape):
    round_trip(make(), rng.standard_normal(shape).astype("float32"))


def test_conv2d_config_has_keras_keys_and_defaults():
    config = layers.Conv2D(8, 3).get_config()
    assert {k: config[k] for k in ("filters", "kernel_size", "strides", "padding",
                                   "data_format", "dilation_rate", "groups", "use_bias")} == {
        "filters": 8, "kernel_size": (3, 3), "strides": (1, 1), "padding": "valid",
        "data_format": "channels_last", "dilation_rate": (1, 1), "groups": 1, "use_bias": True}
    assert config["kernel_initializer"]["class_name"] == "GlorotUniform"
    assert config["bias_initializer"]["class_name"] == "Zeros"


# -- gradients (float64) ------------------------------------------------------------------------
@pytest.mark.parametrize("make, shape", [
    (lambda: layers.Conv1D(2, 3, padding="causal", activation="tanh"), (2, 5, 2)),
    (lambda: layers.Conv2D(3, 3, strides=2, padding="same"), (2, 5, 5, 2)),
    (lambda: layers.Conv2D(4, 2, groups=2, dilation_rate=2, data_format="channels_first"),
     (2, 4, 5, 5)),
    (lambda: layers.Conv3D(2, 2, padding="same"), (1, 3, 3, 2, 2)),
    (lambda: layers.Conv2DTranspose(2, 3, strides=2, padding="same"), (2, 3, 3, 2)),
    (lambda: layers.Conv1DTranspose(2, 3, strides=2, output_padding=1), (2, 3, 2)),
])
def test_conv_gradients_wrt_inputs_kernel_and_bias(rng, make, shape):
    layer = make()
    layer._dtype = "float64"
    x = rng.standard_normal(shape)
    layer.build(shape)
    layer.bias.assign(rng.standard_normal(layer.bias.shape))
    kernel = "_kernel" if "_kernel" in vars(layer) else "kernel"  # `kernel`: a property (LoRA)
    gradient_check(layer, x, [kernel, "bias"])


def test_depthwise_and_separable_gradients(rng):
    x = rng.standard_normal((2, 5, 5, 2))
    depthwise = layers.DepthwiseConv2D(3, depth_multiplier=2, padding="same", dtype="float64")
    depthwise.build(x.shape)
    gradient_check(depthwise, x, ["kernel", "bias"])
    separable = layers.SeparableConv2D(3, 2, strides=2, dtype="float64")
    separable.build(x.shape)
    gradient_check(separable, x, ["depthwise_kernel", "pointwise_kernel", "bias"])


def test_float64_layer_keeps_float64():
    layer = layers.Conv2D(2, 3, dtype="float64")
    y = layer(np.ones((1, 4, 4, 1), "float32"))
    assert layer.kernel.dtype == np.float64 and y.dtype == np.float64


# -- bad inputs ---------------------------------------------------------------------------------
def test_conv2d_rejects_a_3d_input_naming_the_layer_and_shape():
    layer = layers.Conv2D(4, 3, name="my_conv")
    with pytest.raises(ValueError, match=r"my_conv: Conv2D expects inputs of rank 4.*"
                                         r"Received: input shape \(2, 28, 28\)"):
        layer(np.ones((2, 28, 28), "float32"))
    layer(np.ones((2, 28, 28, 1), "float32"))
    with pytest.raises(ValueError, match=r"my_conv.*rank 4.*\(2, 28, 28\)"):
        layer(np.ones((2, 28, 28), "float32"))


def test_kernel_larger_than_a_valid_input_is_a_clear_error():
    with pytest.raises(ValueError, match=r"my_conv: .*the kernel \(size \(5, 5\).*larger than the "
                                         r"input.*Received: input shape \(1, 3, 8, 1\)"):
        layers.Conv2D(4, 5, name="my_conv")(np.ones((1, 3, 8, 1), "float32"))
    built = layers.Conv1D(2, 4, name="c1")
    built(np.ones((1, 8, 1), "float32"))
    with pytest.raises(ValueError, match=r"c1: .*the kernel.*\(1, 3, 1\)"):
        built(np.ones((1, 3, 1), "float32"))
    assert layers.Conv2D(4, 5, padding="same")(np.ones((1, 3, 3, 1), "float32")).shape == \
        (1, 3, 3, 4)


def test_wrong_channel_count_after_build_is_a_clear_error():
    layer = layers.Conv2D(4, 3, name="c2")
    layer(np.ones((1, 5, 5, 3), "float32"))
    with pytest.raises(ValueError, match=r"c2.*axis -1.*value 3.*Received: input shape "
                                         r"\(1, 5, 5, 2\)"):
        layer(np.ones((1, 5, 5, 2), "float32"))


@pytest.mark.parametrize("make, message", [
    (lambda: layers.Conv2D(0, 3), "filters"),
    (lambda: layers.Conv2D(4, (3, 3, 3)), "kernel_size"),
    (lambda: layers.Conv2D(4, 3, padding="causal"), "padding"),
    (lambda: layers.Conv2D(4, 3, strides=2, dilation_rate=2), "dilation_rate"),
    (lambda: layers.Conv2D(5, 3, groups=2), "groups"),
    (lambda: layers.Conv2D(4, 3, data_format="nhwc"), "data_format"),
    (lambda: layers.Conv2DTranspose(4, 3, strides=2, output_padding=2), "output_padding"),
    (lambda: layers.DepthwiseConv2D(3, depth_multiplier=0), "depth_multiplier"),
])
def test_malformed_arguments_are_rejected(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_groups_must_divide_the_input_channels():
    with pytest.raises(ValueError, match=r"divisible by groups=2.*\(1, 5, 5, 3\)"):
        layers.Conv2D(4, 3, groups=2)(np.ones((1, 5, 5, 3), "float32"))


# -- training, docs -----------------------------------------------------------------------------
def test_a_small_cnn_learns_to_detect_a_bright_corner(rng):
    kerasrs.utils.set_random_seed(0)
    x = rng.uniform(0, 0.5, (128, 8, 8, 1)).astype("float32")
    y = rng.integers(0, 2, 128)
    x[y == 1, :3, :3] += 1.0
    model = kerasrs.Sequential([layers.Input((8, 8, 1)), layers.Conv2D(4, 3, activation="relu"),
                                layers.GlobalMaxPooling2D(), layers.Dense(2)])
    model.compile(optimizer=kerasrs.optimizers.Adam(0.05),
                  loss=kerasrs.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    history = model.fit(x, y, batch_size=32, epochs=15, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert history.history["accuracy"][-1] > 0.9


@pytest.mark.parametrize("module", [conv_module, conv_transpose_module, depthwise_module])
def test_docstring_examples_run(module):
    globs = {"np": np, "kerasrs": kerasrs, **{n: getattr(module, n) for n in module.__all__}}
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(verbose=False)
    for test in finder.find(module, module.__name__, globs=globs):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


@pytest.mark.parametrize("make, shape", [
    (lambda **kw: layers.Conv1D(3, 2, **kw), (2, 5, 2)),
    (lambda **kw: layers.Conv2D(3, 2, **kw), (2, 4, 4, 2)),
    (lambda **kw: layers.Conv3D(3, 2, **kw), (2, 3, 3, 3, 2)),
])
def test_conv_lora_adds_a_low_rank_delta_to_the_frozen_kernel(rng, make, shape, tmp_path):
    layer = make()
    layer.build(shape)
    base = rng.standard_normal(layer.kernel.shape).astype("float32")
    layer.kernel.assign(base)
    layer.enable_lora(2, lora_alpha=3.0)
    assert [w.name for w in layer.trainable_weights] == ["bias", "lora_kernel_a", "lora_kernel_b"]
    assert [w.name for w in layer.non_trainable_weights] == ["kernel"]
    assert layer.lora_kernel_a.shape == base.shape[:-1] + (2,)
    assert layer.lora_kernel_b.shape == (2, 3)
    a = rng.standard_normal(layer.lora_kernel_a.shape).astype("float32")
    b = rng.standard_normal((2, 3)).astype("float32")
    layer.lora_kernel_a.assign(a)
    layer.lora_kernel_b.assign(b)
    np.testing.assert_allclose(layer.kernel.numpy(), base + 1.5 * (a @ b), rtol=1e-5, atol=1e-5)
    x = rng.standard_normal(shape).astype("float32")
    y = layer(x).numpy()
    # saved weights hold the merged kernel: a plain layer loads them and computes the same
    model = kerasrs.Sequential([layer])
    path = str(tmp_path / "lora.weights.h5")
    model.save_weights(path)
    plain = kerasrs.Sequential([make()])
    plain.build(shape)
    plain.load_weights(path)
    np.testing.assert_allclose(plain.predict(x, verbose=0), y, rtol=1e-5, atol=1e-5)
    # the config carries the rank, so a reloaded layer has LoRA on
    clone = type(layer).from_config(layer.get_config())
    clone.build(shape)
    assert clone.lora_enabled and clone.lora_rank == 2 and clone.lora_alpha == 3.0
    with pytest.raises(ValueError, match="lora is already enabled"):
        layer.enable_lora(2)
