"""A test-only stand-in for CuPy: enough of its API for `CupyBackend` and the CUDA launchers to
run unchanged on a machine without a GPU.

Installed as ``cupy`` only inside `installed()` (the ``cupy_standin`` fixture); it is never on
a user's import path. What it keeps of a GPU:

* `ndarray` holds a NumPy array but is a different type: ``numpy.asarray(device)`` raises,
  and mixing a host ``numpy.ndarray`` with a device array in an operator, a ufunc or a cupy
  function raises ``TypeError``, so a missing transfer is caught. Copies are explicit
  (`asarray`, `asnumpy`, ``.get()``, ``.set()``, ``float()``, ``.item()``) and counted in
  `stats`, so a test can bound the device-to-host copies of a training step.
* `empty` returns memory filled with 0xFF bytes (NaN for floats, -1 for ints), as a GPU's is
  garbage: a kernel that leaves part of its output unwritten (a grid that is too small) shows.
* `RawModule` compiles the given ``.cu`` source with g++ and the CPU runner of
  ``tests/cuda/cuda_cpu.h``; a launch checks grid, block and shared memory against a GPU's
  limits and each argument against the kernel's C++ signature (count, scalar type, device
  array, C-contiguity).
* `ElementwiseKernel` compiles its C++ body with g++ too (``T``-typed parameters only).
* ``RawKernel(code, name, options=...)`` (a kernel from source, as kerasrs.graph generates) is
  built like a `RawModule` of one kernel; `launched` counts the launches per kernel name.
* Streams, events, pinned memory and ``cuda.Device`` exist and do nothing: everything runs in
  order on the CPU. Stream capture (``begin_capture``/``end_capture`` -> ``cuda.Graph``)
  records the device operations and replays them on ``launch()`` (capture.py).

Random numbers come from NumPy's PCG64 on a seed different from NumPy's, as CuPy's generator
gives other numbers than NumPy's for the same seed.
"""

import collections
import contextlib
import ctypes
import hashlib
import importlib.util
import operator
import pathlib
import sys
import types

import numpy as np

from kerasrs.backend import kernels

HERE = pathlib.Path(__file__).resolve().parent
stats = {"d2h": 0, "h2d": 0, "launches": 0}  # copies and kernel launches since reset_stats()
launched = collections.Counter()  # RawKernel launches per kernel name since reset_stats()


def reset_stats():
    for k in stats:
        stats[k] = 0
    launched.clear()
    _capture().stats["graph_launches"] = 0


