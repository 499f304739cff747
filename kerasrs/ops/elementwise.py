"""More elementwise ops with Keras's ``keras.ops`` names: trigonometric and hyperbolic functions,
logarithms in other bases, two-argument functions (``arctan2``, ``hypot``, ``logaddexp``, ...),
rounding, and integer/bitwise ops.

Differentiable ones are a forward ``f`` and derivative on arrays (`Unary` / `Binary`); rounding,
comparisons and integer ops return Tensors that no gradient flows through.
"""

import numpy as np

from kerasrs.autodiff import Function, convert_to_tensor
from kerasrs.ops.core import _pair, constant, no_gradient_op, promoted_pair
from kerasrs.ops import math as ops_math
from kerasrs.ops.math import _quiet, erf
from kerasrs.ops.dispatch import op
from kerasrs.ops.promotion import float_array, promote, promote_float, promote_numeric


def _unary(name, f, df, doc):
    return ops_math._unary(name, f, df, doc, float_valued=True)  # integers: a float result


# -- unary, differentiable -----------------------------------------------------------------------
arcsin = _unary("arcsin", lambda xp, x: xp.arcsin(x),
                _quiet(lambda xp, x, y: 1 / xp.sqrt(1 - x * x)), "Elementwise inverse sine.")
arccos = _unary("arccos", lambda xp, x: xp.arccos(x),
                _quiet(lambda xp, x, y: -1 / xp.sqrt(1 - x * x)), "Elementwise inverse cosine.")
arctan = _unary("arctan", lambda xp, x: xp.arctan(x), lambda xp, x, y: 1 / (1 + x * x),
                "Elementwise inverse tangent.")
arcsinh = _unary("arcsinh", lambda xp, x: xp.arcsinh(x), lambda xp, x, y: 1 / xp.sqrt(x * x + 1),
                 "Elementwise inverse hyperbolic sine.")
arccosh = _unary("arccosh", lambda xp, x: xp.arccosh(x),
                 _quiet(lambda xp, x, y: 1 / xp.sqrt(x * x - 1)),
                 "Elementwise inverse hyperbolic cosine (x >= 1).")
arctanh = _unary("arctanh", lambda xp, x: xp.arctanh(x), _quiet(lambda xp, x, y: 1 / (1 - x * x)),
                 "Elementwise inverse hyperbolic tangent (|x| < 1).")
tan = _unary("tan", lambda xp, x: xp.tan(x), lambda xp, x, y: 1 + y * y, "Elementwise tangent.")
sinh = _unary("sinh", lambda xp, x: xp.sinh(x), lambda xp, x, y: xp.cosh(x),
              "Elementwise hyperbolic sine.")
cosh = _unary("cosh", lambda xp, x: xp.cosh(x), lambda xp, x, y: xp.sinh(x),
              "Elementwise hyperbolic cosine.")
cbrt = _unary("cbrt", lambda xp, x: xp.cbrt(x), _quiet(lambda xp, x, y: 1 / (3 * y * y)),
              "Elementwise cube root (real, negative for negative x).")
exp2 = _unary("exp2", lambda xp, x: xp.exp2(x), lambda xp, x, y: y * np.log(2.0),
              "Elementwise ``2**x``.")
log2 = _unary("log2", lambda xp, x: xp.log2(x), _quiet(lambda xp, x, y: 1 / (x * np.log(2.0))),
              "Elementwise base-2 logarithm.")
log10 = _unary("log10", lambda xp, x: xp.log10(x),
               _quiet(lambda xp, x, y: 1 / (x * np.log(10.0))), "Elementwise base-10 logarithm.")
deg2rad = _unary("deg2rad", lambda xp, x: x * (np.pi / 180), lambda xp, x, y: np.pi / 180 + 0 * x,
                 "Degrees to radians.")
rad2deg = _unary("rad2deg", lambda xp, x: x * (180 / np.pi), lambda xp, x, y: 180 / np.pi + 0 * x,
                 "Radians to degrees.")
fabs = _unary("fabs", lambda xp, x: xp.abs(x), lambda xp, x, y: xp.sign(x),
              "Elementwise absolute value as a float.")


def _sinc_grad(xp, x, y):
    px = np.pi * x
    safe = xp.where(x == 0, 1.0, px)
    return xp.where(x == 0, 0.0, (xp.cos(safe) - y) / xp.where(x == 0, 1.0, x))


sinc = _unary("sinc", lambda xp, x: xp.sinc(x), _sinc_grad,
              "Normalized sinc ``sin(pi x) / (pi x)`` (1 at 0).")


def _bessel_i1(xp, x):
    """Modified Bessel function I1 by its power series (30 terms: float64-exact for |x| < 20)."""
    half, term, total = x / 2, x / 2, x / 2
    for k in range(1, 30):
        term = term * half * half / (k * (k + 1))
        total = total + term
    return total


i0 = _unary("i0", lambda xp, x: np.i0(x) if xp is np else xp.i0(x),
            lambda xp, x, y: _bessel_i1(xp, x),
            "Modified Bessel function of the first kind, order 0; derivative I1 (series).")


