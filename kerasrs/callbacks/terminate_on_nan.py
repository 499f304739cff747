"""`TerminateOnNaN`: stop training at the first batch whose loss is NaN or infinite."""

import math

from kerasrs.callbacks.callback import Callback

__all__ = ["TerminateOnNaN"]


class TerminateOnNaN(Callback):
    """Stop ``fit`` after the first training batch whose running ``loss`` is NaN or ±inf.

    The epoch then ends as usual (its logs hold the bad loss) and no further epoch runs.
    ``fit`` behaves so by default when its data hold NaN or inf values, and there also stops
    before the bad batch's update (see `kerasrs.Model.fit`); this callback is for NaN that
    arise from clean data.

    Args:
        raise_error: raise RuntimeError at that batch instead of stopping quietly.

    Raises:
        RuntimeError: with ``raise_error=True``, naming the batch and the loss.
    """

    def __init__(self, raise_error=False):
        super().__init__()
        self.raise_error = raise_error

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is None or math.isfinite(float(loss)):
            return
        if self.raise_error:
            raise RuntimeError(f"TerminateOnNaN: NaN or Inf loss at batch {batch}. Received: "
                               f"loss={loss}")
        print(f"Batch {batch}: Invalid loss, terminating training")
        self.model.stop_training = True
