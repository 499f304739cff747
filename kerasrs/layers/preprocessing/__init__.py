"""Preprocessing and augmentation layers with Keras's names (see each module).

They work on arrays (``layer(x)``) and inside models. Layers with state learned from data
(`Normalization`, `Discretization`, the lookup layers, `TextVectorization`) get it from
``adapt(data)``, where ``data`` is an array, a `kerasrs.utils.PyDataset` or an iterable of
batches; the state is saved with the model. Augmentation layers change their input only when
training (``training=True``, as in ``fit``; a direct call defaults to training, as in Keras)
and draw from their own generator when given a ``seed``.
"""

from kerasrs.layers.preprocessing.augmentation import (RandomBrightness,  # noqa: F401
                                                       RandomContrast, RandomCrop, RandomFlip,
                                                       RandomRotation, RandomTranslation,
                                                       RandomZoom)
from kerasrs.layers.preprocessing.categorical import (CategoryEncoding,  # noqa: F401
                                                      IntegerLookup, StringLookup)
from kerasrs.layers.preprocessing.hashing import Hashing  # noqa: F401
from kerasrs.layers.preprocessing.image import CenterCrop, Resizing  # noqa: F401
from kerasrs.layers.preprocessing.numerical import Discretization, Normalization  # noqa: F401
from kerasrs.layers.preprocessing.text_vectorization import TextVectorization  # noqa: F401

__all__ = ["Normalization", "Discretization", "CategoryEncoding", "Hashing", "IntegerLookup",
           "StringLookup", "TextVectorization", "Resizing", "CenterCrop", "RandomFlip",
           "RandomRotation", "RandomTranslation", "RandomZoom", "RandomContrast",
           "RandomBrightness", "RandomCrop"]
