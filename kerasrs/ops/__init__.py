"""Differentiable tensor functions with Keras 3's ``keras.ops`` names and signatures.

Every function takes Tensors, backend arrays, NumPy arrays or Python scalars and returns a
`Tensor`. Inside a `GradientTape` the result is differentiable with respect to watched inputs.
Each op is defined in the module of its concept (``kerasrs/ops/<concept>.py``) and marked
``@op`` there (`kerasrs.ops.dispatch`: on symbolic tensors it records a node of a functional
model). Keras's namespaces ``ops.nn``, ``ops.numpy`` and ``ops.linalg`` hold the same functions.
"""

import types as _types

from kerasrs.ops.activations import (  # noqa: F401
    celu, elu, gelu, glu, hard_shrink, hard_sigmoid, hard_silu, hard_swish, hard_tanh,
    leaky_relu, log_sigmoid, log_softmax, relu, relu6, selu, sigmoid, silu, soft_shrink,
    softmax, softplus, softsign, sparse_plus, sparse_sigmoid, sparsemax, squareplus, swish,
    tanh_shrink, threshold)
from kerasrs.ops.attention import dot_product_attention  # noqa: F401
from kerasrs.ops.complex import (  # noqa: F401
    angle, conj, conjugate, imag, polar, real, view_as_complex, view_as_real)
from kerasrs.ops.control import (  # noqa: F401,A004
    associative_scan, cond, fori_loop, map, nan_to_num, scan, scatter, scatter_update,
    segment_max, segment_min, segment_prod, segment_sum, slice, slice_update, switch, vectorize,
    vectorized_map, while_loop)
from kerasrs.ops.conversion import convert_to_numpy, convert_to_tensor, stop_gradient  # noqa: F401
from kerasrs.ops.contraction import einsum  # noqa: F401
from kerasrs.ops.convolution import (  # noqa: F401
    conv, conv_transpose, depthwise_conv, separable_conv)
from kerasrs.ops.core import (  # noqa: F401
    add, divide, dot, equal, floor_divide, get_item, getitem, greater, greater_equal,
    less, less_equal, logical_and, logical_not, logical_or, matmul, mod, multiply, negative,
    not_equal, power, subtract, true_divide)
from kerasrs.ops.creation import (  # noqa: F401
    arange, array, copy, dtype, empty, empty_like, eye, full, full_like, geomspace, identity,
    is_tensor, linspace, logspace, meshgrid, multi_hot, ndim, one_hot, ones, ones_like, shape,
    size, tri, vander, zeros, zeros_like)
from kerasrs.ops.crossentropy import (  # noqa: F401
    binary_crossentropy, categorical_crossentropy, sparse_categorical_crossentropy)
from kerasrs.ops.ctc import ctc_decode, ctc_loss  # noqa: F401
from kerasrs.ops.elementwise import (  # noqa: F401,A004
    arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, bitwise_and, bitwise_invert,
    bitwise_left_shift, bitwise_not, bitwise_or, bitwise_right_shift, bitwise_xor, cbrt, ceil,
    cosh, deg2rad, divide_no_nan, erfc, erfinv, exp2, fabs, floor, fmax, fmin, fmod, gcd,
    heaviside, hypot, i0, isneginf, isposinf, isreal, lcm, ldexp, left_shift, log10, log2,
    logaddexp, logaddexp2, logical_xor, nextafter, rad2deg, right_shift, round, signbit, sinc,
    sinh, tan, trunc)
from kerasrs.ops.fourier import (  # noqa: F401
    extract_sequences, fft, fft2, ifft2, irfft, istft, rfft, stft)
from kerasrs.ops.layout import (  # noqa: F401
    broadcast_to, expand_dims, flip, fliplr, flipud, moveaxis, pad, ravel, repeat, reshape,
    roll, rot90, squeeze, swapaxes, take, take_along_axis, tile, transpose)
from kerasrs.ops.linalg import (  # noqa: F401
    cholesky, cholesky_inverse, det, eig, eigh, inv, logdet, lstsq, lu_factor, matrix_rank,
    pinv, qr, slogdet, solve, solve_triangular, svd)
from kerasrs.ops.math import (  # noqa: F401,A004
    abs, absolute, amax, amin, argmax, argmin, cast, clip, cos, erf, exp, expm1, isfinite,
    isinf, isnan, log, log1p, max, maximum, mean, min, minimum, reciprocal, rsqrt,
    saturate_cast, sign, sin, sqrt, square, sum, tanh, view, where)
from kerasrs.ops.matrices import (  # noqa: F401
    cross, diag, diagflat, diagonal, inner, kron, outer, tensordot, trace, tril, triu, vdot)
from kerasrs.ops.nan_reductions import (  # noqa: F401
    nanargmax, nanargmin, nancumprod, nancumsum, nanmax, nanmean, nanmin, nanprod, nanstd,
    nansum, nanvar)
from kerasrs.ops.normalization import (  # noqa: F401
    batch_normalization, layer_normalization, normalize, rms_normalization)
from kerasrs.ops.pooling import average_pool, max_pool  # noqa: F401
from kerasrs.ops.reduction import (  # noqa: F401,A004
    all, any, count_nonzero, cumprod, cumsum, diff, logsumexp, moments, norm, prod, std, var)
from kerasrs.ops.searching import (  # noqa: F401
    allclose, argpartition, argsort, bincount, digitize, histogram, in_top_k, isclose, isin,
    nonzero, searchsorted, select, sort, top_k, unique, unravel_index)
from kerasrs.ops.spatial import (  # noqa: F401
    adaptive_average_pool, adaptive_max_pool, cdist, depth_to_space, fold, psnr, rearrange,
    space_to_depth, unfold)
from kerasrs.ops.stacking import (  # noqa: F401
    append, array_split, concatenate, dsplit, dstack, hsplit, hstack, split, stack, unstack,
    vsplit, vstack)
from kerasrs.ops.statistics import (  # noqa: F401
    average, corrcoef, correlate, median, nanmedian, nanpercentile, nanquantile, percentile,
    ptp, quantile, trapezoid)
from kerasrs.ops.windows import bartlett, blackman, hamming, hanning, kaiser  # noqa: F401

from kerasrs.ops import dispatch as _dispatch  # noqa: F401  (read by kerasrs.api_objects)
from kerasrs.ops import image, linalg, nn, numpy  # noqa: F401  (Keras's namespaces)

# every op imported above (the namespaces and the concept modules are modules, not ops)
__all__ = sorted(_name for _name, _value in globals().items()
                 if not _name.startswith("_") and not isinstance(_value, _types.ModuleType))

from kerasrs.autodiff import no_grad  # noqa: E402,F401  (kerasrs.no_grad; not a Keras op)
from kerasrs.ops.custom_gradient import custom_gradient  # noqa: E402,F401  (a decorator)
