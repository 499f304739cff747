"""Callbacks as Keras 3 has them (issue 27): every hook gets a dict, `LambdaCallback` takes any
keyword, `BackupAndRestore` saves by batch with Keras's state attributes.

Every case runs on kerasrs and, in one reference process, on Keras 3 (see `keras_twin`).
"""

import pytest
from keras_twin import case_id, check, helper, np, twin


@helper
def small_model(K):
    model = K.Sequential([K.Input((3,)), K.layers.Dense(1)])
    model.compile("sgd", "mse", metrics=["mae"])
    rng = np.random.default_rng(0)
    return model, rng.random((8, 3)).astype("float32"), rng.random((8, 1)).astype("float32")


@helper
def hook_names(K):
    return sorted(name for name in dir(K.callbacks.Callback) if name.startswith("on_"))


@twin
def every_hook_gets_a_dict(K):
    seen = {}

    class Recorder(K.callbacks.Callback):
        pass

    def recorder(name):
        def hook(self, *args, **kwargs):  # Keras passes some logs by keyword
            logs = kwargs["logs"] if "logs" in kwargs else args[-1]
            assert isinstance(logs, dict), (name, logs)
            seen.setdefault(name, set()).update(logs.keys())
        return hook

    for name in hook_names(K):
        setattr(Recorder, name, recorder(name))
    model, x, y = small_model(K)
    model.fit(x, y, batch_size=4, epochs=1, validation_data=(x, y), verbose=0,
              callbacks=[Recorder()])
    model.evaluate(x, y, verbose=0, callbacks=[Recorder()])
    model.predict(x, verbose=0, callbacks=[Recorder()])
    assert seen["on_train_begin"] == set() and seen["on_epoch_begin"] == set()
    assert seen["on_train_batch_begin"] == set() and seen["on_predict_begin"] == set()
    assert {"loss", "mae", "val_loss", "val_mae"} <= seen["on_epoch_end"]
    assert set(seen) >= {"on_train_begin", "on_train_end", "on_test_begin", "on_test_end",
                         "on_predict_begin", "on_predict_end", "on_predict_batch_begin",
                         "on_test_batch_begin", "on_epoch_begin", "on_train_batch_begin"}


@twin
def the_guides_logging_callback_runs(K):
    """The official "Writing your own callbacks" guide prints ``list(logs.keys())`` at every
    hook, with ``logs`` not checked for None."""
    printed = []

    class CustomCallback(K.callbacks.Callback):
        def on_train_begin(self, logs=None):
            printed.append(("train_begin", list(logs.keys())))

        def on_epoch_begin(self, epoch, logs=None):
            printed.append(("epoch_begin", list(logs.keys())))

        def on_test_begin(self, logs=None):
            printed.append(("test_begin", list(logs.keys())))

        def on_predict_begin(self, logs=None):
            printed.append(("predict_begin", list(logs.keys())))

        def on_train_batch_begin(self, batch, logs=None):
            printed.append(("batch_begin", list(logs.keys())))

        def on_predict_end(self, logs=None):
            printed.append(("predict_end", list(logs.keys())))

    model, x, y = small_model(K)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[CustomCallback()])
    model.evaluate(x, y, verbose=0, callbacks=[CustomCallback()])
    model.predict(x, verbose=0, callbacks=[CustomCallback()])
    assert ("train_begin", []) in printed and ("predict_end", []) in printed


@twin
def lambda_hooks_get_dicts(K):
    kinds = []
    cb = K.callbacks.LambdaCallback(on_train_begin=lambda logs: kinds.append(type(logs)),
                                    on_epoch_begin=lambda epoch, logs: kinds.append(type(logs)))
    model, x, y = small_model(K)
    model.fit(x, y, epochs=1, verbose=0, callbacks=[cb])
    assert kinds == [dict, dict]


LOGS_CASES = [every_hook_gets_a_dict, the_guides_logging_callback_runs, lambda_hooks_get_dicts]


@pytest.mark.parametrize("case", LOGS_CASES, ids=case_id)
def test_every_callback_hook_receives_a_dict(case):
    check(case)


