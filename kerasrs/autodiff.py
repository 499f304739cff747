"""Reverse-mode automatic differentiation: `Tensor`, `Variable`, `Function` and `GradientTape`.

How a gradient is found (read this once and the rest follows):

1. Every differentiable op is a `Function` subclass. ``forward(*arrays)`` computes the result on
   plain backend arrays and saves on ``self`` what ``backward`` will need; ``backward(gy)`` returns
   one gradient array (or None) per input.
2. ``Function.apply(*inputs)`` runs ``forward`` and, only while a `GradientTape` is recording and an
   input is being watched by it, appends the Function to that tape. Outside a tape nothing is kept:
   the Function is dropped as soon as ``apply`` returns (inference is tape-free).
3. The tape's list is in execution order, which is already a topological order. ``tape.gradient``
   first marks the ops that lead from a source, then walks the list backwards once, calling
   ``backward`` only on those ops (no recursion, so a 10,000-op chain is fine). Gradients of inputs
   that were broadcast are summed back to the input's shape in one place, `sum_to`.

Gradients are first order: ``backward`` works on arrays, not Tensors.
"""

import contextlib
import threading

import numpy as np

from kerasrs import backend as backend_module


class _ThreadState(threading.local):
    """Per-thread recording state, so that ``fit`` in one thread and ``predict`` in another do
    not see each other's tapes."""

    def __init__(self):
        self.tapes = []  # the GradientTapes now recording in this thread, innermost last
        self.autocast = None  # dtype that float Variables are cast to inside a mixed layer call


_local = _ThreadState()


