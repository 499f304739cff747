"""`Tensor` and `Variable`: an array on one backend, and a named, mutable, trainable one.

`convert_to_tensor` turns array-likes into Tensors. Python operators on Tensors are wired to
ops in `kerasrs.ops.math` and `kerasrs.ops.layout` (see ``_install_methods`` there).
"""

import numpy as np

from kerasrs import backend as backend_module
from kerasrs import context

_tracers_var = context.tracers  # kerasrs.graph is tracing: host reads and assigns are reported
_remat_state = context.remat_state  # a remat function runs: assigned Variables are noted


class Tensor:
    """An n-dimensional array on one backend, usable with Python operators and `kerasrs.ops`.

    Args:
        data: array-like. Python floats and lists of floats become ``floatx()`` (float32),
            Python ints int32 (int64 if a value needs it); NumPy/CuPy arrays keep their dtype.
        dtype: optional dtype to cast to.

    Attributes:
        data: the backend array (``numpy.ndarray`` or ``cupy.ndarray``).
        backend: the `kerasrs.backend.Backend` that owns ``data``.
    """

    __array_priority__ = 1000  # make ndarray + Tensor call Tensor.__radd__

    def __init__(self, data, dtype=None, backend=None):
        if isinstance(data, Tensor):
            data = data.data
        be = backend or backend_module.backend_of(data)
        if not be.is_array(data):
            data = _to_array(data, be, dtype)
        elif dtype is not None:
            data = data.astype(backend_module.standardize_dtype(dtype), copy=False)
        self.data = data
        self.backend = be

    # -- array-like properties -----------------------------------------------------------------
    shape = property(lambda self: tuple(self.data.shape))
    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: self.data.ndim)
    size = property(lambda self: self.data.size)

    def numpy(self):
        """A host NumPy array with the values (a copy on the GPU, a view on the CPU)."""
        _host_read(self, ".numpy()")
        return self.backend.to_numpy(self.data)

    def item(self):
        _host_read(self, ".item()")
        return self.data.item()

    def __array__(self, dtype=None, copy=None):
        _host_read(self, "np.asarray()")
        arr = self.backend.to_numpy(self.data)
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def __len__(self):
        if self.data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.data.shape[0]

    def __float__(self):
        _host_read(self, "float()")
        return float(self.data)

    def __int__(self):
        _host_read(self, "int()")
        return int(self.data)

    def __bool__(self):
        _host_read(self, "bool()")
        return bool(self.data)

    def _report_host_read(self, how):
        """Tell a graph tracer that this value is read on the host (``how`` describes it)."""
        _host_read(self, how)

    def __repr__(self):
        _host_read(self, "repr()")
        return f"<Tensor shape={self.shape} dtype={self.dtype.name}\n" \
               f"{self.backend.to_numpy(self.data)!r}>"

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    __hash__ = object.__hash__  # comparisons return Tensors, so keep identity hashing

    # Python operators are wired to ops in kerasrs.ops.math (see _install_operators there).


