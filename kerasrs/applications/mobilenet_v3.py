"""MobileNet v3 Small and Large (Howard et al., "Searching for MobileNetV3", ICCV 2019) as
Keras 3 builds them: inverted residual blocks with optional squeeze-and-excitation and
hard-swish activations (``minimalistic=True``: 3x3 kernels, ReLU, no squeeze-and-excitation).
The models rescale their inputs themselves (``include_preprocessing``): feed pixels in
``[0, 255]``; `preprocess_input` is the identity."""

import warnings

from kerasrs import backend, layers
from kerasrs.applications import _common, imagenet_utils

_BASE = _common.KERAS_APPLICATIONS + "mobilenet_v3/"
# Keras's published md5 hashes (with the top, without)
_HASHES = {
    "large_224_0.75_float": ("765b44a33ad4005b3ac83185abf1d0eb",
                             "40af19a13ebea4e2ee0c676887f69a2e"),
    "large_224_1.0_float": ("59e551e166be033d707958cf9e29a6a7",
                            "07fb09a5933dd0c8eaafa16978110389"),
    "large_minimalistic_224_1.0_float": ("675e7b876c45c57e9e63e6d90a36599c",
                                         "ec5221f64a2f6d1ef965a614bdae7973"),
    "small_224_0.75_float": ("cb65d4e5be93758266aa0a7f2c6708b7",
                             "ebdb5cc8e0b497cd13a7c275d475c819"),
    "small_224_1.0_float": ("8768d4c2e7dee89b9d02b2d03d65d862",
                            "d3e8ec802a04aa4fc771ee12a9a9b836"),
    "small_minimalistic_224_1.0_float": ("99cd97fb2fcdad2bf028eb838de69e37",
                                         "cde8136e733e811080d9fcd8a252f7e4"),
}
# Blocks: (expansion, filters, kernel, stride, squeeze-excite, activation); kernel "k" is 5
# (3 when minimalistic), activation "hs" is hard-swish (ReLU when minimalistic).
_SMALL = ((1, 16, 3, 2, True, "relu"), (72 / 16, 24, 3, 2, False, "relu"),
          (88 / 24, 24, 3, 1, False, "relu"), (4, 40, "k", 2, True, "hs"),
          (6, 40, "k", 1, True, "hs"), (6, 40, "k", 1, True, "hs"), (3, 48, "k", 1, True, "hs"),
          (3, 48, "k", 1, True, "hs"), (6, 96, "k", 2, True, "hs"), (6, 96, "k", 1, True, "hs"),
          (6, 96, "k", 1, True, "hs"))
_LARGE = ((1, 16, 3, 1, False, "relu"), (4, 24, 3, 2, False, "relu"),
          (3, 24, 3, 1, False, "relu"), (3, 40, "k", 2, True, "relu"),
          (3, 40, "k", 1, True, "relu"), (3, 40, "k", 1, True, "relu"),
          (6, 80, 3, 2, False, "hs"), (2.5, 80, 3, 1, False, "hs"), (2.3, 80, 3, 1, False, "hs"),
          (2.3, 80, 3, 1, False, "hs"), (6, 112, 3, 1, True, "hs"), (6, 112, 3, 1, True, "hs"),
          (6, 160, "k", 2, True, "hs"), (6, 160, "k", 1, True, "hs"),
          (6, 160, "k", 1, True, "hs"))


def _relu(x):
    return layers.ReLU()(x)


def _hard_sigmoid(x):
    return layers.ReLU(6.0)(x + 3.0) * (1.0 / 6.0)


def _hard_swish(x):
    return layers.Activation("hard_swish")(x)


def _bn(x, name, axis):
    return layers.BatchNormalization(axis=axis, epsilon=1e-3, momentum=0.999, name=name)(x)


def _se_block(inputs, filters, se_ratio, prefix):
    """Squeeze-and-excitation: pooled channels -> 1x1 ReLU -> 1x1 hard sigmoid -> scale."""
    x = layers.GlobalAveragePooling2D(keepdims=True, name=f"{prefix}squeeze_excite_avg_pool")(
        inputs)
    x = layers.Conv2D(_common.make_divisible(filters * se_ratio), kernel_size=1, padding="same",
                      name=f"{prefix}squeeze_excite_conv")(x)
    x = layers.ReLU(name=f"{prefix}squeeze_excite_relu")(x)
    x = layers.Conv2D(filters, kernel_size=1, padding="same",
                      name=f"{prefix}squeeze_excite_conv_1")(x)
    return layers.Multiply(name=f"{prefix}squeeze_excite_mul")([inputs, _hard_sigmoid(x)])