class Tensor:
    """An n-dimensional array on one backend, usable with Python operators and `kerasrs.ops`.

    Args:
        data: array-like. Python floats and lists of floats become ``floatx()`` (float32);
            NumPy/CuPy arrays keep their dtype.
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
        return self.backend.to_numpy(self.data)

    def item(self):
        return self.data.item()

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def __len__(self):
        if self.data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.data.shape[0]

    def __float__(self):
        return float(self.data)

    def __int__(self):
        return int(self.data)

    def __bool__(self):
        return bool(self.data)

    def __repr__(self):
        return f"<Tensor shape={self.shape} dtype={self.dtype.name}\n{self.numpy()!r}>"

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
        data = _to_array(getattr(value, "data", value), be, dtype)
        if not data.flags.c_contiguous:
            data = be.xp.ascontiguousarray(data)
        if shape is not None and tuple(data.shape) != tuple(shape):
            raise ValueError(f"Variable {name!r}: initial value has shape {data.shape}, "
                             f"expected {tuple(shape)}.")
        super().__init__(data, backend=be)
        self.trainable = trainable
        self.name = name or "variable"
        self.path = self.name

    def assign(self, value):
        """Overwrite the values in place (the shape and dtype stay). Returns self.

        Raises:
            TypeError: for a value that is not numeric (a str, None, ...).
            ValueError: for a value whose shape is neither the variable's nor ``()``.
        """
        value = getattr(value, "data", value)
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
        self.data += self._operand("assign_add", delta)
        return self

    def assign_sub(self, delta):
        """Subtract ``delta`` (this shape, or broadcastable to it) in place. Returns self."""
        self.data -= self._operand("assign_sub", delta)
        return self

    def _operand(self, op, value):
        value = self._numeric(op, getattr(value, "data", value))
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


def _to_array(x, be, dtype=None):
    """A backend array from array-likes; Python floats/lists of floats become floatx()."""
    if dtype is not None:
        dtype = backend_module.standardize_dtype(dtype)
    elif not hasattr(x, "dtype"):
        probe = np.asarray(x)
        dtype = backend_module.standardize_dtype(None) if probe.dtype.kind == "f" else probe.dtype
    if isinstance(x, np.ndarray) or not hasattr(x, "__cuda_array_interface__"):
        return be.asarray(x, dtype=dtype)
    if be.name == "numpy":
        raise ValueError("Cannot put a GPU array in a NumPy-backend tensor; use "
                         "kerasrs.backend.convert_to_numpy(x) first.")
    return be.asarray(x, dtype=dtype)


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

    def apply(self, *inputs):
        """Run forward on the inputs (Tensors, arrays or scalars); record it if a tape watches."""
        be = None
        arrays = []
        plain = False  # some input is not a Tensor
        local = _local
        if local.autocast is not None:  # inside a mixed-precision layer call
            inputs = tuple(_autocast(x, local.autocast) if type(x) is Variable and
                           x.data.dtype != local.autocast and x.data.dtype.kind == "f" else x
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
        tapes = local.tapes
        if tapes:
            for tape in tapes:
                tape._record(self, inputs, out)
        if tracers:  # kerasrs.graph is tracing (each tracer ignores other threads' ops)
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
    """In place: float16/bfloat16 arrays become float32. Returns the half dtype, or None."""
    low = None
    for i, a in enumerate(arrays):
        dtype = getattr(a, "dtype", None)
        if dtype is not None and dtype.itemsize == 2 and (dtype.kind == "f" or
                                                          dtype.name == "bfloat16"):
            low = dtype
            arrays[i] = a.astype(np.float32)
    return low


def _describe_non_tensor(x):
    if x is None:
        return "None"
    if getattr(x, "_kerasrs_symbolic", False):
        return "a symbolic tensor (from layers.Input: it has no values; call kerasrs.ops on it " \
            "directly or wrap the code in a layer)"
    return f"a {type(x).__name__}"


class _NotATensor(Exception):
    """Raised by `_convert_plain_inputs` with the index of an input that is no array-like."""


symbolic_hook = [None]  # kerasrs.layers.op_layer installs fn(function, inputs) -> symbolic output

# kerasrs.graph's active tracers: ``apply`` calls ``tracer.record(function, inputs, output)`` on
# each after ``forward`` (the graph package adds and removes them; nothing else touches this).
tracers = []


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


def sum_to(gx, shape):
    """Sum ``gx`` over the axes that broadcasting added or stretched, so it has ``shape``."""
    if gx.shape == shape:
        return gx
    lead = gx.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and gx.shape[i + lead] != 1)
    gx = gx.sum(axis=axes, keepdims=True) if axes else gx
    return gx.reshape(shape)


class GradientTape:
    """Records differentiable ops inside a ``with`` block so gradients can be taken afterwards.

    Trainable `Variable`s are watched automatically (unless ``watch_accessed_variables=False``);
    other tensors are watched with ``tape.watch(t)``. Only ops with a watched input, direct or
    indirect, are recorded. Tapes nest: each records what it watches.

    Args:
        persistent: if False (default) the recorded graph is freed by the first ``gradient`` call
            and a second call raises ``RuntimeError``; if True, ``gradient`` can be called again.
        watch_accessed_variables: watch trainable Variables automatically. Defaults to True.

    Example:
        >>> w = kerasrs.Variable([1.0, 2.0])
        >>> with kerasrs.GradientTape() as tape:
        ...     loss = kerasrs.ops.sum(w * w)
        >>> tape.gradient(loss, w).numpy()
        array([2., 4.], dtype=float32)
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self.persistent = persistent
        self.watch_accessed_variables = watch_accessed_variables
        self._records = []      # (function, inputs, output) in execution order
        self._tracked = {}      # id -> Tensor, for watched tensors and recorded outputs
        self._used = False
        # Optional ``callback(source, gradient_array)``, called during the backward walk as soon
        # as a source's gradient is final (its last consumer is done): kerasrs.distribution
        # starts reducing those gradients while earlier layers still run backward.
        self._on_gradient_ready = None

    def __enter__(self):
        _local.tapes.append(self)
        return self

    def __exit__(self, *exc):
        _local.tapes.remove(self)
        return False

    def watch(self, tensor):
        """Watch a Tensor (or a nested list/tuple/dict of them) so gradients can flow to it."""
        for t in _flatten(tensor):
            if not isinstance(t, Tensor):
                raise TypeError("GradientTape.watch: expected Tensors. Received: "
                                f"{type(t).__name__}")
            self._tracked[id(t)] = t

    def stop_recording(self):
        """Context manager: ops inside the block are not recorded on this tape."""
        return _paused(self)

    def reset(self):
        """Forget everything recorded so far."""
        self._records.clear()
        self._tracked.clear()

    def _watches(self, x):
        if id(x) in self._tracked:
            return True
        if self.watch_accessed_variables and isinstance(x, Variable) and x.trainable:
            self._tracked[id(x)] = x
            return True
        return False

    def _record(self, fn, inputs, out):
        tracked = self._tracked
        for x in inputs:  # (the tracked dict holds its Tensors: no other object has their ids)
            if id(x) in tracked or isinstance(x, Variable) and self._watches(x):
                self._records.append((fn, inputs, out))
                tracked[id(out)] = out
                return

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none"):
        """Gradients of ``target`` with respect to ``sources``.

        Args:
            target: a Tensor (any shape: its gradient seed is ones, i.e. the sum is differentiated)
                or a list of Tensors (their gradients add up).
            sources: a Tensor/Variable or a nested list/tuple/dict of them.
            output_gradients: optional seed(s) with the shape of ``target`` (or a list matching it).
            unconnected_gradients: "none" (default) gives None for a source that ``target`` does
                not depend on; "zero" gives zeros of the source's shape.

        Returns:
            Gradients in the structure of ``sources``, each with its source's shape and dtype.

        Raises:
            RuntimeError: on a second call of a non-persistent tape.
            ValueError: for an unknown ``unconnected_gradients`` or a seed of the wrong shape.
        """
        if unconnected_gradients not in ("none", "zero"):
            raise ValueError("GradientTape.gradient: unconnected_gradients must be 'none' or "
                             f"'zero'. Received: {unconnected_gradients!r}")
        if self._used and not self.persistent:
            raise RuntimeError("GradientTape.gradient can only be called once on a non-persistent "
                               "tape. Use GradientTape(persistent=True) to call it again.")
        flat_sources = _flatten(sources)
        for i, s in enumerate(flat_sources):
            if not isinstance(s, Tensor):
                raise TypeError(f"GradientTape.gradient: every source must be a Tensor or "
                                f"Variable; source {i} is {_describe_non_tensor(s)}. Received: "
                                f"{s!r}")
        grads = self._backprop(target, output_gradients, flat_sources)
        result = []
        for s in flat_sources:
            g = grads.get(id(s)) if _differentiable(s) else None  # integer sources: None (TF)
            if g is None and unconnected_gradients == "zero":
                g = s.backend.xp.zeros(s.shape, s.dtype)
            result.append(None if g is None else _wrap(g, s.backend))
        if not self.persistent:
            self._used = True
            self.reset()
        return _pack(sources, iter(result))

    def _backprop(self, target_structure, output_gradients, sources):
        """The backward walk: returns {id(tensor): gradient array} for the sources."""
        targets = _flatten(target_structure)
        tracked, auto = self._tracked, self.watch_accessed_variables
        reach = set()
        for s in sources:  # unwatched or integer sources get None
            if (id(s) in tracked or auto and isinstance(s, Variable) and s.trainable) and \
                    _differentiable(s):
                reach.add(id(s))
        relevant = []
        for rec in self._records:  # forward sweep: which ops depend on a source
            for x in rec[1]:
                if id(x) in reach:
                    reach.add(id(rec[2]))
                    relevant.append(rec)
                    break
        if output_gradients is None:
            seeds = [None] * len(targets)
        elif isinstance(target_structure, Tensor):  # one target: the seed is one array-like
            seeds = [output_gradients]
        else:
            seeds = _flatten(output_gradients)
        if len(seeds) != len(targets):
            raise ValueError(f"GradientTape.gradient: {len(targets)} targets but {len(seeds)} "
                             "output_gradients.")
        grads = {}
        for t, seed in zip(targets, seeds):
            if not isinstance(t, Tensor) or id(t) not in reach:
                continue
            g = t.backend.xp.ones(t.shape, t.dtype) if seed is None else \
                t.backend.asarray(getattr(seed, "data", seed), dtype=t.dtype)
            if tuple(g.shape) != t.shape:
                raise ValueError(f"GradientTape.gradient: output_gradients shape {g.shape} does "
                                 f"not match target shape {t.shape}.")
            _accumulate(grads, t, g)
        keep = {id(s) for s in sources}
        ready = self._ready_after(relevant, sources) if self._on_gradient_ready else {}
        for i in range(len(relevant) - 1, -1, -1):
            fn, inputs, out = relevant[i]
            key = id(out)
            gy = grads.get(key) if key in keep else grads.pop(key, None)
            if gy is not None:
                # inputs in `reach` are Tensors: only recorded outputs and sources are there
                fn.needs_grad = needs = [id(x) in reach for x in inputs]
                if fn.low_dtype is not None:  # forward ran in float32; cast back below
                    gy = gy.astype(np.float32)
                gxs = fn.backward(gy)
                for x, gx, need in zip(inputs, gxs, needs):
                    if need and gx is not None:
                        _accumulate(grads, x, gx)
            for s in ready.get(i, ()):
                if id(s) in grads:
                    self._on_gradient_ready(s, grads[id(s)])
        return grads

    @staticmethod
    def _ready_after(relevant, sources):
        """{record index: sources whose gradient is final once that record ran backward}: the
        first record (in forward order) that consumes a source is the last one backward reaches."""
        wanted = {id(s): s for s in sources}
        ready = {}
        for i, (_, inputs, _) in enumerate(relevant):
            for x in inputs:
                s = wanted.pop(id(x), None) if isinstance(x, Tensor) else None
                if s is not None:
                    ready.setdefault(i, []).append(s)
        return ready


