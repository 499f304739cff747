"""``keras.ops.numpy``: the NumPy-named ops of `kerasrs.ops` (the same function objects; the
neural-network, linear-algebra and Fourier ops live in ``ops.nn``, ``ops.linalg`` and ``ops``)."""

from kerasrs.ops.complex import (  # noqa: F401
    angle, conj, conjugate, imag, real, view_as_complex, view_as_real)
from kerasrs.ops.control import (  # noqa: F401,A004
    associative_scan, cond, fori_loop, map, nan_to_num, scan, scatter, scatter_update,
    segment_max, segment_min, segment_prod, segment_sum, slice, slice_update, switch, vectorize,
    vectorized_map, while_loop)
from kerasrs.ops.conversion import convert_to_numpy, convert_to_tensor, stop_gradient  # noqa: F401
from kerasrs.ops.contraction import einsum  # noqa: F401
from kerasrs.ops.core import (  # noqa: F401
    add, divide, dot, equal, floor_divide, get_item, getitem, greater, greater_equal,
    less, less_equal, logical_and, logical_not, logical_or, matmul, mod, multiply, negative,
    not_equal, power, subtract, true_divide)
from kerasrs.ops.creation import (  # noqa: F401
    arange, array, copy, dtype, empty, empty_like, eye, full, full_like, geomspace, identity,
    is_tensor, linspace, logspace, meshgrid, ndim, ones, ones_like, shape, size, tri, vander,
    zeros, zeros_like)
from kerasrs.ops.elementwise import (  # noqa: F401,A004
    arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, bitwise_and, bitwise_invert,
    bitwise_left_shift, bitwise_not, bitwise_or, bitwise_right_shift, bitwise_xor, cbrt, ceil,
    cosh, deg2rad, divide_no_nan, erfc, erfinv, exp2, fabs, floor, fmax, fmin, fmod, gcd,
    heaviside, hypot, i0, isneginf, isposinf, isreal, lcm, ldexp, left_shift, log10, log2,
    logaddexp, logaddexp2, logical_xor, nextafter, rad2deg, right_shift, round, signbit, sinc,
    sinh, tan, trunc)
from kerasrs.ops.layout import (  # noqa: F401
    broadcast_to, expand_dims, flip, fliplr, flipud, moveaxis, pad, ravel, repeat, reshape,
    roll, rot90, squeeze, swapaxes, take, take_along_axis, tile, transpose)
from kerasrs.ops.linalg import slogdet  # noqa: F401
from kerasrs.ops.math import (  # noqa: F401,A004
    abs, absolute, amax, amin, argmax, argmin, cast, clip, cos, erf, exp, expm1, isfinite,
    isinf, isnan, log, log1p, max, maximum, mean, min, minimum, reciprocal, rsqrt,
    saturate_cast, sign, sin, sqrt, square, sum, tanh, view, where)
from kerasrs.ops.matrices import (  # noqa: F401
    cross, diag, diagflat, diagonal, inner, kron, outer, tensordot, trace, tril, triu, vdot)
from kerasrs.ops.nan_reductions import (  # noqa: F401
    nanargmax, nanargmin, nancumprod, nancumsum, nanmax, nanmean, nanmin, nanprod, nanstd,
    nansum, nanvar)
from kerasrs.ops.reduction import (  # noqa: F401,A004
    all, any, count_nonzero, cumprod, cumsum, diff, logsumexp, prod, std, var)
from kerasrs.ops.searching import (  # noqa: F401
    allclose, argpartition, argsort, bincount, digitize, histogram, in_top_k, isclose, isin,
    nonzero, searchsorted, select, sort, top_k, unique, unravel_index)
from kerasrs.ops.spatial import cdist, rearrange  # noqa: F401
from kerasrs.ops.stacking import (  # noqa: F401
    append, array_split, concatenate, dsplit, dstack, hsplit, hstack, split, stack, unstack,
    vsplit, vstack)
from kerasrs.ops.statistics import (  # noqa: F401
    average, corrcoef, correlate, median, nanmedian, nanpercentile, nanquantile, percentile,
    ptp, quantile, trapezoid)
from kerasrs.ops.windows import bartlett, blackman, hamming, hanning, kaiser  # noqa: F401

__all__ = sorted(_name for _name in dir() if not _name.startswith("_"))
