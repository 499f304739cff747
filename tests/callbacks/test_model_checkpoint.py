"""ModelCheckpoint: file names, best-only saving with Keras's mode rules, weights-only files,
batch-frequency saving, thresholds, and checkpoints that survive a failed save."""

import os

import numpy as np
import pytest

import kerasrs
from kerasrs import layers
from kerasrs.callbacks import ModelCheckpoint


class RecordingModel:
    """Stands in for a model: records what the callback saves."""

    def __init__(self, metrics=()):
        self.saved, self.metrics = [], list(metrics)

    def save(self, filepath, overwrite=True):
        self.saved.append(("model", filepath))

    def save_weights(self, filepath, overwrite=True):
        self.saved.append(("weights", filepath))


def _run(callback, epoch_logs, model=None):
    model = model or RecordingModel()
    callback.set_model(model)
    for epoch, logs in enumerate(epoch_logs):
        callback.on_epoch_begin(epoch)
        callback.on_epoch_end(epoch, logs)
    return model.saved


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(40, 4)).astype("float32"), rng.integers(0, 2, 40)


def _model():
    kerasrs.utils.clear_session()
    kerasrs.utils.set_random_seed(0)
    model = kerasrs.Sequential([layers.Input((4,)), layers.Dense(4, activation="relu"),
                                layers.Dense(2, activation="softmax")])
    model.compile(kerasrs.optimizers.SGD(0.1), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def test_filepath_fields_come_from_epoch_and_logs(tmp_path):
    pattern = str(tmp_path / "ckpt" / "{epoch:02d}-{val_loss:.2f}.keras")
    saved = _run(ModelCheckpoint(pattern), [{"val_loss": 0.512}, {"val_loss": 0.25}])
    assert saved == [("model", str(tmp_path / "ckpt" / "01-0.51.keras")),
                     ("model", str(tmp_path / "ckpt" / "02-0.25.keras"))]
    assert (tmp_path / "ckpt").is_dir()  # missing folders are created


def test_unknown_format_field_names_the_field(tmp_path):
    callback = ModelCheckpoint(str(tmp_path / "{epoch}-{val_acc}.keras"))
    with pytest.raises(KeyError, match="val_acc"):
        _run(callback, [{"val_loss": 1.0}])


def test_save_best_only_minimizes_losses_in_auto_mode(tmp_path):
    callback = ModelCheckpoint(str(tmp_path / "{epoch}.keras"), save_best_only=True)
    saved = _run(callback, [{"val_loss": v} for v in (0.9, 0.7, 0.8, 0.6, 0.6)])
    assert [os.path.basename(p) for _, p in saved] == ["1.keras", "2.keras", "4.keras"]
    assert callback.best == 0.6


@pytest.mark.parametrize("monitor", ["val_accuracy", "acc", "val_auc", "val_precision",
                                     "recall", "val_sparse_categorical_accuracy"])
def test_auto_mode_maximizes_accuracy_like_names(monitor, tmp_path):
    callback = ModelCheckpoint(str(tmp_path / "{epoch}.keras"), monitor=monitor,
                               save_best_only=True)
    saved = _run(callback, [{monitor: v} for v in (0.5, 0.7, 0.6, 0.9)])
    assert [os.path.basename(p) for _, p in saved] == ["1.keras", "2.keras", "4.keras"]


@pytest.mark.parametrize("monitor", ["val_mae", "mean_squared_error", "val_output_1_loss"])
def test_auto_mode_minimizes_error_like_names(monitor, tmp_path):
    callback = ModelCheckpoint(str(tmp_path / "{epoch}.keras"), monitor=monitor,
                               save_best_only=True)
    saved = _run(callback, [{monitor: v} for v in (0.5, 0.7, 0.4)])
    assert [os.path.basename(p) for _, p in saved] == ["1.keras", "3.keras"]


def test_auto_mode_uses_a_metric_direction_when_declared(tmp_path):
    class Metric:
        name, _direction = "score", "up"

    callback = ModelCheckpoint(str(tmp_path / "{epoch}.keras"), monitor="val_score",
                               save_best_only=True)
    saved = _run(callback, [{"val_score": v} for v in (1.0, 2.0, 1.5)],
                 RecordingModel(metrics=[Metric()]))
    assert len(saved) == 2


def test_auto_mode_refuses_names_it_cannot_decide(tmp_path):
    callback = ModelCheckpoint(str(tmp_path / "x.keras"), monitor="val_zorp",
                               save_best_only=True)
    with pytest.raises(ValueError, match="mode='max'"):
        _run(callback, [{"val_zorp": 1.0}, {"val_zorp": 2.0}])


@pytest.mark.parametrize("mode, kept", [("min", ["1", "3"]), ("max", ["1", "2"])])
def test_explicit_modes(mode, kept, tmp_path):
    callback = ModelCheckpoint(str(tmp_path / "{epoch}.keras"), monitor="val_zorp",
                               save_best_only=True, mode=mode)
    saved = _run(callback, [{"val_zorp": v} for v in (1.0, 2.0, 0.5)])
    assert [os.path.basename(p)[0] for _, p in saved] == kept


def test_initial_value_threshold_must_be_beaten(tmp_path):
    callback = ModelCheckpoint(str(tmp_path / "{epoch}.keras"), save_best_only=True,
                               initial_value_threshold=0.5)
    saved = _run(callback, [{"val_loss": v} for v in (0.8, 0.6, 0.4)])
    assert [os.path.basename(p) for _, p in saved] == ["3.keras"]


def test_missing_monitor_warns_and_saves(tmp_path):
    callback = ModelCheckpoint(str(tmp_path / "x.keras"), save_best_only=True)
    with pytest.warns(UserWarning, match="val_loss"):
        saved = _run(callback, [{"loss": 1.0}])
    assert len(saved) == 1


def test_argument_checks(tmp_path):
    with pytest.raises(ValueError, match=r"\.weights\.h5"):
        ModelCheckpoint(str(tmp_path / "w.h5"), save_weights_only=True)
    with pytest.raises(ValueError, match=r"\.keras"):
        ModelCheckpoint(str(tmp_path / "m.ckpt"))
    with pytest.raises(ValueError, match="save_freq"):
        ModelCheckpoint(str(tmp_path / "m.keras"), save_freq="batch")
    with pytest.raises(ValueError, match="save_freq"):
        ModelCheckpoint(str(tmp_path / "m.keras"), save_freq=0)


def test_integer_save_freq_counts_batches_across_epochs(tmp_path):
    callback = ModelCheckpoint(str(tmp_path / "e{epoch}-b{batch}.weights.h5"),
                               save_weights_only=True, save_freq=3)
    model = RecordingModel()
    callback.set_model(model)
    for epoch in range(2):
        callback.on_epoch_begin(epoch)
        for batch in range(4):
            callback.on_train_batch_end(batch, {"loss": 1.0})
        callback.on_epoch_end(epoch, {"loss": 1.0})
    assert [os.path.basename(p) for _, p in model.saved] == ["e1-b3.weights.h5",
                                                             "e2-b2.weights.h5"]
    assert all(kind == "weights" for kind, _ in model.saved)


# -- with real training ----------------------------------------------------------------------------
def test_fit_with_best_only_checkpoint_keeps_the_best_epoch(tmp_path):
    x, y = _data()
    model = _model()
    path = tmp_path / "best.keras"
    model.optimizer.learning_rate = 2.0  # big steps, so that val_loss goes up and down
    history = model.fit(x, y, validation_split=0.25, epochs=5, batch_size=10, verbose=0,
                        shuffle=False, callbacks=[ModelCheckpoint(str(path),
                                                                  save_best_only=True)])
    losses = history.history["val_loss"]
    best_epoch = int(np.argmin(losses))
    assert best_epoch != len(losses) - 1, losses  # the last epoch was not the best
    loaded = kerasrs.models.load_model(path)
    assert loaded.evaluate(x[30:], y[30:], verbose=0)[0] == pytest.approx(losses[best_epoch],
                                                                          rel=1e-5)


def test_weights_only_checkpoints_every_epoch_reload(tmp_path):
    x, y = _data()
    model = _model()
    pattern = str(tmp_path / "w{epoch:02d}.weights.h5")
    model.fit(x, y, epochs=2, batch_size=10, verbose=0, shuffle=False,
              callbacks=[ModelCheckpoint(pattern, save_weights_only=True, monitor="loss")])
    assert sorted(os.listdir(tmp_path)) == ["w01.weights.h5", "w02.weights.h5"]
    other = _model()
    other.load_weights(tmp_path / "w02.weights.h5")
    np.testing.assert_array_equal(other.predict(x, verbose=0), model.predict(x, verbose=0))
    assert int(other.optimizer.iterations.numpy()) == 8


def test_a_failed_checkpoint_save_leaves_the_previous_one_intact(tmp_path, monkeypatch):
    from kerasrs.saving import weights_h5

    x, y = _data()
    model = _model()
    path = tmp_path / "last.keras"
    real_write, calls = weights_h5.write, [0]

    def write_then_crash_on_second_save(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 2:
            raise OSError(28, "No space left on device")
        return real_write(*args, **kwargs)

    monkeypatch.setattr(weights_h5, "write", write_then_crash_on_second_save)
    snapshots = []

    class Snapshot(kerasrs.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            snapshots.append([w.numpy().copy() for w in self.model.weights])

    with pytest.raises(OSError, match="No space left"):
        model.fit(x, y, epochs=3, batch_size=10, verbose=0, shuffle=False,
                  callbacks=[Snapshot(), ModelCheckpoint(str(path), monitor="loss")])
    assert os.listdir(tmp_path) == ["last.keras"]
    loaded = kerasrs.models.load_model(path)
    for w, value in zip(loaded.weights, snapshots[0]):  # epoch 1's checkpoint
        np.testing.assert_array_equal(w.numpy(), value)


@pytest.mark.parametrize("monitor, first", [("val_loss", "inf"), ("val_accuracy", "-inf")])
def test_first_message_starts_from_the_worst_value_not_none(monitor, first, tmp_path, capsys):
    cb = ModelCheckpoint(tmp_path / "m.keras", monitor=monitor, save_best_only=True, verbose=1)
    _run(cb, [{monitor: 0.5}, {monitor: 0.5}])
    out = capsys.readouterr().out
    assert f"{monitor} improved from {first} to 0.50000" in out and "None" not in out
    assert f"{monitor} did not improve from 0.50000" in out


def test_invalid_mode_raises(tmp_path):
    with pytest.raises(ValueError, match=r"mode must be 'auto', 'min' or 'max'.*mode='best'"):
        ModelCheckpoint(tmp_path / "m.keras", mode="best")
