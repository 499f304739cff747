"""`MonitorCallback`: the shared logic of callbacks that watch one log value (EarlyStopping,
ReduceLROnPlateau): the direction from ``mode``, ``min_delta``, and a warning when the value is
missing."""

import difflib
import math
import numbers
import warnings

from kerasrs.callbacks.callback import Callback
from kerasrs.callbacks.model_checkpoint import monitor_direction

__all__ = []


class MonitorCallback(Callback):
    """Base class of callbacks that compare a monitored log value with the best one so far.

    Args:
        monitor: the log name to watch (``"val_loss"``, ``"accuracy"``, ...).
        mode: "min", "max" or "auto" ("auto" minimizes losses and error metrics and maximizes
            accuracy-like metrics, as `ModelCheckpoint` decides; see `monitor_direction`).
        baseline: float or None: the value to beat at first.
        min_delta: a change smaller than this (in absolute value) is no improvement.

    Raises:
        ValueError: for a ``mode`` other than "auto", "min" or "max", a ``monitor`` that is not
            a non-empty string, a ``min_delta`` or ``baseline`` that is not a finite number; in
            "auto" mode, at the first check, for a name whose direction cannot be told.
    """

    def __init__(self, monitor="val_loss", mode="auto", baseline=None, min_delta=0):
        super().__init__()
        owner = type(self).__name__
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"{owner}: mode must be 'auto', 'min' or 'max'. "
                             f"Received: mode={mode!r}")
        if not isinstance(monitor, str) or not monitor:
            raise ValueError(f"{owner}: `monitor` must be the name of a logged value, such as "
                             f"'val_loss' or 'val_accuracy'. Received: monitor={monitor!r}")
        check_number(owner, min_delta=min_delta)
        if baseline is not None:
            check_number(owner, baseline=baseline)
        self.monitor, self.mode = monitor, mode
        self.best = baseline
        self.min_delta = abs(min_delta)
        self.monitor_op = None

    def _set_monitor_op(self):
        direction = {"min": "down", "max": "up"}.get(self.mode) or monitor_direction(
            self.monitor, getattr(self.model, "metrics", None) or [])
        if direction is None:
            raise ValueError(f"{type(self).__name__}: cannot tell whether {self.monitor!r} "
                             "should be maximized or minimized. Pass mode='max' or mode='min'. "
                             f"Received: monitor={self.monitor!r}, mode='auto'")
        self.monitor_op = _greater if direction == "up" else _less

    def _is_improvement(self, value, reference):
        """Whether ``value`` beats ``reference`` (None: anything does) by more than min_delta.
        NaN never improves."""
        if reference is None:
            return True
        if self.monitor_op is _less:
            return value + self.min_delta < reference
        return value - self.min_delta > reference

    def get_monitor_value(self, logs):
        """``logs[monitor]`` as a float, or None with a warning that lists the available keys
        (callers look once per epoch, so it warns at most once per epoch). The direction
        (`monitor_op`) is set at the first value found, so a misspelt name gets this warning
        rather than an error about its direction."""
        value = (logs or {}).get(self.monitor)
        if value is None:
            close = difflib.get_close_matches(self.monitor, list(logs or {}), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            warnings.warn(f"{type(self).__name__}: the monitored value {self.monitor!r} is not "
                          f"in the logs, so this epoch is skipped.{hint} Available: "
                          f"{sorted(logs or {})}", stacklevel=3)
            return None
        if self.monitor_op is None:
            self._set_monitor_op()
        return float(value)


def check_count(owner, **counts):
    """Raise unless each named value is an int >= 0 (epochs to wait, to skip or to cool down).

    Raises:
        ValueError: naming ``owner``, the argument and its value.
    """
    for name, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
            raise ValueError(f"{owner}: `{name}` must be an int >= 0 (a number of epochs). "
                             f"Received: {name}={value!r}")


def check_number(owner, **numbers_):
    """Raise unless each named value is a finite real number.

    Raises:
        ValueError: naming ``owner``, the argument and its value.
    """
    for name, value in numbers_.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
                not math.isfinite(value):
            raise ValueError(f"{owner}: `{name}` must be a finite number. Received: "
                             f"{name}={value!r}")


def _less(a, b):
    return a < b


def _greater(a, b):
    return a > b
