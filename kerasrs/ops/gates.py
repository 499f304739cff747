"""Gate activations for the fused recurrences, in place on arrays, with derivatives computed
from the activations' outputs (so the backward pass needs no pre-activations).

tanh and sigmoid are computed through one ``exp``: NumPy's float32 ``exp`` is 1.5-3 times
faster than its ``tanh`` on machines without AVX-512. `Gates` does all of a cell's tanh/sigmoid
gates with three array calls on weights that the caller pre-scales (see its docstring).
"""

import numpy as np

FUSED_ACTIVATIONS = ("tanh", "sigmoid", "relu", "linear", "hard_sigmoid")


def activate(xp, src, name, out=None):
    """``out = name(src)`` (in place when ``out`` is None). tanh and sigmoid go through ``exp``;
    an overflowing ``exp`` gives ``inf`` and the exact limit, so callers silence overflow."""
    out = src if out is None else out
    if name == "tanh":  # 2 / (1 + exp(-2x)) - 1
        xp.multiply(src, -2.0, out=out)
        xp.exp(out, out=out)
        out += 1.0
        xp.divide(2.0, out, out=out)
        out -= 1.0
    elif name == "sigmoid":
        xp.negative(src, out=out)
        xp.exp(out, out=out)
        out += 1.0
        xp.reciprocal(out, out=out)
    elif name == "relu":
        xp.maximum(src, 0, out=out)
    elif name == "hard_sigmoid":  # Keras 3: relu6(x + 3) / 6
        xp.add(src, 3.0, out=out)
        xp.clip(out, 0.0, 6.0, out=out)
        out *= 1.0 / 6.0
    elif name == "linear":
        if out is not src:
            out[...] = src
    else:
        raise ValueError(f"recurrent: activation {name!r} has no fused form")


def derivative(xp, y, name, out):
    """``out = name'(x)`` computed from ``y = name(x)``."""
    if name == "tanh":
        xp.multiply(y, y, out=out)
        xp.subtract(1.0, out, out=out)
    elif name == "sigmoid":
        xp.subtract(1.0, y, out=out)
        out *= y
    elif name == "relu":
        xp.greater(y, 0, out=out)
    elif name == "hard_sigmoid":
        xp.logical_and(y > 0, y < 1, out=out)
        out *= 1.0 / 6.0
    else:
        out[...] = 1.0


class Gates:
    """The activations of the first ``len(names)`` of ``blocks`` row blocks of ``units`` rows.

    When every gate is tanh or sigmoid (the usual case), ``prescale`` is the per-row factor
    (``-1`` sigmoid, ``-2`` tanh, ``1`` for rows without a gate) that the caller applies to the
    weights, so that ``apply`` is ``r = 1 / (1 + exp(z'))`` for all gates at once plus ``2 r - 1``
    on tanh blocks; the derivative is ``a**2 - (y - b)**2`` with ``a = b = 1/2`` (sigmoid) or
    ``a = 1, b = 0`` (tanh). Otherwise ``prescale`` is None and each block is done separately.
    """

    def __init__(self, xp, names, units, blocks, dtype):
        self.names, self.units = names, units
        self.rows = len(names) * units
        self.prescale = None
        if all(n in ("tanh", "sigmoid") for n in names):
            scale = [-1.0 if n == "sigmoid" else -2.0 for n in names]
            scale += [1.0] * (blocks - len(names))
            a = np.repeat([0.5 if n == "sigmoid" else 1.0 for n in names], units)
            b = np.repeat([0.5 if n == "sigmoid" else 0.0 for n in names], units)
            self.prescale = xp.asarray(np.repeat(scale, units), dtype=dtype)
            self.b, self.a2 = (xp.asarray(v[:, None], dtype=dtype) for v in (b, a * a))

    def apply(self, xp, z):
        """Activate rows ``[:rows]`` of ``z`` in place (pre-scaled rows if ``prescale``)."""
        u = self.units
        if self.prescale is None:
            for k, name in enumerate(self.names):
                activate(xp, z[k * u:(k + 1) * u], name)
            return
        z = z[:self.rows]
        xp.exp(z, out=z)
        z += 1.0
        xp.reciprocal(z, out=z)
        for k, name in enumerate(self.names):
            if name == "tanh":
                block = z[k * u:(k + 1) * u]
                block *= 2.0
                block -= 1.0

    def derivative(self, xp, y, out):
        """``out[:rows] = act'`` from the activated rows ``y[:rows]``."""
        if self.prescale is not None:
            y, out = y[:self.rows], out[:self.rows]
            xp.subtract(y, self.b, out=out)
            out *= out
            xp.subtract(self.a2, out, out=out)
            return
        u = self.units
        for k, name in enumerate(self.names):
            derivative(xp, y[k * u:(k + 1) * u], name, out[k * u:(k + 1) * u])
