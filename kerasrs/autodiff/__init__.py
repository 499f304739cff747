"""Reverse-mode automatic differentiation: `Tensor`, `Variable`, `Function` and `GradientTape`.

How a gradient is found (read this once and the rest follows):

1. Every differentiable op is a `Function` subclass (`kerasrs.autodiff.function`).
   ``forward(*arrays)`` computes the result on plain backend arrays and saves on ``self`` what
   ``backward`` will need; ``backward(gy)`` returns one gradient array (or None) per input.
2. ``Function.apply(*inputs)`` runs ``forward`` and, only while a `GradientTape` is recording and an
   input is being watched by it, appends the Function to that tape. Outside a tape nothing is kept:
   the Function is dropped as soon as ``apply`` returns (inference is tape-free).
3. The tape's list is in execution order, which is already a topological order. ``tape.gradient``
   first marks the ops that lead from a source, then walks the list backwards once, calling
   ``backward`` only on those ops (no recursion, so a 10,000-op chain is fine). Gradients of inputs
   that were broadcast are summed back to the input's shape in one place, `sum_to`
   (`kerasrs.autodiff.tape`).

Gradients are first order: ``backward`` works on arrays, not Tensors. The tapes recording now
are per thread and per asyncio task (`kerasrs.context.tapes`).
"""

from kerasrs.autodiff.function import Function, symbolic_hook
from kerasrs.autodiff.remat import loss_added as remat_loss_added  # noqa: F401
from kerasrs.autodiff.remat import remat
from kerasrs.autodiff.tape import GradientTape, no_grad, sum_to, value_and_grad
from kerasrs.autodiff.tape import _NESTED, _flatten, _pack  # noqa: F401  (used across kerasrs)
from kerasrs.autodiff.tensor import Tensor, Variable, convert_to_tensor, raw

__all__ = ["Tensor", "Variable", "convert_to_tensor", "raw", "Function", "GradientTape", "no_grad",
           "value_and_grad", "sum_to", "symbolic_hook", "remat"]
