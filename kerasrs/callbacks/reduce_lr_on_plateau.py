"""`ReduceLROnPlateau`: lower the learning rate when a monitored value stops improving."""

import warnings

import numpy as np

from kerasrs.callbacks.learning_rate_scheduler import current_learning_rate
from kerasrs.callbacks.monitor_callback import MonitorCallback, check_count

__all__ = ["ReduceLROnPlateau"]


class ReduceLROnPlateau(MonitorCallback):
    """Multiply the learning rate by ``factor`` after ``patience`` epochs without improvement.

    After a reduction, ``cooldown`` epochs pass before the wait counts again; the rate never
    goes below ``min_lr``. Each epoch's rate (before any reduction) is written to
    ``logs["learning_rate"]``, as Keras 3 does, so `History` and `CSVLogger` record it.

    Args:
        monitor: log name to watch. Defaults to "val_loss".
        factor: float in [0, 1): new rate = rate * factor.
        patience: epochs without improvement before reducing.
        verbose: 0 or 1 (print a line per reduction).
        mode: "auto", "min" or "max" (see `MonitorCallback`).
        min_delta: smaller changes count as no improvement. Defaults to 1e-4.
        cooldown: epochs to wait after a reduction before counting again.
        min_lr: lower bound of the rate.

        **kwargs: only ``epsilon``, the deprecated name of ``min_delta``.

    Raises:
        ValueError: for ``factor`` outside [0, 1), an unknown ``mode``, or ``patience``/
            ``cooldown`` that is not an int >= 0.
        TypeError: for another keyword argument (a misspelt one would otherwise be ignored).
        TypeError: (at the first reduction) if the optimizer's rate is a schedule.
    """

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto",
                 min_delta=1e-4, cooldown=0, min_lr=0.0, **kwargs):
        if "epsilon" in kwargs:  # the old name of min_delta (tf.keras 2 took it with a warning)
            warnings.warn("ReduceLROnPlateau: `epsilon` is deprecated; use `min_delta`.",
                          stacklevel=2)
            min_delta = kwargs.pop("epsilon")
        if kwargs:  # Keras ignores them; a typo such as `patiense` would go unnoticed
            raise TypeError(f"ReduceLROnPlateau: unexpected keyword argument(s) {sorted(kwargs)}."
                            f" Received: {kwargs}")
        super().__init__(monitor, mode, min_delta=min_delta)
        if not 0.0 <= factor < 1.0:
            raise ValueError("ReduceLROnPlateau: factor must be in [0, 1) (the rate is "
                             f"multiplied by it). Received: factor={factor}")
        check_count("ReduceLROnPlateau", patience=patience, cooldown=cooldown)
        self.factor, self.patience, self.verbose = factor, patience, verbose
        self.cooldown, self.min_lr = cooldown, min_lr
        self.cooldown_counter = self.wait = 0

    def on_train_begin(self, logs=None):
        self.best, self.cooldown_counter, self.wait = None, 0, 0

    def in_cooldown(self):
        return self.cooldown_counter > 0

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        logs["learning_rate"] = current_learning_rate(self.model.optimizer)
        current = self.get_monitor_value(logs)
        if current is None:
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self._is_improvement(current, self.best):
            self.best, self.wait = current, 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience and self._reduce(epoch):
                self.cooldown_counter, self.wait = self.cooldown, 0

    def _reduce(self, epoch):
        """Lower the rate unless it is already at ``min_lr``; returns whether it did."""
        optimizer = self.model.optimizer
        old = current_learning_rate(optimizer)
        if not old > float(np.float32(self.min_lr)):
            return False
        new = max(old * self.factor, self.min_lr)
        optimizer.learning_rate = new
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to {new}.")
        return True

