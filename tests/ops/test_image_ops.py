"""ops.image against Keras 3 (tests/fixtures/keras_image_ops.npz, written by
tests/fixtures/make_keras_image_ops.py) and float64 finite-difference gradients."""

import pathlib

import numpy as np
import pytest

from kerasrs import ops
from kerasrs.ops import image
from kerasrs.testing import check_gradients

K = np.load(pathlib.Path(__file__).parents[1] / "fixtures" / "keras_image_ops.npz")
X = K["x"]


def close(got, want, atol=1e-6):
    np.testing.assert_allclose(ops.convert_to_numpy(got), want, rtol=1e-5, atol=atol)


def test_colour_conversions_match_keras():
    close(image.rgb_to_grayscale(X), K["gray"])
    close(image.rgb_to_grayscale(X.transpose(0, 3, 1, 2), data_format="channels_first"),
          K["gray_first"])
    close(image.rgb_to_hsv(X), K["hsv"])
    close(image.hsv_to_rgb(K["hsv_in"]), K["rgb"])
    close(image.hsv_to_rgb(image.rgb_to_hsv(X)), X, atol=1e-6)
    assert image.rgb_to_grayscale((X * 255).astype("uint8")).dtype == "uint8"
    with pytest.raises(ValueError, match="float"):
        image.rgb_to_hsv((X * 255).astype("uint8"))


def test_crop_pad_and_patches_match_keras():
    close(image.crop_images(X, top_cropping=1, left_cropping=2, target_height=4,
                            target_width=5), K["crop"])
    close(image.crop_images(X[0], bottom_cropping=2, right_cropping=1, target_height=3,
                            target_width=4), K["crop2"])
    close(image.pad_images(X, top_padding=1, left_padding=2, target_height=10, target_width=11),
          K["pad"])
    close(image.pad_images(X[0], bottom_padding=2, right_padding=1, target_height=12,
                           target_width=9), K["pad2"])
    close(image.extract_patches(X, 3), K["patches"])
    close(image.extract_patches(X, (2, 3), strides=(1, 2), padding="same"), K["patches_same"])
    close(image.extract_patches(X[0], 2, strides=1, dilation_rate=2), K["patches_dilated"])
    close(image.extract_patches(K["volumes"], (2, 2, 3)), K["patches_3d"])
    with pytest.raises(ValueError, match="bottom_padding must be >= 0"):
        image.pad_images(X, top_padding=5, target_height=8, left_padding=0, right_padding=0)


def test_gaussian_blur_matches_keras():
    close(image.gaussian_blur(X), K["blur"])
    close(image.gaussian_blur(X, kernel_size=(5, 3), sigma=(2.0, 0.7)), K["blur_wide"])


@pytest.mark.parametrize("fn", [
    image.rgb_to_grayscale, image.hsv_to_rgb, image.rgb_to_hsv,
    lambda x: image.crop_images(x, 1, 1, target_height=2, target_width=2),
    lambda x: image.pad_images(x, 1, 0, 1, 2),
    lambda x: image.extract_patches(x, 2, strides=1),
    lambda x: image.gaussian_blur(x, kernel_size=(3, 3), sigma=(0.8, 1.3))])
def test_gradients_in_float64(fn):
    x = np.random.default_rng(1).uniform(0.05, 0.95, (1, 4, 5, 3))
    check_gradients(fn, [x], atol=1e-7, rtol=1e-5)
