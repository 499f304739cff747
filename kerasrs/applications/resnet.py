"""ResNet v1 and v2 (He et al., "Deep Residual Learning for Image Recognition", CVPR 2016, and
"Identity Mappings in Deep Residual Networks", ECCV 2016), built as Keras 3 builds them: same
layer names, weight order and published ImageNet weights.

v1 ("post-activation") blocks are conv-BN-ReLU three times with a projection shortcut in each
stack's first block; v2 ("pre-activation") blocks put BN-ReLU before the convolutions and
downsample in each stack's last block. Both expect ``preprocess_input`` of their module: "caffe"
mode for v1 (BGR, mean pixel subtracted), "tf" mode for v2 (``[-1, 1]``).
"""

from kerasrs import layers
from kerasrs.applications import _common, imagenet_utils

_BASE = _common.KERAS_APPLICATIONS + "resnet/"
# name -> (md5 with the top, md5 without): Keras's published hashes
_HASHES = {
    "resnet50": ("2cb95161c43110f7111970584f804107", "4d473c1dd8becc155b73f8504c6f6626"),
    "resnet101": ("f1aeb4b969a6efcfb50fad2f0c20cfc5", "88cf7a10940856eca736dc7b7e228a21"),
    "resnet152": ("100835be76be38e30d865e96f2aaae62", "ee4c566cf9a93f14d82f913c2dc6dd0c"),
    "resnet50v2": ("3ef43a0b657b3be2300d5770ece849e0", "fac2f116257151a9d068a22e544a4917"),
    "resnet101v2": ("6343647c601c52e1368623803854d971", "c0ed64b8031c3730f411d2eb4eea35b5"),
    "resnet152v2": ("a49b44d1979771252814e80f8ec446f9", "ed17cf2e0169df9d443503ef94b23b33"),
}
# blocks per stack (conv2..conv5); the filters are always 64, 128, 256, 512
_DEPTHS = {"resnet50": (3, 4, 6, 3), "resnet101": (3, 4, 23, 3), "resnet152": (3, 8, 36, 3)}
_EPSILON = 1.001e-5


def _files(weights_name):
    top, notop = _HASHES[weights_name]
    stem = f"{weights_name}_weights_tf_dim_ordering_tf_kernels"
    return _common.weight_files(_BASE, f"{stem}.h5", f"{stem}_notop.h5", top, notop)


def _bn(x, name, axis):
    return layers.BatchNormalization(axis=axis, epsilon=_EPSILON, name=name)(x)


def _block_v1(x, filters, stride, projection, name, axis):
    """Bottleneck 1x1 -> 3x3 -> 1x1 (4x filters), added to the (projected) input, then ReLU."""
    shortcut = x
    if projection:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=f"{name}_0_conv")(x)
        shortcut = _bn(shortcut, f"{name}_0_bn", axis)
    x = layers.Conv2D(filters, 1, strides=stride, name=f"{name}_1_conv")(x)
    x = layers.Activation("relu", name=f"{name}_1_relu")(_bn(x, f"{name}_1_bn", axis))
    x = layers.Conv2D(filters, 3, padding="SAME", name=f"{name}_2_conv")(x)
    x = layers.Activation("relu", name=f"{name}_2_relu")(_bn(x, f"{name}_2_bn", axis))
    x = _bn(layers.Conv2D(4 * filters, 1, name=f"{name}_3_conv")(x), f"{name}_3_bn", axis)
    x = layers.Add(name=f"{name}_add")([shortcut, x])
    return layers.Activation("relu", name=f"{name}_out")(x)


def _block_v2(x, filters, stride, projection, name, axis):
    """Pre-activation bottleneck: BN-ReLU first, downsampling in the 3x3 convolution."""
    preact = layers.Activation("relu", name=f"{name}_preact_relu")(
        _bn(x, f"{name}_preact_bn", axis))
    if projection:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=f"{name}_0_conv")(preact)
    else:
        shortcut = layers.MaxPooling2D(1, strides=stride)(x) if stride > 1 else x
    x = layers.Conv2D(filters, 1, strides=1, use_bias=False, name=f"{name}_1_conv")(preact)
    x = layers.Activation("relu", name=f"{name}_1_relu")(_bn(x, f"{name}_1_bn", axis))
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name=f"{name}_2_pad")(x)
    x = layers.Conv2D(filters, 3, strides=stride, use_bias=False, name=f"{name}_2_conv")(x)
    x = layers.Activation("relu", name=f"{name}_2_relu")(_bn(x, f"{name}_2_bn", axis))
    x = layers.Conv2D(4 * filters, 1, name=f"{name}_3_conv")(x)
    return layers.Add(name=f"{name}_out")([shortcut, x])


def _stacks(x, depths, preact, axis):
    """conv2..conv5: v1 downsamples in each stack's first block (not conv2's), v2 in each
    stack's last block (not conv5's)."""
    for i, (filters, blocks) in enumerate(zip((64, 128, 256, 512), depths)):
        name = f"conv{i + 2}"
        for b in range(1, blocks + 1):
            if preact:
                stride = 2 if b == blocks and i < 3 else 1
                x = _block_v2(x, filters, stride, b == 1, f"{name}_block{b}", axis)
            else:
                stride = 2 if b == 1 and i > 0 else 1
                x = _block_v1(x, filters, stride, b == 1, f"{name}_block{b}", axis)
    return x


def ResNet(depths, preact, include_top=True, weights="imagenet", input_tensor=None,
           input_shape=None, pooling=None, classes=1000, classifier_activation="softmax",
           name="resnet", weights_name=None):
    """A ResNet with ``depths`` blocks per stack, v2 when ``preact``; see `ResNet50`."""
    _common.check_weights(weights, include_top, classes, name)
    axis = 3 if _common.channels_last() else 1
    img_input = _common.image_input(input_tensor, input_shape, 224, 32, include_top, weights)
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=True, name="conv1_conv")(x)
    if not preact:
        x = layers.Activation("relu", name="conv1_relu")(_bn(x, "conv1_bn", axis))
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    x = _stacks(x, depths, preact, axis)
    if preact:
        x = layers.Activation("relu", name="post_relu")(_bn(x, "post_bn", axis))
    if include_top:
        x = _common.classifier(x, classes, classifier_activation, weights)
    else:
        x = _common.pool(x, pooling)
    files = _files(weights_name) if weights_name in _HASHES else (None, None)
    return _common.finish(img_input, input_tensor, x, name, weights, *files, include_top)


def _application(title, weights_name, preact, module):
    def build(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
              pooling=None, classes=1000, classifier_activation="softmax", name=weights_name):
        key = weights_name.replace("v2", "")
        return ResNet(_DEPTHS[key], preact, include_top, weights, input_tensor, input_shape,
                      pooling, classes, classifier_activation, name, weights_name)

    build.__name__ = build.__qualname__ = title
    build.__doc__ = _common.doc(f"{title} (He et al. 2016) as Keras 3 builds it, optionally with "
                                "ImageNet weights.", _common.POOL_AND_DENSE, 224, 32,
                                _common.preprocessed_with(module))
    return build


ResNet50 = _application("ResNet50", "resnet50", False, "resnet")
ResNet101 = _application("ResNet101", "resnet101", False, "resnet")
ResNet152 = _application("ResNet152", "resnet152", False, "resnet")


def preprocess_input(x, data_format=None):
    """ResNet v1 preprocessing: RGB to BGR and the ImageNet mean pixel subtracted ("caffe"
    mode of `kerasrs.applications.imagenet_utils.preprocess_input`)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes per prediction
    (`kerasrs.applications.imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