@op
def erfc(x):
    """Complementary error function ``1 - erf(x)``."""
    return 1.0 - erf(x)


class ErfInv(Function):
    def forward(self, x):
        xp = self.xp
        # Giles (2010) single-precision approximation, then two Newton steps on erf(y) = x.
        w = -xp.log((1.0 - x) * (1.0 + x))
        small = w < 5.0
        ws, wl = w - 2.5, xp.sqrt(xp.maximum(w, 5.0)) - 3.0
        ps = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
            ps = c + ps * ws
        pl = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                  -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
            pl = c + pl * wl
        y = xp.where(small, ps, pl) * x
        be = self.backend
        for _ in range(2):
            err = be.erf(y) - x
            y = y - err / (1.1283791670955126 * xp.exp(-y * y))
        self.y = y
        return y.astype(x.dtype, copy=False)

    def backward(self, gy):
        return (gy * (0.886226925452758 * self.xp.exp(self.y * self.y)).astype(gy.dtype),)


@op
def erfinv(x):
    """Inverse error function on (-1, 1) (±inf at ±1). Giles's approximation refined by Newton
    steps (M. Giles, "Approximating the erfinv function", GPU Computing Gems, 2010); derivative
    ``sqrt(pi)/2 exp(y**2)``."""
    x = convert_to_tensor(x)
    if x.dtype.kind in "iub":
        x = constant(x.data.astype("float32"), x.backend)
    with np.errstate(divide="ignore", invalid="ignore"):
        return ErfInv().apply(x)


# -- binary, differentiable ----------------------------------------------------------------------
class Binary(Function):
    """An elementwise two-input op ``f(xp, a, b)`` with partial derivatives ``da``, ``db``;
    ``promotion(a, b)`` casts the inputs first (`kerasrs.ops.promotion`)."""

    def __init__(self, f, da, db, promotion):
        self.f, self.da, self.db, self.promotion = f, da, db, promotion

    def forward(self, a, b):
        self.a, self.b = a, b = self.promotion(a, b)
        self.y = self.f(self.xp, a, b)
        return self.y

    def backward(self, gy):
        xp, a, b, y = self.xp, self.a, self.b, self.y
        with np.errstate(divide="ignore", invalid="ignore"):
            return (gy * self.da(xp, a, b, y) if self.needs_grad[0] else None,
                    gy * self.db(xp, a, b, y) if self.needs_grad[1] else None)


def _binary(name, f, da, db, doc, promotion=promote_float):
    """The public op ``name``: `Binary`; float-valued unless ``promotion`` says otherwise."""
    def fn(x1, x2):
        return Binary(f, da, db, promotion).apply(x1, x2)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return op(fn)


arctan2 = _binary("arctan2", lambda xp, a, b: xp.arctan2(a, b),
                  lambda xp, a, b, y: b / (a * a + b * b), lambda xp, a, b, y: -a / (a * a + b * b),
                  "Elementwise angle of the point (x2, x1), in (-pi, pi].")
hypot = _binary("hypot", lambda xp, a, b: xp.hypot(a, b), lambda xp, a, b, y: a / y,
                lambda xp, a, b, y: b / y, "Elementwise ``sqrt(x1**2 + x2**2)``.")
logaddexp = _binary("logaddexp", lambda xp, a, b: xp.logaddexp(a, b),
                    lambda xp, a, b, y: xp.exp(a - y), lambda xp, a, b, y: xp.exp(b - y),
                    "Elementwise ``log(exp(x1) + exp(x2))`` without overflow.")
logaddexp2 = _binary("logaddexp2", lambda xp, a, b: xp.logaddexp2(a, b),
                     lambda xp, a, b, y: xp.exp2(a - y), lambda xp, a, b, y: xp.exp2(b - y),
                     "Elementwise ``log2(2**x1 + 2**x2)``.")
fmax = _binary("fmax", lambda xp, a, b: xp.fmax(a, b),
               lambda xp, a, b, y: ((a >= b) | xp.isnan(b)).astype(y.dtype),
               lambda xp, a, b, y: ((b > a) | xp.isnan(a)).astype(y.dtype),
               "Elementwise maximum that ignores NaN (NaN only where both are NaN).", promote)
fmin = _binary("fmin", lambda xp, a, b: xp.fmin(a, b),
               lambda xp, a, b, y: ((a <= b) | xp.isnan(b)).astype(y.dtype),
               lambda xp, a, b, y: ((b < a) | xp.isnan(a)).astype(y.dtype),
               "Elementwise minimum that ignores NaN.", promote)
fmod = _binary("fmod", lambda xp, a, b: xp.fmod(a, b), lambda xp, a, b, y: 1.0 + 0 * y,
               lambda xp, a, b, y: -xp.trunc(a / b),
               "Elementwise C-style remainder: the sign of ``x1``.", promote_numeric)
ldexp = _binary("ldexp", lambda xp, a, b: (a * xp.exp2(b)).astype(a.dtype, copy=False),
                lambda xp, a, b, y: xp.exp2(b).astype(y.dtype, copy=False),
                lambda xp, a, b, y: y * np.log(2.0),
                "Elementwise ``x1 * 2**x2``, in the float dtype of ``x1``.",
                lambda a, b: (float_array(a) if hasattr(a, "dtype") else
                              promote_float(a, 1)[0], b))  # x2 (an integer) leaves the dtype
