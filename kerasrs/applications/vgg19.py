"""VGG19: VGG16 with four convolutions in each of the last three blocks (see `vgg16`)."""

from kerasrs.applications.vgg16 import VGG, decode_predictions, preprocess_input  # noqa: F401


def VGG19(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
          pooling=None, classes=1000, classifier_activation="softmax", name="vgg19"):
    """VGG19 (Simonyan & Zisserman 2015), 144 M parameters; the arguments are `VGG16`'s.

    Returns:
        A functional `kerasrs.Model`; inputs preprocessed with
        ``kerasrs.applications.vgg19.preprocess_input``.
    """
    return VGG("vgg19", include_top, weights, input_tensor, input_shape, pooling, classes,
               classifier_activation, name)
