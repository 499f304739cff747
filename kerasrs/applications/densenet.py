"""DenseNet-121, -169 and -201 (Huang et al., "Densely Connected Convolutional Networks", CVPR
2017) as Keras 3 builds them. Each dense block appends 32 new channels per layer
(BN-ReLU-1x1-BN-ReLU-3x3, concatenated to its input); transitions halve channels and resolution.
Inputs: "torch"-mode preprocessing (``[0, 1]``, then ImageNet mean and std per channel)."""

from kerasrs import layers
from kerasrs.applications import _common, imagenet_utils

_BASE = _common.KERAS_APPLICATIONS + "densenet/"
_GROWTH = 32
_EPSILON = 1.001e-5
# layers per dense block, and Keras's published md5 hashes (with the top, without)
_CONFIGS = {
    "densenet121": ((6, 12, 24, 16), "9d60b8095a5708f2dcce2bca79d332c7",
                    "30ee3e1110167f948a6b9946edeeb738"),
    "densenet169": ((6, 12, 32, 32), "d699b8f76981ab1b30698df4c175e90b",
                    "b8c4d4c20dd625c148057b9ff1c1176b"),
    "densenet201": ((6, 12, 48, 32), "1ceb130c1ea1b78c3bf6114dbdfd8807",
                    "c13680b51ded0fb44dff2d8f86ac8bb1"),
}


def _files(variant):
    _, top, notop = _CONFIGS[variant]
    stem = f"{variant}_weights_tf_dim_ordering_tf_kernels"
    return _common.weight_files(_BASE, f"{stem}.h5", f"{stem}_notop.h5", top, notop)


def _bn_relu(x, name):
    x = layers.BatchNormalization(axis=3, epsilon=_EPSILON, name=f"{name}_bn")(x)
    return layers.Activation("relu", name=f"{name}_relu")(x)


def _conv_block(x, name):
    y = _bn_relu(x, f"{name}_0")
    y = layers.Conv2D(4 * _GROWTH, 1, use_bias=False, name=f"{name}_1_conv")(y)
    y = _bn_relu(y, f"{name}_1")
    y = layers.Conv2D(_GROWTH, 3, padding="same", use_bias=False, name=f"{name}_2_conv")(y)
    return layers.Concatenate(axis=3, name=f"{name}_concat")([x, y])


def _transition(x, name):
    x = _bn_relu(x, name)
    x = layers.Conv2D(int(x.shape[3] * 0.5), 1, use_bias=False, name=f"{name}_conv")(x)
    return layers.AveragePooling2D(2, strides=2, name=f"{name}_pool")(x)


def DenseNet(blocks, include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
             pooling=None, classes=1000, classifier_activation="softmax", name="densenet"):
    """A DenseNet with ``blocks`` layers in its four dense blocks; see `DenseNet121`."""
    _common.refuse_channels_first(name)
    _common.check_weights(weights, include_top, classes, name)
    img_input = _common.image_input(input_tensor, input_shape, 224, 32, include_top, weights)
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)))(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=False, name="conv1_conv")(x)
    x = _bn_relu(x, "conv1")
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)))(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1")(x)
    for i, count in enumerate(blocks):
        for b in range(count):
            x = _conv_block(x, f"conv{i + 2}_block{b + 1}")
        if i < 3:
            x = _transition(x, f"pool{i + 2}")
    x = layers.BatchNormalization(axis=3, epsilon=_EPSILON, name="bn")(x)
    x = layers.Activation("relu", name="relu")(x)
    if include_top:
        x = _common.classifier(x, classes, classifier_activation, weights)
    else:
        x = _common.pool(x, pooling)
    variant = next((v for v, c in _CONFIGS.items() if c[0] == tuple(blocks)), None)
    files = _files(variant) if variant else (None, None)
    return _common.finish(img_input, input_tensor, x, name, weights, *files, include_top)


def _application(variant):
    def build(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
              pooling=None, classes=1000, classifier_activation="softmax", name=variant):
        return DenseNet(_CONFIGS[variant][0], include_top, weights, input_tensor, input_shape,
                        pooling, classes, classifier_activation, name)

    build.__name__ = build.__qualname__ = "DenseNet" + variant[8:]
    build.__doc__ = _common.doc(f"DenseNet-{variant[8:]} (Huang et al. 2017), optionally with "
                                "ImageNet weights (channels last only).",
                                _common.POOL_AND_DENSE, 224, 32,
                                _common.preprocessed_with("densenet"))
    return build


DenseNet121 = _application("densenet121")
DenseNet169 = _application("densenet169")
DenseNet201 = _application("densenet201")


def preprocess_input(x, data_format=None):
    """DenseNet preprocessing: ``[0, 1]`` then ImageNet mean and std per channel ("torch"
    mode of `kerasrs.applications.imagenet_utils.preprocess_input`)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="torch")


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes per prediction
    (`kerasrs.applications.imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
