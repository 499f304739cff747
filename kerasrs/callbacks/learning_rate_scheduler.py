"""`LearningRateScheduler`: set the learning rate at the start of each epoch from a function."""

import numbers

from kerasrs.callbacks.callback import Callback

__all__ = ["LearningRateScheduler"]


def current_learning_rate(optimizer):
    """The optimizer's current learning rate as a Python float (what Keras 3 logs)."""
    if optimizer is None or not hasattr(optimizer, "learning_rate"):
        raise ValueError("The model's optimizer must have a `learning_rate` attribute. "
                         f"Received: optimizer={optimizer!r}")
    rate = optimizer.learning_rate
    return float(getattr(rate, "numpy", lambda: rate)())


class LearningRateScheduler(Callback):
    """At each epoch start, set the rate to ``schedule(epoch, current_rate)`` (or
    ``schedule(epoch)`` for a one-argument function); ``logs["learning_rate"]`` at the epoch
    end holds the rate used, as Keras 3 writes it.

    Args:
        schedule: function ``(epoch: int from 0, learning_rate: float) -> float``, or
            ``(epoch) -> float``.
        verbose: 0 or 1 (print the rate set each epoch).

    Raises:
        TypeError: if ``schedule`` is not callable.
        ValueError: (at an epoch start) if ``schedule`` returns something other than a float,
            or the optimizer has no learning rate.
    """

    def __init__(self, schedule, verbose=0):
        super().__init__()
        if not callable(schedule):
            raise TypeError("LearningRateScheduler: `schedule` must be a function (epoch, "
                            f"learning_rate) -> float. Received: schedule={schedule!r}")
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch, logs=None):
        optimizer = self.model.optimizer
        rate = current_learning_rate(optimizer)
        try:
            rate = self.schedule(epoch, rate)
        except TypeError:  # a one-argument schedule, as Keras accepts
            rate = self.schedule(epoch)
        if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or \
                isinstance(rate, numbers.Integral):
            raise ValueError("LearningRateScheduler: the schedule must return a float. "
                             f"Received: {rate!r} at epoch {epoch}")
        optimizer.learning_rate = float(rate)
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to {rate}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = current_learning_rate(self.model.optimizer)