def _capture():
    """capture.py (stream capture and graphs), imported once as ``standin_capture``."""
    mod = sys.modules.get("standin_capture")
    if mod is None:
        spec = importlib.util.spec_from_file_location("standin_capture", HERE / "capture.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules["standin_capture"] = mod
    return mod


def _cpu_cuda():
    """tests/cuda/cpu_cuda.py (the g++ builder of the CUDA sources), imported once."""
    mod = sys.modules.get("cpu_cuda")
    if mod is None:
        spec = importlib.util.spec_from_file_location("cpu_cuda", HERE.parent / "cuda" /
                                                      "cpu_cuda.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules["cpu_cuda"] = mod
    return mod


# -- moving values between the stand-in and NumPy ------------------------------------------------
def _host_error(where):
    return TypeError(f"{where}: got a host numpy.ndarray where a device (cupy) array is "
                     "expected; copy it with cupy.asarray first (CuPy does not convert "
                     "implicitly)")


# Functions and methods whose arguments after the array are axes, shapes or counts: CuPy reads
# those as Python sequences, so a host integer array is fine there.
SHAPE_ARGUMENTS = frozenset((
    "transpose", "reshape", "broadcast_to", "tile", "squeeze", "expand_dims", "moveaxis",
    "swapaxes", "sum", "mean", "max", "min", "prod", "any", "all", "std", "var", "argmax",
    "argmin", "cumsum", "zeros", "ones", "full", "empty", "flip", "roll", "pad", "repeat",
    "split", "array_split"))


def _unwrap(x, where, keep, shape_ok=False):
    """NumPy value for ``x``: device arrays unwrapped (and remembered in ``keep``), lists and
    tuples walked; a host array raises, except an integer one where ``shape_ok``."""
    if isinstance(x, ndarray):
        keep[id(x._a)] = x
        return x._a
    if isinstance(x, np.ndarray):
        if shape_ok and x.dtype.kind in "iu" and x.ndim <= 2:
            return x.tolist()
        raise _host_error(where)
    if type(x) in (list, tuple):
        return type(x)(_unwrap(v, where, keep, shape_ok) for v in x)
    return x


def _unwrap_call(name, args, kwargs, keep, first_is_array):
    """``args`` and ``kwargs`` of cupy function or method ``name`` unwrapped."""
    ok = name in SHAPE_ARGUMENTS
    where = f"cupy.{name}"
    args = [_unwrap(a, where, keep, ok and (i > 0 or not first_is_array))
            for i, a in enumerate(args)]
    return args, {k: _unwrap(v, where, keep, ok) for k, v in kwargs.items()}


def _wrap(r, keep):
    """Device value for a NumPy result: an input's own array comes back as that input."""
    if isinstance(r, np.ndarray):
        w = keep.get(id(r))
        return ndarray._of(r) if w is None else w
    if isinstance(r, np.generic):  # CuPy's reductions return 0-d arrays, not scalars
        return ndarray._of(np.asarray(r))
    if type(r) in (list, tuple):
        return type(r)(_wrap(v, keep) for v in r)
    if isinstance(r, tuple) and hasattr(r, "_fields"):  # linalg's named results
        return type(r)(*(_wrap(v, keep) for v in r))
    return r


def _call(fn, name, args, kwargs, first_is_array=True, keep=None):
    keep = {} if keep is None else keep
    args, kwargs = _unwrap_call(name, args, kwargs, keep, first_is_array)
    return _wrap(_capture().call(fn, args, kwargs), keep)


def _device_function(fn, name):
    if isinstance(fn, np.ufunc):
        return _Ufunc(fn)

    def f(*args, **kwargs):
        return _call(fn, name, args, kwargs)
    f.__name__ = f.__qualname__ = name
    return f


class _Ufunc:
    """A NumPy ufunc on device arrays, with its methods (``outer``, ``reduce``, ``at``...)."""

    def __init__(self, ufunc):
        self._u = ufunc
        self.__name__ = ufunc.__name__

    def __call__(self, *args, **kwargs):
        return _call(self._u, self.__name__, args, kwargs)

    def __getattr__(self, name):
        attr = getattr(self._u, name)
        return _device_function(attr, f"{self.__name__}.{name}") if callable(attr) else attr


class _MemoryPointer:
    def __init__(self, a):
        self.ptr = a.ctypes.data


class ndarray:
    """A device array: a NumPy array behind a type of its own (see the module docstring)."""

    __slots__ = ("_a", "__weakref__")
    __array_priority__ = 100
    __hash__ = None

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        if memptr is not None or strides is not None:
            raise NotImplementedError("the stand-in's ndarray() takes shape, dtype, order")
        self._a = _garbage(np.empty(shape, dtype, order=order))

    @classmethod
    def _of(cls, a):
        self = object.__new__(cls)
        self._a = a
        return self

    # attributes that do not touch the data
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    data = property(lambda self: _MemoryPointer(self._a))
    T = property(lambda self: ndarray._of(self._a.T))
    device = property(lambda self: Device(0))

    @property
    def __cuda_array_interface__(self):
        a = self._a
        return {"shape": a.shape, "typestr": a.dtype.str, "data": (a.ctypes.data, False),
                "strides": None if a.flags.c_contiguous else a.strides, "version": 3}

    def __getattr__(self, name):
        if name.startswith("__") or name in ("ctypes", "base", "tofile", "tobytes"):
            # NumPy's array interfaces and raw host pointers would let NumPy read the
            # "device" memory without a copy
            raise AttributeError(f"'cupy.ndarray' object has no attribute {name!r}")
        attr = getattr(self._a, name)
        if not callable(attr):
            return _wrap(attr, {})

        def method(*args, **kwargs):
            return _call(attr, name, args, kwargs, False, {id(self._a): self})
        return method

    # -- explicit copies (counted) ---------------------------------------------------------
    def get(self, stream=None, order="C", out=None, blocking=True):
        """A host copy (device to host)."""
        _capture().forbid("a device-to-host copy")
        stats["d2h"] += 1
        if out is not None:
            out[...] = self._a
            return out
        return np.array(self._a, order=order)

    def set(self, arr, stream=None):
        """Copy host array ``arr`` (same shape and dtype) into this array."""
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"ndarray.set takes a numpy.ndarray. Received {type(arr).__name__}")
        if arr.shape != self.shape or arr.dtype != self.dtype:
            raise ValueError(f"ndarray.set: shape/dtype {arr.shape} {arr.dtype} differ from the "
                             f"array's {self.shape} {self.dtype}")
        _capture().forbid("a host-to-device copy")
        stats["h2d"] += 1
        self._a[...] = arr

    def _d2h(self):
        _capture().forbid("a device-to-host copy")
        stats["d2h"] += 1
        return self._a

    def item(self, *args):
        return self._d2h().item(*args)

    def tolist(self):
        return self._d2h().tolist()

    def __float__(self):
        return float(self._d2h())

    def __int__(self):
        return int(self._d2h())

    def __index__(self):
        return operator.index(self._d2h())

    def __bool__(self):
        return bool(self._d2h())

    def __complex__(self):
        return complex(self._d2h())

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use "
                        "`.get()` to construct a NumPy array explicitly.")

    # -- NumPy protocols: np.ufunc(device) and np.function(device) run on the device ----------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _call(getattr(ufunc, method), ufunc.__name__, inputs, kwargs)

    def __array_function__(self, func, types_, args, kwargs):
        return _call(func, func.__name__, args, kwargs)

    # -- container -------------------------------------------------------------------------
    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, key):
        return _wrap(_capture().call(operator.getitem, (self._a, self._key(key)), {}),
                     {id(self._a): self})

    def __setitem__(self, key, value):
        if isinstance(value, np.ndarray):  # CuPy copies a host value over
            _capture().forbid("a host-to-device copy")
            stats["h2d"] += 1
        else:
            value = _unwrap(value, "cupy.ndarray.__setitem__", {})
        _capture().call(operator.setitem, (self._a, self._key(key), value), {})

    @staticmethod
    def _key(key):
        keys = key if type(key) is tuple else (key,)
        if any(isinstance(k, np.ndarray) for k in keys):
            _capture().forbid("a host-to-device copy")
            stats["h2d"] += 1  # CuPy copies a host index array to the device
        keys = tuple(k._a if isinstance(k, ndarray) else k for k in keys)
        return keys if type(key) is tuple else keys[0]

    def __repr__(self):
        return f"standin.ndarray({self._a!r})"

    def __copy__(self):
        return ndarray._of(self._a.copy())

    def __deepcopy__(self, memo):
        return ndarray._of(self._a.copy())


