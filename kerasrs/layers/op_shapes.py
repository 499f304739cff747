"""Output shapes of ops on symbolic tensors where probing cannot find them.

`kerasrs.layers.node` finds most output shapes by a probe: the op runs on zeros whose unknown
axes have size 2, then 3. That fails where an unknown axis meets a known one (``(None, 3) +
(2, None)`` is ``(2, 3)`` in Keras, but ``(2, 3) + (2, 2)`` does not broadcast), where zeros are
not valid values (``inv`` and ``cholesky`` of a zero matrix) and where the output size depends on
a value rather than on a shape (``segment_sum`` without ``num_segments``). For those ops a rule
here gives the output shape from the input shapes and arguments, as Keras's
``compute_output_spec`` does; the dtype still comes from a probe (see `OpLayer`).

Each rule takes the op's bound arguments (a dict by parameter name, tensors as `SymbolicTensor`,
arrays or numbers) and returns a shape (a tuple of ints and None) or a list of shapes.
"""

import math

import numpy as np

from kerasrs.ops import control
from kerasrs.ops import operation_utils as shapes


def _shape(value):
    """The shape of a tensor argument (a Python number is a scalar)."""
    return tuple(value.shape) if hasattr(value, "shape") else np.shape(value)


def _broadcast(*values):
    out = []
    for v in values:
        if v is not None:
            out = shapes.broadcast_shapes(out, _shape(v))
    return tuple(out)


def _merge(a, b):
    """One size known in either of two shapes that must agree (``None`` is unknown)."""
    return b if a is None else a


def _elementwise(count):
    """The broadcast of the op's first ``count`` arguments (its operands; ``*args`` for the
    ops declared so)."""
    return lambda a: _broadcast(*(a["args"] if "args" in a else list(a.values()))[:count])


def _space(a):
    """``linspace``/``logspace``/``geomspace``: the broadcast of start and stop, with ``num``
    inserted at ``axis``."""
    out = list(_broadcast(a["start"], a["stop"]))
    axis = a["axis"]
    out.insert(axis % (len(out) + 1) if axis < 0 else axis, a["num"])
    return tuple(out)


def _split(axis):
    """``split``-style ops: one shape per piece; a piece along an unknown axis is unknown."""
    def rule(a):
        x, sections = _shape(a["x"]), a["indices_or_sections"]
        ax = shapes.canonicalize_axis(a.get("axis", axis), len(x))
        size = x[ax]
        if isinstance(sections, (int, np.integer)):
            if size is None:
                lengths = [None] * int(sections)
            elif a.get("_even", True) and size % sections:
                raise ValueError(f"split: axis {ax} of size {size} cannot be split into "
                                 f"{sections} equal sections. Received: x.shape={x}, "
                                 f"indices_or_sections={sections}")
            else:
                q, r = divmod(size, int(sections))
                lengths = [q + (i < r) for i in range(int(sections))]
        else:
            bounds = [0] + [int(i) for i in sections] + [size]
            lengths = [None if size is None and (j == len(bounds) - 2) else
                       max(0, min(e, size if size is not None else e) - s)
                       for j, (s, e) in enumerate(zip(bounds, bounds[1:]))]
        return [x[:ax] + (n,) + x[ax + 1:] for n in lengths]
    return rule


def _array_split(a):
    return _split(0)({**a, "_even": False})


def _square_matrices(name):
    def rule(a):
        x = _shape(a[name])
        if len(x) < 2 or (x[-1] is not None and x[-2] is not None and x[-1] != x[-2]):
            raise ValueError(f"Expected input to be a square matrix (or a batch of them), "
                             f"that is a tensor of rank >= 2 whose last two sizes are equal. "
                             f"Received: {name}.shape={x}")
        return x
    return rule


def _solve(a):
    _square_matrices("a")(a)
    return _shape(a["b"])


def _lu_factor(a):
    x = _shape(a["x"])
    if len(x) < 2:
        raise ValueError(f"lu_factor: expected a matrix (rank >= 2). Received: x.shape={x}")
    m, n = x[-2], x[-1]
    return [x, x[:-2] + (None if m is None or n is None else min(m, n),)]


