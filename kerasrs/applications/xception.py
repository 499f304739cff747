"""Xception (Chollet, "Xception: Deep Learning with Depthwise Separable Convolutions", CVPR
2017) as Keras 3 builds it: an entry flow of three downsampling blocks with 1x1 strided
projection shortcuts, eight middle-flow residual blocks of three 728-channel separable
convolutions, and an exit flow. Default input 299x299; inputs in "tf" mode (``[-1, 1]``)."""

from kerasrs import layers
from kerasrs.applications import _common, imagenet_utils

_BASE = _common.KERAS_APPLICATIONS + "xception/"
_STEM = "xception_weights_tf_dim_ordering_tf_kernels"
_TOP, _NOTOP = _common.weight_files(_BASE, f"{_STEM}.h5", f"{_STEM}_notop.h5",
                                    "0a58e3b7378bc2990ea3b43d5981f1f6",
                                    "b0042744bf5b25fce3cb969f33bebb97")


def _sepconv_bn(x, filters, name, axis):
    x = layers.SeparableConv2D(filters, (3, 3), padding="same", use_bias=False, name=name)(x)
    return layers.BatchNormalization(axis=axis, name=f"{name}_bn")(x)


def _projection(x, filters, axis):
    """The strided 1x1 shortcut of a downsampling block (default layer names)."""
    residual = layers.Conv2D(filters, (1, 1), strides=(2, 2), padding="same", use_bias=False)(x)
    return layers.BatchNormalization(axis=axis)(residual)


def _down_block(x, filters, block, axis, first_relu=True):
    """[ReLU] sepconv-BN, ReLU, sepconv-BN, 3x3/2 max pooling, plus the projected input."""
    residual = _projection(x, filters[1], axis)
    if first_relu:
        x = layers.Activation("relu", name=f"block{block}_sepconv1_act")(x)
    x = _sepconv_bn(x, filters[0], f"block{block}_sepconv1", axis)
    x = layers.Activation("relu", name=f"block{block}_sepconv2_act")(x)
    x = _sepconv_bn(x, filters[1], f"block{block}_sepconv2", axis)
    x = layers.MaxPooling2D((3, 3), strides=(2, 2), padding="same", name=f"block{block}_pool")(x)
    return layers.add([x, residual])


def Xception(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
             pooling=None, classes=1000, classifier_activation="softmax", name="xception"):
    _common.check_weights(weights, include_top, classes, name)
    img_input = _common.image_input(input_tensor, input_shape, 299, 71, include_top, weights)
    axis = -1 if _common.channels_last() else 1
    x = img_input
    for i, filters in enumerate((32, 64)):
        x = layers.Conv2D(filters, (3, 3), strides=(2, 2) if i == 0 else (1, 1),
                          use_bias=False, name=f"block1_conv{i + 1}")(x)
        x = layers.BatchNormalization(axis=axis, name=f"block1_conv{i + 1}_bn")(x)
        x = layers.Activation("relu", name=f"block1_conv{i + 1}_act")(x)
    x = _down_block(x, (128, 128), 2, axis, first_relu=False)
    x = _down_block(x, (256, 256), 3, axis)
    x = _down_block(x, (728, 728), 4, axis)
    for block in range(5, 13):
        residual = x
        for k in (1, 2, 3):
            x = layers.Activation("relu", name=f"block{block}_sepconv{k}_act")(x)
            x = _sepconv_bn(x, 728, f"block{block}_sepconv{k}", axis)
        x = layers.add([x, residual])
    x = _down_block(x, (728, 1024), 13, axis)
    for k, filters in ((1, 1536), (2, 2048)):
        x = _sepconv_bn(x, filters, f"block14_sepconv{k}", axis)
        x = layers.Activation("relu", name=f"block14_sepconv{k}_act")(x)
    if include_top:
        x = _common.classifier(x, classes, classifier_activation, weights)
    else:
        x = _common.pool(x, pooling, names=(None, None))
    return _common.finish(img_input, input_tensor, x, name, weights, _TOP, _NOTOP, include_top)


Xception.__doc__ = _common.doc(
    "Xception (Chollet 2017), 22.9 M parameters, optionally with ImageNet weights.",
    "global average pooling (``avg_pool``) and the ``predictions`` Dense layer", 299,
    71, _common.preprocessed_with("xception"))


def preprocess_input(x, data_format=None):
    """Xception preprocessing: pixels scaled to ``[-1, 1]`` ("tf" mode)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes per prediction
    (`kerasrs.applications.imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