def _binary(op, reflected=False):
    def f(self, other):
        keep = {id(self._a): self}
        other = _unwrap(other, f"cupy.ndarray.{op.__name__}", keep)
        args = (other, self._a) if reflected else (self._a, other)
        return _wrap(_capture().call(op, args, {}), keep)
    return f


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_", "or_",
              "xor", "lshift", "rshift"):
    _dunder = _name.rstrip("_")
    setattr(ndarray, f"__{_dunder}__", _binary(getattr(operator, _name)))
    setattr(ndarray, f"__r{_dunder}__", _binary(getattr(operator, _name), reflected=True))
    setattr(ndarray, f"__i{_dunder}__", _binary(getattr(operator, f"i{_dunder}")))
for _name in ("lt", "le", "eq", "ne", "gt", "ge"):
    setattr(ndarray, f"__{_name}__", _binary(getattr(operator, _name)))
for _name in ("neg", "pos", "abs", "invert"):
    setattr(ndarray, f"__{_name}__",
            (lambda op: lambda self: ndarray._of(np.asarray(_capture().call(op, (self._a,), {}))))(
                getattr(operator, _name)))


def _garbage(a):
    """``a`` filled as unwritten GPU memory might be: NaN floats, -1 ints, True bools."""
    if a.size:
        a.fill(np.nan if a.dtype.kind in "fc" else True if a.dtype.kind == "b" else
               np.iinfo(a.dtype).max if a.dtype.kind == "u" else -1)
    return a


