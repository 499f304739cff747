"""ProgbarLogger with ``verbose=1``: a live tqdm bar on a terminal or in a notebook, one summary
line per epoch on anything else (a log file, a pipe, a captured stream), as Keras does."""

import io
import sys

import numpy as np
import pytest

import kerasrs
from kerasrs import callbacks, layers
from kerasrs.callbacks.progbar_logger import ProgbarLogger, format_logs, is_interactive


class TTY(io.StringIO):
    def isatty(self):
        return True


class KernelStream(io.StringIO):
    """Stands for ipykernel's OutStream: not a TTY, but shown live in the notebook."""


KernelStream.__module__ = "ipykernel.iostream"


def _fit(stream, epochs=5, steps=20, verbose=1, **kwargs):
    kerasrs.utils.clear_session()
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(1)])
    model.compile("sgd", "mse", metrics=["mae"])
    x = np.ones((steps * 4, 3), "float32")
    return model, model.fit(x, np.zeros((steps * 4, 1)), batch_size=4, epochs=epochs,
                            verbose=verbose, callbacks=[ProgbarLogger(file=stream)], **kwargs)


def test_interactivity_detection():
    assert is_interactive(TTY()) and is_interactive(KernelStream())
    assert not is_interactive(io.StringIO())

    class Closed(io.StringIO):
        def isatty(self):
            raise ValueError("I/O operation on closed file")

    assert not is_interactive(Closed()) and not is_interactive(object())


def test_non_interactive_verbose_1_prints_one_line_per_epoch():
    stream = io.StringIO()
    _, history = _fit(stream, validation_split=0.25)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 5 and "\r" not in stream.getvalue()
    for epoch, line in enumerate(lines):
        assert line.startswith(f"Epoch {epoch + 1}/5 - ") and "ms/step - loss: " in line
        expected = {k: v[epoch] for k, v in history.history.items()}
        assert line.endswith(" - " + format_logs(expected))


def test_non_interactive_verbose_1_asks_for_no_batch_logs():
    assert not callbacks.CallbackList([ProgbarLogger(file=io.StringIO())], verbose=1) \
        .wants_batch_hooks("train")
    assert callbacks.CallbackList([ProgbarLogger(file=TTY())], verbose=1) \
        .wants_batch_hooks("train")
    assert not callbacks.CallbackList([ProgbarLogger(file=TTY())], verbose=2) \
        .wants_batch_hooks("train")


@pytest.mark.parametrize("stream_type", [TTY, KernelStream])
def test_interactive_verbose_1_draws_a_tqdm_bar_per_epoch(stream_type):
    stream = stream_type()
    _fit(stream, epochs=2, steps=3)
    out = stream.getvalue()
    assert "Epoch 1/2" in out and "Epoch 2/2" in out and "3/3" in out and "\r" in out
    assert "loss: " in out and "mae: " in out
    # a notebook also gets one lasting text line per epoch (a saved notebook drops widgets)
    summary = [line for line in out.splitlines() if line.startswith("Epoch ") and " - " in line
               and "ms/step - loss: " in line]
    if stream_type is TTY:
        assert summary == []
    else:
        assert [line.split(" - ")[0] for line in summary] == ["Epoch 1/2", "Epoch 2/2"]


def test_default_progbar_follows_sys_stdout(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stream)
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(1)])
    model.compile("sgd", "mse")
    x = np.ones((40, 3), "float32")
    model.fit(x, np.zeros((40, 1)), batch_size=2, epochs=5, verbose=1)
    assert len(stream.getvalue().splitlines()) == 5
    model.evaluate(x, np.zeros((40, 1)), verbose=1)
    model.predict(x, verbose=1)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 7 and lines[5].startswith("Evaluate - ") and "loss: " in lines[5]
    assert lines[6].startswith("Predict - ")
    tty = TTY()
    monkeypatch.setattr(sys, "stdout", tty)
    model.fit(x, np.zeros((40, 1)), batch_size=2, epochs=1, verbose=1)
    assert "20/20" in tty.getvalue()


def test_notebook_evaluate_leaves_a_text_line():
    stream = KernelStream()
    model, _ = _fit(stream, epochs=1, steps=2, verbose=0)
    model.evaluate(np.ones((8, 3)), np.zeros((8, 1)), batch_size=4,
                   callbacks=[ProgbarLogger(file=stream)])
    assert [line for line in stream.getvalue().splitlines()
            if line.startswith("Evaluate - ")][0].endswith("mae: " + format(
                model.evaluate(np.ones((8, 3)), np.zeros((8, 1)), verbose=0)[1], ".4f"))
