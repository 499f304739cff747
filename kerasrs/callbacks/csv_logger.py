"""`CSVLogger`: one CSV row per epoch with the epoch's logs."""

import csv
import os

import numpy as np

from kerasrs.callbacks.callback import Callback

__all__ = ["CSVLogger"]


class CSVLogger(Callback):
    """Write ``epoch`` (0-based) and every log value to a CSV file, one row per epoch.

    The columns are fixed at the first epoch: the sorted log names, plus ``val_<name>`` for
    each when the first epoch has no validation values (Keras 3's rule, so a later validated
    epoch still fits). A missing value is written as ``NA``. The file is flushed after every
    row, so an interrupted ``fit`` keeps all finished epochs, and closed at the end of ``fit``.

    Args:
        filename: path of the CSV file.
        separator: the field separator. Defaults to ",".
        append: add to an existing file (without a second header) instead of overwriting it.
            The rows must fit the file's header: if the file's columns differ from this
            run's (its separator may differ), the first epoch's end raises (before writing anything) rather than leaving
            a malformed CSV; log to a new file or pass ``append=False``.

    Raises:
        TypeError: for a ``separator`` that is not one character.
        ValueError: with ``append=True``, at the end of the first epoch, when the existing
            file's header names other columns than this run's logs (naming both).
    """

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        if not isinstance(separator, str) or len(separator) != 1:
            raise TypeError("CSVLogger: `separator` must be a single character (the csv "
                            f"module's delimiter). Received: separator={separator!r}")
        self.filename, self.sep, self.append = os.fspath(filename), separator, append
        self.keys = self.writer = self.csv_file = None
        self.append_header = True
        self._existing_header = None

    def on_train_begin(self, logs=None):
        self._existing_header = None
        if self.append and os.path.exists(self.filename):
            with open(self.filename, encoding="utf-8", newline="") as f:
                self._existing_header = _columns(f.readline().rstrip("\r\n"), self.sep)
        self.append_header = not self._existing_header
        self._close()
        self.csv_file = open(self.filename, "a" if self.append else "w", newline="",
                             encoding="utf-8")
        self.keys = self.writer = None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
            if self.keys and not any(k.startswith("val_") for k in self.keys):
                self.keys += [f"val_{k}" for k in self.keys]
        if self.writer is None:
            self._check_header()
            self.writer = csv.writer(self.csv_file, delimiter=self.sep)
            if self.append_header:
                self.writer.writerow(["epoch", *self.keys])
        self.writer.writerow([epoch, *(_cell(logs.get(k, "NA")) for k in self.keys)])
        self.csv_file.flush()

    def _check_header(self):
        header = ["epoch", *self.keys]
        if self._existing_header and self._existing_header != header:
            self._close()
            raise ValueError(
                f"CSVLogger: cannot append to {self.filename!r}: its header has the columns "
                f"{self._existing_header}, but this run logs {header}, so the rows would not "
                "fit their columns. Log to a new file or pass append=False to overwrite it. "
                f"Received: filename={self.filename!r}, append=True")

    def on_train_end(self, logs=None):
        self._close()

    def _close(self):
        if self.csv_file is not None and not self.csv_file.closed:
            self.csv_file.close()
        self.writer = None


def _columns(line, sep):
    """The column names of a header line, split by ``sep`` or else the first common separator
    that splits it (an earlier run may have used another one, which Keras appends to as well)."""
    if not line:
        return None
    for delimiter in dict.fromkeys((sep, ",", ";", "\t", "|")):
        fields = next(csv.reader([line], delimiter=delimiter))
        if len(fields) > 1:
            return fields
    return [line]


def _cell(value):
    """Keras's cell format: numbers as Python prints them, sequences as ``"[a, b]"``."""
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray) and value.ndim > 0 or isinstance(value, (list, tuple)):
        return f"[{', '.join(map(str, np.asarray(value).ravel().tolist()))}]"
    return value