# -- array creation and transfer ----------------------------------------------------------------
def asarray(a, dtype=None, order=None, blocking=False):
    """A device array: ``a`` itself when it is one (cast when ``dtype`` differs); a host
    array, list or scalar is copied to the device."""
    if isinstance(a, ndarray):
        return a if dtype is None or np.dtype(dtype) == a.dtype else \
            ndarray._of(_capture().call(np.asarray, (a._a, dtype), {}))
    return array(a, dtype=dtype, order=order or "K")


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, blocking=False):
    if isinstance(obj, ndarray):
        return ndarray._of(_capture().call(np.array, (obj._a,), dict(dtype=dtype, order=order,
                                                                      ndmin=ndmin)))
    _capture().forbid("a host-to-device copy")
    host = np.array(_unwrap(obj, "cupy.array", {}) if type(obj) in (list, tuple) else obj,
                    dtype=dtype, order=order, ndmin=ndmin)
    if isinstance(obj, np.ndarray):
        stats["h2d"] += 1
    return ndarray._of(host)


def asnumpy(a, stream=None, order="C", out=None, blocking=True):
    """A host copy of device array ``a``; host values pass through ``numpy.asarray``."""
    if isinstance(a, ndarray):
        return a.get(stream=stream, order=order, out=out)
    return np.asarray(a, order=order)


def empty(shape, dtype=float, order="C"):
    return ndarray._of(_garbage(np.empty(shape, dtype, order=order)))


def empty_like(a, dtype=None, order="K", subok=None, shape=None):
    if not isinstance(a, ndarray):
        raise _host_error("cupy.empty_like") if isinstance(a, np.ndarray) else \
            TypeError("cupy.empty_like takes a cupy.ndarray")
    return ndarray._of(_garbage(np.empty_like(a._a, dtype=dtype, order=order, shape=shape)))


def get_array_module(*args):
    return sys.modules[__name__] if any(isinstance(a, ndarray) for a in args) else np


def __getattr__(name):
    """Everything else is NumPy's, run on device arrays (a host array raises); classes (dtypes)
    and constants are NumPy's own, as in CuPy."""
    attr = getattr(np, name)
    if isinstance(attr, type) or not callable(attr):
        return attr
    fn = _device_function(attr, name)
    globals()[name] = fn
    return fn


# -- kernels ------------------------------------------------------------------------------------
GRID_LIMITS = (2 ** 31 - 1, 65535, 65535)
BLOCK_LIMITS = (1024, 1024, 64)
MAX_THREADS = 1024
MAX_SHARED = 48 * 1024


def _dims(what, dims, limits):
    if not isinstance(dims, tuple) or not 1 <= len(dims) <= 3 or \
            not all(isinstance(d, (int, np.integer)) for d in dims):
        raise TypeError(f"{what} must be a tuple of 1 to 3 ints. Received {dims!r}")
    dims = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    if any(not 1 <= d <= m for d, m in zip(dims, limits)):
        raise ValueError(f"{what} {dims} outside a GPU's limits {limits} (CUDA error: invalid "
                         "configuration argument)")
    return dims


