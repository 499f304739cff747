"""VGG16 and VGG19 (Simonyan & Zisserman, "Very Deep Convolutional Networks for Large-Scale
Image Recognition", ICLR 2015) as Keras 3 builds them: blocks of 3x3 'same' ReLU convolutions
(``block<i>_conv<j>``), each ending in 2x2 max pooling, and a top of two 4096-unit Dense layers.
Inputs: "caffe"-mode preprocessing (BGR, mean pixel subtracted)."""

from kerasrs import layers
from kerasrs.applications import _common, imagenet_utils

_BASE = _common.KERAS_APPLICATIONS
# convolutions per block (filters 64, 128, 256, 512, 512) and Keras's published md5 hashes
_CONFIGS = {
    "vgg16": ((2, 2, 3, 3, 3), "64373286793e3c8b2b4e3219cbf3544b",
              "6d6bbae143d832006294945121d1f1fc"),
    "vgg19": ((2, 2, 4, 4, 4), "cbe5617147190e668d6c5d5026f83318",
              "253f8cb515780f3b799900260a226db6"),
}


def _files(variant):
    _, top, notop = _CONFIGS[variant]
    stem = f"{variant}_weights_tf_dim_ordering_tf_kernels"
    return _common.weight_files(f"{_BASE}{variant}/", f"{stem}.h5", f"{stem}_notop.h5", top,
                                notop)


def VGG(variant, include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
        pooling=None, classes=1000, classifier_activation="softmax", name=None):
    """VGG16 or VGG19 (``variant``); see `VGG16`."""
    name = name or variant
    _common.check_weights(weights, include_top, classes, name)
    x = img_input = _common.image_input(input_tensor, input_shape, 224, 32, include_top,
                                        weights)
    for block, (convs, filters) in enumerate(zip(_CONFIGS[variant][0], (64, 128, 256, 512, 512))):
        for conv in range(convs):
            x = layers.Conv2D(filters, (3, 3), activation="relu", padding="same",
                              name=f"block{block + 1}_conv{conv + 1}")(x)
        x = layers.MaxPooling2D((2, 2), strides=(2, 2), name=f"block{block + 1}_pool")(x)
    if include_top:
        x = layers.Flatten(name="flatten")(x)
        x = layers.Dense(4096, activation="relu", name="fc1")(x)
        x = layers.Dense(4096, activation="relu", name="fc2")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = _common.pool(x, pooling, names=(None, None))
    return _common.finish(img_input, input_tensor, x, name, weights, *_files(variant),
                          include_top)


def VGG16(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
          pooling=None, classes=1000, classifier_activation="softmax", name="vgg16"):
    return VGG("vgg16", include_top, weights, input_tensor, input_shape, pooling, classes,
               classifier_activation, name)


VGG16.__doc__ = _common.doc(
    "VGG16 (Simonyan & Zisserman 2015), 138 M parameters, optionally with ImageNet "
    "weights.",
    "``flatten``, ``fc1``, ``fc2`` (4096 units each) and the ``predictions`` Dense "
    "layer (the input is then 224x224)", 224, 32, _common.preprocessed_with("vgg16"))


def preprocess_input(x, data_format=None):
    """VGG preprocessing: RGB to BGR and the ImageNet mean pixel subtracted ("caffe" mode)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes per prediction
    (`kerasrs.applications.imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
