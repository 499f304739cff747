"""Window functions with NumPy's names (``keras.ops.bartlett`` ...): constant Tensors of
``floatx()`` values, computed on the host. No gradient flows."""

import numpy as np

from kerasrs.ops.creation import from_numpy
from kerasrs.ops.dispatch import op


def _window(window):
    def fn(x, *args):
        return from_numpy(window(int(x), *args))

    fn.__name__ = fn.__qualname__ = window.__name__
    fn.__doc__ = f"NumPy's ``{window.__name__}`` window of length ``x`` (float32)."
    return op(fn)


bartlett = _window(np.bartlett)
blackman = _window(np.blackman)
hamming = _window(np.hamming)
hanning = _window(np.hanning)


@op
def kaiser(x, beta):
    """The Kaiser window of length ``x`` and shape ``beta``."""
    return from_numpy(np.kaiser(int(x), beta))
