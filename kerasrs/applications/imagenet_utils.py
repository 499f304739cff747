"""ImageNet input preprocessing and label decoding shared by the applications (Keras's
``keras.applications.imagenet_utils``), plus the input-shape and padding rules the model
builders use.

Three preprocessing modes, as the original weights were trained:

* ``"caffe"``: RGB to BGR, then subtract the ImageNet mean pixel ``[103.939, 116.779, 123.68]``
  (BGR order), no scaling (VGG, ResNet v1);
* ``"tf"``: scale to ``[-1, 1]`` with ``x / 127.5 - 1`` (Inception, Xception, MobileNet,
  ResNet v2, NASNet);
* ``"torch"``: scale to ``[0, 1]``, subtract ``[0.485, 0.456, 0.406]`` and divide by
  ``[0.229, 0.224, 0.225]`` per RGB channel (DenseNet).
"""

import hashlib
import json
import os
import warnings

import numpy as np

from kerasrs import backend, ops, utils

CLASS_INDEX_FILE = "imagenet_class_index.json"
CLASS_INDEX_URL = ("https://storage.googleapis.com/download.tensorflow.org/data/"
                   "imagenet_class_index.json")
CLASS_INDEX_MD5 = "c2c37ea517e94d9795004a39431a14cb"  # Keras's published hash
_CLASS_INDEX = {}

_CAFFE_MEAN_BGR = (103.939, 116.779, 123.68)
_TORCH_MEAN = (0.485, 0.456, 0.406)
_TORCH_STD = (0.229, 0.224, 0.225)


def preprocess_input(x, data_format=None, mode="caffe"):
    """Preprocess a batch of RGB images with values in ``[0, 255]`` for an ImageNet model.

    Args:
        x: NumPy array, Tensor or symbolic tensor, 3-D (one image) or 4-D (a batch), with 3
            colour channels. Integer arrays are converted to ``floatx`` (float32).
        data_format: ``"channels_last"`` or ``"channels_first"``; default
            ``kerasrs.backend.image_data_format()``.
        mode: ``"caffe"``, ``"tf"`` or ``"torch"`` (see the module docstring).

    Returns:
        Array or tensor of the input's shape, float. Unlike Keras, a NumPy input is never
        overwritten: the result is a new array.

    Raises:
        ValueError: for an unknown ``mode`` or ``data_format``.
    """
    if mode not in ("caffe", "tf", "torch"):
        raise ValueError("preprocess_input: `mode` must be one of 'caffe', 'tf' or 'torch'. "
                         f"Received: mode={mode!r}")
    data_format = _data_format(data_format)
    if isinstance(x, (np.ndarray, list, tuple, int, float)):
        x = np.asarray(x)
        if not np.issubdtype(x.dtype, np.floating):
            x = x.astype(backend.floatx())
        return _preprocess(x, data_format, mode, np)
    return _preprocess(x, data_format, mode, None)


def _data_format(data_format):
    if data_format is None:
        return backend.image_data_format()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError("preprocess_input: `data_format` must be 'channels_first' or "
                         f"'channels_last'. Received: data_format={data_format!r}")
    return data_format


