"""EfficientNetV2 B0-B3, S, M and L (Tan & Le, "EfficientNetV2: Smaller Models and Faster
Training", ICML 2021) as Keras 3 builds them: Fused-MBConv blocks (one full convolution in place
of expansion + depthwise) in the early stages, MBConv blocks with squeeze-and-excitation later.
With ``include_preprocessing`` the models rescale their inputs themselves: feed pixels in
``[0, 255]``; `preprocess_input` is the identity."""

import math

from kerasrs import initializers, layers
from kerasrs.applications import _common, imagenet_utils
from kerasrs.applications.efficientnet import conv_initializer, head, residual, squeeze_excite

_BASE = _common.KERAS_APPLICATIONS + "efficientnet_v2/"
# Stages: (kernel, repeats, filters in, filters out, expansion, se ratio, stride, fused)
_B = ((3, 1, 32, 16, 1, 0, 1, True), (3, 2, 16, 32, 4, 0, 2, True),
      (3, 2, 32, 48, 4, 0, 2, True), (3, 3, 48, 96, 4, 0.25, 2, False),
      (3, 5, 96, 112, 6, 0.25, 1, False), (3, 8, 112, 192, 6, 0.25, 2, False))
_S = ((3, 2, 24, 24, 1, 0, 1, True), (3, 4, 24, 48, 4, 0, 2, True),
      (3, 4, 48, 64, 4, 0, 2, True), (3, 6, 64, 128, 4, 0.25, 2, False),
      (3, 9, 128, 160, 6, 0.25, 1, False), (3, 15, 160, 256, 6, 0.25, 2, False))
_M = ((3, 3, 24, 24, 1, 0, 1, True), (3, 5, 24, 48, 4, 0, 2, True),
      (3, 5, 48, 80, 4, 0, 2, True), (3, 7, 80, 160, 4, 0.25, 2, False),
      (3, 14, 160, 176, 6, 0.25, 1, False), (3, 18, 176, 304, 6, 0.25, 2, False),
      (3, 5, 304, 512, 6, 0.25, 1, False))
_L = ((3, 4, 32, 32, 1, 0, 1, True), (3, 7, 32, 64, 4, 0, 2, True),
      (3, 7, 64, 96, 4, 0, 2, True), (3, 10, 96, 192, 4, 0.25, 2, False),
      (3, 19, 192, 224, 6, 0.25, 1, False), (3, 25, 224, 384, 6, 0.25, 2, False),
      (3, 7, 384, 640, 6, 0.25, 1, False))
# variant -> (stages, width, depth, default size, md5 with the top, md5 without)
_VARIANTS = {
    "b0": (_B, 1.0, 1.0, 224, "21ecbf6da12460d5c40bb2f29ceb2188",
           "893217f2bb855e2983157299931e43ff"),
    "b1": (_B, 1.0, 1.1, 240, "069f0534ff22adf035c89e2d9547a9dc",
           "0e80663031ca32d657f9caa404b6ec37"),
    "b2": (_B, 1.1, 1.2, 260, "424e49f28180edbde1e94797771950a7",
           "1dfe2e7a5d45b6632553a8961ea609eb"),
    "b3": (_B, 1.2, 1.4, 300, "1f1fc43bd98a6e4fd8fdfd551e02c7a0",
           "f6abf7b5849ac99a89b50dd3fd532856"),
    "s": (_S, 1.0, 1.0, 384, "e1d88a8495beba45748fedd0cecbe016",
          "af0682fb74e8c54910f2d4393339c070"),
    "m": (_M, 1.0, 1.0, 480, "a3bf6aa3276309f4fc6a34aa114c95cd",
          "1b8dc055df72dde80d614482840fe342"),
    "l": (_L, 1.0, 1.0, 480, "27e6d408b53c7ebc868fefa357689935",
          "b0b66b5c863aef5b46e8608fe1711615"),
}