class RawKernel:
    """One kernel of a `RawModule`, or ``cupy.RawKernel(code, name, options=...)`` (built as a
    module of that one kernel): ``kernel(grid, block, args, shared_mem=0, stream=None)``."""

    def __init__(self, code, name=None, options=(), backend="nvrtc", translate_cucomplex=False,
                 *, enable_cooperative_groups=False, jitify=False):
        if name is None and not isinstance(code, str):  # RawModule.get_function's
            function = code
        else:
            if not isinstance(code, str) or not isinstance(name, str):
                raise TypeError(f"RawKernel(code, name): code and name are str. Received "
                                f"{type(code).__name__}, {type(name).__name__}")
            if not isinstance(options, tuple) or not all(isinstance(o, str) for o in options):
                raise TypeError(f"RawKernel: options must be a tuple of str. Received "
                                f"{options!r}")
            function = RawModule(code=code, options=options,
                                 name_expressions=[name])._module.get_function(name)
        self._function = function
        self.name = function.expr

    def __call__(self, grid, block, args, *, shared_mem=0, stream=None):
        grid = _dims(f"{self.name}: grid", grid, GRID_LIMITS)
        block = _dims(f"{self.name}: block", block, BLOCK_LIMITS)
        if np.prod(block) > MAX_THREADS:
            raise ValueError(f"{self.name}: {np.prod(block)} threads per block (at most "
                             f"{MAX_THREADS})")
        if not 0 <= shared_mem <= MAX_SHARED:
            raise ValueError(f"{self.name}: shared_mem={shared_mem} (at most {MAX_SHARED})")
        if not isinstance(args, tuple):
            raise TypeError(f"{self.name}: args must be a tuple. Received {type(args).__name__}")
        host = []
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray):
                raise _host_error(f"{self.name}: argument {i}")
            host.append(a._a if isinstance(a, ndarray) else a)
        _capture().call(self._function, (grid, block, tuple(host)), {})
        stats["launches"] += 1
        launched[self.name] += 1


class RawModule:
    """``cupy.RawModule(code=..., options=..., name_expressions=...)``, built by g++ over the
    CPU runner (tests/cuda/cuda_cpu.h) instead of NVRTC."""

    def __init__(self, code=None, path=None, options=(), backend="nvrtc",
                 translate_cucomplex=False, jitify=False, name_expressions=None):
        if code is None or not name_expressions:
            raise NotImplementedError("the stand-in's RawModule takes code= and "
                                      "name_expressions=")
        cpu_cuda = _cpu_cuda()
        regs = "".join(f'static int kr_reg_{i} = kr_register("{e}", &{e});\n'
                       for i, e in enumerate(name_expressions))
        src = f'#include "{cpu_cuda.HEADER}"\n{code}\n{regs}'
        # named as tests/cuda names a kernel file's library, so both share the built copy
        label = next((n for n, e in kernels.FILES.items() if tuple(e) == tuple(name_expressions)),
                     "module-" + hashlib.sha256(code.encode()).hexdigest()[:8])
        self._module = cpu_cuda.CpuModule(cpu_cuda.build_source(label, src))
        self.name_expressions = tuple(name_expressions)

    def get_function(self, name):
        if name not in self.name_expressions:
            raise KeyError(f"{name!r} is not among the module's name_expressions")
        return RawKernel(self._module.get_function(name))


_CTYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double",
           np.dtype(np.int32): "int", np.dtype(np.int64): "long long"}


