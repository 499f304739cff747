"""`Function`: one application of a differentiable op, and how it joins the tapes.

``forward(*arrays)`` computes the result on plain backend arrays and saves on ``self`` what
``backward(gy)`` will need; ``apply(*inputs)`` runs it and, only while a `GradientTape` is
recording and watches an input, appends it to that tape (see `kerasrs.autodiff.tape`).
"""

import numpy as np

from kerasrs import backend as backend_module
from kerasrs import context
from kerasrs.autodiff.tensor import Tensor, Variable, _describe_non_tensor, _to_array

_tapes_var, _autocast_var = context.tapes, context.autocast  # read on every op: one lookup
_tracers_var = context.tracers


class Function:
    """One application of a differentiable op. Subclasses define ``forward`` and ``backward``.

    ``forward(*arrays) -> array`` and ``backward(gy) -> tuple`` (one array or None per input) see
    backend arrays only. ``self.xp`` is the array module and ``self.backend`` the Backend.
    During ``backward``, ``self.needs_grad[i]`` says whether input ``i`` needs a gradient, so a
    Function can skip work (e.g. matmul computes only the gradients asked for).
    """

    name = None  # shown in errors; defaults to the class name in lower case
    # Half-precision inputs (float16/bfloat16) are computed in float32 and the result cast back:
    # "always" for reductions, softmax and normalization statistics (a float16 sum of 70,000
    # ones overflows), "cpu" for GEMMs (NumPy's float16 matmul is ~250x slower than float32).
    half_in_float32 = None
    low_dtype = None
    # A Function whose forward can write its result into a given array says so (`writes_out`),
    # and one whose backward can write some inputs' gradients so lists them
    # (`writes_grad_out`: input positions). A replay plan (`kerasrs.graph.program`) then sets
    # ``out`` (and ``grad_out``: one array or None per input) to buffers it keeps across steps,
    # of the planned shapes and dtypes. The Function uses one when the dtype and shape match
    # and returns it (or a reshaped view of it); else it allocates as usual.
    writes_out = False
    writes_grad_out = ()
    out = None
    grad_out = None

    def apply(self, *inputs):
        """Run forward on the inputs (Tensors, arrays or scalars); record it if a tape watches."""
        be = None
        arrays = []
        plain = False  # some input is not a Tensor
        autocast = _autocast_var.get()
        if autocast is not None:  # inside a mixed-precision layer call
            inputs = tuple(_autocast(x, autocast) if type(x) is Variable and
                           x.data.dtype != autocast and x.data.dtype.kind == "f" else x
                           for x in inputs)
        for x in inputs:
            if isinstance(x, Tensor):
                if be is None:
                    be = x.backend
                elif x.backend is not be:
                    raise ValueError(f"{self._name()}: inputs live on different backends "
                                     f"({be.name} and {x.backend.name}); move them to one "
                                     "backend first.")
                arrays.append(x.data)
            else:
                arrays.append(x)
                plain = True
        if be is None:
            be = backend_module.get()
        if plain:
            try:
                _convert_plain_inputs(arrays, be)
            except _NotATensor as e:
                return self._not_a_tensor(inputs, e.args[0])
        self.backend = be
        self.xp = be.xp
        low = None
        if self.half_in_float32 and (self.half_in_float32 == "always" or be.name == "numpy"):
            low = _upcast_half(arrays)
        try:
            y = self.forward(*arrays)
        except (ValueError, TypeError, IndexError) as e:
            shapes = ", ".join(str(tuple(np.shape(a))) for a in arrays)
            message = f"{self._name()}: {e}. Received: input shapes {shapes}"
            try:
                error = type(e)(message)
            except Exception:  # e.g. NumPy's _UFuncNoLoopError needs other arguments
                error = next(c for c in (IndexError, TypeError, ValueError) if isinstance(e, c))(
                    message)
            raise error from e
        if low is not None:
            self.low_dtype = low  # the backward walk hands gy over in float32 (see _backprop)
            if getattr(y, "dtype", low).kind == "f" and y.dtype.itemsize > 2:
                y = y.astype(low)
        if type(y) is be.array_type:  # the common case: skip Tensor.__init__'s conversions
            out = Tensor.__new__(Tensor)
            out.data, out.backend = y, be
        else:  # e.g. a NumPy scalar from a full reduction
            out = Tensor(y, backend=be)
        tapes = _tapes_var.get()
        if tapes:
            for tape in tapes:
                tape._record(self, inputs, out)
        tracers = _tracers_var.get()
        if tracers:  # kerasrs.graph is tracing (kerasrs.graph.tracing)
            for tracer in tracers:
                tracer.record(self, inputs, out)
        return out

    def forward(self, *xs):
        raise NotImplementedError

    def backward(self, gy):
        raise NotImplementedError

    def _name(self):
        return self.name or type(self).__name__.lower()

    def _not_a_tensor(self, inputs, index):
        """A symbolic input goes to the symbolic hook (it records an op node for a functional
        model); a str or None is refused with a TypeError naming the op."""
        x = inputs[index]
        if getattr(x, "_kerasrs_symbolic", False) and symbolic_hook[0] is not None:
            return symbolic_hook[0](self, inputs)
        raise TypeError(f"{self._name()}: input {index} must be a tensor (a Tensor, array, nested "
                        f"list of numbers or a number); {_describe_non_tensor(x)} is not a "
                        f"tensor. Received: {x!r}")