def round_filters(filters, width_coefficient, min_depth, depth_divisor):
    """``filters * width_coefficient`` rounded to a multiple of ``depth_divisor``."""
    filters *= width_coefficient
    minimum = min_depth or depth_divisor
    return int(max(minimum, int(filters + depth_divisor / 2) // depth_divisor * depth_divisor))


def _bn(x, name, momentum, axis):
    return layers.BatchNormalization(axis=axis, momentum=momentum, name=name)(x)


def _conv(filters, kernel_size, strides, name, padding="same"):
    return layers.Conv2D(filters, kernel_size, strides=strides, padding=padding,
                         kernel_initializer=conv_initializer(), use_bias=False, name=name)


def _mbconv_block(inputs, input_filters, output_filters, expand_ratio, kernel_size, strides,
                  se_ratio, bn_momentum, activation, survival_probability, name, fused):
    """Fused-MBConv or MBConv; the dropout before the residual is at ``survival_probability``
    (the rate, whatever its name says)."""
    axis = 3 if _common.channels_last() else 1
    filters = input_filters * expand_ratio
    x = inputs
    if expand_ratio != 1:
        x = _conv(filters, kernel_size if fused else 1, strides if fused else 1,
                  f"{name}expand_conv")(x)
        x = _bn(x, f"{name}expand_bn", bn_momentum, axis)
        x = layers.Activation(activation, name=f"{name}expand_activation")(x)
    if not fused:
        x = layers.DepthwiseConv2D(kernel_size, strides=strides, padding="same", use_bias=False,
                                   depthwise_initializer=conv_initializer(),
                                   name=f"{name}dwconv2")(x)
        x = layers.Activation(activation, name=f"{name}activation")(
            _bn(x, f"{name}bn", bn_momentum, axis))
    if 0 < se_ratio <= 1:
        x = squeeze_excite(x, filters, max(1, int(input_filters * se_ratio)), activation, name,
                           axis)
    project_here = fused and expand_ratio == 1  # the fused block's only convolution
    x = _conv(output_filters, kernel_size if project_here else 1,
              strides if project_here else 1, f"{name}project_conv")(x)
    x = _bn(x, f"{name}project_bn", bn_momentum, axis)
    if project_here:
        x = layers.Activation(activation, name=f"{name}project_activation")(x)
    if strides == 1 and input_filters == output_filters:
        x = residual(x, inputs, survival_probability, name)
    return x


def EfficientNetV2(width_coefficient, depth_coefficient, default_size, dropout_rate=0.2,
                   drop_connect_rate=0.2, depth_divisor=8, min_depth=8, bn_momentum=0.9,
                   activation="swish", blocks_args="default", name="efficientnetv2",
                   include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
                   pooling=None, classes=1000, classifier_activation="softmax",
                   include_preprocessing=True, weights_name=None):
    """An EfficientNetV2 from its stage table ``blocks_args``; see `EfficientNetV2B0`."""
    stages = _VARIANTS[weights_name][0] if blocks_args == "default" else blocks_args
    _common.check_weights(weights, include_top, classes, name)
    img_input = _common.image_input(input_tensor, input_shape, default_size, 32, include_top,
                                    weights)
    axis = 3 if _common.channels_last() else 1
    x = img_input
    if include_preprocessing:
        if str(weights_name).startswith("b") and img_input.shape[axis] == 3:
            x = layers.Rescaling(scale=1.0 / 255)(x)
            x = layers.Normalization(mean=[0.485, 0.456, 0.406],
                                     variance=[0.229 ** 2, 0.224 ** 2, 0.225 ** 2],
                                     axis=axis)(x)
        else:
            x = layers.Rescaling(scale=1.0 / 128.0, offset=-1)(x)

    def rounded(filters):
        return round_filters(filters, width_coefficient, min_depth, depth_divisor)

    x = _conv(rounded(stages[0][2]), 3, 2, "stem_conv")(x)
    x = layers.Activation(activation, name="stem_activation")(
        _bn(x, "stem_bn", bn_momentum, axis))
    repeats = [int(math.ceil(depth_coefficient * stage[1])) for stage in stages]
    total, b = float(sum(stage[1] for stage in stages)), 0
    for i, (stage, count) in enumerate(zip(stages, repeats)):
        kernel, _, f_in, f_out, expand, se_ratio, stride, fused = stage
        f_in, f_out = rounded(f_in), rounded(f_out)
        for j in range(count):
            x = _mbconv_block(x, f_in if j == 0 else f_out, f_out, expand, kernel,
                              stride if j == 0 else 1, se_ratio, bn_momentum, activation,
                              drop_connect_rate * b / total, f"block{i + 1}{chr(97 + j)}_",
                              fused)
            b += 1
    x = _conv(rounded(1280), 1, 1, "top_conv")(x)
    x = layers.Activation(activation, name="top_activation")(_bn(x, "top_bn", bn_momentum, axis))
    x = head(x, include_top, pooling, dropout_rate, classes, classifier_activation, weights,
             initializers.Constant(0.0))
    files = (None, None)
    if weights_name in _VARIANTS:
        stem = f"efficientnetv2-{weights_name}"
        files = _common.weight_files(_BASE, f"{stem}.h5", f"{stem}_notop.h5",
                                     *_VARIANTS[weights_name][4:])
    return _common.finish(img_input, input_tensor, x, name, weights, *files, include_top)


_PREPROCESSING = " " * 8 + ("include_preprocessing: bool, whether the model rescales ``[0, 255]`` "
                             "pixels itself.\n")


def _application(variant):
    _, width, depth, size = _VARIANTS[variant][:4]

    def build(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
              pooling=None, classes=1000, classifier_activation="softmax",
              include_preprocessing=True, name=f"efficientnetv2-{variant}"):
        return EfficientNetV2(width, depth, size, name=name, include_top=include_top,
                              weights=weights, input_tensor=input_tensor,
                              input_shape=input_shape, pooling=pooling, classes=classes,
                              classifier_activation=classifier_activation,
                              include_preprocessing=include_preprocessing, weights_name=variant)

    build.__name__ = build.__qualname__ = f"EfficientNetV2{variant.upper()}"
    build.__doc__ = _common.doc(
        f"EfficientNetV2-{variant.upper()} (Tan & Le 2021), optionally with ImageNet weights.",
        "global average pooling (``avg_pool``), dropout and the ``predictions`` Dense layer",
        size, 32, "pixels in ``[0, 255]`` (with ``include_preprocessing``, which rescales them)",
        _PREPROCESSING)
    return build


EfficientNetV2B0 = _application("b0")
EfficientNetV2B1 = _application("b1")
EfficientNetV2B2 = _application("b2")
EfficientNetV2B3 = _application("b3")
EfficientNetV2S = _application("s")
EfficientNetV2M = _application("m")
EfficientNetV2L = _application("l")


def preprocess_input(x, data_format=None):
    """The identity: EfficientNetV2 models rescale their inputs themselves (pass pixels in
    ``[0, 255]``). Kept for API consistency with the other applications."""
    return x


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes per prediction
    (`kerasrs.applications.imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
