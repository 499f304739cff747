r"""Keras 3's dtype promotion: which dtype an op on inputs of several dtypes returns.

The rule is a lattice (the one JAX uses and Keras adopted, ``keras.backend.result_type``): each
dtype points to the dtypes it may widen to, and the result of combining several dtypes is
their least upper bound. Python scalars are *weak*: ``int`` and ``float`` sit low in the
lattice, so ``x + 1`` keeps an int8 ``x`` int8 and ``y * 0.5`` keeps a float16 ``y`` float16,
and an integer tensor with a Python float becomes ``floatx()``. Unlike NumPy, an integer with a
float gives the float (int32 + float32 is float32, not float64), bool + int is int, uint8 +
int8 is int16, and bfloat16 + float16 is float32::

    bool -> int* -> uint8 -> uint16 -> uint32 -> uint64 ----------------> float*
               \        \-> int16 \-> int32  \-> int64 ------------------^
                \-> int8 -> int16 -> int32 -> int64 -> float*
    float* -> bfloat16 -> float32 -> float64 -> complex128
           \-> float16 -/         \-> complex64 -/

(``int*``, ``float*``: the weak types of Python ints and floats; a weak result resolves to
``int32`` / ``floatx()``.) Keras narrows 64-bit results to 32 bits to copy JAX's default mode;
kerasrs computes in float64 and int64 natively, so it keeps them: float16 x float64 is float64,
as NumPy, PyTorch and JAX with 64-bit types on say.

Ops pick their result dtype with the rules below, named after what they compute, so every op of
one kind promotes alike: `result_type` (arithmetic, comparisons' operands, concatenation),
`float_type` (square roots, logarithms, means: float-valued ops), `sum_type` (sums and products
accumulate small integers in 32 bits), `INDEX` (indices and counts).
"""

import functools

import numpy as np

from kerasrs.backend import base

BOOL = "bool"
UINTS = ("uint8", "uint16", "uint32", "uint64")
INTS = ("int8", "int16", "int32", "int64")
FLOATS = ("bfloat16", "float16", "float32", "float64")
COMPLEX = ("complex64", "complex128")
FLOAT8 = ("float8_e4m3fn", "float8_e5m2")  # no implicit conversion (cast explicitly)
WEAK_INT, WEAK_FLOAT = "int*", "float*"  # Python ints and floats (weak)
INDEX = "int32"  # the dtype of indices and counts (argmax, argsort, nonzero, bincount...)

# each dtype -> the dtypes directly above it
_LATTICE = {
    BOOL: (WEAK_INT,),
    WEAK_INT: ("uint8", "int8", "complex64"),
    "uint8": ("uint16", "int16"), "uint16": ("uint32", "int32"),
    "uint32": ("uint64", "int64"), "uint64": (WEAK_FLOAT,),
    "int8": ("int16",), "int16": ("int32",), "int32": ("int64",), "int64": (WEAK_FLOAT,),
    WEAK_FLOAT: ("bfloat16", "float16"),
    "bfloat16": ("float32",), "float16": ("float32",),
    "float32": ("float64", "complex64"), "float64": ("complex128",),
    "complex64": ("complex128",), "complex128": (),
}


def _upper_bounds():
    """Each dtype -> the set of dtypes at or above it in the lattice."""
    above = {}

    def walk(node):
        if node not in above:
            above[node] = {node}.union(*(walk(up) for up in _LATTICE[node]))
        return above[node]

    for node in _LATTICE:
        walk(node)
    return above


_ABOVE = _upper_bounds()
_PYTHON = {bool: BOOL, int: WEAK_INT, float: WEAK_FLOAT, complex: "complex64"}


@functools.lru_cache(maxsize=1024)
def _least_upper_bound(nodes):
    common = set.intersection(*(_ABOVE[n] for n in nodes))
    least = [c for c in common if common <= _ABOVE[c]]
    if len(least) != 1:  # the lattice has one least bound for every set; guard regardless
        raise ValueError(f"no implicit promotion of dtypes {sorted(nodes)}; cast them first.")
    return least[0]


