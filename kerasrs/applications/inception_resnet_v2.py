"""Inception-ResNet v2 (Szegedy et al., "Inception-v4, Inception-ResNet and the Impact of
Residual Connections on Learning", AAAI 2017) as Keras 3 builds it: the Inception stem and
``mixed_5b``, then 10 x block35, ``mixed_6a``, 20 x block17, ``mixed_7a`` and 10 x block8, each
residual block adding its scaled branch output to its input (`CustomScaleLayer`). Default input
299x299; inputs in "tf" mode (``[-1, 1]``)."""

from kerasrs import layers, saving
from kerasrs.applications import _common, imagenet_utils

_BASE = "https://storage.googleapis.com/tensorflow/keras-applications/inception_resnet_v2/"
_STEM = "inception_resnet_v2_weights_tf_dim_ordering_tf_kernels"
_TOP, _NOTOP = _common.weight_files(_BASE, f"{_STEM}.h5", f"{_STEM}_notop.h5",
                                    "e693bd0210a403b3192acc6073ad2e96",
                                    "d19885ff4a710c122648d3b5c3b684e4")


@saving.register_keras_serializable(package="kerasrs.applications")
class CustomScaleLayer(layers.Layer):
    """``inputs[0] + inputs[1] * scale``: a residual connection with a scaled branch.

    Args:
        scale: float, the branch's weight.

    Input: a list of two tensors of the same shape. Output: that shape.
    """

    def __init__(self, scale, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale

    def call(self, inputs):
        return inputs[0] + inputs[1] * self.scale

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[0])

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}


def conv2d_bn(x, filters, kernel_size, strides=1, padding="same", activation="relu",
              use_bias=False, name=None):
    """Conv2D, then (without a bias) BatchNormalization without scale, then ``activation``;
    with ``name`` the layers are ``<name>``, ``<name>_bn`` and ``<name>_ac``."""
    x = layers.Conv2D(filters, kernel_size, strides=strides, padding=padding,
                      use_bias=use_bias, name=name)(x)
    if not use_bias:
        axis = 3 if _common.channels_last() else 1
        x = layers.BatchNormalization(axis=axis, scale=False, name=name and f"{name}_bn")(x)
    if activation is not None:
        x = layers.Activation(activation, name=name and f"{name}_ac")(x)
    return x


def _chain(x, convs):
    """``(filters, kernel_size[, strides, padding])`` convolutions in turn."""
    for spec in convs:
        x = conv2d_bn(x, *spec[:2], **dict(zip(("strides", "padding"), spec[2:])))
    return x


# the branches of each residual block type, as convolution chains
_BLOCKS = {
    "block35": [[(32, 1)], [(32, 1), (32, 3)], [(32, 1), (48, 3), (64, 3)]],
    "block17": [[(192, 1)], [(128, 1), (160, (1, 7)), (192, (7, 1))]],
    "block8": [[(192, 1)], [(192, 1), (224, (1, 3)), (256, (3, 1))]],
}


def inception_resnet_block(x, scale, block_type, block_idx, activation="relu"):
    """Residual Inception block ``<block_type>_<block_idx>``: its branches concatenated
    (``_mixed``), projected back by a 1x1 convolution with bias (``_conv``), scaled and added
    to ``x``, then ``activation`` (``_ac``).

    Raises:
        ValueError: for a ``block_type`` other than "block35", "block17" or "block8".
    """
    if block_type not in _BLOCKS:
        raise ValueError("inception_resnet_block: `block_type` must be 'block35', 'block17' "
                         f"or 'block8'. Received: block_type={block_type!r}")
    axis = 3 if _common.channels_last() else 1
    name = f"{block_type}_{block_idx}"
    branches = [_chain(x, chain) for chain in _BLOCKS[block_type]]
    mixed = layers.Concatenate(axis=axis, name=f"{name}_mixed")(branches)
    up = conv2d_bn(mixed, x.shape[axis], 1, activation=None, use_bias=True, name=f"{name}_conv")
    x = CustomScaleLayer(scale)([x, up])
    if activation is not None:
        x = layers.Activation(activation, name=f"{name}_ac")(x)
    return x


def _mixed(x, chains, name, axis, pool):
    """Parallel convolution chains and a pooling branch, concatenated as ``name``."""
    branches = [_chain(x, chain) for chain in chains]
    if pool == "avg":
        branches.append(conv2d_bn(layers.AveragePooling2D(3, strides=1, padding="same")(x),
                                  64, 1))
    else:
        branches.append(layers.MaxPooling2D(3, strides=2, padding="valid")(x))
    return layers.Concatenate(axis=axis, name=name)(branches)


def InceptionResNetV2(include_top=True, weights="imagenet", input_tensor=None,
                      input_shape=None, pooling=None, classes=1000,
                      classifier_activation="softmax", name="inception_resnet_v2"):
    _common.check_weights(weights, include_top, classes, name)
    img_input = _common.image_input(input_tensor, input_shape, 299, 75, include_top, weights)
    axis = 3 if _common.channels_last() else 1
    x = _chain(img_input, [(32, 3, 2, "valid"), (32, 3, 1, "valid"), (64, 3)])
    x = layers.MaxPooling2D(3, strides=2)(x)
    x = _chain(x, [(80, 1, 1, "valid"), (192, 3, 1, "valid")])
    x = layers.MaxPooling2D(3, strides=2)(x)
    x = _mixed(x, [[(96, 1)], [(48, 1), (64, 5)], [(64, 1), (96, 3), (96, 3)]], "mixed_5b",
               axis, "avg")
    for i in range(1, 11):
        x = inception_resnet_block(x, scale=0.17, block_type="block35", block_idx=i)
    x = _mixed(x, [[(384, 3, 2, "valid")], [(256, 1), (256, 3), (384, 3, 2, "valid")]],
               "mixed_6a", axis, "max")
    for i in range(1, 21):
        x = inception_resnet_block(x, scale=0.1, block_type="block17", block_idx=i)
    x = _mixed(x, [[(256, 1), (384, 3, 2, "valid")], [(256, 1), (288, 3, 2, "valid")],
                   [(256, 1), (288, 3), (320, 3, 2, "valid")]], "mixed_7a", axis, "max")
    for i in range(1, 10):
        x = inception_resnet_block(x, scale=0.2, block_type="block8", block_idx=i)
    x = inception_resnet_block(x, scale=1.0, activation=None, block_type="block8",
                               block_idx=10)
    x = conv2d_bn(x, 1536, 1, name="conv_7b")
    if include_top:
        x = _common.classifier(x, classes, classifier_activation, weights)
    else:
        x = _common.pool(x, pooling, names=(None, None))
    return _common.finish(img_input, input_tensor, x, name, weights, _TOP, _NOTOP, include_top)


InceptionResNetV2.__doc__ = _common.doc(
    "Inception-ResNet v2 (Szegedy et al. 2017), 55.9 M parameters, optionally with "
    "ImageNet weights.",
    "global average pooling (``avg_pool``) and the ``predictions`` Dense layer", 299,
    75, _common.preprocessed_with("inception_resnet_v2"))


def preprocess_input(x, data_format=None):
    """Inception-ResNet v2 preprocessing: pixels scaled to ``[-1, 1]`` ("tf" mode)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes per prediction
    (`kerasrs.applications.imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
