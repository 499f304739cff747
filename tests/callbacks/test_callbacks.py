"""Callback hooks, CallbackList, History and ProgbarLogger."""

import io

import numpy as np
import pytest

import kerasrs
from kerasrs import callbacks, layers


class Recorder(callbacks.Callback):
    """Records every hook call as (hook name, epoch/batch index or None, logs)."""

    def __init__(self):
        super().__init__()
        self.calls = []


def _recording_hook(name):
    def hook(self, *args, **kwargs):
        logs = kwargs.get("logs", args[-1] if args and isinstance(args[-1], dict) else None)
        index = args[0] if args and isinstance(args[0], int) else None
        self.calls.append((name, index, dict(logs or {})))

    return hook


for _hook in [h for h in vars(callbacks.Callback) if h.startswith("on_")
              and h not in ("on_batch_begin", "on_batch_end")]:
    setattr(Recorder, _hook, _recording_hook(_hook))


def _model():
    kerasrs.utils.clear_session()
    model = kerasrs.Sequential([layers.Input((2,)), layers.Dense(1)])
    model.compile("sgd", "mse", metrics=["mae"])
    return model


def test_hook_order_during_fit_with_validation():
    rec = Recorder()
    model = _model()
    x, y = np.ones((6, 2), "float32"), np.zeros((6, 1), "float32")
    model.fit(x, y, batch_size=4, epochs=2, validation_data=(x, y), callbacks=[rec], verbose=0)
    names = [c[0] for c in rec.calls]
    epoch = ["on_epoch_begin", "on_train_batch_begin", "on_train_batch_end",
             "on_train_batch_begin", "on_train_batch_end", "on_test_begin",
             "on_test_batch_begin", "on_test_batch_end", "on_test_batch_begin",
             "on_test_batch_end", "on_test_end", "on_epoch_end"]
    assert names == ["on_train_begin"] + epoch + epoch + ["on_train_end"]
    ends = [c for c in rec.calls if c[0] == "on_epoch_end"]
    assert [c[1] for c in ends] == [0, 1]
    assert sorted(ends[0][2]) == ["loss", "mae", "val_loss", "val_mae"]
    assert rec.model is model and rec.params["epochs"] == 2 and rec.params["steps"] == 2


def test_history_lists_one_value_per_epoch():
    model = _model()
    h = model.fit(np.ones((4, 2)), np.zeros((4, 1)), epochs=3, verbose=0)
    assert isinstance(h, callbacks.History) and h.epoch == [0, 1, 2]
    assert set(h.history) == {"loss", "mae"} and all(len(v) == 3 for v in h.history.values())
    assert all(isinstance(v, float) for v in h.history["loss"])


def test_evaluate_and_predict_hooks():
    rec = Recorder()
    model = _model()
    model.evaluate(np.ones((5, 2)), np.zeros((5, 1)), batch_size=2, callbacks=[rec], verbose=0)
    assert [c[0] for c in rec.calls] == ["on_test_begin"] + ["on_test_batch_begin",
                                                             "on_test_batch_end"] * 3 + \
        ["on_test_end"]
    rec.calls.clear()
    model.predict(np.ones((3, 2)), batch_size=2, callbacks=[rec], verbose=0)
    assert [c[0] for c in rec.calls] == ["on_predict_begin", "on_predict_batch_begin",
                                         "on_predict_batch_end", "on_predict_batch_begin",
                                         "on_predict_batch_end", "on_predict_end"]


def test_callback_list_checks_types_and_adds_defaults():
    with pytest.raises(TypeError, match="Callback instances"):
        callbacks.CallbackList([object()])
    cbs = callbacks.CallbackList(add_history=True, add_progbar=True)
    assert [type(c).__name__ for c in cbs] == ["History", "ProgbarLogger"]
    assert not callbacks.CallbackList([callbacks.History()]).wants_batch_hooks("train")
    tty = io.StringIO()
    tty.isatty = lambda: True  # a live bar needs the batch logs; a summary line does not
    assert callbacks.CallbackList([callbacks.ProgbarLogger(file=tty)]).wants_batch_hooks("train")
    assert not callbacks.CallbackList([callbacks.ProgbarLogger(file=io.StringIO())]) \
        .wants_batch_hooks("train")


def test_fit_takes_one_callback_alone_as_keras_does():
    # before: "TypeError: 'EarlyStopping' object is not iterable"
    model = _model()
    stop = callbacks.EarlyStopping(monitor="loss", patience=0)
    model.fit(np.zeros((4, 2), "float32"), np.zeros((4, 1), "float32"), epochs=3, verbose=0,
              callbacks=stop)
    assert stop.model is model
    with pytest.raises(TypeError, match=r"`callbacks` must be a list of Callback instances.*"
                                        r"Received: an element of type type"):
        model.fit(np.zeros((4, 2)), np.zeros((4, 1)), verbose=0,
                  callbacks=[callbacks.EarlyStopping])


def test_default_batch_hooks_call_the_legacy_aliases():
    class Legacy(callbacks.Callback):
        seen = 0

        def on_batch_end(self, batch, logs=None):
            Legacy.seen += 1

    model = _model()
    model.fit(np.ones((6, 2)), np.zeros((6, 1)), batch_size=2, callbacks=[Legacy()], verbose=0)
    assert Legacy.seen == 3


def test_progbar_logger_formats_and_evaluate_line(capsys):
    from kerasrs.callbacks.progbar_logger import format_logs

    assert format_logs({"loss": 0.123456, "acc": 0.00001234}) == "loss: 0.1235 - acc: 1.2340e-05"
    model = _model()
    model.evaluate(np.ones((4, 2)), np.zeros((4, 1)), verbose=2)
    out = capsys.readouterr().out
    assert out.startswith("Evaluate - ") and "loss: " in out and "mae: " in out
