"""``keras.ops.nn``: the neural-network ops of `kerasrs.ops` (the same function objects), from
the modules of their concepts: activations, cross-entropies, convolution, pooling,
normalization, attention, CTC, encodings and image rearrangements."""

from kerasrs.ops.activations import (  # noqa: F401
    celu, elu, gelu, glu, hard_shrink, hard_sigmoid, hard_silu, hard_swish, hard_tanh,
    leaky_relu, log_sigmoid, log_softmax, relu, relu6, selu, sigmoid, silu, soft_shrink,
    softmax, softplus, softsign, sparse_plus, sparse_sigmoid, sparsemax, squareplus, swish,
    tanh_shrink, threshold)
from kerasrs.ops.attention import dot_product_attention  # noqa: F401
from kerasrs.ops.complex import polar  # noqa: F401
from kerasrs.ops.convolution import (  # noqa: F401
    conv, conv_transpose, depthwise_conv, separable_conv)
from kerasrs.ops.creation import multi_hot, one_hot  # noqa: F401
from kerasrs.ops.crossentropy import (  # noqa: F401
    binary_crossentropy, categorical_crossentropy, sparse_categorical_crossentropy)
from kerasrs.ops.ctc import ctc_decode, ctc_loss  # noqa: F401
from kerasrs.ops.normalization import (  # noqa: F401
    batch_normalization, layer_normalization, normalize, rms_normalization)
from kerasrs.ops.pooling import average_pool, max_pool  # noqa: F401
from kerasrs.ops.reduction import moments  # noqa: F401
from kerasrs.ops.spatial import (  # noqa: F401
    adaptive_average_pool, adaptive_max_pool, depth_to_space, fold, psnr, space_to_depth, unfold)

__all__ = sorted(_name for _name in dir() if not _name.startswith("_"))
