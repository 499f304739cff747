"""MobileNet v2 (Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks", CVPR
2018) as Keras 3 builds it: 17 inverted residual blocks (1x1 expansion, 3x3 depthwise, linear
1x1 projection, ReLU6 between) with residual connections where the shape allows, scaled in
width by ``alpha``. Inputs in "tf" mode (``[-1, 1]``)."""

import warnings

from kerasrs import backend, layers
from kerasrs.applications import _common, imagenet_utils
from kerasrs.applications.mobilenet import _published_size

_BASE = _common.KERAS_APPLICATIONS + "mobilenet_v2/"
_SIZES = (96, 128, 160, 192, 224)
_ALPHAS = (0.35, 0.5, 0.75, 1.0, 1.3, 1.4)
# (filters, stride, expansion) of blocks 0..16
_BLOCKS = ((16, 1, 1), (24, 2, 6), (24, 1, 6), (32, 2, 6), (32, 1, 6), (32, 1, 6), (64, 2, 6),
           (64, 1, 6), (64, 1, 6), (64, 1, 6), (96, 1, 6), (96, 1, 6), (96, 1, 6), (160, 2, 6),
           (160, 1, 6), (160, 1, 6), (320, 1, 6))


def _bn(x, name, axis):
    return layers.BatchNormalization(axis=axis, epsilon=1e-3, momentum=0.999, name=name)(x)


def _inverted_res_block(inputs, expansion, stride, alpha, filters, block_id, axis):
    """(1x1 expand, BN, ReLU6,) (pad,) 3x3 depthwise, BN, ReLU6, 1x1 project, BN, (+ input)."""
    in_channels = inputs.shape[axis]
    pointwise_filters = _common.make_divisible(int(filters * alpha), 8)
    x = inputs
    prefix = f"block_{block_id}_" if block_id else "expanded_conv_"
    if block_id:
        x = layers.Conv2D(expansion * in_channels, kernel_size=1, padding="same",
                          use_bias=False, activation=None, name=f"{prefix}expand")(x)
        x = layers.ReLU(6.0, name=f"{prefix}expand_relu")(_bn(x, f"{prefix}expand_BN", axis))
    if stride == 2:
        x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, 3),
                                 name=f"{prefix}pad")(x)
    x = layers.DepthwiseConv2D(kernel_size=3, strides=stride, activation=None, use_bias=False,
                               padding="same" if stride == 1 else "valid",
                               name=f"{prefix}depthwise")(x)
    x = layers.ReLU(6.0, name=f"{prefix}depthwise_relu")(_bn(x, f"{prefix}depthwise_BN", axis))
    x = layers.Conv2D(pointwise_filters, kernel_size=1, padding="same", use_bias=False,
                      activation=None, name=f"{prefix}project")(x)
    x = _bn(x, f"{prefix}project_BN", axis)
    if in_channels == pointwise_filters and stride == 1:
        return layers.Add(name=f"{prefix}add")([inputs, x])
    return x


def MobileNetV2(input_shape=None, alpha=1.0, include_top=True, weights="imagenet",
                input_tensor=None, pooling=None, classes=1000, classifier_activation="softmax",
                name=None):
    """MobileNet v2 (Sandler et al. 2018), 3.5 M parameters at ``alpha=1``.

    Args:
        input_shape: optional ``(height, width, 3)``, sides >= 32; published weights exist
            for squares of 96, 128, 160, 192 and 224 (the default).
        alpha: float, width multiplier (weights: 0.35, 0.5, 0.75, 1.0, 1.3, 1.4); above 1 it
            also widens the last 1280-channel convolution.
        include_top: bool, whether to end with global average pooling and the ``predictions``
            Dense layer.
        weights: None (random initialization), "imagenet" (Keras's published weights,
            downloaded once into ``~/.kerasrs/models``) or the path of a weights file.
        input_tensor: optional symbolic tensor (``kerasrs.Input``) to use as the image input.
        pooling: without the top: None (4-D feature maps), "avg" or "max".
        classes: int, number of classes with the top and without ImageNet weights.
        classifier_activation: "softmax", None (logits) or, without pretrained weights, any
            activation.
        name: the model's name; default ``mobilenetv2_<alpha>_<rows>``.

    Returns:
        A functional `kerasrs.Model`; inputs preprocessed with
        ``kerasrs.applications.mobilenet_v2.preprocess_input``.

    Raises:
        ValueError: for invalid arguments, or an ``alpha`` without published weights.
        FileNotFoundError: for "imagenet" offline without a cached copy.
    """
    _common.check_weights(weights, include_top, classes, "MobileNetV2")
    shape = input_shape
    if shape is None and input_tensor is not None and backend.is_keras_tensor(input_tensor):
        shape = tuple(input_tensor.shape[1:])
    img_input = _common.image_input(input_tensor, input_shape, _published_size(shape, _SIZES),
                                    32, include_top, weights)
    sides = img_input.shape[1:3] if _common.channels_last() else img_input.shape[2:4]
    rows = sides[0]
    if weights == "imagenet":
        if alpha not in _ALPHAS:
            raise ValueError("MobileNetV2: ImageNet weights exist for alpha 0.35, 0.5, 0.75, "
                             f"1.0, 1.3 and 1.4. Received: alpha={alpha}")
        if rows not in _SIZES or sides[1] != rows:
            warnings.warn("MobileNetV2: the input is not a square of 96, 128, 160, 192 or 224: "
                          "the weights for 224x224 are loaded.", stacklevel=2)
            rows = 224
    axis = -1 if _common.channels_last() else 1
    x = layers.Conv2D(_common.make_divisible(32 * alpha, 8), kernel_size=3, strides=(2, 2),
                      padding="same", use_bias=False, name="Conv1")(img_input)
    x = layers.ReLU(6.0, name="Conv1_relu")(_bn(x, "bn_Conv1", axis))
    for block_id, (filters, stride, expansion) in enumerate(_BLOCKS):
        x = _inverted_res_block(x, expansion, stride, alpha, filters, block_id, axis)
    last = _common.make_divisible(1280 * alpha, 8) if alpha > 1.0 else 1280
    x = layers.Conv2D(last, kernel_size=1, use_bias=False, name="Conv_1")(x)
    x = layers.ReLU(6.0, name="out_relu")(_bn(x, "Conv_1_bn", axis))
    if include_top:
        x = _common.classifier(x, classes, classifier_activation, weights, pool_name=None)
    else:
        x = _common.pool(x, pooling, names=(None, None))
    name = name or f"mobilenetv2_{alpha:0.2f}_{rows}"
    files = (None, None)
    if weights == "imagenet":
        stem = f"mobilenet_v2_weights_tf_dim_ordering_tf_kernels_{float(alpha)}_{rows}"
        files = _common.weight_files(_BASE, f"{stem}.h5", f"{stem}_no_top.h5")  # no hashes
    return _common.finish(img_input, input_tensor, x, name, weights, *files, include_top)


def preprocess_input(x, data_format=None):
    """MobileNet v2 preprocessing: pixels scaled to ``[-1, 1]`` ("tf" mode)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes per prediction
    (`kerasrs.applications.imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
