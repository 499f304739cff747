"""A text progress bar for custom loops (Keras's ``keras.utils.Progbar``)."""

import sys
import time

import numpy as np


class Progbar:
    """Progress of ``target`` steps with running averages of named values.

    Args:
        target: total number of steps, or None if unknown.
        width: bar width in characters.
        verbose: 1 draws a bar that is redrawn in place, 2 prints one line at the end, 0 is silent.
        interval: minimum seconds between redraws.
        stateful_metrics: names whose value is shown as given, not averaged over steps.
        unit_name: the word after the step rate ("step", "sample").

    ``update(current, values)`` sets the step; ``values`` is a list of ``(name, value)`` pairs.
    Each value is averaged over the steps it was reported for, weighted by the step increments,
    as Keras does.
    """

    def __init__(self, target, width=20, verbose=1, interval=0.05, stateful_metrics=None,
                 unit_name="step", stream=None):
        self.target, self.width, self.verbose = target, width, verbose
        self.interval, self.unit_name = interval, unit_name
        self.stateful_metrics = set(stateful_metrics or ())
        self.stream = stream or sys.stdout
        self._sums, self._order = {}, []
        self._seen, self._start, self._last = 0, time.time(), 0.0

    def update(self, current, values=None, finalize=None):
        """Move to step ``current`` and fold in ``values``; ``finalize`` (default: current >=
        target) ends the bar with a newline."""
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        for name, value in values or ():
            if name not in self._sums:
                self._order.append(name)
            value = float(np.mean(value))
            if name in self.stateful_metrics:
                self._sums[name] = [value, 1]
            else:
                step = max(current - self._seen, 1)
                total, count = self._sums.get(name, [0.0, 0])
                self._sums[name] = [total + value * step, count + step]
        self._seen = current
        now = time.time()
        if self.verbose == 1 and (finalize or now - self._last >= self.interval):
            self.stream.write("\r" + self._line(current, now) + ("\n" if finalize else ""))
            self.stream.flush()
            self._last = now
        elif self.verbose == 2 and finalize:
            self.stream.write(self._line(current, now) + "\n")
            self.stream.flush()

    def add(self, n, values=None):
        """Advance by ``n`` steps."""
        self.update(self._seen + n, values)

    def value(self, name):
        """The current (averaged) value of ``name``."""
        total, count = self._sums[name]
        return total / max(count, 1)

    def _line(self, current, now):
        if self.target is not None:
            done = int(self.width * min(current / max(self.target, 1), 1))
            bar = f"{current}/{self.target} [" + "=" * done + "." * (self.width - done) + "]"
        else:
            bar = f"{current}"
        elapsed = now - self._start
        per = elapsed / max(current, 1)
        parts = [bar, f"{elapsed:.0f}s {per * 1e3:.0f}ms/{self.unit_name}"]
        parts += [f"{name}: {self.value(name):.4f}" for name in self._order]
        return " - ".join(parts)