class Variable(Tensor):
    """A named, mutable Tensor holding trainable (or non-trainable) state, as in Keras.

    Args:
        initializer: an initial value (array-like) or a callable ``initializer(shape, dtype)``.
        shape: tuple, needed when ``initializer`` is a callable.
        dtype: dtype name; defaults to ``floatx()`` for float values.
        trainable: bool, whether a `GradientTape` watches it automatically and optimizers update it.
        name: str, the short name (``kernel``, ``bias``, ...).
    """

    def __init__(self, initializer, shape=None, dtype=None, trainable=True, name=None):
        if callable(initializer):
            if shape is None:
                raise ValueError(f"Variable {name!r}: a callable initializer needs `shape`.")
            value = initializer(tuple(shape), dtype=backend_module.standardize_dtype(dtype))
        else:
            value = initializer
        if dtype is None and not hasattr(value, "dtype"):
            dtype = backend_module.floatx()
        be = backend_module.get()
        # C order always: the fused optimizers update variables through flat views (an
        # Orthogonal initializer's QR factor comes in Fortran order)
        # A Tensor's array, never an array's `.data` (NumPy's is a memoryview, which cannot hold
        # bfloat16; CuPy's is its raw memory pointer, not its values)
        try:
            data = _to_array(value.data if isinstance(value, Tensor) else value, be, dtype)
        except (TypeError, ValueError) as e:  # strings or objects for a float dtype
            raise TypeError(_not_numeric_initializer(name, value, _probe_dtype(value))) from e
        kind = data.dtype.kind  # ml_dtypes' bfloat16 and float8 are kind "V" too, unnamed
        if kind in "OSUM" or (kind == "V" and (data.dtype.names or
                                               data.dtype.name.startswith("void"))):
            raise TypeError(_not_numeric_initializer(name, value, data.dtype))
        if not data.flags.c_contiguous:
            data = be.xp.ascontiguousarray(data)
        if shape is not None and tuple(data.shape) != tuple(shape):
            raise ValueError(f"Variable {name!r}: initial value has shape {data.shape}, "
                             f"expected {tuple(shape)}.")
        super().__init__(data, backend=be)
        self.trainable = trainable
        self.name = name or "variable"
        self.path = self.name

    def numpy(self):
        """A host NumPy copy of the values: a snapshot that later updates (optimizers assign
        in place) do not change, as a Keras variable's ``numpy()``."""
        data = self.data
        return data.copy() if isinstance(data, np.ndarray) else self.backend.to_numpy(data)

    def assign(self, value):
        """Overwrite the values in place (the shape and dtype stay). Returns self.

        Raises:
            TypeError: for a value that is not numeric (a str, None, ...).
            ValueError: for a value whose shape is neither the variable's nor ``()``.
        """
        if _tracers_var.get():  # kerasrs.graph is tracing: a graph update, no change now
            return _traced_assign(self, value, "assign")
        if _remat_state.get() is not None:
            _remat_state.get().note(self)
        value = value.data if isinstance(value, Tensor) else value
        array = self._numeric("assign", value)
        if tuple(array.shape) not in (self.shape, ()):
            raise ValueError(f"Variable {self.path!r}: cannot assign a value of shape "
                             f"{tuple(array.shape)} to a variable of shape {self.shape}.")
        self.data[...] = array
        return self

    def _numeric(self, op, value):
        """``value`` as an array of this variable's dtype.

        Raises:
            TypeError: if it is not real numbers (a str, None, complex, ...), or if it holds
                non-integral floats for an integer variable (they would be truncated).
            ValueError: if finite values overflow the variable's float dtype (1e300 in float32).
        """
        try:
            if value is None or isinstance(value, (str, bytes)):
                raise TypeError
            array = value if self.backend.is_array(value) else self.backend.asarray(
                np.asarray(value) if not hasattr(value, "__cuda_array_interface__") else value)
            if array.dtype.kind not in "biuf" and array.dtype.name != "bfloat16":
                raise TypeError
        except (TypeError, ValueError) as e:
            raise TypeError(f"Variable {self.path!r}: {op} needs a numeric value (a number, "
                            f"array or Tensor of real {self.dtype.name} values); "
                            f"{_describe_non_tensor(value)} is not numeric. Received: "
                            f"{value!r}") from e
        return self._cast_checked(op, array)

    def _cast_checked(self, op, array):
        target, xp = self.dtype, self.backend.xp
        if array.dtype == target:
            return array
        source_float = array.dtype.kind == "f" or array.dtype.name == "bfloat16"
        if target.kind in "iub" and source_float and not bool(xp.all(array == xp.trunc(array))):
            raise TypeError(f"Variable {self.path!r}: {op} of non-integral float values into a "
                            f"{target.name} variable would truncate them; round or cast them "
                            f"explicitly first. Received: values of dtype {array.dtype.name}")
        with np.errstate(over="ignore", invalid="ignore"):
            out = array.astype(target)
        if source_float and target.itemsize < array.dtype.itemsize and target.kind == "f" and \
                not bool(xp.all(xp.isfinite(out) | ~xp.isfinite(array))):
            big = float(xp.max(xp.abs(xp.where(xp.isfinite(array), array, 0))))
            raise ValueError(f"Variable {self.path!r}: {op} of values up to {big:g} overflows "
                             f"{target.name} (largest finite value {float(np.finfo(target).max):g})"
                             f". Received: values of dtype {array.dtype.name}")
        return out

    def assign_add(self, delta):
        """Add ``delta`` (this shape, or broadcastable to it) in place. Returns self."""
        if _tracers_var.get():
            return _traced_assign(self, delta, "assign_add")
        if _remat_state.get() is not None:
            _remat_state.get().note(self)
        self.data += self._operand("assign_add", delta)
        return self

    def assign_sub(self, delta):
        """Subtract ``delta`` (this shape, or broadcastable to it) in place. Returns self."""
        if _tracers_var.get():
            return _traced_assign(self, delta, "assign_sub")
        if _remat_state.get() is not None:
            _remat_state.get().note(self)
        self.data -= self._operand("assign_sub", delta)
        return self

    def _operand(self, op, value):
        value = self._numeric(op, value.data if isinstance(value, Tensor) else value)
        try:
            fits = np.broadcast_shapes(value.shape, self.shape) == self.shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"Variable {self.path!r}: {op} needs a value of shape {self.shape} "
                             f"(or broadcastable to it). Received: shape {tuple(value.shape)}")
        return value

    @property
    def value(self):
        return Tensor(self.data, backend=self.backend)

    def __repr__(self):
        return (f"<Variable path={self.path} shape={self.shape} dtype={self.dtype.name} "
                f"trainable={self.trainable}>")


