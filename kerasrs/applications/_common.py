"""What every application builder shares: the argument checks, the image input, the
classifier top or the pooled features, the model, and its weights (none, the ImageNet file Keras
publishes, or a local file)."""

import collections
import os
import textwrap

from kerasrs import backend, layers, utils
from kerasrs.applications import imagenet_utils
from kerasrs.models import Model

# One published weights file: its name, URL and hash (None where Keras publishes none).
WeightsFile = collections.namedtuple("WeightsFile", "name url hash")

KERAS_APPLICATIONS = "https://storage.googleapis.com/tensorflow/keras-applications/"


def weight_files(base, top, notop, top_hash=None, notop_hash=None):
    """The published pair (with the top, without) of files named ``top``/``notop`` under URL
    ``base``."""
    return WeightsFile(top, base + top, top_hash), WeightsFile(notop, base + notop, notop_hash)


def check_weights(weights, include_top, classes, who):
    """Keras's checks of ``weights`` and ``classes``.

    Raises:
        ValueError: if ``weights`` is not None, "imagenet" or an existing file, or if ImageNet
            weights with the classifier top are asked for with ``classes != 1000``.
    """
    if not (weights in ("imagenet", None) or os.path.exists(os.fspath(weights))):
        raise ValueError(f"{who}: `weights` must be None (random initialization), 'imagenet' "
                         "(pre-training on ImageNet) or the path of a weights file. Received: "
                         f"weights={weights!r}")
    if weights == "imagenet" and include_top and classes != 1000:
        raise ValueError(f"{who}: with weights='imagenet' and include_top=True, `classes` must "
                         f"be 1000. Received: classes={classes}")


def channels_last():
    return backend.image_data_format() == "channels_last"


def refuse_channels_first(who):
    if not channels_last():
        raise ValueError(f"{who}: supports only the 'channels_last' image data format. Set it "
                         "with kerasrs.backend.set_image_data_format('channels_last').")


def image_input(input_tensor, input_shape, default_size, min_size, include_top, weights):
    """The model's input: ``input_tensor`` if it is symbolic, else a new `Input` of the shape
    `imagenet_utils.obtain_input_shape` settles."""
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape, default_size=default_size, min_size=min_size,
        data_format=backend.image_data_format(), require_flatten=include_top, weights=weights)
    if input_tensor is None:
        return layers.Input(shape=input_shape)
    if backend.is_keras_tensor(input_tensor):
        return input_tensor
    return layers.Input(tensor=input_tensor, shape=input_shape)


def classifier(x, classes, classifier_activation, weights, pool_name="avg_pool"):
    """The usual top: global average pooling and a ``predictions`` Dense layer."""
    x = layers.GlobalAveragePooling2D(name=pool_name)(x)
    imagenet_utils.validate_activation(classifier_activation, weights)
    return layers.Dense(classes, activation=classifier_activation, name="predictions")(x)


def pool(x, pooling, names=("avg_pool", "max_pool")):
    """Global ``"avg"`` or ``"max"`` pooling of the features, or none; ``names=(None, None)``
    leaves the layers their default names, as some Keras applications do."""
    if pooling == "avg":
        return layers.GlobalAveragePooling2D(name=names[0])(x)
    if pooling == "max":
        return layers.GlobalMaxPooling2D(name=names[1])(x)
    return x


def finish(img_input, input_tensor, outputs, name, weights, top_file=None, notop_file=None,
           include_top=True):
    """The functional model from the image input (or the sources of ``input_tensor``) to
    ``outputs``, with its weights loaded: ``top_file``/``notop_file`` for "imagenet", or the
    file at ``weights``."""
    inputs = img_input if input_tensor is None else utils.get_source_inputs(input_tensor)
    model = Model(inputs, outputs, name=name)
    if weights == "imagenet":
        file = top_file if include_top else notop_file
        if file is None:
            raise ValueError(f"{name}: Keras publishes no ImageNet weights for this "
                             "configuration.")
        weights = imagenet_utils.fetch_file(name, *file)
    if weights is not None:
        model.load_weights(weights)
    return model


def make_divisible(value, divisor=8, min_value=None):
    """``value`` rounded to the nearest multiple of ``divisor`` (at least ``min_value``), never
    more than 10 % below it: the channel rule of MobileNet v2/v3 and EfficientNet."""
    min_value = min_value or divisor
    rounded = max(min_value, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


_DOC = """{summary}

    Args:
{top}
{extra}        weights: None (random initialization), "imagenet" (Keras's published weights,
            downloaded once into ``~/.kerasrs/models``) or the path of a weights file.
        input_tensor: optional symbolic tensor (``kerasrs.Input``) to use as the image input.
        input_shape: optional ``(height, width, 3)``, sides >= {min_size}; with the top it
            defaults to {default}x{default}.
        pooling: without the top: None (4-D feature maps), "avg" or "max" (global pooling to
            ``(batch, channels)``).
        classes: int, number of classes with the top and without ImageNet weights.
        classifier_activation: "softmax", None (logits) or, without pretrained weights, any
            activation.
        name: the model's name.

    Returns:
{inputs}

    Raises:
        ValueError: for invalid ``weights``, ``classes``, ``input_shape`` or activation.
        FileNotFoundError: for "imagenet" offline without a cached copy (the message says which
            file to put where).
"""


def doc(summary, top, default, min_size, inputs, extra=""):
    """The docstring shared by the applications with the standard arguments."""
    top = textwrap.fill(f"include_top: bool, whether to end with {top}.", 96,
                        initial_indent=" " * 8, subsequent_indent=" " * 12)
    inputs = textwrap.fill(f"A functional `kerasrs.Model` taking {inputs}.", 96,
                           initial_indent=" " * 8, subsequent_indent=" " * 8)
    summary = textwrap.fill(summary, 96, subsequent_indent=" " * 4)
    return _DOC.format(summary=summary, top=top, default=default, min_size=min_size,
                       inputs=inputs, extra=extra)


def preprocessed_with(module):
    return (f"images preprocessed with ``kerasrs.applications.{module}.preprocess_input`` "
            "(pixels in ``[0, 255]`` before)")


POOL_AND_DENSE = "global average pooling and the ``predictions`` Dense layer"
