"""How ops apply Keras's promotion lattice (`kerasrs.backend.dtypes`) to their inputs.

Inside a `Function.forward` the inputs are backend arrays or Python scalars (which stay weak:
``x + 1`` keeps ``x``'s dtype). `promote` casts the arrays to the dtype the lattice gives and
leaves the scalars to NumPy, whose NEP 50 rules then agree with the lattice, because the array
already has the result's kind. Two arrays of one dtype, the case of training, cost one identity
test.
"""

import numpy as np

from kerasrs.backend.base import numpy_dtype
from kerasrs.backend.dtypes import FLOAT8, result_dtype, sum_type

_WEAK = {bool, int, float}
_ML_DTYPES = ("bfloat16",) + FLOAT8


def _dtype_arg(x):
    """What `result_dtype` reads for one input: its dtype, or the type of a Python scalar."""
    dtype = getattr(x, "dtype", None)
    if dtype is not None:
        return dtype
    kind = type(x)
    return kind if kind in _WEAK else np.asarray(x).dtype


def _outside(*xs):
    """True if an input is an array of objects, strings or records (``pytest.approx`` compared
    with a Tensor...): the lattice has no such dtypes, NumPy's own rules apply. ml_dtypes'
    bfloat16 and float8 have NumPy's kind "V" too, but they are in the lattice."""
    for x in xs:
        dtype = getattr(x, "dtype", None)
        kind = getattr(dtype, "kind", None)
        if kind in ("O", "S", "U") or (kind == "V" and dtype.name not in _ML_DTYPES):
            return True
    return False


def _cast(x, dtype):
    if getattr(x, "dtype", None) is None:  # a Python scalar: weak, NumPy keeps the array's dtype
        return x
    return x if x.dtype == dtype else x.astype(dtype)


def promote(a, b):
    """``(a, b)`` cast to their promoted dtype (arrays; Python scalars stay scalars unless both
    are, then both become 0-d NumPy arrays of the weak result, e.g. int32)."""
    da, db = getattr(a, "dtype", None), getattr(b, "dtype", None)
    if da is db and da is not None:  # the common case: two arrays of one dtype
        return a, b
    if _outside(a, b):
        return a, b
    dtype = result_dtype(_dtype_arg(a), _dtype_arg(b))
    if da is None and db is None:
        return np.asarray(a, dtype), np.asarray(b, dtype)
    return _cast(a, dtype), _cast(b, dtype)


def promote_all(*xs, to_float=False):
    """Every input cast to the dtype all of them promote to (with ``to_float``, the float dtype
    of `kerasrs.backend.dtypes.float_type`). Python scalars stay scalars if an array is there."""
    first = getattr(xs[0], "dtype", None) if xs else None
    if not to_float and first is not None and all(getattr(x, "dtype", None) is first
                                                  for x in xs):
        return list(xs)  # the common case: arrays of one dtype
    if _outside(*xs):
        return list(xs)
    args = [_dtype_arg(x) for x in xs]
    dtype = result_dtype(*args, float) if to_float else result_dtype(*args)
    if all(getattr(x, "dtype", None) is None for x in xs):
        return [np.asarray(x, dtype) for x in xs]
    return [_cast(x, dtype) for x in xs]


def promote_float(a, b):
    """``(a, b)`` cast to the float dtype they promote to with a Python float: the inputs of a
    float-valued op of two arguments (``true_divide``, ``arctan2``, ``hypot``...)."""
    return tuple(promote_all(a, b, to_float=True))


def float_array(x):
    """``x`` (an array) in its float dtype: integers and bools become ``floatx()``."""
    dtype = x.dtype
    if dtype.kind == "f" or dtype.kind == "c":
        return x
    target = result_dtype(dtype, float)
    return x if target == dtype else x.astype(target)


def sum_dtype(dtype):
    """The ``dtype`` argument of a NumPy sum or product of an array of ``dtype``: None for
    floats (they keep theirs), `kerasrs.backend.dtypes.sum_type` for bools and integers (NumPy
    would accumulate them in int64; Keras in 32 bits)."""
    return numpy_dtype(sum_type(dtype)) if dtype.kind in "biu" else None


def scan_dtype(dtype):
    """The ``dtype`` argument of a NumPy cumulative sum or product: integers keep their dtype
    (as Keras; NumPy would widen them to 64 bits), bools count in ``int32``, floats keep
    theirs (None)."""
    if dtype.kind == "b":
        return numpy_dtype(sum_type(dtype))
    return dtype if dtype.kind in "iu" else None


def bound_promotion(x, *bounds):
    """Array ``x`` in the dtype of ``clip(x, *bounds)`` (Keras's rule: bools count as int32,
    then ``x`` promotes with the bounds, Python scalars weak; a None bound is no bound)."""
    if x.dtype.kind == "b":
        x = x.astype(np.int32)
    args = [_dtype_arg(b) for b in bounds if b is not None]
    dtype = result_dtype(x.dtype, *args) if args else x.dtype
    return x if dtype == x.dtype else x.astype(dtype)


def bools_as_int32(*xs):
    """The inputs with bool arrays cast to int32 (Python scalars stay): what Keras computes
    ``mod``, ``power``, ``floor_divide``, ``square`` and ``relu`` of bools in."""
    return [x.astype(np.int32) if getattr(getattr(x, "dtype", None), "kind", None) == "b" else x
            for x in xs]


def promote_numeric(a, b):
    """`promote`, then bools as int32 (`bools_as_int32`): ``mod(True, True)`` is int32 1."""
    a, b = promote(a, b)
    dtype = getattr(a, "dtype", None)
    if dtype is None:
        dtype = getattr(b, "dtype", None)
    if dtype is not None and dtype.kind == "b":  # promoted: one array bool means both are
        a, b = bools_as_int32(a, b)
    return a, b
