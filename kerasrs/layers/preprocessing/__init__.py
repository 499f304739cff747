"""Preprocessing and augmentation layers with Keras's names (see each module).

They work on arrays (``layer(x)``) and inside models. Layers with state learned from data
(`Normalization`, `Discretization`, the lookup layers, `TextVectorization`) get it from
``adapt(data)``, where ``data`` is an array, a `kerasrs.utils.PyDataset` or an iterable of
batches; the state is saved with the model. Augmentation layers change their input only when
training (``training=True``, as in ``fit``; a direct call defaults to training, as in Keras)
and draw from their own generator when given a ``seed``.
"""

from kerasrs.layers.preprocessing.audio import MelSpectrogram, STFTSpectrogram  # noqa: F401
from kerasrs.layers.preprocessing.augmentation import (RandomBrightness,  # noqa: F401
                                                       RandomContrast, RandomCrop, RandomFlip,
                                                       RandomRotation, RandomTranslation,
                                                       RandomZoom)
from kerasrs.layers.preprocessing.clahe import (  # noqa: F401
    ContrastLimitedAdaptiveHistogramEqualization)
from kerasrs.layers.preprocessing.color import (AutoContrast,  # noqa: F401
                                                RandomColorDegeneration, RandomGrayscale,
                                                RandomHue, RandomInvert, RandomPosterization,
                                                RandomSaturation, RandomSharpness, Solarization)
from kerasrs.layers.preprocessing.filters import Equalization, RandomGaussianBlur  # noqa: F401
from kerasrs.layers.preprocessing.mixing import (CutMix, MixUp, Pipeline,  # noqa: F401
                                                 RandomColorJitter, RandomErasing)
from kerasrs.layers.preprocessing.bounding_boxes import MaxNumBoundingBoxes  # noqa: F401
from kerasrs.layers.preprocessing.categorical import (CategoryEncoding,  # noqa: F401
                                                      IntegerLookup, StringLookup)
from kerasrs.layers.preprocessing.hashed_crossing import HashedCrossing  # noqa: F401
from kerasrs.layers.preprocessing.hashing import Hashing  # noqa: F401
from kerasrs.layers.preprocessing.image import CenterCrop, Resizing  # noqa: F401
from kerasrs.layers.preprocessing.perspective import (RandomElasticTransform,  # noqa: F401
                                                     RandomPerspective)
from kerasrs.layers.preprocessing.rand_augment import AugMix, RandAugment  # noqa: F401
from kerasrs.layers.preprocessing.shear import RandomShear  # noqa: F401
from kerasrs.layers.preprocessing.numerical import Discretization, Normalization  # noqa: F401
from kerasrs.layers.preprocessing.text_vectorization import TextVectorization  # noqa: F401

__all__ = ["Normalization", "Discretization", "CategoryEncoding", "Hashing", "IntegerLookup",
           "StringLookup", "TextVectorization", "HashedCrossing", "Resizing", "CenterCrop",
           "RandomFlip", "RandomRotation", "RandomTranslation", "RandomZoom", "RandomShear",
           "RandomPerspective", "RandomElasticTransform", "RandomContrast", "RandomBrightness",
           "RandomCrop", "RandomGrayscale", "RandomInvert", "Solarization", "AutoContrast",
           "Equalization", "ContrastLimitedAdaptiveHistogramEqualization", "RandomSaturation",
           "RandomHue", "RandomColorDegeneration", "RandomColorJitter", "RandomPosterization",
           "RandomSharpness", "RandomGaussianBlur", "RandomErasing", "MixUp", "CutMix",
           "RandAugment", "AugMix", "Pipeline", "MaxNumBoundingBoxes", "MelSpectrogram",
           "STFTSpectrogram"]
