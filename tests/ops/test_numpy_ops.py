"""Forward values against NumPy and float64 gradient checks for the NumPy-named ops: elementwise,
creation, layout, stacking, matrices, reduction, nan_reductions, statistics, searching, complex
and windows (kerasrs/ops/<concept>.py)."""

import numpy as np
import pytest

from kerasrs import ops
from kerasrs.testing import check_gradients

RNG = np.random.default_rng(0)
A = RNG.uniform(0.2, 0.8, (3, 4))  # inside every domain used below
B = RNG.uniform(0.2, 0.8, (3, 4))
SQ = RNG.normal(size=(4, 4))
V3 = RNG.normal(size=(2, 3))
W3 = RNG.normal(size=(2, 3))
NANS = np.where(RNG.random((3, 4)) < 0.3, np.nan, RNG.normal(size=(3, 4)))

# name -> (kerasrs call, NumPy reference, inputs); the same call is checked for gradients.
UNARY = {
    "arcsin": np.arcsin, "arccos": np.arccos, "arctan": np.arctan, "arcsinh": np.arcsinh,
    "arctanh": np.arctanh, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh, "cbrt": np.cbrt,
    "exp2": np.exp2, "log2": np.log2, "log10": np.log10, "deg2rad": np.deg2rad,
    "rad2deg": np.rad2deg, "fabs": np.fabs, "sinc": np.sinc, "i0": np.i0,
}
BINARY = {"arctan2": np.arctan2, "hypot": np.hypot, "logaddexp": np.logaddexp,
          "logaddexp2": np.logaddexp2, "fmax": np.fmax, "fmin": np.fmin, "fmod": np.fmod,
          "ldexp": lambda a, b: a * 2.0 ** b}

