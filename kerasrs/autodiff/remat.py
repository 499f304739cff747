"""`remat`: gradient checkpointing on the tape (Keras's ``keras.remat``).

A tape keeps every recorded op, and with it the arrays its ``backward`` needs, until
``gradient`` runs: for a deep model that is most of the training step's memory. ``remat(f)``
trades that memory for time. Its call runs ``f`` with no tape recording (its intermediate values
are freed as soon as the next op no longer needs them) and records one node on each tape, from
``f``'s inputs to its outputs. When the backward walk reaches that node it runs ``f`` again, this
time under a private tape, backpropagates the gradients of the outputs through it, and hands the
gradients of the inputs on to the outer walk.

The inputs of the node are the Tensors among ``f``'s arguments plus the Variables and watched
Tensors ``f`` reads from elsewhere (a layer's weights): the forward run notes them without
keeping anything else. The node records as one token op (inputs -> a scalar) and one op per
output (token -> output), so outputs of any dtypes need no copy. The recomputation runs in a
copy of the forward call's context (training flag, mixed-precision autocast, name scopes) and
replays the same random numbers (`kerasrs.context.rng_log`), so it recomputes the very values
of the forward run: the Variables the forward run assigned (moving statistics, counters of
random draws; `kerasrs.context.remat_state`) start from the values the forward run started
from and get back, after it, those the forward run left. The losses ``f`` adds
(`kerasrs.Layer.add_loss`, activity regularizers) are outputs of the node too, and are not added
again by the recomputation. ``f`` must otherwise be a function of its inputs.
"""

import contextvars
import functools

import numpy as np

from kerasrs import context
from kerasrs.autodiff.tape import GradientTape, _differentiable, _flatten, _pack
from kerasrs.autodiff.tensor import Tensor, Variable

_tapes, _tracers, _rng_log = context.tapes, context.tracers, context.rng_log
_remat_state = context.remat_state
# the losses added inside the forward run or recomputation of a remat function (see loss_added)
_side = contextvars.ContextVar("kerasrs_remat_losses", default=None)
_recomputing = contextvars.ContextVar("kerasrs_remat_recomputing", default=False)


def remat(f):
    """Wrap ``f`` so that, under a `GradientTape`, its intermediate values are recomputed in the
    backward pass instead of being kept (gradient checkpointing).

    Args:
        f: a function of Tensors (nested in lists, tuples or dicts, with other arguments passed
            through) returning a Tensor or a nested structure of Tensors; a layer's ``call``.

    Returns:
        A function with ``f``'s arguments and results. With no tape recording it is ``f``
        itself; under `kerasrs.graph` tracing the ops of ``f`` are traced as usual.

    Raises:
        TypeError: if ``f`` is not callable.

    Example:
        >>> block = kerasrs.remat(lambda x: ops.tanh(ops.tanh(x) * 2.0))
        >>> x = kerasrs.Variable([0.5, 1.0])
        >>> with kerasrs.GradientTape() as tape:
        ...     y = ops.sum(block(x))   # the tape holds one node for `block`, not four ops
        >>> g = tape.gradient(y, x)
    """
    if not callable(f):
        raise TypeError(f"remat: `f` must be a function (a layer's call, a lambda). "
                        f"Received: {f!r}")

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        tapes = _tapes.get()
        if not tapes or _tracers.get():
            return f(*args, **kwargs)
        return _RematNode(f, args, kwargs, tapes).run()

    return wrapped


class _InputCollector:
    """Stands in for the tapes while ``f`` runs forward: records nothing, but notes each op input
    that may carry a gradient from outside ``f`` (a Variable, or a Tensor a tape tracks), and
    the value each Variable had before ``f`` first assigned it (or read it, if non-trainable)."""

    def __init__(self, tapes):
        self.tapes = tapes
        self.found = {}
        self.state = {}  # id -> (Variable, its value when f first read or assigned it)

    def _record(self, fn, inputs, out):
        if type(fn) is _Recompute:  # a remat function nested in f: its start values count
            for v, value in fn.node.state:
                self.state.setdefault(id(v), (v, value))
        for x in inputs:
            if isinstance(x, Tensor) and id(x) not in self.found and (
                    isinstance(x, Variable) or any(_tracks(t, x) for t in self.tapes)):
                self.found[id(x)] = x
                if isinstance(x, Variable) and not x.trainable:
                    self.note(x)

    def note(self, variable):
        """``variable`` is read or about to be assigned (`kerasrs.context.remat_state`)."""
        if id(variable) not in self.state:
            self.state[id(variable)] = (variable, variable.data.copy())


def _tracks(tape, x):
    """Whether ``tape`` (a `GradientTape`, or the collector of an enclosing remat function's
    forward run) may need gradients through ``x``."""
    if isinstance(tape, _InputCollector):
        return any(_tracks(t, x) for t in tape.tapes)
    return id(x) in tape._tracked


class _RngLog:
    """The seeds of the random draws of one run of ``f``, replayed in order by the
    recomputation (`kerasrs.context.rng_log`). The log of a remat function nested in ``f``
    draws through this one, so it replays as well."""

    def __init__(self, parent):
        self.parent = parent
        self.seeds, self.replaying, self.position = [], False, 0

    def draw(self, make_seed):
        """The seed of one draw: ``make_seed()`` (recorded) in the forward run, the recorded
        seed in the recomputation."""
        if not self.replaying:
            self.seeds.append(make_seed() if self.parent is None else
                              self.parent.draw(make_seed))
            return self.seeds[-1]
        if self.position >= len(self.seeds):
            raise RuntimeError("remat: the recomputation of the function drew more random "
                               "numbers than its forward run; the function must draw the same "
                               "random numbers each time it runs.")
        self.position += 1
        return self.seeds[self.position - 1]