def _segment(a):
    control.check_segment_shapes(_shape(a["data"]), _shape(a["segment_ids"]))
    n = a["num_segments"]
    return (None if n is None else int(n),) + _shape(a["data"])[1:]


def _reshape(a):
    return shapes.compute_reshape_output_shape(_shape(a["x"]), a["newshape"], "newshape")


def _transpose(a):
    return shapes.compute_transpose_output_shape(_shape(a["x"]), a["axes"])


def _take_along_axis(a):
    return tuple(shapes.compute_take_along_axis_output_shape(
        _shape(a["x"]), _shape(a["indices"]), a["axis"]))


def _take(a):
    x, indices, axis = _shape(a["x"]), _shape(a["indices"]), a["axis"]
    if axis is None:
        return indices
    axis = shapes.canonicalize_axis(axis, len(x))
    return x[:axis] + indices + x[axis + 1:]


def _one_hot(a):
    x = list(_shape(a["x"]))
    axis = a["axis"]
    x.insert(len(x) if axis == -1 else shapes.canonicalize_axis(axis, len(x) + 1),
             int(a["num_classes"]))
    return tuple(x)


def _concatenate(a):
    xs = [_shape(x) for x in a["xs"]]
    axis = a["axis"]
    if axis is None:
        sizes = [None if None in s else math.prod(s) for s in xs]
        return (None if None in sizes else sum(sizes),)
    rank = len(xs[0])
    if any(len(s) != rank for s in xs):
        raise ValueError(f"concatenate: all inputs must have the same rank. Received: shapes "
                         f"{xs}")
    axis = shapes.canonicalize_axis(axis, rank)
    out = list(xs[0])
    for s in xs[1:]:
        for i, (d, e) in enumerate(zip(out, s)):
            if i == axis:
                out[i] = None if d is None or e is None else d + e
            elif d is not None and e is not None and d != e:
                raise ValueError(f"concatenate: the inputs' sizes differ on axis {i} (only "
                                 f"axis {axis} may differ). Received: shapes {xs}")
            else:
                out[i] = _merge(d, e)
    return tuple(out)


def _matmul(a):
    return shapes.compute_matmul_output_shape(_shape(a["x1"]), _shape(a["x2"]))


_BROADCASTING = (
    "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "mod", "power",
    "maximum", "minimum", "fmax", "fmin", "fmod", "arctan2", "hypot", "logaddexp", "logaddexp2",
    "heaviside", "nextafter", "ldexp", "greater", "greater_equal", "less", "less_equal", "equal",
    "not_equal", "logical_and", "logical_or", "logical_xor", "isclose", "divide_no_nan", "gcd",
    "lcm", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
    "bitwise_right_shift", "left_shift", "right_shift")

RULES = {name: _elementwise(2) for name in _BROADCASTING}
RULES.update({
    "allclose": lambda a: _elementwise(2)(a) and (),
    "bitwise_invert": _elementwise(1), "bitwise_not": _elementwise(1),
    "linspace": _space, "logspace": _space, "geomspace": _space,
    "split": _split(0), "array_split": _array_split, "vsplit": _split(0), "hsplit": _split(1),
    "dsplit": _split(2),
    "cholesky": _square_matrices("x"), "inv": _square_matrices("x"),
    "cholesky_inverse": _square_matrices("x"), "solve": _solve, "solve_triangular": _solve,
    "lu_factor": _lu_factor,
    "segment_sum": _segment, "segment_max": _segment,
    "reshape": _reshape, "transpose": _transpose,
    "take": _take, "take_along_axis": _take_along_axis,
    "one_hot": _one_hot,
    "concatenate": _concatenate,
    "matmul": _matmul,
})


def rule_for(name, arguments):
    """The output shape(s) by the rule for op ``name``, or None when it has none (or, for
    ``where``, when only the condition is given: that is ``nonzero``)."""
    rule = RULES.get(name)
    if name == "where" and arguments.get("x1") is not None:
        rule = _elementwise(3)
    return None if rule is None else rule(arguments)
