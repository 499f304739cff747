"""Per-call state: what the code running now is inside of, one `contextvars.ContextVar` each.

Each thread has its own values, and so does each asyncio task (a task starts with a copy of its
creator's values): ``fit`` in one thread and ``predict`` in another, or two tasks serving
requests, never see each other's training flag, name scopes, tapes or padded rows. A value is
set for a block and restored after it::

    token = context.training.set(True)
    try:
        ...
    finally:
        context.training.reset(token)

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

#: The dtype that float Variables entering an op are cast to, inside the call of a layer whose
#: dtype policy computes in a lower precision than it stores (``mixed_float16``); None: no cast.
#: Set by `kerasrs.Layer.__call__`, read by `kerasrs.autodiff.Function.apply`.
autocast = contextvars.ContextVar("kerasrs_autocast", default=None)

#: The ``training`` argument of the innermost layer call running now (True, False or None), or
#: `OUTSIDE` when no layer call is running. Sublayers called with ``training=None`` inherit it.
training = contextvars.ContextVar("kerasrs_training", default=OUTSIDE)

#: The name scopes open now, outermost first: the names of the layers and models being built
#: or called, which make a new weight's path (``sequential/dense/kernel``).
name_scopes = contextvars.ContextVar("kerasrs_name_scopes", default=())

#: ``(real row count, padded batch size)`` while ``fit(..., pad_last_batch=True)`` runs a
#: padded batch (see `kerasrs.layers.padding`), else None.
real_rows = contextvars.ContextVar("kerasrs_real_rows", default=None)
