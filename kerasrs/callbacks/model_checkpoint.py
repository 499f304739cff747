"""`ModelCheckpoint`: save the model (or its weights) during ``fit``, as Keras's callback does."""

import math
import os
import warnings

from kerasrs.callbacks.callback import Callback

__all__ = ["ModelCheckpoint"]

# Names (after removing "val_") whose larger values are better: Keras 3 reads each metric's
# direction; kerasrs falls back on these when a metric does not declare one.
_UP_WORDS = ("acc", "auc", "precision", "recall", "f1", "fbeta", "fmeasure", "iou", "r2",
             "true_positives", "true_negatives", "specificity", "sensitivity")
_DOWN_WORDS = ("loss", "error", "crossentropy", "hinge", "divergence", "poisson", "logcosh",
               "false_positives", "false_negatives", "mse", "mae", "mape", "msle", "rmse")


class ModelCheckpoint(Callback):
    """Save the model or its weights at the end of epochs, or every ``save_freq`` batches.

    Args:
        filepath: str. May contain ``str.format`` fields filled from ``epoch`` (1-based),
            ``batch`` (1-based, with an integer ``save_freq``) and the logs, e.g.
            ``"ckpt/{epoch:02d}-{val_loss:.2f}.keras"``. Must end in ``.weights.h5`` when
            ``save_weights_only``, else in ``.keras`` or ``.h5``. Missing folders are created.
        monitor: the log name compared by ``save_best_only`` (default ``"val_loss"``).
        verbose: 0 (silent) or 1 (a line per save or non-improvement).
        save_best_only: save only when ``monitor`` improved on the best value so far (with
            ``filepath`` fixed, the file always holds the best model).
        save_weights_only: call ``model.save_weights`` instead of ``model.save``.
        mode: "min", "max" or "auto". "auto" minimizes losses, maximizes metrics whose
            direction is "up" (accuracies, AUC, precision, recall, ...) and minimizes error
            metrics, as Keras 3; an unknown name raises ValueError at the first check.
        save_freq: "epoch", or an int: save every that many training batches (counted across
            epochs).
        initial_value_threshold: float; the initial "best" value, so a save needs to beat it.

    Raises:
        ValueError: for a bad ``save_freq`` or ``mode``, or a ``filepath`` with the wrong
            extension.

    Every save is atomic (written to a temporary file, then renamed), so an interrupted save
    leaves the previous checkpoint intact.
    """

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", save_freq="epoch",
                 initial_value_threshold=None):
        super().__init__()
        self.filepath = os.fspath(filepath)
        self.monitor, self.verbose = monitor, verbose
        self.save_best_only, self.save_weights_only = bool(save_best_only), bool(save_weights_only)
        if mode not in ("auto", "min", "max"):
            raise ValueError("ModelCheckpoint: mode must be 'auto', 'min' or 'max'. Received: "
                             f"mode={mode!r}")
        self.mode = mode
        if save_freq != "epoch" and (not isinstance(save_freq, int) or isinstance(save_freq, bool)
                                     or save_freq <= 0):
            raise ValueError("ModelCheckpoint: save_freq must be 'epoch' or a positive int "
                             f"(batches). Received: save_freq={save_freq!r}")
        self.save_freq = save_freq
        if save_weights_only and not self.filepath.endswith(".weights.h5"):
            raise ValueError("ModelCheckpoint: with save_weights_only=True the filepath must end "
                             f"in `.weights.h5`. Received: filepath={self.filepath!r}")
        if not save_weights_only and not self.filepath.endswith((".keras", ".h5", ".hdf5")):
            raise ValueError("ModelCheckpoint: the filepath must end in `.keras` (or `.h5` for "
                             f"the legacy format). Received: filepath={self.filepath!r}")
        self.best = initial_value_threshold
        self.monitor_op = None
        self._batches_since_save = 0
        self._last_batch = None
        self._current_epoch = 0

    # -- hooks ----------------------------------------------------------------------------------
    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq == "epoch":
            return
        if self._last_batch is None or batch <= self._last_batch:
            self._batches_since_save += batch + 1  # a new epoch: batches count from 0
        else:
            self._batches_since_save += batch - self._last_batch
        self._last_batch = batch
        if self._batches_since_save >= self.save_freq:
            self._batches_since_save = 0
            self._save(self._current_epoch, batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch, None, logs)

    # -- saving -------------------------------------------------------------------------------
    def _save(self, epoch, batch, logs):
        logs = dict(logs or {})
        filepath = self._file_path(epoch, batch, logs)
        if not self._should_save(epoch, logs, filepath):
            return
        folder = os.path.dirname(filepath)
        if folder:
            os.makedirs(folder, exist_ok=True)
        if os.path.isdir(filepath):
            raise IsADirectoryError("ModelCheckpoint: the checkpoint path is an existing folder. "
                                    f"Received: filepath={filepath!r}")
        if self.save_weights_only:
            self.model.save_weights(filepath, overwrite=True)
        else:
            self.model.save(filepath, overwrite=True)
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: finished saving model to {filepath}")

    def _file_path(self, epoch, batch, logs):
        fields = dict(logs)
        fields["epoch"] = epoch + 1
        if batch is not None and "batch" not in logs:
            fields["batch"] = batch + 1
        try:
            return self.filepath.format(**fields)
        except KeyError as e:
            raise KeyError(f"ModelCheckpoint: failed to format the filepath {self.filepath!r}: "
                           f"no log named {e}. Available: {sorted(fields)}. Received: "
                           f"filepath={self.filepath!r}") from None

    def _should_save(self, epoch, logs, filepath):
        if not self.save_best_only:
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: saving model to {filepath}")
            return True
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn(f"ModelCheckpoint: can save best model only with {self.monitor!r} "
                          f"available; logs have {sorted(logs)}. Saving anyway.", stacklevel=3)
            return True
        current = float(current)
        if self.monitor_op is None:
            self.monitor_op = self._monitor_op()
        # before any value, "best" is the worst possible one (Keras prints inf / -inf)
        best = f"{self.best:.5f}" if self.best is not None else \
            ("-inf" if self.monitor_op is _greater else "inf")
        if self.best is None or (not math.isnan(current) and self.monitor_op(current, self.best)):
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: {self.monitor} improved from {best} to "
                      f"{current:.5f}, saving model to {filepath}")
            self.best = current
            return True
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from {best}")
        return False

    def _monitor_op(self):
        """``less`` or ``greater``, from ``mode`` (see the class docstring for "auto")."""
        if self.mode == "min":
            return _less
        if self.mode == "max":
            return _greater
        direction = monitor_direction(self.monitor, getattr(self.model, "metrics", None) or [])
        if direction is None:
            raise ValueError(f"ModelCheckpoint: monitor={self.monitor!r}: cannot tell whether it "
                             "should be maximized or minimized. Pass mode='max' or mode='min'. "
                             f"Received: monitor={self.monitor!r}, mode='auto'")
        return _greater if direction == "up" else _less


def monitor_direction(monitor, metrics=()):
    """"up", "down" or None for a log name: "loss" is down; a metric of that name that declares
    ``_direction`` decides; otherwise the name's words (accuracy/AUC/precision/recall-like
    names up, error/loss-like names down)."""
    name = monitor[4:] if monitor.startswith("val_") else monitor
    if name == "loss" or name.endswith("_loss"):
        return "down"
    for metric in metrics:
        if getattr(metric, "name", None) == name and getattr(metric, "_direction", None):
            return metric._direction
    lowered = name.lower()
    if any(word in lowered for word in _UP_WORDS):
        return "up"
    if any(word in lowered for word in _DOWN_WORDS):
        return "down"
    return None


def _less(a, b):
    return a < b


def _greater(a, b):
    return a > b
