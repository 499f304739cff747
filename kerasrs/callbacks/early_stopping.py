"""`EarlyStopping`: stop ``fit`` when a monitored value has stopped improving."""

from kerasrs.callbacks.monitor_callback import MonitorCallback, check_count, check_number

__all__ = ["EarlyStopping"]


class EarlyStopping(MonitorCallback):
    """Stop training when ``monitor`` has not improved for ``patience`` epochs (Keras 3 rules).

    At each epoch end (from ``start_from_epoch`` on) the value is compared with the best so far:
    an improvement (by more than ``min_delta``) becomes the new best and, if it also beats
    ``baseline`` (or there is none), resets the wait. Otherwise, once ``patience`` epochs have
    passed since the last reset, training stops after this epoch (never after the first).

    Args:
        monitor: log name to watch. Defaults to "val_loss".
        min_delta: smaller changes count as no improvement.
        patience: epochs without improvement before stopping.
        verbose: 0 or 1 (print when stopping and when restoring).
        mode: "auto", "min" or "max" (see `MonitorCallback`).
        baseline: float or None; until a value beats it the wait is never reset, so training
            stops after ``patience`` epochs unless the baseline is beaten.
        restore_best_weights: at the end of training (stopped early *or* out of epochs, or
            interrupted), set the model's weights to those at the end of the best epoch.
        start_from_epoch: epochs (from 0) to ignore before monitoring starts (a warm-up).

    Attributes:
        stopped_epoch: the epoch (0-based) after which training stopped; 0 if it did not stop.
        best_epoch: the epoch (0-based) with the best value.
        best: the best value; best_weights: the weights saved then (with restore_best_weights).

    Raises:
        ValueError: for an unknown ``mode``, a ``monitor`` that is not a non-empty string,
            ``min_delta``/``baseline`` that is not a finite number (or None for ``baseline``),
            or ``patience``/``start_from_epoch`` that is not an int >= 0.
    """

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False, start_from_epoch=0):
        super().__init__(monitor, mode, min_delta=min_delta)
        if baseline is not None:
            check_number("EarlyStopping", baseline=baseline)
        check_count("EarlyStopping", patience=patience, start_from_epoch=start_from_epoch)
        self.patience, self.verbose, self.baseline = patience, verbose, baseline
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = start_from_epoch
        self.wait = self.stopped_epoch = self.best_epoch = 0
        self.best_weights = None

    def on_train_begin(self, logs=None):
        self.wait = self.stopped_epoch = self.best_epoch = 0
        self.best = None
        self.best_weights = None

    def on_epoch_end(self, epoch, logs=None):
        current = self.get_monitor_value(logs)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            # something to restore even if the baseline is never beaten
            self.best_weights, self.best_epoch = self.model.get_weights(), epoch
        self.wait += 1
        if self._is_improvement(current, self.best):
            self.best, self.best_epoch = current, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._is_improvement(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                print("Restoring model weights from the end of the best epoch: "
                      f"{self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)
