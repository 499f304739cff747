"""`GradientTape`: records the ops that depend on watched tensors, and walks them backwards.

The tape's list is in execution order, which is already a topological order. ``gradient``
first marks the ops that lead from a source, then walks the list backwards once, calling
``backward`` only on those ops (no recursion, so a 10,000-op chain is fine). Gradients of inputs
that were broadcast are summed back to the input's shape in one place, `sum_to`.
"""

import contextlib
import warnings

import numpy as np

from kerasrs import context
from kerasrs.autodiff.tensor import Tensor, Variable, _describe_non_tensor, convert_to_tensor

_tapes = context.tapes  # the tapes recording in this thread or task (read on entry and exit)


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
        self._token = None  # from entering: restores the recording tapes on exit

    def __enter__(self):
        self._token = _tapes.set(_tapes.get() + (self,))
        return self

    def __exit__(self, exc_type, exc, traceback):
        token, self._token = self._token, None
        tapes = _tapes.get()
        if token is not None and tapes and tapes[-1] is self:
            try:  # the usual case: back to the tapes that recorded before this one
                _tapes.reset(token)
                return False
            except ValueError:  # entered in another context (a generator resumed elsewhere)
                pass
        _remove(self)
        return False

    def watch(self, tensor):
        """Watch a Tensor (or a nested list/tuple/dict of them) so gradients can flow to it.

        Warns:
            UserWarning: for an integer or bool tensor (as TensorFlow does): gradients flow only
                to floating-point tensors, so its gradient will be None.
        """
        for t in _flatten(tensor):
            if not isinstance(t, Tensor):
                raise TypeError("GradientTape.watch: expected Tensors. Received: "
                                f"{type(t).__name__}")
            if not _differentiable(t) and not self._auto_watched(t):  # else: in `gradient`
                _warn_integer_source("GradientTape.watch: the watched tensor", t)
            self._tracked[id(t)] = t

    def _auto_watched(self, t):
        return isinstance(t, Variable) and t.trainable and self.watch_accessed_variables

    def stop_recording(self):
        """Context manager: ops inside the block are not recorded on this tape."""
        return _paused(self)

    def reset(self):
        """Forget everything recorded so far."""
        self._records.clear()
        self._tracked.clear()

    def _record(self, fn, inputs, out):
        """Keep ``fn`` if an input is watched; a trainable Variable is watched on first use
        (unless ``watch_accessed_variables=False``)."""
        tracked = self._tracked
        for x in inputs:  # (the tracked dict holds its Tensors: no other object has their ids)
            if id(x) not in tracked:
                if not (isinstance(x, Variable) and x.trainable and self.watch_accessed_variables):
                    continue
                tracked[id(x)] = x
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
        for i, s in enumerate(flat_sources):
            differentiable = _differentiable(s)
            if not differentiable and self._auto_watched(s):
                _warn_integer_source(f"GradientTape.gradient: source {i}, Variable {s.path!r},", s)
            g = grads.get(id(s)) if differentiable else None  # integer sources: None (TF)
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


def _warn_integer_source(what, tensor):
    warnings.warn(f"{what} has dtype {tensor.data.dtype.name}, and gradients flow only to "
                  "floating-point tensors, so its gradient is None. Cast it to a float dtype "
                  "first (e.g. ops.cast(x, 'float32')) if it should get one.", UserWarning,
                  stacklevel=3)


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


def _remove(tape):
    """Stop ``tape`` recording (tapes may exit in any order)."""
    tapes = _tapes.get()
    if tape not in tapes:
        raise ValueError("GradientTape: this tape is not recording here (it was entered in "
                         "another thread or task, or exited already).")
    _tapes.set(tuple(t for t in tapes if t is not tape))


@contextlib.contextmanager
def _paused(tape):
    _remove(tape)
    try:
        yield
    finally:
        _tapes.set(_tapes.get() + (tape,))


@contextlib.contextmanager
def no_grad():
    """Context manager: nothing inside the block is recorded on any tape (of this thread or
    asyncio task)."""
    saved = _tapes.get()
    _tapes.set(())
    try:
        yield
    finally:
        _tapes.set(saved)


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
