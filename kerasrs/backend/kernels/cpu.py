"""The CPU side of the kernel families: numba kernels compiled on first use, and the helpers of
`NumpyBackend`'s overrides.

A family module declares its numba kernels with `kernel`, `reducing_kernel` or
`contracting_kernel` below. The decorators do not import numba: each returns a `Lazy` kernel,
and numba is imported (and the kernel compiled) on the first call, never by ``import kerasrs``.
A kernel may call another `Lazy` kernel (numba types it as the dispatcher it compiles to) or
the activation stubs (`activations.act`), as numba code calls any jitted function. Without
numba the overrides use the twins, with one warning (`available`).

Compiled code is cached on disk (``cache=True``): numba writes it to ``__pycache__`` beside the
family's file, or, where that is read-only (a system site-packages), to the user's cache
directory, so a second process loads it instead of compiling. No environment variable or numba
setting is changed. (numba checks a cached kernel against its own file only: after editing
`numba_math`, clear the ``__pycache__/*.nbi`` files.)

Every kernel releases the GIL and takes the half-open range ``start, stop`` of the rows (or
elements) it works on as its last two arguments; `kerasrs.backend.cpu_threads.split` runs the
parts on the cores with threads that sleep when idle (numba's own ``parallel=True`` threads spin
between kernels and took the cores from OpenBLAS's GEMM threads). Kernels that reduce over rows
write one partial result per part, summed by the caller.

``error_model="numpy"``: a division by zero gives inf/nan as in NumPy instead of raising, which
is also what lets LLVM vectorize loops that divide (Adam ran 3x faster with it).
"""

import threading
import warnings

import numpy as np

_numba = []  # [numba] once imported (with numba_math's implementations), [None] if missing
_lock = threading.RLock()  # (re-entered: compiled() imports numba under it)
_OPTIONS = {"cache": True, "nogil": True, "error_model": "numpy"}


class Lazy:
    """A numba kernel compiled on its first call: ``numba.njit(**options)(py_func)``."""

    def __init__(self, py_func, options):
        self.py_func, self.options = py_func, options
        self.__name__, self.__doc__ = py_func.__name__, py_func.__doc__
        self._compiled = None

    def compiled(self):
        """The numba dispatcher (numba imported on the first call anywhere)."""
        if self._compiled is None:
            with _lock:
                if self._compiled is None:
                    numba = _import_numba()
                    if numba is None:
                        raise ImportError(f"{self.__name__}: the compiled kernels need numba")
                    self._compiled = numba.njit(**self.options)(self.py_func)
        return self._compiled

    def __call__(self, *args):
        return (self.compiled() if self._compiled is None else self._compiled)(*args)

    def __repr__(self):
        return f"<kerasrs numba kernel {self.py_func.__module__}.{self.__name__}>"


def _decorator(**options):
    return lambda py_func: Lazy(py_func, {**_OPTIONS, **options})


kernel = _decorator()
# For kernels that sum along a row: without permission to reassociate, LLVM keeps a float sum in
# its written order and leaves the loop scalar (layer_norm 0.47 -> 0.12 ms with it, 3584 x 64).
# Only reassociation and fused multiply-add are allowed; NaN and inf keep their IEEE meaning.
reducing_kernel = _decorator(fastmath={"reassoc", "contract"})
# Fused multiply-adds only (the exp/tanh polynomials of the gates: 1-2 ulp from the unfused
# result; an LSTM step of 128 x 128 units 75 -> 54 us).
contracting_kernel = _decorator(fastmath={"contract"})


def _import_numba():
    if not _numba:
        with _lock:  # two threads' first calls: one import, one warning
            if not _numba:
                _numba.append(_load())
    return _numba[0]


def _load():
    try:
        import numba
        from numba.extending import typeof_impl

        from kerasrs.backend.kernels import numba_math  # noqa: F401 (registers implementations)
    except ImportError as e:
        warnings.warn(f"kerasrs: the compiled CPU kernels need numba ({e}); using the slower "
                      "plain-NumPy versions. Install numba to train faster.", RuntimeWarning,
                      stacklevel=5)
        return None
    # A kernel that calls another: numba types the callee as the dispatcher it compiles to.
    typeof_impl.register(Lazy)(lambda val, c: typeof_impl(val.compiled(), c))
    return numba


def available():
    """True when numba is installed (imported on the first call; one warning if it is not)."""
    return (_numba[0] if _numba else _import_numba()) is not None


def usable(x):
    """True when the compiled kernels take ``x``: a float32/float64 array (or dtype), and numba
    is installed."""
    return getattr(x, "dtype", x).type in _FLOATS and available()


_FLOATS = (np.float32, np.float64)


# -- helpers of the overrides -------------------------------------------------------------------
def flat_ok(*arrays):
    """True when every array is C-contiguous with one dtype (so ``reshape(-1)`` is a view)."""
    return all(a.flags.c_contiguous and a.dtype == arrays[0].dtype for a in arrays)


def same_array(a, b):
    """True when ``a`` and ``b`` are the same C-contiguous memory with one shape and dtype."""
    return (a.flags.c_contiguous and b.flags.c_contiguous and a.shape == b.shape
            and a.dtype == b.dtype and a.ctypes.data == b.ctypes.data)


def into(out, result):
    """``result``, copied into ``out`` first when the kernel could not write there directly."""
    if out is None or out is result:
        return result
    out[...] = result
    return out


def write_out(out, values):
    """``values`` as a tuple, copied into the ``out`` arrays when given."""
    if out is None:
        return tuple(values)
    for o, v in zip(out, values):
        o[...] = v
    return tuple(out)
