"""ResNet v2 (He et al., "Identity Mappings in Deep Residual Networks", ECCV 2016): the
pre-activation ResNets of `kerasrs.applications.resnet`, with "tf"-mode preprocessing (pixels
scaled to ``[-1, 1]``)."""

from kerasrs.applications import imagenet_utils
from kerasrs.applications.resnet import _application

ResNet50V2 = _application("ResNet50V2", "resnet50v2", True, "resnet_v2")
ResNet101V2 = _application("ResNet101V2", "resnet101v2", True, "resnet_v2")
ResNet152V2 = _application("ResNet152V2", "resnet152v2", True, "resnet_v2")


def preprocess_input(x, data_format=None):
    """ResNet v2 preprocessing: pixels scaled to ``[-1, 1]`` ("tf" mode of
    `kerasrs.applications.imagenet_utils.preprocess_input`)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes per prediction
    (`kerasrs.applications.imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