def _differentiable(x):
    """Float (and complex) tensors carry gradients; integer and bool ones do not (as in TF)."""
    dtype = x.data.dtype
    return dtype.kind in "fc" or dtype.name == "bfloat16"


def _accumulate(grads, x, g):
    """Add ``g``, summed over broadcast axes to ``x``'s shape and cast to its dtype, into
    ``grads[id(x)]`` (runs once per op input in every backward pass)."""
    data = x.data
    if g.shape != data.shape:
        g = sum_to(g, data.shape)
    if g.dtype != data.dtype:
        g = g.astype(data.dtype)
    prev = grads.get(id(x))
    grads[id(x)] = g if prev is None else prev + g


@contextlib.contextmanager
def _paused(tape):
    _local.tapes.remove(tape)
    try:
        yield
    finally:
        _local.tapes.append(tape)


@contextlib.contextmanager
def no_grad():
    """Context manager: nothing inside the block is recorded on any tape (of this thread)."""
    tapes = _local.tapes
    saved = tapes[:]
    tapes.clear()
    try:
        yield
    finally:
        tapes[:] = saved


@contextlib.contextmanager
def autocast_scope(dtype):
    """Inside the block, float `Variable`s entering an op are cast to ``dtype`` (None: off).

    `Layer.__call__` opens it for a layer whose policy computes in a lower precision than its
    variables are stored in (``mixed_float16``); the cast is an op, so gradients reach the
    float32 variable in float32."""
    saved = _local.autocast
    _local.autocast = None if dtype is None else backend_module.standardize_dtype(dtype)
    try:
        yield
    finally:
        _local.autocast = saved


