"""EfficientNet B0-B7 (Tan & Le, "EfficientNet: Rethinking Model Scaling for Convolutional
Neural Networks", ICML 2019) as Keras 3 builds them: MBConv blocks (expansion, depthwise
convolution, squeeze-and-excitation, projection) scaled in width, depth and resolution per
variant. The models rescale and normalize their inputs themselves: feed pixels in ``[0, 255]``;
`preprocess_input` is the identity."""

import math

from kerasrs import initializers, layers
from kerasrs.applications import _common, imagenet_utils

_BASE = "https://storage.googleapis.com/keras-applications/"
# (kernel, repeats, filters in, filters out, expansion, stride) of the seven stages of B0; every
# block has squeeze-and-excitation with ratio 0.25
_STAGES = ((3, 1, 32, 16, 1, 1), (3, 2, 16, 24, 6, 2), (5, 2, 24, 40, 6, 2),
           (3, 3, 40, 80, 6, 2), (5, 3, 80, 112, 6, 1), (5, 4, 112, 192, 6, 2),
           (3, 1, 192, 320, 6, 1))
# variant -> (width, depth, default size, top dropout, md5 with the top, md5 without)
_VARIANTS = {
    "b0": (1.0, 1.0, 224, 0.2, "902e53a9f72be733fc0bcb005b3ebbac",
           "50bc09e76180e00e4465e1a485ddc09d"),
    "b1": (1.0, 1.1, 240, 0.2, "1d254153d4ab51201f1646940f018540",
           "74c4e6b3e1f6a1eea24c589628592432"),
    "b2": (1.1, 1.2, 260, 0.3, "b15cce36ff4dcbd00b6dd88e7857a6ad",
           "111f8e2ac8aa800a7a99e3239f7bfb39"),
    "b3": (1.2, 1.4, 300, 0.3, "ffd1fdc53d0ce67064dc6a9c7960ede0",
           "af6d107764bb5b1abb91932881670226"),
    "b4": (1.4, 1.8, 380, 0.4, "18c95ad55216b8f92d7e70b3a046e2fc",
           "ebc24e6d6c33eaebbd558eafbeedf1ba"),
    "b5": (1.6, 2.2, 456, 0.4, "ace28f2a6363774853a83a0b21b9421a",
           "38879255a25d3c92d5e44e04ae6cec6f"),
    "b6": (1.8, 2.6, 528, 0.5, "165f6e37dce68623721b423839de8be5",
           "9ecce42647a20130c1f39a5d4cb75743"),
    "b7": (2.0, 3.1, 600, 0.5, "8c03f828fec3ef71311cd463b6759d99",
           "cbcfe4450ddf6f3ad90b1b398090fe4a"),
}
IMAGENET_STDDEV_RGB = (0.229, 0.224, 0.225)


def conv_initializer():
    """He-style truncated normal on the fan-out (the paper's convolution initializer)."""
    return initializers.VarianceScaling(scale=2.0, mode="fan_out",
                                        distribution="truncated_normal")


def dense_initializer():
    return initializers.VarianceScaling(scale=1.0 / 3.0, mode="fan_out", distribution="uniform")


def head(x, include_top, pooling, dropout_rate, classes, classifier_activation, weights,
         bias_initializer="zeros"):
    """The classifier (pooling, dropout, ``predictions``) or the pooled features."""
    if not include_top:
        return _common.pool(x, pooling)
    x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
    if dropout_rate > 0:
        x = layers.Dropout(dropout_rate, name="top_dropout")(x)
    imagenet_utils.validate_activation(classifier_activation, weights)
    return layers.Dense(classes, activation=classifier_activation,
                        kernel_initializer=dense_initializer(),
                        bias_initializer=bias_initializer, name="predictions")(x)


def squeeze_excite(x, filters, filters_se, activation, name, axis):
    """Channel attention: pooled channels -> 1x1 conv (``activation``) -> 1x1 conv (sigmoid),
    multiplied into ``x``."""
    se = layers.GlobalAveragePooling2D(name=f"{name}se_squeeze")(x)
    se = layers.Reshape((1, 1, filters) if axis == 3 else (filters, 1, 1),
                        name=f"{name}se_reshape")(se)
    se = layers.Conv2D(filters_se, 1, padding="same", activation=activation,
                       kernel_initializer=conv_initializer(), name=f"{name}se_reduce")(se)
    se = layers.Conv2D(filters, 1, padding="same", activation="sigmoid",
                       kernel_initializer=conv_initializer(), name=f"{name}se_expand")(se)
    return layers.multiply([x, se], name=f"{name}se_excite")


def residual(x, inputs, drop_rate, name):
    """``x + inputs``, with ``x`` dropped per sample at ``drop_rate`` in training."""
    if drop_rate > 0:
        x = layers.Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=f"{name}drop")(x)
    return layers.add([x, inputs], name=f"{name}add")


def _bn_act(x, name, activation, axis, act_name=None):
    x = layers.BatchNormalization(axis=axis, name=f"{name}bn" if act_name is None else name)(x)
    return layers.Activation(activation, name=act_name or f"{name}activation")(x)


