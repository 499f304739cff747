"""A training process killed mid-fit resumes from its BackupAndRestore backup with the same
result as an uninterrupted run; Ctrl-C (SIGINT) stops fit after the current batch, runs
on_train_end (CSV closed, best weights restored, backup kept), leaves the finished epochs in
History and no threads, then re-raises KeyboardInterrupt.

Each child process trains a tiny model for a few seconds and prints "ready" at the exact point
where the test interrupts it, so nothing depends on timing; a watchdog kills a stuck child."""

import contextlib
import csv
import json
import os
import pathlib
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

import kerasrs
from kerasrs import callbacks

FIXTURES = pathlib.Path(__file__).parent.parent / "fixtures"
ROOT = FIXTURES.parent.parent
sys.path.insert(0, str(FIXTURES))
import callback_scenarios as scenarios  # noqa: E402

CHILD = r'''
import io, json, signal, sys, threading, time
sys.path.insert(0, sys.argv[1])
import kerasrs
from kerasrs import callbacks
import callback_scenarios as scenarios

mode, folder = sys.argv[2], sys.argv[3]
model = scenarios._regression_model(kerasrs, kerasrs.optimizers.Adam(0.05))
state = {}


def stop_point(batch, logs):
    if (state["epoch"], batch) != (int(sys.argv[4]), 1):
        return
    print("ready", flush=True)
    if mode == "kill":
        time.sleep(300)
    deadline = time.time() + 300  # until the deferred SIGINT handler has fired
    while signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        time.sleep(0.01)
        assert time.time() < deadline


class TTY(io.StringIO):
    def isatty(self):
        return True


es = callbacks.EarlyStopping(monitor="loss", patience=100, restore_best_weights=True)
track = callbacks.LambdaCallback(on_epoch_begin=lambda e, logs: state.update(epoch=e),
                                 on_train_batch_end=stop_point)
cbs = [callbacks.CSVLogger(folder + "/log.csv"), es, callbacks.BackupAndRestore(folder + "/bk"),
       callbacks.ProgbarLogger(file=TTY()), track]
try:
    model.fit(scenarios.X_REG, scenarios.Y_REG, epochs=50, batch_size=4, shuffle=False,
              verbose=1, callbacks=cbs)
    print(json.dumps({"interrupted": False}))
except KeyboardInterrupt:
    print(json.dumps({
        "interrupted": True, "epochs": model.history.epoch,
        "loss": model.history.history["loss"], "threads": threading.active_count(),
        "handler_restored": signal.getsignal(signal.SIGINT) is signal.default_int_handler,
        "weights": [w.tolist() for w in model.get_weights()],
        "best_weights": [w.tolist() for w in es.best_weights]}))
'''


@contextlib.contextmanager
def child(tmp_path, mode, stop_epoch):
    script = tmp_path / "train.py"
    script.write_text(CHILD)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    process = subprocess.Popen(
        [sys.executable, str(script), str(FIXTURES), mode, str(tmp_path), str(stop_epoch)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    watchdog = threading.Timer(240, process.kill)  # generous: a loaded 2-core machine
    watchdog.start()
    try:
        first = process.stdout.readline()
        assert first.strip() == "ready", first + process.stderr.read()
        yield process
    finally:
        watchdog.cancel()
        process.kill()
        process.wait()
        process.stdout.close()
        process.stderr.close()


def _uninterrupted():
    kerasrs.utils.clear_session()
    return scenarios.adam_six_epochs(kerasrs, None)


def test_killed_fit_resumes_from_the_last_finished_epoch(tmp_path):
    with child(tmp_path, "kill", stop_epoch=3) as process:
        process.kill()  # SIGKILL in the middle of epoch 3
    backup = tmp_path / "bk"
    assert json.loads((backup / "training_metadata.json").read_text())["epoch"] == 3

    kerasrs.utils.clear_session()
    model = scenarios._regression_model(kerasrs, kerasrs.optimizers.Adam(0.05))
    h = model.fit(scenarios.X_REG, scenarios.Y_REG, epochs=6, batch_size=4, shuffle=False,
                  verbose=0, callbacks=[callbacks.BackupAndRestore(backup)])
    assert h.epoch == [3, 4, 5]
    assert int(model.optimizer.iterations.numpy()) == 12  # the optimizer state came back
    want = _uninterrupted()
    np.testing.assert_array_equal(np.concatenate([w.ravel() for w in model.get_weights()]),
                                  np.concatenate([np.ravel(w) for w in want["weights"]]))
    assert h.history["loss"] == want["history"]["loss"][3:]
    assert not backup.exists()  # a normal ending deletes the backup


def test_ctrl_c_stops_after_the_batch_and_keeps_everything(tmp_path):
    with child(tmp_path, "sigint", stop_epoch=2) as process:
        process.send_signal(signal.SIGINT)  # during epoch 2, after its batch 1
        out, err = process.communicate(timeout=240)
    assert process.returncode == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["interrupted"] and result["epochs"] == [0, 1]
    assert result["threads"] == 1 and result["handler_restored"]
    assert result["weights"] == result["best_weights"]  # EarlyStopping restored in on_train_end
    with open(tmp_path / "log.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["epoch"] for r in rows] == ["0", "1"]
    assert [float(r["loss"]) for r in rows] == result["loss"]
    assert json.loads((tmp_path / "bk" / "training_metadata.json").read_text())["epoch"] == 2
    assert "Traceback" not in err


def test_keyboard_interrupt_outside_the_deferred_handler_still_runs_on_train_end(tmp_path):
    calls = []

    def interrupt(batch, logs):
        if batch == 1:
            raise KeyboardInterrupt

    kerasrs.utils.clear_session()
    model = scenarios._regression_model(kerasrs, kerasrs.optimizers.SGD(0.1))
    with pytest.raises(KeyboardInterrupt):
        model.fit(scenarios.X_REG, scenarios.Y_REG, epochs=3, batch_size=4, verbose=0,
                  callbacks=[callbacks.LambdaCallback(on_train_batch_end=interrupt,
                                                      on_train_end=lambda logs: calls.append(
                                                          "end"))])
    assert calls == ["end"] and model.history.epoch == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