CASES = {
    "arccosh": (lambda x: ops.arccosh(x), np.arccosh, [A + 1.5]),
    "erfc": (lambda x: ops.erfc(x), lambda x: 1 - np.vectorize(__import__("math").erf)(x), [A]),
    "erfinv": (lambda x: ops.erfinv(x), None, [A - 0.5]),
    "divide_no_nan": (lambda a, b: ops.divide_no_nan(a, b),
                      lambda a, b: np.where(b == 0, 0, a / np.where(b == 0, 1, b)),
                      [A, np.where(B > 0.5, B, 0.0)]),
    "array": (lambda x: ops.array(x), np.array, [A]),
    "copy": (lambda x: ops.copy(x), np.copy, [A]),
    "flip": (lambda x: ops.flip(x, 1), lambda x: np.flip(x, 1), [A]),
    "fliplr": (lambda x: ops.fliplr(x), np.fliplr, [A]),
    "flipud": (lambda x: ops.flipud(x), np.flipud, [A]),
    "rot90": (lambda x: ops.rot90(x), np.rot90, [A]),
    "roll": (lambda x: ops.roll(x, 2, 1), lambda x: np.roll(x, 2, 1), [A]),
    "moveaxis": (lambda x: ops.moveaxis(x, 0, -1), lambda x: np.moveaxis(x, 0, -1), [A]),
    "swapaxes": (lambda x: ops.swapaxes(x, 0, 1), lambda x: np.swapaxes(x, 0, 1), [A]),
    "ravel": (lambda x: ops.ravel(x), np.ravel, [A]),
    "hstack": (lambda a, b: ops.hstack([a, b]), lambda a, b: np.hstack([a, b]), [A, B]),
    "vstack": (lambda a, b: ops.vstack([a, b]), lambda a, b: np.vstack([a, b]), [A, B]),
    "dstack": (lambda a, b: ops.dstack([a, b]), lambda a, b: np.dstack([a, b]), [A, B]),
    "array_split": (lambda x: ops.array_split(x, 3, 1)[0],
                    lambda x: np.array_split(x, 3, 1)[0], [A]),
    "hsplit": (lambda x: ops.hsplit(x, 2)[1], lambda x: np.hsplit(x, 2)[1], [A]),
    "vsplit": (lambda x: ops.vsplit(x, 3)[1], lambda x: np.vsplit(x, 3)[1], [A]),
    "dsplit": (lambda x: ops.dsplit(x, 2)[1], lambda x: np.dsplit(x, 2)[1], [A.reshape(3, 2, 2)]),
    "unstack": (lambda x: ops.unstack(x)[1], lambda x: x[1], [A]),
    "append": (lambda a, b: ops.append(a, b), np.append, [A, B]),
    "get_item": (lambda x: ops.get_item(x, (1, slice(1, 3))), lambda x: x[1, 1:3], [A]),
    "diagonal": (lambda x: ops.diagonal(x, 1), lambda x: np.diagonal(x, 1), [SQ]),
    "trace": (lambda x: ops.trace(x), np.trace, [SQ]),
    "diag": (lambda x: ops.diag(x, 1), lambda x: np.diag(x, 1), [V3[0]]),
    "diagflat": (lambda x: ops.diagflat(x), np.diagflat, [V3]),
    "tril": (lambda x: ops.tril(x, -1), lambda x: np.tril(x, -1), [SQ]),
    "triu": (lambda x: ops.triu(x, 1), lambda x: np.triu(x, 1), [SQ]),
    "outer": (lambda a, b: ops.outer(a, b), np.outer, [V3[0], W3[1]]),
    "inner": (lambda a, b: ops.inner(a, b), np.inner, [A, B]),
    "vdot": (lambda a, b: ops.vdot(a, b), np.vdot, [A, B]),
    "tensordot": (lambda a, b: ops.tensordot(a, b, ([1], [1])),
                  lambda a, b: np.tensordot(a, b, ([1], [1])), [A, B]),
    "kron": (lambda a, b: ops.kron(a, b), np.kron, [V3, W3]),
    "cross": (lambda a, b: ops.cross(a, b), np.cross, [V3, W3]),
    "vander": (lambda x: ops.vander(x, 3), lambda x: np.vander(x, 3), [V3[0]]),
    "meshgrid": (lambda a, b: ops.meshgrid(a, b)[0], lambda a, b: np.meshgrid(a, b)[0],
                 [V3[0], W3[0, :2]]),
    "diff": (lambda x: ops.diff(x, 2), lambda x: np.diff(x, 2), [A]),
    "cumprod": (lambda x: ops.cumprod(x, 1), lambda x: np.cumprod(x, 1), [A]),
    "nansum": (lambda x: ops.nansum(x, 1), lambda x: np.nansum(x, 1), [NANS]),
    "nanprod": (lambda x: ops.nanprod(x, 1), lambda x: np.nanprod(x, 1), [NANS]),
    "nanmean": (lambda x: ops.nanmean(x, 1), lambda x: np.nanmean(x, 1), [NANS]),
    "nanvar": (lambda x: ops.nanvar(x, 1), lambda x: np.nanvar(x, 1), [NANS]),
    "nanstd": (lambda x: ops.nanstd(x, 1), lambda x: np.nanstd(x, 1), [NANS]),
    "nanmax": (lambda x: ops.nanmax(x, 1), lambda x: np.nanmax(x, 1), [NANS]),
    "nanmin": (lambda x: ops.nanmin(x, 1), lambda x: np.nanmin(x, 1), [NANS]),
    "nancumsum": (lambda x: ops.nancumsum(x, 1), lambda x: np.nancumsum(x, 1), [NANS]),
    "nancumprod": (lambda x: ops.nancumprod(x, 1), lambda x: np.nancumprod(x, 1), [NANS]),
    "quantile": (lambda x: ops.quantile(x, [0.25, 0.6], axis=1),
                 lambda x: np.quantile(x, [0.25, 0.6], axis=1), [A]),
    "percentile": (lambda x: ops.percentile(x, 30.0), lambda x: np.percentile(x, 30.0), [A]),
    "median": (lambda x: ops.median(x, 0), lambda x: np.median(x, 0), [A]),
    "nanquantile": (lambda x: ops.nanquantile(x, 0.3, axis=1),
                    lambda x: np.nanquantile(x, 0.3, axis=1), [NANS]),
    "nanpercentile": (lambda x: ops.nanpercentile(x, 70.0, axis=1),
                      lambda x: np.nanpercentile(x, 70.0, axis=1), [NANS]),
    "nanmedian": (lambda x: ops.nanmedian(x, 1), lambda x: np.nanmedian(x, 1), [NANS]),
    "ptp": (lambda x: ops.ptp(x, 1), lambda x: np.ptp(x, 1), [A]),
    "average": (lambda x, w: ops.average(x, 1, w[0]), lambda x, w: np.average(x, 1, w[0]),
                [A, B]),
    "corrcoef": (lambda x: ops.corrcoef(x), np.corrcoef, [A]),
    "correlate": (lambda a, b: ops.correlate(a, b, "full"),
                  lambda a, b: np.correlate(a, b, "full"), [A[0], B[1, :3]]),
    "trapezoid": (lambda x: ops.trapezoid(x), lambda x: np.trapezoid(x), [A]),
    "select": (lambda a, b: ops.select([a > 0.5, b > 0.5], [a, b], 0.0),
               lambda a, b: np.select([a > 0.5, b > 0.5], [a, b], 0.0), [A, B]),
    "top_k": (lambda x: ops.top_k(x, 2)[0], lambda x: -np.sort(-x, axis=-1)[..., :2], [A]),
    "vectorize": (lambda x: ops.vectorize(lambda r: ops.sum(r * r))(x),
                  lambda x: (x * x).sum(1), [A]),
    "saturate_cast": (lambda x: ops.saturate_cast(x, "float64"), lambda x: x, [A]),
    "logspace": (None, None, None), "geomspace": (None, None, None),
}
CASES.update({n: (lambda f: (lambda x: f(x)))(getattr(ops, n)) and
              ((lambda n: lambda x: getattr(ops, n)(x))(n), f, [A]) for n, f in UNARY.items()})
