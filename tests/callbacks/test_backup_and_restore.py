"""BackupAndRestore in one process: batch-frequency saves, the double checkpoint fallback, the
argument checks. (The kill-and-resume test is in test_interrupted_fit.py.)"""

import json
import pathlib
import sys

import numpy as np
import pytest

import kerasrs
from kerasrs import callbacks

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "fixtures"))
import callback_scenarios as scenarios  # noqa: E402


def _model():
    kerasrs.utils.clear_session()
    return scenarios._regression_model(kerasrs, kerasrs.optimizers.Adam(0.05))


def _fit(model, *cbs, epochs=6):
    return model.fit(scenarios.X_REG, scenarios.Y_REG, epochs=epochs, batch_size=4,
                     shuffle=False, verbose=0, callbacks=list(cbs))


class Stop(callbacks.Callback):
    """Raises (as a crash would) at the end of ``epoch``'s batch ``batch``."""

    def __init__(self, epoch, batch):
        super().__init__()
        self.at, self.epoch = (epoch, batch), None

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if (self.epoch, batch) == self.at:
            raise RuntimeError("crash")


def test_integer_save_freq_saves_mid_epoch_and_the_resume_reruns_that_epoch(tmp_path):
    with pytest.raises(RuntimeError, match="crash"):
        _fit(_model(), callbacks.BackupAndRestore(tmp_path, save_freq=3), Stop(2, 0))
    # 2 batches per epoch: the 3rd batch (epoch 1, batch 0) saved; the 6th was never reached
    meta = json.loads((tmp_path / "training_metadata.json").read_text())
    assert meta == {"epoch": 1, "batch": 0}
    h = _fit(_model(), callbacks.BackupAndRestore(tmp_path, save_freq=3))
    assert h.epoch == [1, 2, 3, 4, 5] and not tmp_path.exists()


def test_double_checkpoint_falls_back_on_the_previous_backup(tmp_path):
    with pytest.raises(RuntimeError, match="crash"):
        _fit(_model(), callbacks.BackupAndRestore(tmp_path, double_checkpoint=True), Stop(3, 0))
    assert json.loads((tmp_path / "training_metadata.json.bkp").read_text())["epoch"] == 2
    (tmp_path / "latest.weights.h5").write_bytes(b"not an HDF5 file")
    h = _fit(_model(), callbacks.BackupAndRestore(tmp_path, double_checkpoint=True))
    assert h.epoch == [2, 3, 4, 5]
    want = scenarios.adam_six_epochs(kerasrs, None)
    assert h.history["loss"] == want["history"]["loss"][2:]


def test_backup_is_kept_when_delete_checkpoint_is_false(tmp_path):
    _fit(_model(), callbacks.BackupAndRestore(tmp_path, delete_checkpoint=False), epochs=2)
    assert json.loads((tmp_path / "training_metadata.json").read_text())["epoch"] == 2
    h = _fit(_model(), callbacks.BackupAndRestore(tmp_path, delete_checkpoint=False), epochs=3)
    assert h.epoch == [2]


def test_early_stopping_after_it_in_the_list_still_deletes_the_backup(tmp_path):
    h = _fit(_model(), callbacks.BackupAndRestore(tmp_path),
             callbacks.EarlyStopping(monitor="loss", mode="max", patience=1))
    assert h.epoch == [0, 1] and not tmp_path.exists()


def test_argument_and_model_checks(tmp_path):
    with pytest.raises(ValueError, match="backup_dir must be a folder path"):
        callbacks.BackupAndRestore("")
    with pytest.raises(ValueError, match="save_freq must be 'epoch' or a positive int"):
        callbacks.BackupAndRestore(tmp_path, save_freq="batch")
    kerasrs.utils.clear_session()
    model = kerasrs.Sequential([kerasrs.layers.Dense(1)])
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match="the model must be built before fit"):
        model.fit(np.ones((2, 2)), np.ones((2, 1)), verbose=0,
                  callbacks=[callbacks.BackupAndRestore(tmp_path)])


@pytest.mark.parametrize("content", [b"{\"epo", b"\xff\xfe", b"[1, 2]", b"{\"batch\": 0}",
                                     b"{\"epoch\": \"two\"}", b"{\"epoch\": -1}"])
def test_files_damaged_training_metadata_names_the_file_and_the_backup_folder(content, tmp_path):
    with pytest.raises(RuntimeError, match="crash"):
        _fit(_model(), callbacks.BackupAndRestore(tmp_path), Stop(2, 0))
    (tmp_path / "training_metadata.json").write_bytes(content)
    model = _model()
    before = [w.numpy().copy() for w in model.weights]
    with pytest.raises(ValueError) as info:
        _fit(model, callbacks.BackupAndRestore(tmp_path))
    message = str(info.value)
    assert repr(str(tmp_path / "training_metadata.json")) in message
    assert f"backup folder {str(tmp_path)!r}" in message and "damaged" in message
    assert all(np.array_equal(w.numpy(), b) for w, b in zip(model.weights, before))
    assert (tmp_path / "latest.weights.h5").exists()  # the backup is kept for inspection