def _upcast_half(arrays):
    """In place: float16/bfloat16 arrays become float32. Returns the half dtype the result
    goes back to: None if no input was half, or if the half inputs differ or meet a wider
    float (then the promoted result is at least float32: float16 x float64 is float64)."""
    low, mixed = None, False
    for i, a in enumerate(arrays):
        dtype = getattr(a, "dtype", None)
        if dtype is None:
            continue
        if dtype.itemsize == 2 and (dtype.kind == "f" or dtype.name == "bfloat16"):
            mixed = mixed or (low is not None and low != dtype)
            low = dtype
            arrays[i] = a.astype(np.float32)
        elif dtype.kind in "fc":
            mixed = True
    return None if mixed else low


class _NotATensor(Exception):
    """Raised by `_convert_plain_inputs` with the index of an input that is no array-like."""


symbolic_hook = [None]  # kerasrs.layers.op_layer installs fn(function, inputs) -> symbolic output


def _convert_plain_inputs(arrays, be):
    """In place: NumPy arrays and lists join backend ``be``; Python scalars stay scalars (NEP 50
    keeps the tensor's dtype), except Python floats next to bfloat16, which ml_dtypes would
    promote to float32: they become 0-d bfloat16 arrays. None, strings and symbolic tensors
    raise `_NotATensor`."""
    for i, x in enumerate(arrays):
        if isinstance(x, (int, float, bool)):
            if type(x) is float:
                low = next((a.dtype for a in arrays if getattr(a, "dtype", None) is not None
                            and a.dtype.name == "bfloat16"), None)
                if low is not None:
                    arrays[i] = be.asarray(x, dtype=low)
        elif not be.is_array(x):
            if x is None or isinstance(x, (str, bytes)) or getattr(x, "_kerasrs_symbolic", 0):
                raise _NotATensor(i)
            arrays[i] = _to_array(x, be)


class _AutocastCast(Function):
    """The cast of a float32 Variable to a mixed-precision layer's compute dtype: gradients
    reach the variable in its own dtype."""

    def forward(self, x):
        return x.astype(self.dtype)

    def backward(self, gy):
        return (gy.astype(self.source_dtype),)


def _autocast(variable, dtype):
    fn = _AutocastCast()
    fn.dtype, fn.source_dtype = dtype, variable.data.dtype
    token = _autocast_var.set(None)  # the cast itself must see the variable as it is
    try:
        return fn.apply(variable)
    finally:
        _autocast_var.reset(token)
