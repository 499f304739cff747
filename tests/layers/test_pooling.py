"""Pooling layers: values against NumPy (TensorFlow's "same" split, padding excluded from
averages), both data formats, global pooling with keepdims and masks, configs, float64
gradients and bad inputs."""

import doctest

import numpy as np
import pytest

import kerasrs
from kerasrs import layers
from kerasrs.layers import pooling as pooling_module
from kerasrs.testing import check_gradients


def ref_pool2d(x, pool, strides, padding, mode):
    """NumPy pooling, channels_last; "same" pads at the end first (TensorFlow), and padding
    never counts (nan-aware reductions)."""
    x = x.astype("float64")
    if padding == "same":
        pads = []
        for n, k, s in zip(x.shape[1:3], pool, strides):
            total = max((-(-n // s) - 1) * s + k - n, 0)
            pads.append((total // 2, total - total // 2))
        x = np.pad(x, ((0, 0), *pads, (0, 0)), constant_values=np.nan)
    oh = (x.shape[1] - pool[0]) // strides[0] + 1
    ow = (x.shape[2] - pool[1]) // strides[1] + 1
    windows = np.stack([x[:, i:i + strides[0] * (oh - 1) + 1:strides[0],
                          j:j + strides[1] * (ow - 1) + 1:strides[1]]
                        for i in range(pool[0]) for j in range(pool[1])])
    return np.nanmax(windows, 0) if mode == "max" else np.nanmean(windows, 0)


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("pool, strides, padding", [
    ((2, 2), None, "valid"), ((3, 3), (2, 2), "same"), ((2, 3), (1, 2), "valid"),
    ((3, 2), (2, 1), "same"), ((2, 2), (3, 3), "same")])
@pytest.mark.parametrize("cls, mode", [(layers.MaxPooling2D, "max"),
                                       (layers.AveragePooling2D, "average")])
def test_pool2d_values_and_shapes(rng, data_format, pool, strides, padding, cls, mode):
    x = rng.standard_normal((2, 7, 6, 3)).astype("float32")
    layer = cls(pool, strides, padding, data_format)
    inputs = x if data_format == "channels_last" else np.moveaxis(x, -1, 1)
    y = layer(inputs).numpy()
    assert y.shape == layer.compute_output_shape(inputs.shape)
    if data_format == "channels_first":
        y = np.moveaxis(y, 1, -1)
    want = ref_pool2d(x, pool, strides or pool, padding, mode)
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)


def test_same_pooling_puts_the_odd_padding_at_the_end():
    x = np.arange(16, dtype="float32").reshape(1, 4, 4, 1)
    avg = layers.AveragePooling2D(3, strides=2, padding="same")(x).numpy()[0, :, :, 0]
    # windows rows/cols [0:3] and [2:4]: the extra zero row/column is after the input
    np.testing.assert_allclose(avg, [[5.0, 6.5], [11.0, 12.5]])
    top = layers.MaxPooling2D(3, strides=2, padding="same")(-x).numpy()[0, :, :, 0]
    np.testing.assert_array_equal(top, [[0, -2], [-8, -10]])


@pytest.mark.parametrize("cls, shape, want", [
    (layers.MaxPooling1D, (2, 9, 3), (2, 4, 3)), (layers.AveragePooling1D, (2, 9, 3), (2, 4, 3)),
    (layers.MaxPooling3D, (2, 4, 5, 6, 3), (2, 2, 2, 3, 3)),
    (layers.AveragePooling3D, (2, 4, 5, 6, 3), (2, 2, 2, 3, 3))])
def test_1d_and_3d_pooling_defaults(rng, cls, shape, want):
    x = rng.standard_normal(shape).astype("float32")
    layer = cls() if "Max" in cls.__name__ else cls(2)  # Keras: average pool_size is required
    y = layer(x)
    assert y.shape == want == layer.compute_output_shape(shape)
    reduce = np.max if "Max" in cls.__name__ else np.mean
    if len(shape) == 3:
        ref = reduce(x[:, :8].reshape(2, 4, 2, 3), axis=2)
    else:
        ref = reduce(x[:, :4, :4, :6].reshape(2, 2, 2, 2, 2, 3, 2, 3), axis=(2, 4, 6))
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("cls, axes, reduce", [
    (layers.GlobalAveragePooling1D, (1,), np.mean), (layers.GlobalMaxPooling1D, (1,), np.max),
    (layers.GlobalAveragePooling2D, (1, 2), np.mean), (layers.GlobalMaxPooling2D, (1, 2), np.max),
    (layers.GlobalAveragePooling3D, (1, 2, 3), np.mean),
    (layers.GlobalMaxPooling3D, (1, 2, 3), np.max)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_global_pooling_both_formats(rng, cls, axes, reduce, keepdims):
    x = rng.standard_normal((2, *(3,) * len(axes), 4)).astype("float32")
    want = reduce(x, axis=axes, keepdims=keepdims)
    layer = cls(keepdims=keepdims)
    np.testing.assert_allclose(layer(x).numpy(), want, rtol=1e-6)
    assert layer.compute_output_shape(x.shape) == want.shape
    first = cls(data_format="channels_first", keepdims=keepdims)
    y = first(np.moveaxis(x, -1, 1)).numpy()
    np.testing.assert_allclose(np.moveaxis(y, 1, -1) if keepdims else y, want, rtol=1e-6)


def test_global_average_pooling1d_ignores_masked_steps():
    x = np.array([[[1.0], [3.0], [100.0]], [[2.0], [4.0], [6.0]]], "float32")
    mask = np.array([[True, True, False], [True, True, True]])
    layer = layers.GlobalAveragePooling1D()
    np.testing.assert_allclose(layer(x, mask=mask).numpy(), [[2.0], [4.0]])
    embedded = layers.Embedding(5, 2, mask_zero=True)(np.array([[1, 2, 0, 0]]))
    pooled = layers.GlobalAveragePooling1D()(embedded)
    np.testing.assert_allclose(pooled.numpy(), embedded.numpy()[:, :2].mean(1), rtol=1e-6)
    assert getattr(pooled, "_keras_mask", None) is None


@pytest.mark.parametrize("make, shape", [
    (lambda: layers.MaxPooling2D((2, 3), strides=1, padding="same", dtype="float64"),
     (2, 5, 5, 2)),
    (lambda: layers.AveragePooling2D(3, strides=2, padding="same", data_format="channels_first",
                                     dtype="float64"), (2, 2, 5, 4)),
    (lambda: layers.MaxPooling1D(3, strides=2, dtype="float64"), (2, 7, 2)),
    (lambda: layers.AveragePooling3D(2, padding="same", dtype="float64"), (1, 3, 3, 3, 2)),
    (lambda: layers.GlobalAveragePooling1D(dtype="float64"), (2, 4, 3)),
    (lambda: layers.GlobalMaxPooling2D(keepdims=True, dtype="float64"), (2, 3, 4, 2))])
def test_pooling_gradients_float64(rng, make, shape):
    layer = make()
    x = rng.permutation(np.prod(shape)).reshape(shape) / 7.0  # distinct values: no max ties
    check_gradients(lambda t: layer(t), [x], atol=1e-6)


@pytest.mark.parametrize("layer", [
    layers.MaxPooling1D(3, 2, "same"), layers.MaxPooling2D((2, 3)),
    layers.AveragePooling2D(3, 1, "same", "channels_first"), layers.AveragePooling3D(2),
    layers.GlobalMaxPooling3D(keepdims=True), layers.GlobalAveragePooling2D("channels_first")])
def test_pooling_config_round_trip(layer, config_round_trip):
    config_round_trip(layer)


def test_pooling_config_has_keras_defaults():
    assert {k: v for k, v in layers.MaxPooling2D().get_config().items()
            if k in ("pool_size", "strides", "padding", "data_format")} == {
        "pool_size": (2, 2), "strides": (2, 2), "padding": "valid",
        "data_format": "channels_last"}


def test_pooling_bad_inputs_are_clear_errors():
    with pytest.raises(ValueError, match=r"pool: input 0 .*expected rank 4.*\(2, 8, 8\)"):
        layers.MaxPooling2D(name="pool")(np.ones((2, 8, 8), "float32"))
    with pytest.raises(ValueError, match=r"avg: .*the pool window \(size \(3,\).*larger.*"
                                         r"\(1, 2, 4\)"):
        layers.AveragePooling1D(3, name="avg")(np.ones((1, 2, 4), "float32"))
    with pytest.raises(ValueError, match="padding"):
        layers.MaxPooling2D(padding="full")
    with pytest.raises(ValueError, match="pool_size"):
        layers.MaxPooling2D(pool_size=0)


def test_pooling_docstring_examples_run():
    globs = {"np": np, "kerasrs": kerasrs,
             **{n: getattr(pooling_module, n) for n in pooling_module.__all__}}
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(verbose=False)
    for test in finder.find(pooling_module, pooling_module.__name__, globs=globs):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