def _inverted_res_block(x, expansion, filters, kernel_size, stride, se_ratio, activation,
                        block_id, axis):
    shortcut, in_filters = x, x.shape[axis]
    prefix = f"expanded_conv_{block_id}_" if block_id else "expanded_conv_"
    expanded = _common.make_divisible(in_filters * expansion)
    if block_id:
        x = layers.Conv2D(expanded, kernel_size=1, padding="same", use_bias=False,
                          name=f"{prefix}expand")(x)
        x = activation(_bn(x, f"{prefix}expand_bn", axis))
    if stride == 2:
        x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, kernel_size),
                                 name=f"{prefix}depthwise_pad")(x)
    x = layers.DepthwiseConv2D(kernel_size, strides=stride, use_bias=False,
                               padding="same" if stride == 1 else "valid",
                               name=f"{prefix}depthwise")(x)
    x = activation(_bn(x, f"{prefix}depthwise_bn", axis))
    if se_ratio:
        x = _se_block(x, expanded, se_ratio, prefix)
    x = layers.Conv2D(filters, kernel_size=1, padding="same", use_bias=False,
                      name=f"{prefix}project")(x)
    x = _bn(x, f"{prefix}project_bn", axis)
    if stride == 1 and in_filters == filters:
        x = layers.Add(name=f"{prefix}add")([shortcut, x])
    return x


def _input_shape(input_shape, input_tensor):
    """Keras's rule: the tensor's sides when only ``input_tensor`` is given, else any size."""
    if input_shape is None and input_tensor is not None and backend.is_keras_tensor(
            input_tensor):
        sides = tuple(input_tensor.shape[1:3] if _common.channels_last() else
                      input_tensor.shape[2:4])
        return sides + (3,) if _common.channels_last() else (3,) + sides
    if input_shape is None:
        return (None, None, 3) if _common.channels_last() else (3, None, None)
    return tuple(input_shape)