def _host_read(tensor, how):
    """Tell the graph tracers (if any) that ``tensor``'s value is read on the host."""
    tracers = _tracers_var.get()
    if tracers:
        for tracer in tracers:
            tracer.host_read(tensor, how)


def _traced_assign(variable, value, how):
    """``variable.assign``/``assign_add``/``assign_sub`` while a graph tracer records: the
    innermost tracer makes it a graph update (`kerasrs.graph.tracing.Tracer.assign_variable`)."""
    if isinstance(value, (str, bytes)) or value is None:
        variable._numeric(how, value)  # raises the usual TypeError
    _tracers_var.get()[-1].assign_variable(variable, value, how)
    return variable


def _to_array(x, be, dtype=None):
    """A backend array from array-likes; Python floats/lists of floats become floatx()."""
    if dtype is not None:
        dtype = backend_module.standardize_dtype(dtype)
    elif not hasattr(x, "dtype"):
        probe = np.asarray(x)
        dtype = backend_module.standardize_dtype(None) if probe.dtype.kind == "f" else \
            _python_int_dtype(probe) if probe.dtype.kind in "iu" else probe.dtype
    if isinstance(x, np.ndarray) or not hasattr(x, "__cuda_array_interface__"):
        return be.asarray(x, dtype=dtype)
    if be.name == "numpy":
        raise ValueError("Cannot put a GPU array in a NumPy-backend tensor; use "
                         "kerasrs.backend.convert_to_numpy(x) first.")
    return be.asarray(x, dtype=dtype)


def _python_int_dtype(probe):
    """Python ints become int32, as in Keras (NumPy's int64 where a value needs 64 bits)."""
    if probe.size and (probe.max() > 2 ** 31 - 1 or probe.min() < -2 ** 31):
        return probe.dtype
    return np.dtype("int32")


def raw(x):
    """The backend array inside a Tensor (or Variable); anything else as it is. (Not
    ``getattr(x, "data", x)``: a CuPy array's ``.data`` is its memory pointer.)"""
    return x.data if isinstance(x, Tensor) else x


def convert_to_tensor(x, dtype=None):
    """A `Tensor` from a Tensor, backend array, NumPy array, list or scalar (Keras's name)."""
    if isinstance(x, Tensor) and dtype is None:
        return x
    if isinstance(x, Tensor):
        return Tensor(x.data.astype(backend_module.standardize_dtype(dtype), copy=False),
                      backend=x.backend)
    if x is None or isinstance(x, (str, bytes)) or getattr(x, "_kerasrs_symbolic", False):
        raise TypeError(f"convert_to_tensor: {_describe_non_tensor(x)} is not a tensor; pass a "
                        f"Tensor, array, nested list of numbers or a number. Received: {x!r}")
    be = backend_module.get() if not hasattr(x, "dtype") or isinstance(x, np.generic) \
        else backend_module.backend_of(x)
    if isinstance(x, np.ndarray) and be.name != backend_module.backend():
        be = backend_module.get()  # NumPy inputs go to the current default backend
    return Tensor(_to_array(x, be, dtype), backend=be)


def _probe_dtype(value):
    """NumPy's dtype for ``value``, or None where NumPy cannot make an array of it."""
    try:
        return np.asarray(value).dtype
    except (TypeError, ValueError):
        return None


def _not_numeric_initializer(name, value, dtype):
    """The message for a Variable whose initial value is not numbers (strings, objects...)."""
    what = f"values of dtype {dtype.name}" if dtype is not None else _describe_non_tensor(value)
    shown = repr(value)
    return (f"Variable {name or 'variable'!r}: `initializer` must be numbers (a number, an "
            f"array or a Tensor) or a callable initializer(shape, dtype), but it holds {what}. "
            f"Convert the values to a numeric dtype first. Received: "
            f"initializer={shown if len(shown) <= 80 else shown[:77] + '...'}")


def _describe_non_tensor(x):
    if x is None:
        return "None"
    if getattr(x, "_kerasrs_symbolic", False):
        return "a symbolic tensor (from layers.Input: it has no values; call kerasrs.ops on it " \
            "directly or wrap the code in a layer)"
    return f"a {type(x).__name__}"
