"""NASNet-A Mobile and Large (Zoph et al., "Learning Transferable Architectures for Scalable
Image Recognition", CVPR 2018) as Keras 3 builds them: a stem, then normal cells (which keep the
resolution) and reduction cells (which halve it), each cell combining its input ``ip`` with the
previous cell's output ``p``. Channels last only. Inputs in "tf" mode (``[-1, 1]``)."""

from kerasrs import layers
from kerasrs.applications import _common, imagenet_utils

_BASE = _common.KERAS_APPLICATIONS + "nasnet/"
_FILES = {  # default size -> (with the top, without): Keras's names, URLs and md5 hashes
    224: (_common.WeightsFile("nasnet_mobile.h5", _BASE + "NASNet-mobile.h5",
                              "020fb642bf7360b370c678b08e0adf61"),
          _common.WeightsFile("nasnet_mobile_no_top.h5", _BASE + "NASNet-mobile-no-top.h5",
                              "1ed92395b5b598bdda52abe5c0dbfd63")),
    331: (_common.WeightsFile("nasnet_large.h5", _BASE + "NASNet-large.h5",
                              "11577c9a518f0070763c2b964a382f17"),
          _common.WeightsFile("nasnet_large_no_top.h5", _BASE + "NASNet-large-no-top.h5",
                              "d81d89dc07e6e56530c4e77faddd61b5")),
}


def _bn(x, name):
    return layers.BatchNormalization(axis=-1, momentum=0.9997, epsilon=1e-3, name=name)(x)


def _conv1x1(x, filters, name):
    return layers.Conv2D(filters, (1, 1), strides=(1, 1), padding="same", use_bias=False,
                         name=name, kernel_initializer="he_normal")(x)


def _separable_block(x, filters, kernel_size=(3, 3), strides=(1, 1), block_id=None):
    """ReLU, separable conv (strided ones padded first), BN, ReLU, separable conv, BN."""
    x = layers.Activation("relu")(x)
    padding = "same"
    if strides == (2, 2):
        x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, kernel_size),
                                 name=f"separable_conv_1_pad_{block_id}")(x)
        padding = "valid"
    x = layers.SeparableConv2D(filters, kernel_size, strides=strides, padding=padding,
                               use_bias=False, name=f"separable_conv_1_{block_id}")(x)
    x = layers.Activation("relu")(_bn(x, f"separable_conv_1_bn_{block_id}"))
    x = layers.SeparableConv2D(filters, kernel_size, padding="same", use_bias=False,
                               name=f"separable_conv_2_{block_id}")(x)
    return _bn(x, f"separable_conv_2_bn_{block_id}")