def MobileNetV3(blocks, last_point_ch, input_shape=None, alpha=1.0, model_type="large",
                minimalistic=False, include_top=True, weights="imagenet", input_tensor=None,
                classes=1000, pooling=None, dropout_rate=0.2, classifier_activation="softmax",
                include_preprocessing=True, name=None):
    """A MobileNet v3 from its block table; see `MobileNetV3Small`."""
    _common.check_weights(weights, include_top, classes, name)
    input_shape = _input_shape(input_shape, input_tensor)
    sides = input_shape[:2] if _common.channels_last() else input_shape[1:]
    if sides[0] and sides[1] and min(sides) < 32:
        raise ValueError(f"{name}: input size must be at least 32x32. Received: "
                         f"input_shape={input_shape}")
    if weights == "imagenet":
        if alpha not in ((1.0,) if minimalistic else (0.75, 1.0)):
            raise ValueError(f"{name}: ImageNet weights exist for alpha 0.75 and 1.0 (1.0 only "
                             f"when minimalistic). Received: alpha={alpha}")
        if sides[0] != sides[1] or sides[0] != 224:
            warnings.warn(f"{name}: the input is not 224x224: the weights for 224x224 are "
                          "loaded.", stacklevel=3)
    img_input = _common.image_input(input_tensor, input_shape, 224, 32, False, None)
    axis = -1 if _common.channels_last() else 1
    kernel, activation, se_ratio = (3, _relu, None) if minimalistic else \
        (5, _hard_swish, 0.25)
    x = img_input
    if include_preprocessing:
        x = layers.Rescaling(scale=1.0 / 127.5, offset=-1.0)(x)
    x = layers.Conv2D(16, kernel_size=3, strides=(2, 2), padding="same", use_bias=False,
                      name="conv")(x)
    x = activation(_bn(x, "conv_bn", axis))
    for block_id, (expansion, filters, size, stride, se, act) in enumerate(blocks):
        x = _inverted_res_block(x, expansion, _common.make_divisible(filters * alpha),
                                kernel if size == "k" else size, stride, se and se_ratio,
                                _relu if act == "relu" else activation, block_id, axis)
    last_conv_ch = _common.make_divisible(x.shape[axis] * 6)
    if alpha > 1.0:
        last_point_ch = _common.make_divisible(last_point_ch * alpha)
    x = layers.Conv2D(last_conv_ch, kernel_size=1, padding="same", use_bias=False,
                      name="conv_1")(x)
    x = activation(_bn(x, "conv_1_bn", axis))
    if include_top:
        x = layers.GlobalAveragePooling2D(keepdims=True)(x)
        x = layers.Conv2D(last_point_ch, kernel_size=1, padding="same", use_bias=True,
                          name="conv_2")(x)
        x = activation(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate)(x)
        x = layers.Conv2D(classes, kernel_size=1, padding="same", name="logits")(x)
        x = layers.Flatten()(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Activation(activation=classifier_activation, name="predictions")(x)
    else:
        x = _common.pool(x, pooling)
    files = (None, None)
    if weights == "imagenet":
        key = f"{model_type}{'_minimalistic' if minimalistic else ''}_224_{alpha}_float"
        files = _common.weight_files(_BASE, f"weights_mobilenet_v3_{key}.h5",
                                     f"weights_mobilenet_v3_{key}_no_top_v2.h5", *_HASHES[key])
    return _common.finish(img_input, input_tensor, x, name, weights, *files, include_top)


_DOC = """MobileNet v3 {size} (Howard et al. 2019), optionally with ImageNet weights.

    Args:
        input_shape: optional ``(height, width, 3)``, sides >= 32; default any size
            (published weights are for 224x224).
        alpha: float, width multiplier (weights: 0.75 and 1.0; 1.0 when minimalistic).
        minimalistic: bool, 3x3 kernels, ReLU and no squeeze-and-excitation.
        include_top: bool, whether to end with pooling, the ``conv_2`` and ``logits`` 1x1
            convolutions and the ``predictions`` activation.
        weights: None (random initialization), "imagenet" (Keras's published weights,
            downloaded once into ``~/.kerasrs/models``) or the path of a weights file.
        input_tensor: optional symbolic tensor (``kerasrs.Input``) to use as the image input.
        classes: int, number of classes with the top and without ImageNet weights.
        pooling: without the top: None (4-D feature maps), "avg" or "max".
        dropout_rate: float, dropout before the ``logits`` convolution.
        classifier_activation: "softmax", None (logits) or, without pretrained weights, any
            activation.
        include_preprocessing: bool, whether the model rescales ``[0, 255]`` pixels to
            ``[-1, 1]`` itself (a ``Rescaling`` layer).
        name: the model's name.

    Returns:
        A functional `kerasrs.Model`.

    Raises:
        ValueError: for invalid arguments, or an ``alpha`` without published weights.
        FileNotFoundError: for "imagenet" offline without a cached copy.
"""


def _application(size, blocks, last_point_ch):
    def build(input_shape=None, alpha=1.0, minimalistic=False, include_top=True,
              weights="imagenet", input_tensor=None, classes=1000, pooling=None,
              dropout_rate=0.2, classifier_activation="softmax", include_preprocessing=True,
              name=f"MobileNetV3{size}"):
        return MobileNetV3(blocks, last_point_ch, input_shape, alpha, size.lower(),
                           minimalistic, include_top, weights, input_tensor, classes, pooling,
                           dropout_rate, classifier_activation, include_preprocessing, name)

    build.__name__ = build.__qualname__ = f"MobileNetV3{size}"
    build.__doc__ = _DOC.format(size=size)
    return build


MobileNetV3Small = _application("Small", _SMALL, 1024)
MobileNetV3Large = _application("Large", _LARGE, 1280)


def preprocess_input(x, data_format=None):
    """The identity: MobileNet v3 models rescale their inputs themselves (pass pixels in
    ``[0, 255]``). Kept for API consistency with the other applications."""
    return x


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes per prediction
    (`kerasrs.applications.imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