def block(inputs, activation="swish", drop_rate=0.0, name="", filters_in=32, filters_out=16,
          kernel_size=3, strides=1, expand_ratio=1, se_ratio=0.0, id_skip=True):
    """One MBConv block (names ``<name>expand_conv`` ... ``<name>add``)."""
    axis = 3 if _common.channels_last() else 1
    filters = filters_in * expand_ratio
    x = inputs
    if expand_ratio != 1:
        x = layers.Conv2D(filters, 1, padding="same", use_bias=False,
                          kernel_initializer=conv_initializer(), name=f"{name}expand_conv")(x)
        x = _bn_act(x, f"{name}expand_bn", activation, axis, f"{name}expand_activation")
    padding = "same"
    if strides == 2:
        x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, kernel_size),
                                 name=f"{name}dwconv_pad")(x)
        padding = "valid"
    x = layers.DepthwiseConv2D(kernel_size, strides=strides, padding=padding, use_bias=False,
                               depthwise_initializer=conv_initializer(), name=f"{name}dwconv")(x)
    x = _bn_act(x, name, activation, axis)
    if 0 < se_ratio <= 1:
        x = squeeze_excite(x, filters, max(1, int(filters_in * se_ratio)), activation, name,
                           axis)
    x = layers.Conv2D(filters_out, 1, padding="same", use_bias=False,
                      kernel_initializer=conv_initializer(), name=f"{name}project_conv")(x)
    x = layers.BatchNormalization(axis=axis, name=f"{name}project_bn")(x)
    if id_skip and strides == 1 and filters_in == filters_out:
        x = residual(x, inputs, drop_rate, name)
    return x


def _round_filters(filters, width, divisor=8):
    return int(_common.make_divisible(filters * width, divisor))


def EfficientNet(width_coefficient, depth_coefficient, default_size, dropout_rate=0.2,
                 drop_connect_rate=0.2, activation="swish", name="efficientnet",
                 include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
                 pooling=None, classes=1000, classifier_activation="softmax",
                 weights_name=None):
    """An EfficientNet scaled by ``width_coefficient`` and ``depth_coefficient``; see
    `EfficientNetB0`."""
    _common.check_weights(weights, include_top, classes, name)
    img_input = _common.image_input(input_tensor, input_shape, default_size, 32, include_top,
                                    weights)
    axis = 3 if _common.channels_last() else 1
    x = layers.Rescaling(1.0 / 255.0)(img_input)
    x = layers.Normalization(axis=axis)(x)
    if weights == "imagenet":
        # the published Normalization holds the variance where the std belongs; Keras
        # compensates with a second rescaling
        x = layers.Rescaling([1.0 / math.sqrt(s) for s in IMAGENET_STDDEV_RGB])(x)
    x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, 3), name="stem_conv_pad")(x)
    x = layers.Conv2D(_round_filters(32, width_coefficient), 3, strides=2, padding="valid",
                      use_bias=False, kernel_initializer=conv_initializer(),
                      name="stem_conv")(x)
    x = _bn_act(x, "stem_bn", activation, axis, "stem_activation")
    repeats = [int(math.ceil(depth_coefficient * stage[1])) for stage in _STAGES]
    total, b = float(sum(repeats)), 0
    for i, ((kernel, _, f_in, f_out, expand, stride), count) in enumerate(zip(_STAGES, repeats)):
        f_in, f_out = _round_filters(f_in, width_coefficient), \
            _round_filters(f_out, width_coefficient)
        for j in range(count):
            x = block(x, activation, drop_connect_rate * b / total, f"block{i + 1}{chr(97 + j)}_",
                      f_in if j == 0 else f_out, f_out, kernel, stride if j == 0 else 1, expand,
                      0.25)
            b += 1
    x = layers.Conv2D(_round_filters(1280, width_coefficient), 1, padding="same",
                      use_bias=False, kernel_initializer=conv_initializer(), name="top_conv")(x)
    x = _bn_act(x, "top_bn", activation, axis, "top_activation")
    x = head(x, include_top, pooling, dropout_rate, classes, classifier_activation, weights)
    files = (None, None)
    if weights_name in _VARIANTS:
        stem = f"efficientnet{weights_name}"
        files = _common.weight_files(_BASE, f"{stem}.h5", f"{stem}_notop.h5",
                                     *_VARIANTS[weights_name][4:])
    return _common.finish(img_input, input_tensor, x, name, weights, *files, include_top)


def _application(variant):
    width, depth, size, dropout = _VARIANTS[variant][:4]

    def build(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
              pooling=None, classes=1000, classifier_activation="softmax",
              name=f"efficientnet{variant}"):
        return EfficientNet(width, depth, size, dropout, name=name, include_top=include_top,
                            weights=weights, input_tensor=input_tensor, input_shape=input_shape,
                            pooling=pooling, classes=classes,
                            classifier_activation=classifier_activation, weights_name=variant)

    build.__name__ = build.__qualname__ = f"EfficientNet{variant.upper()}"
    build.__doc__ = _common.doc(
        f"EfficientNet-{variant.upper()} (Tan & Le 2019), optionally with ImageNet weights.",
        "global average pooling (``avg_pool``), dropout and the ``predictions`` Dense layer",
        size, 32, "pixels in ``[0, 255]`` (it rescales and normalizes them itself)")
    return build


EfficientNetB0 = _application("b0")
EfficientNetB1 = _application("b1")
EfficientNetB2 = _application("b2")
EfficientNetB3 = _application("b3")
EfficientNetB4 = _application("b4")
EfficientNetB5 = _application("b5")
EfficientNetB6 = _application("b6")
EfficientNetB7 = _application("b7")


def preprocess_input(x, data_format=None):
    """The identity: EfficientNet models rescale and normalize their inputs themselves (pass
    pixels in ``[0, 255]``). Kept for API consistency with the other applications."""
    return x


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes per prediction
    (`kerasrs.applications.imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
