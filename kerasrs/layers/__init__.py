"""Layers with Keras's names: the `Layer` base class, `Input`, and the built-in layers.

Every name is imported here from the module that defines it: a new layer is added to its
module and to this list.
"""

from kerasrs.layers import naming, op_layer  # noqa: F401  (op_layer: ops on symbolic tensors)
from kerasrs.layers.activations import ELU, LeakyReLU, PReLU, ReLU  # noqa: F401
from kerasrs.layers.adaptive_pooling import (  # noqa: F401
    AdaptiveAveragePooling1D, AdaptiveAveragePooling2D, AdaptiveAveragePooling3D,
    AdaptiveMaxPooling1D, AdaptiveMaxPooling2D, AdaptiveMaxPooling3D)
from kerasrs.layers.attention import (  # noqa: F401
    AdditiveAttention, Attention, EinsumDense, GroupedQueryAttention, GroupQueryAttention,
    MultiHeadAttention)
from kerasrs.layers.base import Layer  # noqa: F401
from kerasrs.layers.conv import (  # noqa: F401
    Conv1D, Conv2D, Conv3D, Convolution1D, Convolution2D, Convolution3D)
from kerasrs.layers.conv_transpose import (  # noqa: F401
    Conv1DTranspose, Conv2DTranspose, Conv3DTranspose, Convolution1DTranspose,
    Convolution2DTranspose, Convolution3DTranspose)
from kerasrs.layers.core import (  # noqa: F401
    Activation, Dense, Dropout, Embedding, Identity, Masking, Rescaling, ReversibleEmbedding,
    Softmax)
from kerasrs.layers.depthwise import (  # noqa: F401
    DepthwiseConv1D, DepthwiseConv2D, SeparableConv1D, SeparableConv2D, SeparableConvolution1D,
    SeparableConvolution2D)
from kerasrs.layers.input_layer import Input, InputLayer  # noqa: F401
from kerasrs.layers.input_spec import InputSpec  # noqa: F401
from kerasrs.layers.lambda_layer import Lambda  # noqa: F401
from kerasrs.layers.merging import (  # noqa: F401
    Add, Average, Concatenate, Dot, Maximum, Merge, Minimum, Multiply, Subtract)
from kerasrs.layers.merging_functions import (  # noqa: F401
    add, average, concatenate, dot, maximum, minimum, multiply, subtract)
from kerasrs.layers.node import KerasTensor, Node, SymbolicTensor  # noqa: F401
from kerasrs.layers.normalization import (  # noqa: F401
    BatchNormalization, GroupNormalization, LayerNormalization, RMSNormalization,
    UnitNormalization)
from kerasrs.layers.pooling import (  # noqa: F401
    AveragePooling1D, AveragePooling2D, AveragePooling3D, AvgPool1D, AvgPool2D, AvgPool3D,
    GlobalAveragePooling1D, GlobalAveragePooling2D, GlobalAveragePooling3D, GlobalAvgPool1D,
    GlobalAvgPool2D, GlobalAvgPool3D, GlobalMaxPool1D, GlobalMaxPool2D, GlobalMaxPool3D,
    GlobalMaxPooling1D, GlobalMaxPooling2D, GlobalMaxPooling3D, MaxPool1D, MaxPool2D, MaxPool3D,
    MaxPooling1D, MaxPooling2D, MaxPooling3D)
from kerasrs.layers.preprocessing import (  # noqa: F401
    AugMix, AutoContrast, CategoryEncoding, CenterCrop,
    ContrastLimitedAdaptiveHistogramEqualization, CutMix, Discretization, Equalization,
    HashedCrossing, Hashing, IntegerLookup, MaxNumBoundingBoxes, MelSpectrogram, MixUp,
    Normalization, Pipeline, RandAugment, RandomBrightness, RandomColorDegeneration,
    RandomColorJitter, RandomContrast, RandomCrop, RandomElasticTransform, RandomErasing,
    RandomFlip, RandomGaussianBlur, RandomGrayscale, RandomHue, RandomInvert, RandomPerspective,
    RandomPosterization, RandomRotation, RandomSaturation, RandomSharpness, RandomShear,
    RandomTranslation, RandomZoom, Resizing, Solarization, STFTSpectrogram, StringLookup,
    TextVectorization)
from kerasrs.layers.recurrent import (  # noqa: F401
    Bidirectional, ConvLSTM1D, ConvLSTM2D, ConvLSTM3D, GRU, GRUCell, LSTM, LSTMCell, RNN,
    SimpleRNN, SimpleRNNCell, StackedRNNCells, TimeDistributed)
from kerasrs.layers.regularization import (  # noqa: F401
    ActivityRegularization, AlphaDropout, GaussianDropout, GaussianNoise, SpatialDropout1D,
    SpatialDropout2D, SpatialDropout3D)
from kerasrs.layers.reshaping import Flatten, Permute, RepeatVector, Reshape  # noqa: F401
from kerasrs.layers.reshaping_spatial import (  # noqa: F401
    Cropping1D, Cropping2D, Cropping3D, UpSampling1D, UpSampling2D, UpSampling3D, ZeroPadding1D,
    ZeroPadding2D, ZeroPadding3D)
from kerasrs.layers.serialization import deserialize, get, serialize  # noqa: F401
from kerasrs.layers.wrapper import SpectralNormalization, Wrapper  # noqa: F401