class ElementwiseKernel:
    """``cupy.ElementwiseKernel(in_params, out_params, operation, name)`` for parameters of
    the generic type ``T``: the operation is compiled as C++ by g++ once per dtype; inputs
    broadcast, outputs are allocated (or passed after the inputs)."""

    def __init__(self, in_params, out_params, operation, name="kernel", **kwargs):
        self.in_names = self._names(in_params)
        self.out_names = self._names(out_params)
        self.operation, self.name = operation, name
        self._libs = {}

    @staticmethod
    def _names(params):
        names = []
        for p in params.split(","):
            t, n = p.split()
            if t != "T":
                raise NotImplementedError(f"the stand-in takes only T parameters. Got {p!r}")
            names.append(n)
        return names

    def _lib(self, dtype):
        lib = self._libs.get(dtype)
        if lib is None:
            ins = "".join(f", const T* kr_in_{n}" for n in self.in_names)
            outs = "".join(f", T* kr_out_{n}" for n in self.out_names)
            loads = "".join(f"const T {n} = kr_in_{n}[i]; " for n in self.in_names) + \
                "".join(f"T& {n} = kr_out_{n}[i]; " for n in self.out_names)
            src = (f"#include <cmath>\nusing namespace std;\ntypedef {_CTYPES[dtype]} T;\n"
                   f'extern "C" __attribute__((visibility("default"))) void kr_elementwise('
                   f"long long n{ins}{outs}) {{\n  for (long long i = 0; i < n; ++i) "
                   f"{{ {loads}{self.operation}; }}\n}}\n")
            lib = ctypes.CDLL(str(_cpu_cuda().build_source(f"elementwise-{self.name}", src)))
            self._libs[dtype] = lib
        return lib

    def __call__(self, *args, size=None, stream=None):
        n_in = len(self.in_names)
        if len(args) not in (n_in, n_in + len(self.out_names)):
            raise TypeError(f"{self.name}: {n_in} inputs (and optionally "
                            f"{len(self.out_names)} outputs). Received {len(args)} arguments")
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray):
                raise _host_error(f"{self.name}: argument {i}")
        arrays = [a for a in args[:n_in] if isinstance(a, ndarray)]
        dtypes = {a.dtype for a in arrays}
        if len(dtypes) != 1:
            raise TypeError(f"{self.name}: the T parameters have dtypes {sorted(map(str, dtypes))}"
                            " (Type is mismatched)")
        dtype = dtypes.pop()
        if dtype not in _CTYPES:
            raise TypeError(f"{self.name}: dtype {dtype} not supported by the stand-in")
        raw = [a._a if isinstance(a, ndarray) else np.asarray(a, dtype) for a in args[:n_in]]
        shape = np.broadcast_shapes(*(a.shape for a in raw))
        if len(args) > n_in:
            outs = list(args[n_in:])
            for o in outs:
                if not isinstance(o, ndarray) or o.shape != shape or o.dtype != dtype or \
                        not o.flags.c_contiguous:
                    raise ValueError(f"{self.name}: an output must be a C-contiguous {dtype} "
                                     f"device array of shape {shape}")
        else:
            outs = [empty(shape, dtype) for _ in self.out_names]
        stats["launches"] += 1
        _capture().call(self._launch, (dtype, raw, [o._a for o in outs]), {})
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _launch(self, dtype, raw, outs):
        ins = [np.ascontiguousarray(a, dtype) for a in np.broadcast_arrays(*raw)]
        ptr = lambda a: ctypes.c_void_p(a.ctypes.data)
        self._lib(dtype).kr_elementwise(ctypes.c_longlong(int(np.prod(ins[0].shape))),
                                        *map(ptr, ins), *map(ptr, outs))


