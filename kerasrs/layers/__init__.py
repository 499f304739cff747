"""Layers with Keras's names: the `Layer` base class, `Input`, and the built-in layers.

Other layer families (convolution, pooling, normalization, recurrent, attention) live in their
own modules of this package and are re-exported here when present.
"""

import importlib
import pkgutil

from kerasrs.layers import naming  # noqa: F401
from kerasrs.layers.base import InputSpec, Layer  # noqa: F401
from kerasrs.layers.core import (Activation, Dense, Dropout, Embedding, Identity,  # noqa: F401
                                 Masking, Rescaling, Softmax)
from kerasrs.layers.input_layer import Input, InputLayer  # noqa: F401
from kerasrs.layers.lambda_layer import Lambda  # noqa: F401
from kerasrs.layers.merging import (Add, Average, Concatenate, Dot, Maximum, Merge,  # noqa: F401
                                    Minimum, Multiply, Subtract)
from kerasrs.layers.node import KerasTensor, Node, SymbolicTensor  # noqa: F401
from kerasrs.layers.reshaping import Flatten, Permute, RepeatVector, Reshape  # noqa: F401
from kerasrs.layers.serialization import deserialize, get, serialize  # noqa: F401

_OWN = {"base", "core", "input_layer", "input_spec", "lambda_layer", "merging", "naming", "node",
        "reshaping", "serialization"}

# Every other module of this package that defines __all__ (convolution, pooling, normalization,
# recurrent, attention, ...) is re-exported, so adding a layer family needs no edit here.
for _info in pkgutil.iter_modules(__path__):
    if _info.name not in _OWN:
        _module = importlib.import_module(f"{__name__}.{_info.name}")
        for _export in getattr(_module, "__all__", ()):
            globals()[_export] = getattr(_module, _export)