def _preprocess(x, data_format, mode, xp):
    """The arithmetic of every mode, with NumPy (``xp=np``) or kerasrs ops (``xp=None``)."""
    if mode == "tf":
        return x / 127.5 - 1.0
    ndim = len(x.shape)
    axis = -1 if data_format == "channels_last" else ndim - 3
    shape = [1] * ndim
    shape[axis] = 3
    if mode == "torch":
        mean, std = np.array(_TORCH_MEAN), np.array(_TORCH_STD)
        x = x / 255.0
    else:  # caffe: RGB -> BGR, then the mean pixel; no scaling
        mean, std = np.array(_CAFFE_MEAN_BGR), None
        x = np.flip(x, axis) if xp is np else ops.flip(x, axis=axis)
    dtype = x.dtype if xp is np else backend.standardize_dtype(x.dtype)
    x = x - mean.reshape(shape).astype(dtype)
    if std is not None:
        x = x / std.reshape(shape).astype(dtype)
    return x


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes of each prediction, best first.

    Args:
        preds: array or tensor of shape ``(samples, 1000)``, scores per ImageNet class.
        top: int, how many classes to return per sample.

    Returns:
        A list (one per sample) of lists of ``(class_id, class_name, score)`` tuples, e.g.
        ``("n02504458", "African_elephant", 0.92)``.

    Raises:
        ValueError: if ``preds`` is not of shape ``(samples, 1000)``.
        FileNotFoundError: if the class index (``imagenet_class_index.json``, 35 kB) is not
            cached and cannot be downloaded; the message says where to put it.
    """
    preds = np.asarray(getattr(preds, "numpy", lambda: preds)())
    if preds.ndim != 2 or preds.shape[1] != 1000:
        raise ValueError("decode_predictions: expects a batch of ImageNet predictions, a 2-D "
                         f"array of shape (samples, 1000). Received: shape={preds.shape}")
    index = class_index()
    results = []
    for row in preds:
        best = np.argsort(row, kind="stable")[::-1][:top]
        results.append([(*index[str(i)], row[i]) for i in best])
    return results


def class_index():
    """ImageNet's ``{"0": ["n01440764", "tench"], ...}``, loaded once from the cache or
    downloaded."""
    if not _CLASS_INDEX:
        path = fetch_file("decode_predictions", CLASS_INDEX_FILE, CLASS_INDEX_URL,
                          CLASS_INDEX_MD5)
        with open(path) as f:
            _CLASS_INDEX.update(json.load(f))
    return _CLASS_INDEX


# -- files published by Keras ----------------------------------------------------------------
def models_dir():
    """``$KERASRS_HOME/models`` (default ``~/.kerasrs/models``): where downloaded weights live."""
    root = os.environ.get("KERASRS_HOME") or os.path.join(os.path.expanduser("~"), ".kerasrs")
    return os.path.join(root, "models")


def _keras_copy(name, file_hash):
    """A copy Keras itself downloaded (``~/.keras/models``), if it has the right hash."""
    path = os.path.join(os.path.expanduser("~"), ".keras", "models", name)
    if not os.path.isfile(path) or not file_hash:
        return None
    algorithm = "md5" if len(file_hash) == 32 else "sha256"
    digest = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return path if digest.hexdigest() == file_hash else None


def fetch_file(who, name, url, file_hash=None):
    """The local path of a file Keras publishes: the kerasrs cache (``models_dir()``), else
    Keras's own cache, else a download into the kerasrs cache, checked against ``file_hash``
    (md5 or sha256 hex; Keras publishes none for MobileNet v1/v2 weights).

    Raises:
        FileNotFoundError: offline with no local copy; the message names the file, its URL and
            the path to put it at.
        ValueError: if a downloaded file fails its hash.
    """
    cached = os.path.join(models_dir(), name)
    if not os.path.isfile(cached):
        keras_copy = _keras_copy(name, file_hash)
        if keras_copy:
            return keras_copy
    try:
        return utils.get_file(name, url, cache_subdir="models", file_hash=file_hash,
                              cache_dir=os.path.dirname(models_dir()))
    except OSError as error:
        raise FileNotFoundError(
            f"{who}: needs {name}, which is not in {models_dir()} and could not be downloaded "
            f"from {url} ({error}). Download it on a machine with network access and put it at "
            f"{cached}" + (f" (its {'md5' if len(file_hash) == 32 else 'sha256'} is {file_hash})"
                           if file_hash else "") + ".") from error


# -- rules the model builders share ----------------------------------------------------------
def obtain_input_shape(input_shape, default_size, min_size, data_format, require_flatten,
                       weights=None):
    """The model's input shape (without the batch axis), checked the way Keras checks it.

    With ``input_shape=None`` this is ``(default_size, default_size, 3)`` when the classifier
    top needs a static shape (``require_flatten``), else ``(None, None, 3)`` (channels first:
    channels at the front). ImageNet weights with the top need exactly the default shape.

    Raises:
        ValueError: for a shape that is not 3 integers, fewer than 3 channels with ImageNet
            weights, sides below ``min_size``, or unknown sides with the classifier top.
    """
    last = data_format != "channels_first"
    if weights != "imagenet" and input_shape and len(input_shape) == 3:
        channels = input_shape[-1] if last else input_shape[0]
        if channels not in (1, 3):
            warnings.warn("This model usually expects 1 or 3 input channels. Received: "
                          f"input_shape={input_shape}", stacklevel=3)
    else:
        channels = 3
    default = (default_size, default_size, channels) if last else \
        (channels, default_size, default_size)
    if weights == "imagenet" and require_flatten:
        if input_shape is not None and tuple(input_shape) != default:
            raise ValueError("With include_top=True and ImageNet weights, `input_shape` must be "
                             f"{default}. Received: input_shape={input_shape}")
        return default
    if input_shape:
        input_shape = tuple(input_shape)
        if len(input_shape) != 3:
            raise ValueError("`input_shape` must be a tuple of three integers. Received: "
                             f"input_shape={input_shape}")
        sides = input_shape[:2] if last else input_shape[1:]
        if weights == "imagenet" and (input_shape[-1] if last else input_shape[0]) != 3:
            raise ValueError("ImageNet weights need 3 input channels. Received: "
                             f"input_shape={input_shape}")
        if any(side is not None and side < min_size for side in sides):
            raise ValueError(f"Input size must be at least {min_size}x{min_size}. Received: "
                             f"input_shape={input_shape}")
    else:
        input_shape = default if require_flatten else \
            ((None, None, 3) if last else (3, None, None))
    if require_flatten and None in input_shape:
        raise ValueError("With include_top=True the input shape must be static. Received: "
                         f"input_shape={input_shape}")
    return input_shape


def correct_pad(inputs, kernel_size):
    """``((top, bottom), (left, right))`` zero padding so that a stride-2 'valid' convolution
    of ``kernel_size`` sees the window TensorFlow's 'same' padding would (one less row or
    column in front when the side is even)."""
    first = 2 if backend.image_data_format() == "channels_first" else 1
    size = inputs.shape[first:first + 2]
    if isinstance(kernel_size, int):
        kernel_size = (kernel_size, kernel_size)
    adjust = (1, 1) if size[0] is None else (1 - size[0] % 2, 1 - size[1] % 2)
    half = (kernel_size[0] // 2, kernel_size[1] // 2)
    return ((half[0] - adjust[0], half[0]), (half[1] - adjust[1], half[1]))


def validate_activation(classifier_activation, weights):
    """Pretrained weights were trained with softmax: only ``None``, ``"linear"`` or
    ``"softmax"`` may go on their classifier.

    Raises:
        ValueError: for another activation with ``weights`` given.
    """
    if weights is None:
        return
    from kerasrs import activations

    allowed = {activations.get("softmax"), activations.get(None)}
    if activations.get(classifier_activation) not in allowed:
        raise ValueError("With pretrained weights the classifier activation can only be None "
                         "or 'softmax'. Received: "
                         f"classifier_activation={classifier_activation!r}")
