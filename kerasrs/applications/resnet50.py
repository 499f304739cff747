"""``keras.applications.resnet50``: ResNet50 with its preprocessing (see `resnet`)."""

from kerasrs.applications.resnet import ResNet50, decode_predictions, preprocess_input  # noqa: F401