def _divide_no_nan(xp, a, b):
    b = b if hasattr(b, "dtype") else xp.asarray(b, a.dtype)  # a weak scalar: the result's dtype
    return xp.where(b == 0, 0, a / xp.where(b == 0, 1, b))


divide_no_nan = _binary(
    "divide_no_nan", lambda xp, a, b: _divide_no_nan(xp, a, b),
    lambda xp, a, b, y: xp.where(b == 0, 0.0, 1 / xp.where(b == 0, 1.0, b)),
    lambda xp, a, b, y: xp.where(b == 0, 0.0, -y / xp.where(b == 0, 1.0, b)),
    "Elementwise ``x1 / x2`` with 0 where ``x2 == 0`` (gradient 0 there too).")


# -- no gradient: rounding, tests, integer and bitwise ops --------------------------------------
def _plain(name, compute, doc, promotion=None):
    """A public op without gradient: ``compute(xp, *arrays)`` on the input(s), a registered
    `no_gradient_op`. Two inputs are promoted inside it (`kerasrs.ops.core.promoted_pair`,
    then ``promotion`` if given), so a replayed graph promotes as eager code did."""
    def run(xp, *arrays):
        if len(arrays) == 2:
            arrays = promoted_pair(xp, *arrays)
            if promotion is not None:
                arrays = promotion(*arrays)
        return compute(xp, *arrays)

    apply = no_gradient_op(name, run)

    def fn(*args):
        return apply(*(_pair(*args) if len(args) == 2 else map(convert_to_tensor, args)))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc + " No gradient flows."
    return op(fn)


def _rounding(f):
    """A rounding function: integers and bools are already whole (a copy, their dtype kept)."""
    return lambda xp, x: x.copy() if x.dtype.kind in "iub" else f(xp, x)


# Keras's floor and ceil are float-valued (integers give floatx); trunc and round keep the dtype
floor = _plain("floor", lambda xp, x: xp.floor(float_array(x)), "Elementwise floor.")
ceil = _plain("ceil", lambda xp, x: xp.ceil(float_array(x)), "Elementwise ceiling.")
trunc = _plain("trunc", _rounding(lambda xp, x: xp.trunc(x)), "Elementwise rounding toward zero.")
signbit = _plain("signbit", lambda xp, x: xp.signbit(x), "True where the sign bit is set.")
isneginf = _plain("isneginf", lambda xp, x: xp.isneginf(x), "True where ``x == -inf``.")
isposinf = _plain("isposinf", lambda xp, x: xp.isposinf(x), "True where ``x == +inf``.")
isreal = _plain("isreal", lambda xp, x: xp.isreal(x), "True where the imaginary part is 0.")
heaviside = _plain("heaviside", lambda xp, a, b: xp.heaviside(a, b),
                   "Step function: 0 below 0, ``x2`` at 0, 1 above.", promote_float)
nextafter = _plain("nextafter", lambda xp, a, b: xp.nextafter(a, b),
                   "The next float after ``x1`` toward ``x2``.", promote_float)
logical_xor = _plain("logical_xor", lambda xp, a, b: xp.logical_xor(a, b), "Elementwise XOR.")
gcd = _plain("gcd", lambda xp, a, b: xp.gcd(a, b), "Elementwise greatest common divisor.")
lcm = _plain("lcm", lambda xp, a, b: xp.lcm(a, b), "Elementwise least common multiple.")
bitwise_and = _plain("bitwise_and", lambda xp, a, b: xp.bitwise_and(a, b), "Bitwise AND.")
bitwise_or = _plain("bitwise_or", lambda xp, a, b: xp.bitwise_or(a, b), "Bitwise OR.")
bitwise_xor = _plain("bitwise_xor", lambda xp, a, b: xp.bitwise_xor(a, b), "Bitwise XOR.")
bitwise_invert = _plain("bitwise_invert", lambda xp, x: xp.invert(x), "Bitwise NOT.")
bitwise_not = _plain("bitwise_not", lambda xp, x: xp.invert(x), "Bitwise NOT.")
bitwise_left_shift = _plain("bitwise_left_shift", lambda xp, a, b: xp.left_shift(a, b),
                            "``x1 << x2``.")
bitwise_right_shift = _plain("bitwise_right_shift", lambda xp, a, b: xp.right_shift(a, b),
                             "``x1 >> x2``.")
left_shift = _plain("left_shift", lambda xp, a, b: xp.left_shift(a, b), "``x1 << x2``.")
right_shift = _plain("right_shift", lambda xp, a, b: xp.right_shift(a, b), "``x1 >> x2``.")


@op
def round(x, decimals=0):  # noqa: A001  (Keras's name)
    """Elementwise rounding to ``decimals`` places, halves to even. No gradient flows."""
    return _round(convert_to_tensor(x), decimals=int(decimals))


_round = no_gradient_op("round", lambda xp, a, decimals: xp.round(a, decimals))
