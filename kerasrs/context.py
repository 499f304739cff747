"""Per-call state: what the code running now is inside of, in `contextvars.ContextVar`s.

Each thread has its own values, and so does each asyncio task (a task starts with a copy of its
creator's values): ``fit`` in one thread and ``predict`` in another, or two tasks serving
requests, never see each other's training flag, name scopes, tapes or padded rows. A value is
set for a block and restored after it::

    token = context.real_rows.set((3, 8))
    try:
        ...
    finally:
        context.real_rows.reset(token)

Values are immutable (tuples, not lists), so a copied context can never change its original.
This module imports nothing from kerasrs: the autodiff engine and the layers both read it.
"""

import contextvars


class _Outside:
    """The value of `training` outside every layer call."""

    def __repr__(self):
        return "OUTSIDE"


OUTSIDE = _Outside()

#: The `kerasrs.GradientTape` objects recording now, in the order they were entered.
tapes = contextvars.ContextVar("kerasrs_tapes", default=())

#: The `kerasrs.graph` tracers recording now, innermost last: `kerasrs.autodiff.Function.apply`
#: calls ``tracer.record(function, inputs, output)`` on each after ``forward``.
tracers = contextvars.ContextVar("kerasrs_tracers", default=())

#: The dtype that float Variables entering an op are cast to, inside the call of a layer whose
#: dtype policy computes in a lower precision than it stores (``mixed_float16``); None: no cast.
#: Set by `kerasrs.Layer.__call__`, read by `kerasrs.autodiff.Function.apply`.
autocast = contextvars.ContextVar("kerasrs_autocast", default=None)

#: ``(training, name_scopes)`` of the innermost layer call running now (one variable: a layer
#: call sets both at once, on every call). ``training`` is the call's ``training`` argument
#: (True, False or None), or `OUTSIDE` when no layer call runs; sublayers called with
#: ``training=None`` inherit it. ``name_scopes`` are the names of the layers and models being
#: called or built, outermost first (`kerasrs.layers.naming.name_scope`): they make a new
#: weight's path (``sequential/dense/kernel``).
layer_call = contextvars.ContextVar("kerasrs_layer_call", default=(OUTSIDE, ()))

#: ``(real row count, padded batch size)`` while ``fit(..., pad_last_batch=True)`` runs a
#: padded batch (see `kerasrs.layers.padding`), else None.
real_rows = contextvars.ContextVar("kerasrs_real_rows", default=None)

#: True while a layer runs on placeholder values to find the shapes of a call on symbolic tensors
#: (`kerasrs.layers.node`): losses added then (`Layer.add_loss`, activity regularizers) are not
#: kept, as Keras adds none for symbolic calls.
symbolic_probe = contextvars.ContextVar("kerasrs_symbolic_probe", default=False)

#: Inside a `kerasrs.remat` function's forward run and its recomputation: the log (with a
#: ``draw(make_seed)`` method) through which `kerasrs.random` (`SeedGenerator.next`, draws with
#: ``seed=None``) and `kerasrs.backend.dropout_seed` take each seed, so that the recomputation
#: draws the same numbers as the forward run; else None.
rng_log = contextvars.ContextVar("kerasrs_rng_log", default=None)


#: While a `kerasrs.remat` function runs forward: the collector (with a ``note(variable)``
#: method) told of each Variable assigned, so the recomputation can start from and give back
#: their values; else None.
remat_state = contextvars.ContextVar("kerasrs_remat_state", default=None)