def _node(dtype):
    """The lattice node of one argument of `result_type`."""
    if dtype is None:
        return floatx()
    if isinstance(dtype, str):
        name = dtype
    elif isinstance(dtype, type) and dtype in _PYTHON:  # int, float, bool, complex (the types)
        return _PYTHON[dtype]
    elif type(dtype) in _PYTHON:  # a Python scalar value: weak, like its type
        return _PYTHON[type(dtype)]
    else:  # a dtype, or an array or Tensor (its dtype)
        name = getattr(getattr(dtype, "dtype", dtype), "name", None)
    if name not in _LATTICE:
        name = base.numpy_dtype(getattr(dtype, "dtype", dtype)).name
    if name in FLOAT8:
        raise ValueError(f"float8 dtypes have no implicit promotion: cast to a wider dtype "
                         f"first. Received: {name}")
    if name not in _LATTICE:
        raise ValueError(f"{name} is not a dtype that ops promote (expected one of "
                         f"{(BOOL,) + UINTS + INTS + FLOATS + COMPLEX}).")
    return name


_floatx = ["float32"]


def floatx():
    """Default float dtype name for weights and converted inputs: "float32" unless changed."""
    return _floatx[0]


def set_floatx(dtype):
    """Set the default float dtype ("float16", "bfloat16", "float32" or "float64")."""
    if dtype not in FLOATS:
        raise ValueError(f"set_floatx: unknown float dtype. Received: dtype={dtype!r}")
    _floatx[0] = dtype
    _DTYPES.clear()


def _resolve(node):
    """A weak result as a real dtype: ``int32`` and ``floatx()`` (as Keras)."""
    if node == WEAK_INT:
        return "int64" if floatx() == "float64" else "int32"
    if node == WEAK_FLOAT:
        return floatx()
    return node


@functools.lru_cache(maxsize=4096)
def _bound(nodes):
    return nodes[0] if len(nodes) == 1 else _least_upper_bound(frozenset(nodes))


def result_type(*dtypes):
    """The dtype Keras's promotion lattice gives for ``dtypes``, as a name.

    Args:
        *dtypes: dtype names, NumPy dtypes, arrays or Tensors (their dtype), the Python types
            ``int``/``float``/``bool`` or Python scalars (both weak: they do not widen a
            dtype), or None (``floatx()``).

    Returns:
        str, e.g. ``result_type("int8", "uint8") == "int16"``, ``result_type("int32", float)
        == "float32"``, ``result_type("float16", "float64") == "float64"``. With no argument,
        ``floatx()`` (the dtype of ``convert_to_tensor([])``).

    Raises:
        ValueError: for a float8 dtype (no implicit promotion) or a dtype outside the lattice
            (strings, objects).
    """
    if not dtypes:
        return floatx()
    return _resolve(_bound(tuple(_node(d) for d in dtypes)))


def float_type(*dtypes):
    """The dtype of a float-valued op (``sqrt``, ``log``, ``mean``, ``true_divide``...) of
    inputs of ``dtypes``: their promotion with a Python float, so integers and bools give
    ``floatx()`` and float dtypes stay."""
    return result_type(*dtypes, float)


def sum_type(dtype):
    """The dtype of a sum or product of ``dtype`` values: bools and integers narrower than 32
    bits accumulate in 32 bits (``int32``; ``uint32`` for unsigned), as JAX and Keras."""
    name = result_type(dtype)
    if name == BOOL or name in ("int8", "int16"):
        return "int32"
    if name in ("uint8", "uint16"):
        return "uint32"
    return name


def is_float(dtype):
    """True for float dtypes, bfloat16 included."""
    return result_type(dtype) in FLOATS


def is_int(dtype):
    """True for signed and unsigned integer dtypes (not bool)."""
    return result_type(dtype) in INTS + UINTS


_DTYPES = {}  # (arguments of result_dtype) -> NumPy dtype; emptied when floatx changes


def result_dtype(*args):
    """`result_type` as a NumPy dtype, cached per argument tuple (dtypes, Python types): the
    form the ops' hot paths use."""
    try:
        return _DTYPES[args]
    except KeyError:
        dtype = _DTYPES[args] = base.numpy_dtype(result_type(*args))
        return dtype
    except TypeError:  # an unhashable argument
        return base.numpy_dtype(result_type(*args))