class _AutocastCast(Function):
    def forward(self, x):
        return x.astype(self.dtype)

    def backward(self, gy):
        return (gy.astype(self.source_dtype),)


def _autocast(variable, dtype):
    fn = _AutocastCast()
    fn.dtype, fn.source_dtype = dtype, variable.data.dtype
    saved = _local.autocast
    _local.autocast = None  # the cast itself must see the variable as it is
    try:
        return fn.apply(variable)
    finally:
        _local.autocast = saved


def _flatten(structure):
    """Leaves of a nested list/tuple/dict, in order (dicts by sorted key, as Keras/tree do)."""
    if isinstance(structure, (list, tuple)):
        for item in structure:
            if isinstance(item, _NESTED):
                return [leaf for item in structure for leaf in _flatten(item)]
        return list(structure)
    if isinstance(structure, dict):
        return [leaf for key in sorted(structure) for leaf in _flatten(structure[key])]
    return [structure]


_NESTED = (list, tuple, dict)


def _wrap(array, be):
    """A Tensor on backend array ``array`` of backend ``be``, without `Tensor.__init__`'s
    conversions."""
    out = Tensor.__new__(Tensor)
    out.data, out.backend = array, be
    return out


def _pack(structure, leaves):
    """Rebuild ``structure`` with values taken from the iterator ``leaves``."""
    if type(structure) is list and not any(isinstance(item, _NESTED) for item in structure):
        return [next(leaves) for _ in structure]  # a flat list: no call per leaf
    if isinstance(structure, (list, tuple)):
        items = [_pack(item, leaves) for item in structure]
        if hasattr(structure, "_fields"):  # a namedtuple
            return type(structure)(*items)
        return type(structure)(items)
    if isinstance(structure, dict):
        packed = {key: _pack(structure[key], leaves) for key in sorted(structure)}
        return {key: packed[key] for key in structure}
    return next(leaves)


def value_and_grad(fn, argnums=0, has_aux=False):
    """Return a function computing ``fn(*args)`` and its gradient with respect to some arguments.

    Args:
        fn: a function of Tensors returning a Tensor (or ``(value, aux)`` with ``has_aux=True``).
        argnums: int or tuple of ints: which positional arguments to differentiate.
        has_aux: whether ``fn`` returns ``(value, aux)``; aux is returned but not differentiated.

    Returns:
        A function ``(*args) -> (value, grads)``; grads is one gradient (int argnums) or a tuple,
        each in the structure of its argument. With has_aux: ``((value, aux), grads)``.
    """
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)

    def wrapped(*args, **kwargs):
        args = list(args)
        for i in nums:
            args[i] = _pack(args[i], iter([convert_to_tensor(a) for a in _flatten(args[i])]))
        with GradientTape() as tape:
            tape.watch([args[i] for i in nums])
            out = fn(*args, **kwargs)
        value = out[0] if has_aux else out
        grads = tape.gradient(value, [args[i] for i in nums])
        return out, (grads[0] if single else tuple(grads))

    return wrapped
