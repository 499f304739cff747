"""Which rows of the current batch are real, for ``fit(..., pad_last_batch=True)``.

The fit loop pads a short last batch to the full batch size (so every step sees one shape) and
runs the forward pass inside `real_rows`. Losses and metrics then see only the real rows (the
trainer slices the outputs); a layer whose output mixes rows of the batch reads `current` to
leave the padding out: BatchNormalization computes its batch statistics from the real rows
only. Outside `real_rows`, `current` is None. The value is per thread and per asyncio task
(`kerasrs.context.real_rows`).
"""

import contextlib

from kerasrs import context


@contextlib.contextmanager
def real_rows(count, batch_size):
    """Within the block, `current` is ``(count, batch_size)``: rows ``count..batch_size-1`` of
    every batch-sized tensor are padding."""
    token = context.real_rows.set((int(count), int(batch_size)))
    try:
        yield
    finally:
        context.real_rows.reset(token)


def current():
    """``(real row count, padded batch size)`` inside `real_rows`, else None."""
    return context.real_rows.get()
