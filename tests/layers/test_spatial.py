"""UpSampling, ZeroPadding and Cropping layers: values in both data formats, Keras's argument
forms, configs, float64 gradients and bad inputs."""

import doctest

import numpy as np
import pytest

import kerasrs
from kerasrs import layers
from kerasrs.layers import reshaping_spatial as spatial_module
from kerasrs.testing import check_gradients


def both_formats(make, x, want):
    """``make(data_format)`` gives ``want`` on ``x`` (channels_last) and on its transpose."""
    last = make("channels_last")
    y = last(x)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6, atol=1e-6)
    assert y.shape == last.compute_output_shape(x.shape)
    first = make("channels_first")
    xf = np.moveaxis(x, -1, 1)
    yf = first(xf)
    np.testing.assert_allclose(np.moveaxis(yf.numpy(), 1, -1), want, rtol=1e-6, atol=1e-6)
    assert yf.shape == first.compute_output_shape(xf.shape)


def test_upsampling_nearest_repeats_positions(rng):
    x = rng.standard_normal((2, 3, 4, 2)).astype("float32")
    both_formats(lambda f: layers.UpSampling2D((2, 3), data_format=f), x,
                 x.repeat(2, axis=1).repeat(3, axis=2))
    x1 = rng.standard_normal((2, 3, 2)).astype("float32")
    assert np.array_equal(layers.UpSampling1D(3)(x1).numpy(), x1.repeat(3, axis=1))
    x3 = rng.standard_normal((1, 2, 2, 3, 2)).astype("float32")
    both_formats(lambda f: layers.UpSampling3D((1, 2, 2), data_format=f), x3,
                 x3.repeat(2, axis=2).repeat(2, axis=3))


def test_upsampling_bilinear_matches_keras_half_pixel_rule():
    # Keras 3.15 (torch backend): UpSampling2D(2, interpolation="bilinear") on [[0, 1], [2, 3]].
    x = np.array([[0.0, 1.0], [2.0, 3.0]], "float32").reshape(1, 2, 2, 1)
    want = np.array([[0.0, 0.25, 0.75, 1.0], [0.5, 0.75, 1.25, 1.5],
                     [1.5, 1.75, 2.25, 2.5], [2.0, 2.25, 2.75, 3.0]])
    both_formats(lambda f: layers.UpSampling2D(2, data_format=f, interpolation="bilinear"), x,
                 want.reshape(1, 4, 4, 1))


def test_zero_padding_argument_forms(rng):
    x = rng.standard_normal((2, 3, 4, 2)).astype("float32")
    pad = lambda a, b: np.pad(x, ((0, 0), a, b, (0, 0)))  # noqa: E731
    both_formats(lambda f: layers.ZeroPadding2D(data_format=f), x, pad((1, 1), (1, 1)))
    both_formats(lambda f: layers.ZeroPadding2D(2, data_format=f), x, pad((2, 2), (2, 2)))
    both_formats(lambda f: layers.ZeroPadding2D((1, 2), data_format=f), x, pad((1, 1), (2, 2)))
    both_formats(lambda f: layers.ZeroPadding2D(((0, 1), (2, 0)), data_format=f), x,
                 pad((0, 1), (2, 0)))
    x1 = x[:, 0]
    both_formats(lambda f: layers.ZeroPadding1D((1, 2), data_format=f), x1,
                 np.pad(x1, ((0, 0), (1, 2), (0, 0))))
    x3 = rng.standard_normal((1, 2, 2, 2, 1)).astype("float32")
    assert layers.ZeroPadding3D(1)(x3).shape == (1, 4, 4, 4, 1)


