"""Differentiable tensor functions with Keras 3's ``keras.ops`` names and signatures.

Every function takes Tensors, backend arrays, NumPy arrays or Python scalars and returns a
`Tensor`. Inside a `GradientTape` the result is differentiable with respect to watched inputs.
The neural-network functions are also reachable as ``kerasrs.ops.nn.<name>``.
"""

from kerasrs.autodiff import convert_to_tensor, no_grad  # noqa: F401
from kerasrs.ops import nn  # noqa: F401
from kerasrs.ops.core import *  # noqa: F401,F403
from kerasrs.ops.core import __all__ as _core_all
from kerasrs.ops.creation import *  # noqa: F401,F403
from kerasrs.ops.creation import __all__ as _creation_all
from kerasrs.ops.math import *  # noqa: F401,F403
from kerasrs.ops.math import __all__ as _math_all
from kerasrs.ops.nn import *  # noqa: F401,F403
from kerasrs.ops.nn import __all__ as _nn_all
from kerasrs.ops.reduction import *  # noqa: F401,F403
from kerasrs.ops.reduction import __all__ as _reduction_all
from kerasrs.ops.layout import *  # noqa: F401,F403
from kerasrs.ops.layout import __all__ as _shape_all


def stop_gradient(x):
    """``x`` as a Tensor that no tape traces back through: a constant for differentiation."""
    x = convert_to_tensor(x)
    from kerasrs.autodiff import Tensor

    return Tensor(x.data, backend=x.backend)


def convert_to_numpy(x):
    """A host NumPy array with the values of ``x``."""
    from kerasrs.backend import convert_to_numpy as to_np

    return to_np(x)


__all__ = sorted(set(_core_all + _math_all + _nn_all + _shape_all + _creation_all +
                     _reduction_all + ["stop_gradient", "convert_to_tensor", "convert_to_numpy"]))