def _adjust(p, ip, filters, block_id):
    """Bring the previous output ``p`` to ``ip``'s resolution (two offset strided 1x1 paths)
    or channel count (a 1x1 projection)."""
    if p is None:
        return ip
    if p.shape[-2] != ip.shape[-2]:
        p = layers.Activation("relu", name=f"adjust_relu_1_{block_id}")(p)
        p1 = layers.AveragePooling2D((1, 1), strides=(2, 2), padding="valid",
                                     name=f"adjust_avg_pool_1_{block_id}")(p)
        p1 = _conv1x1(p1, filters // 2, f"adjust_conv_1_{block_id}")
        p2 = layers.ZeroPadding2D(padding=((0, 1), (0, 1)))(p)
        p2 = layers.Cropping2D(cropping=((1, 0), (1, 0)))(p2)
        p2 = layers.AveragePooling2D((1, 1), strides=(2, 2), padding="valid",
                                     name=f"adjust_avg_pool_2_{block_id}")(p2)
        p2 = _conv1x1(p2, filters // 2, f"adjust_conv_2_{block_id}")
        return _bn(layers.concatenate([p1, p2], axis=-1), f"adjust_bn_{block_id}")
    if p.shape[-1] != filters:
        p = layers.Activation("relu")(p)
        p = _conv1x1(p, filters, f"adjust_conv_projection_{block_id}")
        return _bn(p, f"adjust_bn_{block_id}")
    return p


def _squeeze(ip, filters, kind, block_id):
    """The cell's ReLU-1x1-BN of its input ``ip``."""
    h = layers.Activation("relu")(ip)
    return _bn(_conv1x1(h, filters, f"{kind}_conv_1_{block_id}"), f"{kind}_bn_1_{block_id}")


def _avg3(x, strides, name):
    return layers.AveragePooling2D((3, 3), strides=strides,
                                   padding="same" if strides == (1, 1) else "valid", name=name)(x)


def _normal_cell(ip, p, filters, block_id):
    """Five combinations of separable convolutions, pooling and identities, concatenated
    with ``p``."""
    p = _adjust(p, ip, filters, block_id)
    h = _squeeze(ip, filters, "normal", block_id)
    b = block_id
    x1 = layers.add([_separable_block(h, filters, (5, 5), block_id=f"normal_left1_{b}"),
                     _separable_block(p, filters, block_id=f"normal_right1_{b}")],
                    name=f"normal_add_1_{b}")
    x2 = layers.add([_separable_block(p, filters, (5, 5), block_id=f"normal_left2_{b}"),
                     _separable_block(p, filters, (3, 3), block_id=f"normal_right2_{b}")],
                    name=f"normal_add_2_{b}")
    x3 = layers.add([_avg3(h, (1, 1), f"normal_left3_{b}"), p], name=f"normal_add_3_{b}")
    x4 = layers.add([_avg3(p, (1, 1), f"normal_left4_{b}"), _avg3(p, (1, 1),
                                                                  f"normal_right4_{b}")],
                    name=f"normal_add_4_{b}")
    x5 = layers.add([_separable_block(h, filters, block_id=f"normal_left5_{b}"), h],
                    name=f"normal_add_5_{b}")
    x = layers.concatenate([p, x1, x2, x3, x4, x5], axis=-1, name=f"normal_concat_{b}")
    return x, ip


def _reduction_cell(ip, p, filters, block_id):
    """Strided combinations that halve the resolution, concatenated."""
    p = _adjust(p, ip, filters, block_id)
    h = _squeeze(ip, filters, "reduction", block_id)
    b = block_id
    h3 = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(h, 3),
                              name=f"reduction_pad_1_{b}")(h)
    s2 = (2, 2)
    x1 = layers.add([_separable_block(h, filters, (5, 5), s2, f"reduction_left1_{b}"),
                     _separable_block(p, filters, (7, 7), s2, f"reduction_right1_{b}")],
                    name=f"reduction_add_1_{b}")
    x2 = layers.add([layers.MaxPooling2D((3, 3), strides=s2, padding="valid",
                                         name=f"reduction_left2_{b}")(h3),
                     _separable_block(p, filters, (7, 7), s2, f"reduction_right2_{b}")],
                    name=f"reduction_add_2_{b}")
    x3 = layers.add([_avg3(h3, s2, f"reduction_left3_{b}"),
                     _separable_block(p, filters, (5, 5), s2, f"reduction_right3_{b}")],
                    name=f"reduction_add3_{b}")
    x4 = layers.add([x2, _avg3(x1, (1, 1), f"reduction_left4_{b}")])
    x5 = layers.add([_separable_block(x1, filters, (3, 3), block_id=f"reduction_left4_{b}"),
                     layers.MaxPooling2D((3, 3), strides=s2, padding="valid",
                                         name=f"reduction_right5_{b}")(h3)],
                    name=f"reduction_add4_{b}")
    x = layers.concatenate([x2, x3, x4, x5], axis=-1, name=f"reduction_concat_{b}")
    return x, ip


def NASNet(input_shape=None, penultimate_filters=4032, num_blocks=6, stem_block_filters=96,
           skip_reduction=True, filter_multiplier=2, include_top=True, weights="imagenet",
           input_tensor=None, pooling=None, classes=1000, default_size=None,
           classifier_activation="softmax", name="NASNet"):
    """A NASNet-A with ``num_blocks`` normal cells per stage; see `NASNetLarge`.

    Raises:
        ValueError: for invalid arguments, the "channels_first" data format, or
            ``penultimate_filters`` not a multiple of ``24 * filter_multiplier**2``.
    """
    _common.refuse_channels_first(name)
    _common.check_weights(weights, include_top, classes, name)
    if isinstance(input_shape, tuple) and None in input_shape and weights == "imagenet":
        raise ValueError(f"{name}: with ImageNet weights the input shape must be static. "
                         f"Received: input_shape={input_shape}")
    if penultimate_filters % (24 * filter_multiplier ** 2):
        raise ValueError(f"{name}: `penultimate_filters` must be a multiple of 24 * "
                         f"filter_multiplier**2. Received: {penultimate_filters}")
    default_size = default_size or 331
    img_input = _common.image_input(input_tensor, input_shape, default_size, 32, include_top,
                                    weights)
    filters = penultimate_filters // 24
    x = layers.Conv2D(stem_block_filters, (3, 3), strides=(2, 2), padding="valid",
                      use_bias=False, name="stem_conv1", kernel_initializer="he_normal")(
        img_input)
    x = _bn(x, "stem_bn1")
    x, p = _reduction_cell(x, None, filters // filter_multiplier ** 2, "stem_1")
    x, p = _reduction_cell(x, p, filters // filter_multiplier, "stem_2")
    for stage in range(3):
        width = filters * filter_multiplier ** stage
        if stage:
            x, p0 = _reduction_cell(x, p, width, f"reduce_{stage * num_blocks}")
            p = p if skip_reduction else p0
        for i in range(num_blocks):
            block = stage * num_blocks + i + (1 if stage else 0)
            x, p = _normal_cell(x, p, width, f"{block}")
    x = layers.Activation("relu")(x)
    if include_top:
        x = _common.classifier(x, classes, classifier_activation, weights, pool_name=None)
    else:
        x = _common.pool(x, pooling, names=(None, None))
    files = _FILES.get(default_size, (None, None))
    return _common.finish(img_input, input_tensor, x, name, weights, *files, include_top)


_DOC = """NASNet-A {size} (Zoph et al. 2018), optionally with ImageNet weights.

    Args:
        input_shape: optional ``(height, width, 3)``, sides >= 32 (default {default}x{default}
            {notop}).
        include_top: bool, whether to end with global average pooling and the ``predictions``
            Dense layer.
        weights: None (random initialization), "imagenet" (Keras's published weights,
            downloaded once into ``~/.kerasrs/models``) or the path of a weights file.
        input_tensor: optional symbolic tensor (``kerasrs.Input``) to use as the image input.
        pooling: without the top: None (4-D feature maps), "avg" or "max".
        classes: int, number of classes with the top and without ImageNet weights.
        classifier_activation: "softmax", None (logits) or, without pretrained weights, any
            activation.
        name: the model's name.

    Returns:
        A functional `kerasrs.Model`; inputs preprocessed with
        ``kerasrs.applications.nasnet.preprocess_input``.

    Raises:
        ValueError: for invalid arguments or the "channels_first" data format.
        FileNotFoundError: for "imagenet" offline without a cached copy.
"""


def NASNetMobile(input_shape=None, include_top=True, weights="imagenet", input_tensor=None,
                 pooling=None, classes=1000, classifier_activation="softmax",
                 name="nasnet_mobile"):
    if not include_top and input_shape is None:
        input_shape = (224, 224, 3)
    return NASNet(input_shape, penultimate_filters=1056, num_blocks=4, stem_block_filters=32,
                  skip_reduction=False, filter_multiplier=2, include_top=include_top,
                  weights=weights, input_tensor=input_tensor, pooling=pooling, classes=classes,
                  default_size=224, classifier_activation=classifier_activation, name=name)


def NASNetLarge(input_shape=None, include_top=True, weights="imagenet", input_tensor=None,
                pooling=None, classes=1000, classifier_activation="softmax",
                name="nasnet_large"):
    return NASNet(input_shape, penultimate_filters=4032, num_blocks=6, stem_block_filters=96,
                  skip_reduction=True, filter_multiplier=2, include_top=include_top,
                  weights=weights, input_tensor=input_tensor, pooling=pooling, classes=classes,
                  default_size=331, classifier_activation=classifier_activation, name=name)


NASNetMobile.__doc__ = _DOC.format(size="Mobile", default=224,
                                   notop="with or without the top")
NASNetLarge.__doc__ = _DOC.format(size="Large", default=331, notop="with the top")


def preprocess_input(x, data_format=None):
    """NASNet preprocessing: pixels scaled to ``[-1, 1]`` ("tf" mode)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes per prediction
    (`kerasrs.applications.imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