def test_cropping_argument_forms(rng):
    x = rng.standard_normal((2, 6, 7, 2)).astype("float32")
    both_formats(lambda f: layers.Cropping2D(data_format=f), x, x)
    both_formats(lambda f: layers.Cropping2D(1, data_format=f), x, x[:, 1:-1, 1:-1])
    both_formats(lambda f: layers.Cropping2D((1, 2), data_format=f), x, x[:, 1:-1, 2:-2])
    both_formats(lambda f: layers.Cropping2D(((0, 2), (3, 0)), data_format=f), x, x[:, :-2, 3:])
    x1 = x[:, :, 0]
    assert np.array_equal(layers.Cropping1D()(x1).numpy(), x1[:, 1:-1])
    assert np.array_equal(layers.Cropping1D((2, 0))(x1).numpy(), x1[:, 2:])
    x3 = rng.standard_normal((1, 4, 4, 4, 1)).astype("float32")
    np.testing.assert_array_equal(layers.Cropping3D()(x3).numpy(), x3[:, 1:-1, 1:-1, 1:-1])


@pytest.mark.parametrize("make, shape", [
    (lambda: layers.UpSampling2D((2, 1), dtype="float64"), (2, 2, 3, 2)),
    (lambda: layers.UpSampling2D(2, interpolation="bilinear", dtype="float64"), (1, 2, 3, 2)),
    (lambda: layers.UpSampling1D(2, dtype="float64"), (2, 3, 2)),
    (lambda: layers.ZeroPadding2D(((1, 0), (0, 2)), dtype="float64"), (2, 2, 2, 1)),
    (lambda: layers.Cropping2D(((1, 0), (0, 1)), data_format="channels_first",
                               dtype="float64"), (1, 2, 3, 3)),
    (lambda: layers.Cropping1D((1, 1), dtype="float64"), (2, 4, 2))])
def test_spatial_gradients_float64(rng, make, shape):
    layer = make()
    check_gradients(lambda t: layer(t), [rng.standard_normal(shape)])


@pytest.mark.parametrize("layer", [
    layers.UpSampling1D(3), layers.UpSampling2D((2, 3), "channels_first", "bilinear"),
    layers.UpSampling3D(2), layers.ZeroPadding1D((1, 2)), layers.ZeroPadding2D(((1, 0), (2, 3))),
    layers.ZeroPadding3D(2), layers.Cropping1D(2), layers.Cropping2D((1, 2), "channels_first"),
    layers.Cropping3D(((0, 1), (1, 0), (1, 1)))])
def test_spatial_config_round_trip(layer, config_round_trip):
    config_round_trip(layer)


def test_spatial_configs_use_keras_forms():
    assert layers.Cropping1D().get_config()["cropping"] == (1, 1)
    assert layers.ZeroPadding2D().get_config()["padding"] == ((1, 1), (1, 1))
    assert layers.UpSampling2D().get_config()["size"] == (2, 2)
    assert layers.UpSampling1D().get_config()["size"] == 2


def test_spatial_bad_inputs_are_clear_errors():
    with pytest.raises(ValueError, match=r"crop: .*cropping .* leaves nothing of axis 1 \(size 3\)"
                                         r".*\(1, 3, 8, 1\)"):
        layers.Cropping2D(((2, 1), (0, 0)), name="crop")(np.ones((1, 3, 8, 1), "float32"))
    with pytest.raises(ValueError, match=r"up: UpSampling2D expects inputs of rank 4.*"
                                         r"\(2, 4, 4\)"):
        layers.UpSampling2D(name="up")(np.ones((2, 4, 4), "float32"))
    with pytest.raises(ValueError, match="interpolation"):
        layers.UpSampling2D(interpolation="bicubic")
    with pytest.raises(ValueError, match="padding"):
        layers.ZeroPadding2D((1, 2, 3))
    with pytest.raises(TypeError, match="size"):
        layers.UpSampling1D(2.5)


def test_spatial_docstring_examples_run():
    globs = {"np": np, "kerasrs": kerasrs,
             **{n: getattr(spatial_module, n) for n in spatial_module.__all__}}
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(verbose=False)
    for test in finder.find(spatial_module, spatial_module.__name__, globs=globs):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