# -- LambdaCallback takes any keyword -------------------------------------------------------------
@twin
def lambda_callback_takes_any_hook(K):
    calls = []
    cb = K.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: calls.append(("epoch_end", epoch)),
        on_test_end=lambda logs: calls.append(("test_end", sorted(logs))),
        on_predict_batch_end=lambda batch, logs: calls.append(("predict_batch_end", batch)),
        on_test_batch_begin=lambda batch, logs: calls.append(("test_batch_begin", batch)))
    model, x, y = small_model(K)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[cb], validation_data=(x, y))
    model.predict(x, batch_size=8, verbose=0, callbacks=[cb])
    assert calls == [("test_batch_begin", 0), ("test_end", ["loss", "mae"]), ("epoch_end", 0),
                     ("predict_batch_end", 0)], calls


@twin
def lambda_callback_keeps_other_keywords(K):
    import warnings
    state = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cb = K.callbacks.LambdaCallback(on_train_end=lambda logs: state.append("end"),
                                        history=state, on_epoch_finish=print)
    assert cb.history is state and cb.on_epoch_finish is print
    model, x, y = small_model(K)
    model.fit(x, y, epochs=1, verbose=0, callbacks=[cb])
    assert state == ["end"]


LAMBDA_CASES = [lambda_callback_takes_any_hook, lambda_callback_keeps_other_keywords]


@pytest.mark.parametrize("case", LAMBDA_CASES, ids=case_id)
def test_lambda_callback_accepts_extra_keyword_hooks(case):
    check(case)


# -- BackupAndRestore by batch ------------------------------------------------------------------------
@helper
def backup_run(K, save_freq, epochs=2):
    """Fit 5 batches per epoch with a BackupAndRestore; per batch: (batch, metadata on disk,
    the callback's counters)."""
    import json
    import os
    import tempfile
    model = K.Sequential([K.Input((3,)), K.layers.Dense(1)])
    model.compile("sgd", "mse")
    rng = np.random.default_rng(0)
    x, y = rng.random((20, 3)).astype("float32"), rng.random((20, 1)).astype("float32")
    folder = tempfile.mkdtemp()
    backup = K.callbacks.BackupAndRestore(folder, save_freq=save_freq, delete_checkpoint=False)
    log = []

    class Spy(K.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            path = os.path.join(folder, "training_metadata.json")
            meta = json.load(open(path)) if os.path.exists(path) else None
            log.append((batch, meta, backup._batches_seen_since_last_saving,
                        backup._last_batch_seen, backup._current_epoch))

    model.fit(x, y, batch_size=4, epochs=epochs, verbose=0, callbacks=[backup, Spy()])
    return backup, log


@twin
def backup_saves_every_n_batches(K):
    backup, log = backup_run(K, save_freq=3)
    assert log == [
        (0, None, 1, 0, 0), (1, None, 2, 1, 0), (2, {"epoch": 0, "batch": 2}, 0, 2, 0),
        (3, {"epoch": 0, "batch": 2}, 1, 3, 0), (4, {"epoch": 0, "batch": 2}, 2, 4, 0),
        (0, {"epoch": 1, "batch": 0}, 0, 0, 1), (1, {"epoch": 1, "batch": 0}, 1, 1, 1),
        (2, {"epoch": 1, "batch": 0}, 2, 2, 1), (3, {"epoch": 1, "batch": 3}, 0, 3, 1),
        (4, {"epoch": 1, "batch": 3}, 1, 4, 1)], log
    assert (backup._current_epoch, backup._last_batch_seen) == (2, 0)


@twin
def backup_by_epoch_counts_no_batches(K):
    backup, log = backup_run(K, save_freq="epoch")
    assert [entry[2] for entry in log] == [0] * 10
    assert log[5][1] == {"epoch": 1, "batch": 0}
    assert backup._should_save_on_batch(3) is False


@twin
def backup_save_decision_by_batch_index(K):
    backup = K.callbacks.BackupAndRestore("unused", save_freq=2)
    decisions = [backup._should_save_on_batch(b) for b in (0, 1, 2, 3, 0, 2)]
    assert decisions == [False, True, False, True, False, True], decisions
    expect_value_error = False
    try:
        K.callbacks.BackupAndRestore("unused", save_freq="batch")
    except ValueError:
        expect_value_error = True
    assert expect_value_error


BACKUP_CASES = [backup_saves_every_n_batches, backup_by_epoch_counts_no_batches,
                backup_save_decision_by_batch_index]


@pytest.mark.parametrize("case", BACKUP_CASES, ids=case_id)
def test_backup_and_restore_saves_by_batch_as_keras(case):
    check(case)
