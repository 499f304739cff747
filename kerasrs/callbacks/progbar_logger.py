"""`ProgbarLogger`: the progress display of fit/evaluate/predict, drawn with ``tqdm.auto``
(a terminal bar, or a widget in Jupyter) when the output is interactive, and as one line per
epoch when it is not (a log file, a pipe, a CI console)."""

import sys
import time

from kerasrs.backend import settings
from kerasrs.callbacks.callback import Callback


def format_logs(logs):
    """``"loss: 0.5123 - accuracy: 0.8125"``: 4 decimals, or 4 significant digits below 1e-3."""
    parts = []
    for key, value in (logs or {}).items():
        try:
            value = float(value)
        except (TypeError, ValueError):
            continue
        parts.append(f"{key}: {value:.4f}" if abs(value) >= 1e-3 or value == 0 else
                     f"{key}: {value:.4e}")
    return " - ".join(parts)


_BAR_CLASS = []


def _bar_class():
    """tqdm.auto's bar without tqdm's monitor thread (a daemon that would outlive ``fit``; the
    bar is updated every step anyway, so it has nothing to rescue)."""
    if not _BAR_CLASS:
        from tqdm.auto import tqdm

        _BAR_CLASS.append(type("Progbar", (tqdm,), {"monitor_interval": 0}))
    return _BAR_CLASS[0]


def is_interactive(stream):
    """Whether ``stream`` is shown live: a terminal (``isatty()``) or a Jupyter/IPython kernel's
    output stream (``ipykernel``'s ``OutStream``, whose ``isatty()`` is False)."""
    if not settings.is_interactive_logging_enabled():
        return False
    try:
        if stream.isatty():
            return True
    except (AttributeError, ValueError):  # no isatty, or a closed file
        pass
    return is_notebook(stream)


def is_notebook(stream):
    """Whether ``stream`` is a Jupyter/IPython kernel's output stream (ipykernel's
    ``OutStream``), where tqdm.auto draws a widget."""
    return type(stream).__module__.split(".")[0] == "ipykernel"


class ProgbarLogger(Callback):
    """Shows progress according to ``params["verbose"]``.

    * ``verbose=1`` on an interactive output (a terminal or a notebook, see `is_interactive`):
      one tqdm bar per epoch (and for ``evaluate``/``predict``) with the step count, the rate,
      and the running loss and metrics; at the epoch end the bar shows the epoch's values
      including ``val_*``. In a notebook a line of text (as with ``verbose=2``) is also
      printed under each epoch's bar, because the bar is a widget that a saved or rendered
      notebook (GitHub, nbconvert) shows without its numbers (``evaluate`` too). On any
      other output (a file, a pipe, a captured stream) a bar would write a line per update,
      so, as Keras does there, ``verbose=1`` prints only the ``verbose=2`` summary line at
      the end of each epoch.
    * ``verbose=2``: one line per epoch, ``Epoch 3/10 - 2s - 4ms/step - loss: ... - val_loss:
      ...`` (and one line at the end of ``evaluate``).
    * ``verbose=0``: nothing.

    Validation inside ``fit`` draws no bar of its own.

    Args:
        file: the stream to write to (default: ``sys.stdout`` at the time of writing).
    """

    def __init__(self, file=None):
        super().__init__()
        self.file = file
        self._bar = None
        self._in_fit = False
        self._start = 0.0
        self._seen = 0

    @property
    def _verbose(self):
        return self.params.get("verbose", 1)

    def _stream(self):
        return self.file or sys.stdout

    def _uses_bar(self):
        return self._verbose == 1 and is_interactive(self._stream())

    def _uses_lines(self):
        return self._verbose == 2 or (self._verbose == 1 and not self._uses_bar())

    def _needs_batch_hooks(self, mode):
        return self._uses_bar()  # the summary lines need no per-batch logs

    def _open(self, desc, total):
        self._close()
        self._start, self._seen = time.perf_counter(), 0
        if self._uses_bar():
            self._bar = _bar_class()(total=total, desc=desc, unit="step", leave=True,
                                     dynamic_ncols=True, file=self._stream())

    def _step(self, logs):
        self._seen += 1
        if self._bar is not None:
            text = format_logs({k: v for k, v in (logs or {}).items() if k != "outputs"})
            if text:
                self._bar.set_postfix_str(text, refresh=False)
            self._bar.update(1)

    def _close(self, logs=None):
        if self._bar is not None:
            if logs:
                self._bar.set_postfix_str(format_logs(logs), refresh=False)
            self._bar.close()
            self._bar = None

    def _line(self, head, logs):
        seconds = time.perf_counter() - self._start
        per_step = 1000 * seconds / max(self._seen or self.params.get("steps") or 1, 1)
        text = format_logs(logs)
        print(f"{head} - {seconds:.0f}s - {per_step:.0f}ms/step" + (f" - {text}" if text else ""),
              file=self._stream(), flush=True)

    # -- fit ------------------------------------------------------------------------------------
    def on_train_begin(self, logs=None):
        self._in_fit = True

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        self._open(f"Epoch {epoch + 1}/{self.params.get('epochs', '?')}", self.params.get("steps"))

    def on_train_batch_end(self, batch, logs=None):
        self._step(logs)

    def on_epoch_end(self, epoch, logs=None):
        if self._bar is not None:
            self._close(logs)
            if is_notebook(self._stream()):  # a lasting copy of the widget's numbers
                self._line(f"Epoch {epoch + 1}/{self.params.get('epochs', '?')}", logs)
        elif self._uses_lines():
            self._line(f"Epoch {epoch + 1}/{self.params.get('epochs', '?')}", logs)

    def on_train_end(self, logs=None):
        self._in_fit = False
        self._close()

    # -- evaluate and predict -------------------------------------------------------------------
    def on_test_begin(self, logs=None):
        if not self._in_fit:
            self._open("Evaluate", self.params.get("steps"))

    def on_test_batch_end(self, batch, logs=None):
        if not self._in_fit:
            self._step(logs)

    def on_test_end(self, logs=None):
        if not self._in_fit:
            had_bar = self._bar is not None
            self._close(logs)
            if (not had_bar and self._uses_lines()) or (had_bar and is_notebook(self._stream())):
                self._line("Evaluate", logs)

    def on_predict_begin(self, logs=None):
        self._open("Predict", self.params.get("steps"))

    def on_predict_batch_end(self, batch, logs=None):
        self._step(None)

    def on_predict_end(self, logs=None):
        had_bar = self._bar is not None
        self._close()
        if not had_bar and self._uses_lines():
            self._line("Predict", None)
