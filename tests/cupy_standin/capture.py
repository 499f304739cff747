"""Stream capture and CUDA graphs for the CuPy stand-in (standin.py).

On a GPU, work issued while a stream captures is recorded into a graph and *not run*;
``graph.launch()`` runs it, reading and writing the same memory every time. The stand-in keeps
that contract:

* while capturing, every device operation (a NumPy function on device arrays, an operator, an
  indexing read or write, a RawKernel or ElementwiseKernel launch) still runs, because its
  result's shape and the Python code after it need it, but it is recorded as ``(function,
  arguments, result)``; before an operation first touches memory that existed before the
  capture, that memory is saved;
* `end` puts the saved memory back and fills the memory made during the capture as unwritten
  device memory (NaN, -1), so after capturing nothing has happened, as on a GPU: a caller that
  forgets to launch the graph sees no step taken;
* `Graph.launch` runs the recorded operations again in order on the same arrays and copies
  each fresh result into the array recorded for it (the address the graph writes);
* a device-to-host or host-to-device copy while capturing is an error (``cudaMemcpy`` is not
  allowed in a capture) and invalidates it: `end` raises.

What it does not show: a random draw (``cupy.random``) repeats its numbers on every launch of a
real graph; here each launch draws new ones.
"""

import numpy as np

stats = {"graph_launches": 0}  # since standin.reset_stats() (standin.capture_stats)
_active = []  # the Recording in progress (at most one)


class Recording:
    def __init__(self):
        self.ops, self.saved, self.created, self.error = [], {}, {}, None


def capturing():
    return bool(_active)


def begin():
    if _active:
        raise RuntimeError("cudaErrorIllegalState: the stream is already capturing")
    _active.append(Recording())


def end():
    """The `Graph` of the capture; memory is as before it (see the module docstring).

    Raises:
        RuntimeError: when the capture was invalidated (a host copy while capturing).
    """
    if not _active:
        raise RuntimeError("cudaErrorIllegalState: end_capture on a stream that is not "
                           "capturing")
    rec = _active.pop()
    for owner, copy in rec.saved.values():
        if owner.flags.writeable:
            owner[...] = copy
    for owner in rec.created.values():
        if owner.flags.writeable and owner.size:
            owner.fill(np.nan if owner.dtype.kind in "fc" else -1)
    if rec.error is not None:
        raise RuntimeError(f"cudaErrorStreamCaptureInvalidated: the capture was invalidated "
                           f"by: {rec.error}")
    return Graph(rec.ops)


def forbid(what):
    """Raise (and invalidate the capture) when capturing: ``what`` needs the host."""
    if _active:
        _active[-1].error = f"{what} while a stream is capturing"
        raise RuntimeError(f"cudaErrorStreamCaptureUnsupported: {what} is not permitted while "
                           "a stream is capturing")


def call(fn, args, kwargs):
    """``fn(*args, **kwargs)`` on NumPy values, recorded when capturing (results come back as
    arrays there, NumPy scalars as 0-d arrays, so that a launch can refill them)."""
    if not _active:
        return fn(*args, **kwargs)
    rec = _active[-1]
    bound = getattr(fn, "__self__", None)  # an array's own method reads (or writes) it too
    for a in _arrays((args, kwargs, bound if isinstance(bound, np.ndarray) else None)):
        owner = _owner(a)
        if id(owner) not in rec.created and id(owner) not in rec.saved:
            rec.saved[id(owner)] = (owner, owner.copy())
    result = _arrayify(fn(*args, **kwargs))
    for a in _arrays(result):
        owner = _owner(a)
        if id(owner) not in rec.saved:
            rec.created.setdefault(id(owner), owner)
    rec.ops.append((fn, args, kwargs, result))
    return result


class Graph:
    """``cupy.cuda.Graph``: ``launch(stream=None)`` runs the captured operations again."""

    def __init__(self, ops):
        self.ops = ops

    def launch(self, stream=None):
        if _active:
            raise RuntimeError("cudaErrorStreamCaptureUnsupported: graph launch while "
                               "capturing")
        for fn, args, kwargs, result in self.ops:
            _refill(_arrayify(fn(*args, **kwargs)), result)
        stats["graph_launches"] += 1

    def upload(self, stream=None):
        pass


def _owner(a):
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _arrays(x):
    if isinstance(x, np.ndarray):
        yield x
    elif type(x) in (list, tuple):
        for v in x:
            yield from _arrays(v)
    elif type(x) is dict:
        for v in x.values():
            yield from _arrays(v)


def _arrayify(r):
    if isinstance(r, np.generic):
        return np.asarray(r)
    if type(r) in (list, tuple):
        return type(r)(_arrayify(v) for v in r)
    return r


def _refill(new, recorded):
    """Copy a launch's fresh result into the array the capture recorded (views of the same
    memory are already up to date)."""
    if isinstance(recorded, np.ndarray) and isinstance(new, np.ndarray):
        if new is not recorded and not np.may_share_memory(new, recorded) and \
                recorded.flags.writeable:
            np.copyto(recorded, new)
    elif type(recorded) in (list, tuple) and type(new) in (list, tuple):
        for n, r in zip(new, recorded):
            _refill(n, r)