CASES.update({n: ((lambda n: lambda a, b: getattr(ops, n)(a, b))(n), f, [A, B])
              for n, f in BINARY.items()})
del CASES["logspace"], CASES["geomspace"]

GRADIENT_TESTED = {
    "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "tan", "sinh", "cosh", "cbrt",
    "exp2", "log2", "log10", "deg2rad", "rad2deg", "fabs", "sinc", "i0", "erfc", "erfinv",
    "arctan2", "hypot", "logaddexp", "logaddexp2", "fmax", "fmin", "fmod", "ldexp",
    "divide_no_nan", "array", "copy", "flip", "fliplr", "flipud", "rot90", "roll", "moveaxis",
    "swapaxes", "ravel", "hstack", "vstack", "dstack", "array_split", "hsplit", "vsplit",
    "dsplit", "unstack", "append", "get_item", "diagonal", "trace", "diag", "diagflat", "tril",
    "triu", "outer", "inner", "vdot", "tensordot", "kron", "cross", "vander", "meshgrid",
    "diff", "cumprod", "nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin",
    "nancumsum", "nancumprod", "quantile", "percentile", "median", "nanquantile",
    "nanpercentile", "nanmedian", "ptp", "average", "corrcoef", "correlate", "trapezoid",
    "select", "top_k", "vectorize", "saturate_cast",
}
NON_DIFFERENTIABLE = {
    "floor": "piecewise constant", "ceil": "piecewise constant", "trunc": "piecewise constant",
    "round": "piecewise constant", "signbit": "bool result", "isneginf": "bool result",
    "isposinf": "bool result", "isreal": "bool result", "heaviside": "piecewise constant",
    "nextafter": "bit-level neighbour, piecewise constant", "logical_xor": "bool result",
    "gcd": "integer op", "lcm": "integer op", "bitwise_and": "integer op",
    "bitwise_or": "integer op", "bitwise_xor": "integer op", "bitwise_invert": "integer op",
    "bitwise_not": "integer op", "bitwise_left_shift": "integer op",
    "bitwise_right_shift": "integer op", "left_shift": "integer op", "right_shift": "integer op",
    "identity": "constant", "empty": "constant", "empty_like": "constant (zeros)",
    "tri": "constant", "linspace": "constant", "logspace": "constant", "geomspace": "constant",
    "bartlett": "constant window", "blackman": "constant window", "hamming": "constant window",
    "hanning": "constant window", "kaiser": "constant window", "view": "bit reinterpretation",
    "nanargmax": "integer result", "nanargmin": "integer result", "isclose": "bool result",
    "allclose": "bool result", "isin": "bool result", "searchsorted": "integer result",
    "digitize": "integer result", "bincount": "integer counts", "histogram": "integer counts",
    "unique": "set of values", "unravel_index": "integer result",
    "argpartition": "integer result", "in_top_k": "bool result", "dtype": "a dtype name",
    "is_tensor": "a Python bool", "real": "real part of a real tensor (complex unsupported)",
    "imag": "imaginary part (complex unsupported)", "conj": "identity on real tensors",
    "conjugate": "identity on real tensors", "angle": "piecewise constant on reals",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_matches_numpy(name):
    fn, ref, inputs = CASES[name]
    got = ops.convert_to_numpy(fn(*[np.asarray(x, "float64") for x in inputs]))
    if ref is None:  # erfinv: check the inverse property
        np.testing.assert_allclose(ops.convert_to_numpy(ops.erf(got)), inputs[0], atol=1e-12)
        return
    np.testing.assert_allclose(got, ref(*inputs), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", sorted(GRADIENT_TESTED))
def test_gradients(name):
    fn, _, inputs = CASES[name]
    if name.startswith("nan"):  # finite differences at the finite entries only
        inputs = [np.where(np.isnan(x), 0.5, x) for x in inputs]
        fn0 = fn
        mask = np.isnan(NANS)

        def fn(x):
            return fn0(ops.where(mask, np.nan, x))
    if name == "divide_no_nan":  # the divisor's zeros are a jump: differentiate in x1 there
        b = inputs[1]
        fn, inputs = (lambda a: ops.divide_no_nan(a, b)), inputs[:1]
    if name in ("fmod", "ptp", "top_k", "quantile", "median", "percentile", "select"):
        inputs = [x + np.arange(x.size).reshape(x.shape) * 1e-3 for x in inputs]  # no ties
    check_gradients(fn, inputs, atol=1e-5, rtol=1e-4)


def test_plain_ops_match_numpy():
    a, b = np.array([5, 12, 7]), np.array([3, 4, 2])
    x = np.array([-1.5, -0.5, 0.5, 2.5, -np.inf, np.inf])
    pairs = [(ops.floor(x), np.floor(x)), (ops.ceil(x), np.ceil(x)), (ops.trunc(x), np.trunc(x)),
             (ops.round(x), np.round(x)), (ops.signbit(x), np.signbit(x)),
             (ops.isneginf(x), np.isneginf(x)), (ops.isposinf(x), np.isposinf(x)),
             (ops.isreal(x), np.isreal(x)), (ops.heaviside(x, 0.5), np.heaviside(x, 0.5)),
             (ops.nextafter(x, 0.0), np.nextafter(x, 0.0)),
             (ops.logical_xor(a > 5, b > 2), np.logical_xor(a > 5, b > 2)),
             (ops.gcd(a, b), np.gcd(a, b)), (ops.lcm(a, b), np.lcm(a, b)),
             (ops.bitwise_and(a, b), a & b), (ops.bitwise_or(a, b), a | b),
             (ops.bitwise_xor(a, b), a ^ b), (ops.bitwise_invert(a), ~a),
             (ops.bitwise_not(a), ~a), (ops.bitwise_left_shift(a, b), a << b),
             (ops.bitwise_right_shift(a, b), a >> b), (ops.left_shift(a, b), a << b),
             (ops.right_shift(a, b), a >> b), (ops.identity(3), np.eye(3)),
             (ops.empty((2, 2)), np.zeros((2, 2))), (ops.empty_like(a), np.zeros(3)),
             (ops.tri(3, 4, 1), np.tri(3, 4, 1)), (ops.linspace(0, 1, 5), np.linspace(0, 1, 5)),
             (ops.logspace(0, 2, 3), np.logspace(0, 2, 3)),
             (ops.geomspace(1, 8, 4), np.geomspace(1, 8, 4)), (ops.bartlett(5), np.bartlett(5)),
             (ops.blackman(5), np.blackman(5)), (ops.hamming(5), np.hamming(5)),
             (ops.hanning(5), np.hanning(5)), (ops.kaiser(5, 2.0), np.kaiser(5, 2.0)),
             (ops.view(np.float32([1.0]), "int32"), np.float32([1.0]).view("int32")),
             (ops.nanargmax(NANS, 1), np.nanargmax(NANS, 1)),
             (ops.nanargmin(NANS, 1), np.nanargmin(NANS, 1)),
             (ops.isclose(a, a + 1e-9), np.isclose(a, a + 1e-9)), (ops.allclose(a, a), True),
             (ops.isin(a, [7, 3]), np.isin(a, [7, 3])),
             (ops.searchsorted([1, 3, 5], [2, 5]), np.searchsorted([1, 3, 5], [2, 5])),
             (ops.digitize([0.5, 2.5], [1, 2, 3]), np.digitize([0.5, 2.5], [1, 2, 3])),
             (ops.bincount([0, 1, 1, 3]), np.bincount([0, 1, 1, 3])),
             (ops.histogram(x[:4], 2)[0], np.histogram(x[:4], 2)[0]),
             (ops.unique([3, 1, 3]), [1, 3]), (ops.unravel_index(5, (2, 3))[1], 2),
             (ops.in_top_k([0, 1], np.array([[0.9, 0.1], [0.8, 0.2]]), 1), [True, False]),
             (ops.real(x[:4]), x[:4]), (ops.imag(x[:4]), 0 * x[:4]), (ops.conj(x[:4]), x[:4]),
             (ops.conjugate(x[:4]), x[:4]), (ops.angle(x[:4]), np.angle(x[:4]))]
    for i, (got, want) in enumerate(pairs):
        np.testing.assert_allclose(ops.convert_to_numpy(got), want, rtol=1e-6, err_msg=str(i))
    part = ops.convert_to_numpy(ops.argpartition(np.array([5, 1, 4, 2]), 1))
    assert set(part[:2]) == {1, 3}
    assert ops.dtype(np.float32(1)) == "float32" and ops.is_tensor(ops.ones(1)) \
        and not ops.is_tensor(1.0)


def test_swapaxes_and_top_k_reject_bad_arguments_by_name():
    with pytest.raises(ValueError, match=r"swapaxes: axis 3 is out of bounds.*rank 2"):
        ops.swapaxes(np.ones((2, 3)), 0, 3)
    with pytest.raises(ValueError, match=r"top_k: k must be an int in \[0, 3\].*k=5"):
        ops.top_k(np.ones(3), k=5)
    with pytest.raises(ValueError, match="top_k"):
        ops.top_k(np.ones(3), k=-1)
    values, _ = ops.top_k(np.array([1.0, 3.0, 2.0]), k=3)
    np.testing.assert_array_equal(ops.convert_to_numpy(values), [3.0, 2.0, 1.0])


@pytest.mark.parametrize("op, call", [
    ("flip", lambda x: ops.flip(x, 2)),
    ("roll", lambda x: ops.roll(x, 1, axis=3)),
    ("moveaxis", lambda x: ops.moveaxis(x, 0, 5)),
])
def test_axis_out_of_range_is_a_value_error_naming_the_op(op, call):
    with pytest.raises(ValueError, match=rf"{op}: axis \d is out of bounds for a tensor of rank 2"):
        call(np.ones((2, 3)))
