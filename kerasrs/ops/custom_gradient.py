"""``custom_gradient``: a function whose gradient you write yourself (Keras's
``keras.ops.custom_gradient``, after ``jax.custom_gradient`` / ``tf.custom_gradient``).

The decorated function runs its forward computation and returns ``(value, grad_fn)``. kerasrs
records the whole call as one `Function` on the tape: the operations inside it are not
recorded (so intermediate values the gradient needs can be kept in ``grad_fn``'s closure), and
the backward walk calls ``grad_fn`` with the gradient of the value.
"""

import functools
import inspect

import numpy as np

from kerasrs import autodiff
from kerasrs.ops import layout

_NUMBERS = (int, float, complex, np.number, np.ndarray)


def custom_gradient(f):
    """Decorate ``f(*args) -> (output, grad_fn)`` so that its gradient is ``grad_fn``'s.

    ``grad_fn`` receives ``upstream``, the gradient of the loss with respect to ``output`` (a
    Tensor, or a list/tuple of them for several outputs), and returns the gradients with
    respect to ``f``'s tensor arguments: one Tensor (or array, or None for no gradient) per
    argument, in order (nested arguments flattened), each of the argument's shape or
    broadcastable to it. Either calling convention of Keras works:

    * ``def grad_fn(upstream)`` (JAX/TensorFlow style): called as ``grad_fn(upstream)``;
    * ``def grad_fn(*args, upstream)`` (PyTorch style, ``upstream`` keyword-only): called as
      ``grad_fn(*inputs, upstream=upstream)``, ``inputs`` being ``f``'s tensor arguments;
      Keras's portable ``def grad_fn(*args, upstream=None)`` is this case.

    Tensors, arrays and numbers among the arguments are differentiable inputs; other values
    (strings, None, keyword arguments) are passed through. Gradients flow to the arguments
    only, not to variables ``f`` reads from its closure. Works under `GradientTape`, in
    ``fit`` and inside a layer's ``call``. First order: ``grad_fn`` itself is not
    differentiated.

    Args:
        f: the function, returning ``(output, grad_fn)``; ``output`` a Tensor or a list/tuple
            of Tensors of one dtype.

    Returns:
        A function with ``f``'s arguments returning ``output``.

    Raises:
        TypeError: when ``f`` does not return a ``(output, grad_fn)`` pair (at the call).
        ValueError: when ``grad_fn`` returns the wrong number of gradients (at backward).

    Example:
        >>> @custom_gradient
        ... def log1pexp(x):
        ...     e = ops.exp(x)
        ...     def grad(upstream):
        ...         return upstream * (1.0 - 1.0 / (1.0 + e))
        ...     return ops.log(1.0 + e), grad
        >>> x = kerasrs.Variable([0.0, 100.0])
        >>> with kerasrs.GradientTape() as tape:
        ...     y = log1pexp(x)
        >>> tape.gradient(y, x).numpy()           # stable where exp(100) / (1 + exp(100)) is not
        array([0.5, 1. ], dtype=float32)
    """
    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        leaves = autodiff._flatten(list(args))
        inputs = [x for x in leaves if _is_tensor_like(x)]
        fn = _CustomGradient(f, args, kwargs)
        out = fn.apply(*inputs) if inputs else fn.run_constant()
        return fn.unpack(out)

    return wrapped


def _is_tensor_like(x):
    return isinstance(x, autodiff.Tensor) or isinstance(x, _NUMBERS) and not isinstance(
        x, bool) or hasattr(x, "__cuda_array_interface__")


class _CustomGradient(autodiff.Function):
    """One call of a `custom_gradient` function: ``forward`` runs it, ``backward`` calls its
    ``grad_fn``. Several outputs travel as one flat array, split again by `unpack`."""

    name = "custom_gradient"

    def __init__(self, f, args, kwargs):
        self.f, self.args, self.kwargs = f, args, kwargs

    def _call_f(self, tensors):
        leaves = iter(tensors)
        args = autodiff._pack(list(self.args), iter(
            next(leaves) if _is_tensor_like(x) else x for x in autodiff._flatten(
                list(self.args))))
        with autodiff.no_grad():  # one recorded op: the inside is not traced
            result = self.f(*args, **self.kwargs)
        if not (isinstance(result, tuple) and len(result) == 2 and callable(result[1])):
            raise TypeError(f"custom_gradient: {getattr(self.f, '__name__', self.f)} must return "
                            "a pair (output, grad_fn). Received: "
                            f"{type(result).__name__}")
        self.output, self.grad_fn = result
        self.single = not isinstance(self.output, (list, tuple, dict))
        return autodiff._flatten(self.output)

    def forward(self, *xs):
        self.inputs = [autodiff.Tensor(x, backend=self.backend) for x in xs]
        outs = [autodiff.convert_to_tensor(o) for o in self._call_f(self.inputs)]
        self.shapes = [o.shape for o in outs]
        if self.single:
            return outs[0].data
        dtypes = {o.dtype for o in outs}
        if len(dtypes) > 1:
            raise TypeError("custom_gradient: several outputs must share one dtype. Received: "
                            f"{[str(o.dtype) for o in outs]}")
        return self.xp.concatenate([o.data.reshape(-1) for o in outs])

    def run_constant(self):
        """No tensor argument: nothing to differentiate, just the value."""
        outs = [autodiff.convert_to_tensor(o) for o in self._call_f([])]
        self.shapes = [o.shape for o in outs]
        return outs[0] if self.single else autodiff.convert_to_tensor(
            np.concatenate([o.numpy().reshape(-1) for o in outs]))

    def unpack(self, out):
        """The output in ``f``'s structure (slices of the flat array for several outputs)."""
        if self.single:
            return out
        pieces, start = [], 0
        for shape in self.shapes:
            size = int(np.prod(shape))
            pieces.append(layout.reshape(out[start:start + size], shape))
            start += size
        return autodiff._pack(self.output, iter(pieces))

    def backward(self, gy):
        upstream = self._upstream(gy)
        with autodiff.no_grad():
            if _upstream_is_keyword(self.grad_fn):
                grads = self.grad_fn(*self.inputs, upstream=upstream)
            else:
                grads = self.grad_fn(upstream)
        grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
        if len(grads) != len(self.inputs):
            raise ValueError(f"custom_gradient: grad_fn of {getattr(self.f, '__name__', 'f')} "
                             f"returned {len(grads)} gradients for {len(self.inputs)} tensor "
                             "arguments. Received: gradients of shapes "
                             f"{[None if g is None else tuple(np.shape(g)) for g in grads]}")
        return tuple(None if g is None else
                     self.backend.asarray(autodiff.raw(g), dtype=x.dtype)
                     for g, x in zip(grads, self.inputs))

    def _upstream(self, gy):
        """The gradient of the output in its structure, as Tensors."""
        if self.single:
            return autodiff.Tensor(gy, backend=self.backend)
        pieces, start = [], 0
        for shape in self.shapes:
            size = int(np.prod(shape))
            piece = gy[start:start + size].reshape(shape)
            pieces.append(autodiff.Tensor(piece, backend=self.backend))
            start += size
        return autodiff._pack(self.output, iter(pieces))


def _upstream_is_keyword(grad_fn):
    """PyTorch style: ``upstream`` is keyword-only (``def grad(*args, upstream)``)."""
    try:
        parameter = inspect.signature(grad_fn).parameters.get("upstream")
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    return parameter is not None and parameter.kind is parameter.KEYWORD_ONLY