def loss_added(loss):
    """Called by `kerasrs.Layer.add_loss`: a loss added inside a remat function is an output of
    its node as well (the gradient reaches the weights through the recomputation). Returns
    False during the recomputation, whose losses were added by the forward run already."""
    side = _side.get()
    if side is not None:
        side.append(loss)
    return not _recomputing.get()


class _RematNode:
    """One call of a rematerialized function: the forward run and, later, its backward."""

    def __init__(self, f, args, kwargs, tapes):
        self.f, self.args, self.kwargs, self.tapes = f, args, kwargs, tapes

    def run(self):
        collector = _InputCollector(self.tapes)
        self.rng = _RngLog(_rng_log.get())
        self.context = contextvars.copy_context()  # the call's flags, read again by backward
        side = []
        tokens = (_tapes.set((collector,)), _rng_log.set(self.rng), _side.set(side),
                  _remat_state.set(collector))
        try:
            result = self.f(*self.args, **self.kwargs)
        finally:
            _remat_state.reset(tokens[3])
            _side.reset(tokens[2])
            _rng_log.reset(tokens[1])
            _tapes.reset(tokens[0])
        if _side.get() is not None:  # f's losses are those of an enclosing remat function too
            _side.get().extend(side)
        inputs = {id(x): x for x in _flatten([list(self.args), self.kwargs])
                  if isinstance(x, Tensor)}
        inputs.update(collector.found)
        self.inputs, self.state = tuple(inputs.values()), list(collector.state.values())
        leaves = _flatten(result)
        self.slots, recorded, seen = [], [], set(inputs)
        for i, y in enumerate(leaves):  # an input returned as it is becomes a new Tensor
            if isinstance(y, Tensor):
                if id(y) in seen:
                    y = leaves[i] = _copy(y)
                seen.add(id(y))
                self.slots.append((False, i))
                recorded.append(y)
        for j, y in enumerate(side):
            if isinstance(y, Tensor) and id(y) not in seen:
                seen.add(id(y))
                self.slots.append((True, j))
                recorded.append(y)
        if self.inputs and recorded:
            token = Tensor.__new__(Tensor)
            token.data, token.backend = np.zeros((), np.float32), recorded[0].backend
            self.zero, self.upstream = token.data, {}
            for tape in self.tapes:
                tape._record(_Recompute(self), self.inputs, token)
                for k, y in enumerate(recorded):
                    tape._record(_Upstream(self, k), (token,), y)
        return _pack(result, iter(leaves))

    def backward(self, needs):
        """Run ``f`` again under a private tape and return the gradients of the inputs that
        ``needs`` marks (arrays or None), from the output gradients `_Upstream` collected."""
        upstream, self.upstream = self.upstream, {}
        return self.context.run(self._recompute, needs, upstream)

    def _recompute(self, needs, upstream):
        sources = [x for x, need in zip(self.inputs, needs) if need and _differentiable(x)]
        tape = GradientTape(watch_accessed_variables=False)
        self.rng.replaying, self.rng.position = True, 0
        # non-trainable state f reads and updates (moving statistics, draw counters): f runs
        # again from the values its forward run started from, and the updated ones come back
        state = [(v, v.data.copy()) for v, _ in self.state]
        for v, start in self.state:
            v.data[...] = start
        side = []
        tokens = (_tapes.set(()), _rng_log.set(self.rng), _side.set(side),
                  _recomputing.set(True), _remat_state.set(None))
        try:
            with tape:
                tape.watch(sources)
                leaves = _flatten(self.f(*self.args, **self.kwargs))
        finally:
            _remat_state.reset(tokens[4])
            _recomputing.reset(tokens[3])
            _side.reset(tokens[2])
            _rng_log.reset(tokens[1])
            _tapes.reset(tokens[0])
            for var, value in state:
                var.data[...] = value
        if len(side) < sum(is_side for is_side, _ in self.slots):
            raise RuntimeError("remat: the recomputation of the function added fewer losses "
                               "than its forward run; the function must run alike each time.")
        targets = [(side if self.slots[k][0] else leaves)[self.slots[k][1]]
                   for k in sorted(upstream)]
        seeds = [upstream[k] for k in sorted(upstream)]
        grads = tape._backprop(targets, seeds, sources)
        return tuple(grads.get(id(x)) if need else None for x, need in zip(self.inputs, needs))


def _copy(x):
    out = Tensor.__new__(Tensor)
    out.data, out.backend = x.data, x.backend
    mask = getattr(x, "_keras_mask", None)
    if mask is not None:
        out._keras_mask = mask
    return out


class _Recompute:
    """The token op of a `_RematNode`: inputs -> token; its backward recomputes ``f``."""

    low_dtype = None

    def __init__(self, node):
        self.node = node

    def backward(self, gy):
        return self.node.backward(self.needs_grad)


class _Upstream:
    """Output ``k`` of a `_RematNode` (token -> output): its backward keeps the output's
    gradient for the recomputation and passes a zero on to the token."""

    low_dtype = None

    def __init__(self, node, k):
        self.node, self.k = node, k

    def backward(self, gy):
        self.node.upstream[self.k] = gy
        return (self.node.zero,)