# -- cupy.cuda: device, streams, events, pinned memory -----------------------------------------
class Device:
    def __init__(self, device=None):
        self.id = 0 if device is None else int(device)
        if self.id != 0:
            raise RuntimeError(f"CUDA error: invalid device ordinal {self.id} (the stand-in has "
                               "one device)")
        self.compute_capability = "90"

    def use(self):
        return self

    def synchronize(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Stream:
    null = None

    def __init__(self, null=False, non_blocking=False, ptr=0):
        self.ptr = ptr

    def synchronize(self):
        pass

    def begin_capture(self, mode=None):
        """Record what runs from now (capture.py); ``end_capture`` gives the ``Graph``."""
        _capture().begin()

    def end_capture(self):
        return _capture().end()

    def is_capturing(self):
        return _capture().capturing()

    def use(self):
        _current_stream[-1] = self
        return self

    def record(self, event=None):
        event = event or Event()
        event.record(self)
        return event

    def wait_event(self, event):
        pass

    def __enter__(self):
        _current_stream.append(self)
        return self

    def __exit__(self, *exc):
        _current_stream.pop()
        return False


class Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.done = True

    def record(self, stream=None):
        pass

    def synchronize(self):
        pass


Stream.null = Stream(null=True)
_current_stream = [Stream.null]


def get_current_stream():
    return _current_stream[-1]


def alloc_pinned_memory(size):
    """Page-locked host memory: here a plain writable host buffer."""
    return bytearray(size)


class _MemoryPool:
    def malloc(self, size):
        raise NotImplementedError("the stand-in allocates with NumPy; the pool only counts")

    def free_all_blocks(self, stream=None):
        pass

    def used_bytes(self):
        return 0

    def total_bytes(self):
        return 0


_pool, _pinned_pool = _MemoryPool(), _MemoryPool()


def get_default_memory_pool():
    return _pool


def get_default_pinned_memory_pool():
    return _pinned_pool


cuda = types.ModuleType("cupy.cuda", "The stand-in's cupy.cuda.")
cuda.Device, cuda.Stream, cuda.Event = Device, Stream, Event
cuda.get_current_stream, cuda.alloc_pinned_memory = get_current_stream, alloc_pinned_memory
cuda.runtime = types.SimpleNamespace(getDeviceCount=lambda: 1)
cuda.MemoryPool, cuda.Graph = _MemoryPool, _capture().Graph
capture_stats = _capture().stats  # {"graph_launches": n} since reset_stats()
cuda.using_allocator = lambda allocator=None: contextlib.nullcontext()


lib = types.ModuleType("cupy.lib", "The stand-in's cupy.lib.")
lib.stride_tricks = types.SimpleNamespace(as_strided=_device_function(
    np.lib.stride_tricks.as_strided, "lib.stride_tricks.as_strided"))


# -- cupy.random and cupyx ----------------------------------------------------------------------
class _Generator:
    """``cupy.random.Generator``: NumPy's PCG64 on a seed other than NumPy's, results on the
    device."""

    def __init__(self, seed=None):
        seq = np.random.SeedSequence(None if seed is None else [0x5EED, seed])
        self._g = np.random.Generator(np.random.PCG64(seq))

    def __getattr__(self, name):
        return _device_function(getattr(self._g, name), f"random.Generator.{name}")


random = types.ModuleType("cupy.random", "The stand-in's cupy.random.")
random.default_rng = _Generator


def scatter_add(a, slices, value):
    """``cupyx.scatter_add``: ``a[slices] += value`` summing over repeated indices."""
    keep = {}
    _capture().call(np.add.at, (_unwrap(a, "cupyx.scatter_add", keep),
                                _unwrap(slices, "cupyx.scatter_add", keep),
                                _unwrap(value, "cupyx.scatter_add", keep)), {})


cupyx = types.ModuleType("cupyx", "The stand-in's cupyx.")
cupyx.scatter_add = scatter_add


@contextlib.contextmanager
def installed():
    """Inside the block ``import cupy`` (and ``cupy.cuda``, ``cupyx``) gives the stand-in; the
    modules there before (a real CuPy) are put back afterwards."""
    saved = {k: v for k, v in sys.modules.items() if k.split(".")[0] in ("cupy", "cupyx")}
    for k in saved:
        del sys.modules[k]
    this = sys.modules[__name__]
    sys.modules.update({"cupy": this, "cupy.cuda": cuda, "cupy.random": random, "cupyx": cupyx})
    try:
        yield this
    finally:
        for k in ("cupy", "cupy.cuda", "cupy.random", "cupyx"):
            sys.modules.pop(k, None)
        sys.modules.update(saved)
