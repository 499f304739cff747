"""MobileNet v1 (Howard et al., "MobileNets: Efficient Convolutional Neural Networks for Mobile
Vision Applications", 2017) as Keras 3 builds it: a 3x3 convolution, then 13 depthwise
separable blocks (3x3 depthwise + 1x1 pointwise, each with BN and ReLU6), scaled in width by
``alpha``. Inputs in "tf" mode (``[-1, 1]``)."""

import warnings

from kerasrs import layers
from kerasrs.applications import _common, imagenet_utils

_BASE = _common.KERAS_APPLICATIONS + "mobilenet/"
_SIZES = (128, 160, 192, 224)  # input sizes with published weights
_ALPHA_TEXT = {1.0: "1_0", 0.75: "7_5", 0.5: "5_0", 0.25: "2_5"}
# (pointwise filters, stride) of blocks 1..13
_BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1),
           (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))


def _depthwise_block(x, filters, alpha, depth_multiplier, stride, block_id, axis):
    """(pad,) 3x3 depthwise conv, BN, ReLU6, 1x1 pointwise conv, BN, ReLU6."""
    if stride != 1:
        x = layers.ZeroPadding2D(((0, 1), (0, 1)), name=f"conv_pad_{block_id}")(x)
    x = layers.DepthwiseConv2D((3, 3), padding="same" if stride == 1 else "valid",
                               depth_multiplier=depth_multiplier, strides=(stride, stride),
                               use_bias=False, name=f"conv_dw_{block_id}")(x)
    x = layers.BatchNormalization(axis=axis, name=f"conv_dw_{block_id}_bn")(x)
    x = layers.ReLU(6.0, name=f"conv_dw_{block_id}_relu")(x)
    x = layers.Conv2D(int(filters * alpha), (1, 1), padding="same", use_bias=False,
                      strides=(1, 1), name=f"conv_pw_{block_id}")(x)
    x = layers.BatchNormalization(axis=axis, name=f"conv_pw_{block_id}_bn")(x)
    return layers.ReLU(6.0, name=f"conv_pw_{block_id}_relu")(x)


def _published_size(input_shape, sizes):
    """The side to look up weights for: the input's if square and published, else 224."""
    if input_shape is None:
        return 224
    rows, cols = (input_shape[0], input_shape[1]) if _common.channels_last() else \
        (input_shape[1], input_shape[2])
    return rows if rows == cols and rows in sizes else 224


def MobileNet(input_shape=None, alpha=1.0, depth_multiplier=1, dropout=1e-3, include_top=True,
              weights="imagenet", input_tensor=None, pooling=None, classes=1000,
              classifier_activation="softmax", name=None):
    """MobileNet v1 (Howard et al. 2017), 4.3 M parameters at ``alpha=1``.

    Args:
        input_shape: optional ``(height, width, 3)``, sides >= 32; published weights exist
            for 128, 160, 192 and 224 (the default).
        alpha: float, width multiplier of every layer's filters (weights: 0.25, 0.5, 0.75,
            1.0).
        depth_multiplier: int, depthwise channel multiplier (weights: 1).
        dropout: float, dropout rate before the classifier.
        include_top: bool, whether to end with pooling, dropout, the ``conv_preds`` 1x1
            convolution and the ``predictions`` activation.
        weights: None (random initialization), "imagenet" (Keras's published weights,
            downloaded once into ``~/.kerasrs/models``) or the path of a weights file.
        input_tensor: optional symbolic tensor (``kerasrs.Input``) to use as the image input.
        pooling: without the top: None (4-D feature maps), "avg" or "max".
        classes: int, number of classes with the top and without ImageNet weights.
        classifier_activation: "softmax", None (logits) or, without pretrained weights, any
            activation.
        name: the model's name; default ``mobilenet_<alpha>_<rows>``.

    Returns:
        A functional `kerasrs.Model`; inputs preprocessed with
        ``kerasrs.applications.mobilenet.preprocess_input``.

    Raises:
        ValueError: for invalid arguments, or ``alpha``/``depth_multiplier`` without published
            weights.
        FileNotFoundError: for "imagenet" offline without a cached copy.
    """
    _common.check_weights(weights, include_top, classes, "MobileNet")
    default_size = _published_size(input_shape, _SIZES)
    img_input = _common.image_input(input_tensor, input_shape, default_size, 32, include_top,
                                    weights)
    sides = img_input.shape[1:3] if _common.channels_last() else img_input.shape[2:4]
    rows = sides[0]
    if weights == "imagenet":
        if depth_multiplier != 1:
            raise ValueError("MobileNet: ImageNet weights need depth_multiplier=1. Received: "
                             f"depth_multiplier={depth_multiplier}")
        if alpha not in _ALPHA_TEXT:
            raise ValueError("MobileNet: ImageNet weights exist for alpha 0.25, 0.5, 0.75 and "
                             f"1.0. Received: alpha={alpha}")
        if rows not in _SIZES or sides[1] != rows:
            warnings.warn("MobileNet: the input is not a square of 128, 160, 192 or 224: the "
                          "weights for 224x224 are loaded.", stacklevel=2)
            rows = 224
    axis = -1 if _common.channels_last() else 1
    x = layers.Conv2D(int(32 * alpha), (3, 3), padding="same", use_bias=False, strides=(2, 2),
                      name="conv1")(img_input)
    x = layers.BatchNormalization(axis=axis, name="conv1_bn")(x)
    x = layers.ReLU(6.0, name="conv1_relu")(x)
    for block_id, (filters, stride) in enumerate(_BLOCKS, start=1):
        x = _depthwise_block(x, filters, alpha, depth_multiplier, stride, block_id, axis)
    if include_top:
        x = layers.GlobalAveragePooling2D(keepdims=True)(x)
        x = layers.Dropout(dropout, name="dropout")(x)
        x = layers.Conv2D(classes, (1, 1), padding="same", name="conv_preds")(x)
        x = layers.Reshape((classes,), name="reshape_2")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Activation(activation=classifier_activation, name="predictions")(x)
    else:
        x = _common.pool(x, pooling, names=(None, None))
    name = name or f"mobilenet_{alpha:0.2f}_{rows}"
    files = (None, None)
    if weights == "imagenet":
        stem = f"mobilenet_{_ALPHA_TEXT[alpha]}_{rows}_tf"
        files = _common.weight_files(_BASE, f"{stem}.h5", f"{stem}_no_top.h5")  # no hashes
    return _common.finish(img_input, input_tensor, x, name, weights, *files, include_top)


def preprocess_input(x, data_format=None):
    """MobileNet preprocessing: pixels scaled to ``[-1, 1]`` ("tf" mode)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes per prediction
    (`kerasrs.applications.imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
