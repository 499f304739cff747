"""Inception v3 (Szegedy et al., "Rethinking the Inception Architecture for Computer Vision",
CVPR 2016) as Keras 3 builds it: a stem of five convolutions, then eleven "mixed" blocks whose
parallel branches are concatenated (``mixed0`` ... ``mixed10``). Every convolution is
Conv2D (no bias) + BatchNormalization (no scale) + ReLU, with default names. Default input
299x299; inputs in "tf" mode (``[-1, 1]``)."""

from kerasrs import layers
from kerasrs.applications import _common, imagenet_utils

_BASE = _common.KERAS_APPLICATIONS + "inception_v3/"
_STEM = "inception_v3_weights_tf_dim_ordering_tf_kernels"
_TOP, _NOTOP = _common.weight_files(_BASE, f"{_STEM}.h5", f"{_STEM}_notop.h5",
                                    "9a0d58056eeedaa3f26cb7ebd46da564",
                                    "bcbd6486424b2319ff4ef7d526e38f63")


def conv2d_bn(x, filters, rows, cols, padding="same", strides=(1, 1), name=None):
    """Conv2D (no bias) -> BatchNormalization (no scale) -> ReLU; with ``name``, the layers
    are ``<name>_conv``, ``<name>_bn`` and ``<name>``."""
    axis = 3 if _common.channels_last() else 1
    x = layers.Conv2D(filters, (rows, cols), strides=strides, padding=padding, use_bias=False,
                      name=name and f"{name}_conv")(x)
    x = layers.BatchNormalization(axis=axis, scale=False, name=name and f"{name}_bn")(x)
    return layers.Activation("relu", name=name)(x)


def _chain(x, convs):
    """Apply ``(filters, rows, cols[, strides, padding])`` convolutions in turn."""
    for spec in convs:
        x = conv2d_bn(x, *spec[:3], **dict(zip(("strides", "padding"), spec[3:])))
    return x


def _pooled(x, filters):
    """The average-pooling branch: 3x3 stride-1 'same' pooling, then a 1x1 convolution."""
    x = layers.AveragePooling2D((3, 3), strides=(1, 1), padding="same")(x)
    return conv2d_bn(x, filters, 1, 1)


def _block_35(x, pool_filters, name, axis):
    """mixed0-2: 1x1 | 1x1, 5x5 | 1x1, 3x3, 3x3 | avg pool, 1x1."""
    branches = [_chain(x, [(64, 1, 1)]), _chain(x, [(48, 1, 1), (64, 5, 5)]),
                _chain(x, [(64, 1, 1), (96, 3, 3), (96, 3, 3)]), _pooled(x, pool_filters)]
    return layers.concatenate(branches, axis=axis, name=name)


def _block_17(x, mid, name, axis):
    """mixed4-7: 1x1 | 1x1, 1x7, 7x1 | 1x1, 7x1, 1x7, 7x1, 1x7 | avg pool, 1x1."""
    branches = [_chain(x, [(192, 1, 1)]),
                _chain(x, [(mid, 1, 1), (mid, 1, 7), (192, 7, 1)]),
                _chain(x, [(mid, 1, 1), (mid, 7, 1), (mid, 1, 7), (mid, 7, 1), (192, 1, 7)]),
                _pooled(x, 192)]
    return layers.concatenate(branches, axis=axis, name=name)


def _split(x, filters, axis, name=None):
    """Parallel 1x3 and 3x1 convolutions of ``x``, concatenated."""
    return layers.concatenate([conv2d_bn(x, filters, 1, 3), conv2d_bn(x, filters, 3, 1)],
                              axis=axis, name=name)


def _block_8(x, i, axis):
    """mixed9, mixed10: 1x1 | 1x1, (1x3 + 3x1) | 1x1, 3x3, (1x3 + 3x1) | avg pool, 1x1."""
    branches = [conv2d_bn(x, 320, 1, 1),
                _split(conv2d_bn(x, 384, 1, 1), 384, axis, name=f"mixed9_{i}"),
                _split(_chain(x, [(448, 1, 1), (384, 3, 3)]), 384, axis),
                _pooled(x, 192)]
    return layers.concatenate(branches, axis=axis, name=f"mixed{9 + i}")


def _reduction(x, branches, name, axis):
    """mixed3, mixed8: convolution chains ending at stride 2, plus 3x3/2 max pooling."""
    outs = [_chain(x, chain) for chain in branches]
    outs.append(layers.MaxPooling2D((3, 3), strides=(2, 2))(x))
    return layers.concatenate(outs, axis=axis, name=name)


def InceptionV3(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
                pooling=None, classes=1000, classifier_activation="softmax",
                name="inception_v3"):
    _common.check_weights(weights, include_top, classes, name)
    img_input = _common.image_input(input_tensor, input_shape, 299, 75, include_top, weights)
    axis = 3 if _common.channels_last() else 1
    x = _chain(img_input, [(32, 3, 3, (2, 2), "valid"), (32, 3, 3, (1, 1), "valid"),
                           (64, 3, 3)])
    x = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    x = _chain(x, [(80, 1, 1, (1, 1), "valid"), (192, 3, 3, (1, 1), "valid")])
    x = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    for i, pool_filters in enumerate((32, 64, 64)):
        x = _block_35(x, pool_filters, f"mixed{i}", axis)
    x = _reduction(x, [[(384, 3, 3, (2, 2), "valid")],
                       [(64, 1, 1), (96, 3, 3), (96, 3, 3, (2, 2), "valid")]], "mixed3", axis)
    for i, mid in enumerate((128, 160, 160, 192)):
        x = _block_17(x, mid, f"mixed{4 + i}", axis)
    x = _reduction(x, [[(192, 1, 1), (320, 3, 3, (2, 2), "valid")],
                       [(192, 1, 1), (192, 1, 7), (192, 7, 1), (192, 3, 3, (2, 2), "valid")]],
                   "mixed8", axis)
    for i in range(2):
        x = _block_8(x, i, axis)
    if include_top:
        x = _common.classifier(x, classes, classifier_activation, weights)
    else:
        x = _common.pool(x, pooling, names=(None, None))
    return _common.finish(img_input, input_tensor, x, name, weights, _TOP, _NOTOP, include_top)


InceptionV3.__doc__ = _common.doc(
    "Inception v3 (Szegedy et al. 2016), 23.9 M parameters, optionally with ImageNet "
    "weights.",
    "global average pooling (``avg_pool``) and the ``predictions`` Dense layer", 299,
    75, _common.preprocessed_with("inception_v3"))


def preprocess_input(x, data_format=None):
    """Inception v3 preprocessing: pixels scaled to ``[-1, 1]`` ("tf" mode)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes per prediction
    (`kerasrs.applications.imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
