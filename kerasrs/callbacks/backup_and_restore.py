"""`BackupAndRestore`: back up training state so an interrupted ``fit`` resumes where it was."""

import json
import os
import shutil

from kerasrs.callbacks.callback import Callback

__all__ = ["BackupAndRestore"]


class BackupAndRestore(Callback):
    """Save weights, optimizer state and the epoch counter during ``fit``; restore them when
    ``fit`` starts again after a crash, a kill or Ctrl-C.

    ``backup_dir`` holds ``latest.weights.h5`` (model weights and optimizer state) and
    ``training_metadata.json`` (``{"epoch": next epoch to run, "batch": ...}``). Both are written
    to a temporary file and renamed, so a kill during a save leaves the previous backup whole.
    At the start of ``fit`` an existing backup is loaded and training continues from its epoch.
    When ``fit`` ends normally (all epochs run, or stopped by a callback) the backup is deleted
    (``delete_checkpoint``); when it ends by an exception or Ctrl-C it is kept.

    Args:
        backup_dir: folder for the backup (created when needed).
        save_freq: "epoch" (after each epoch) or an int: also every that many batches. A resume
            restarts the epoch that was running at the last save.
        double_checkpoint: keep the previous backup as ``*.bkp`` and fall back on it when the
            latest cannot be read.
        delete_checkpoint: delete ``backup_dir`` when training ends normally.

    Raises:
        ValueError: for an empty ``backup_dir`` or a bad ``save_freq``; at the start of
            ``fit``, for an unbuilt model or a damaged ``training_metadata.json`` (naming the
            file and the backup folder).
    """

    def __init__(self, backup_dir, save_freq="epoch", double_checkpoint=False,
                 delete_checkpoint=True):
        super().__init__()
        if not backup_dir:
            raise ValueError(f"BackupAndRestore: backup_dir must be a folder path. Received: "
                             f"backup_dir={backup_dir!r}")
        if save_freq != "epoch" and (isinstance(save_freq, bool) or not isinstance(save_freq, int)
                                     or save_freq <= 0):
            raise ValueError("BackupAndRestore: save_freq must be 'epoch' or a positive int. "
                             f"Received: save_freq={save_freq!r}")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq, self.double_checkpoint = save_freq, double_checkpoint
        self.delete_checkpoint = delete_checkpoint
        self._weights_path = os.path.join(self.backup_dir, "latest.weights.h5")
        self._metadata_path = os.path.join(self.backup_dir, "training_metadata.json")
        # the batch-saving state, under Keras's names
        self._current_epoch = self._last_batch_seen = self._batches_seen_since_last_saving = 0
        self._finished = False

    # -- hooks ----------------------------------------------------------------------------------
    def on_train_begin(self, logs=None):
        self._finished = False
        try:
            self._load()
        except (OSError, ValueError):  # an unreadable latest backup: try the previous one
            if not os.path.exists(self._weights_path + ".bkp"):
                raise
            for path in (self._weights_path, self._metadata_path):
                if os.path.exists(path + ".bkp"):
                    shutil.copyfile(path + ".bkp", path)
            self._load()

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self._should_save_on_batch(batch):
            self._save(self._current_epoch, batch)

    def _should_save_on_batch(self, batch):
        """Count the batches since the last save (a batch index not above the last one seen
        starts a new epoch); True, and the count restarts, every ``save_freq`` batches."""
        if self.save_freq == "epoch":
            return False
        seen = self._last_batch_seen
        self._batches_seen_since_last_saving += batch + 1 if batch <= seen else batch - seen
        self._last_batch_seen = batch
        if self._batches_seen_since_last_saving < self.save_freq:
            return False
        self._batches_seen_since_last_saving = 0
        return True

    def on_epoch_end(self, epoch, logs=None):
        self._current_epoch, self._last_batch_seen = epoch + 1, 0
        if self.save_freq == "epoch":
            self._save(epoch + 1, 0)
        self._finished = epoch + 1 >= self.params.get("epochs", epoch + 1)

    def on_train_end(self, logs=None):
        # only a normal ending (all epochs, or stopped by a callback) deletes the backup: after
        # Ctrl-C or a crash the next fit resumes from it
        finished = self._finished or getattr(self.model, "stop_training", False)
        if finished and self.delete_checkpoint and self._writes() and \
                os.path.exists(self.backup_dir):
            shutil.rmtree(self.backup_dir)

    # -- files ----------------------------------------------------------------------------------
    def _load(self):
        model = self.model
        if not getattr(model, "built", False):
            raise ValueError("BackupAndRestore: the model must be built before fit() (give it "
                             "an Input or call it on a batch). Received: an unbuilt model "
                             f"{getattr(model, 'name', model)!r}")
        epoch = self._read_epoch() if os.path.exists(self._metadata_path) else None
        if os.path.exists(self._weights_path):
            optimizer = getattr(model, "optimizer", None)
            if optimizer is not None and not optimizer.built:
                optimizer.build(model.trainable_weights)
            model.load_weights(self._weights_path)
        if epoch is not None:
            model._initial_epoch = epoch

    def _read_epoch(self):
        """The next epoch from ``training_metadata.json``.

        Raises:
            ValueError: for a damaged file, naming it and the backup folder.
        """
        try:
            with open(self._metadata_path, encoding="utf-8") as f:
                epoch = json.load(f)["epoch"]
            if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
                raise ValueError(f"'epoch' is {epoch!r}, not an epoch number")
            return epoch
        except (ValueError, KeyError, TypeError) as e:  # bad JSON or UTF-8, wrong fields
            detail = "no 'epoch' entry" if isinstance(e, KeyError) else str(e)
            raise ValueError(
                f"BackupAndRestore: the backup's {self._metadata_path!r} is damaged ({detail}), "
                f"so training cannot resume from the backup folder {self.backup_dir!r}. Delete "
                "that folder to start training afresh. Received: file content that is not "
                '{"epoch": <int>, "batch": <int>}') from e

    def _writes(self):
        """False on the processes of a data-parallel fit other than rank 0: they all restore
        from the backup, but only rank 0 writes and deletes it."""
        distribution = getattr(self.model, "_fit_distribution", None)
        return distribution is None or distribution.is_chief

    def _save(self, epoch, batch):
        if not self._writes():
            return
        os.makedirs(self.backup_dir, exist_ok=True)
        if self.double_checkpoint:
            for path in (self._weights_path, self._metadata_path):
                if os.path.exists(path):
                    shutil.copyfile(path, path + ".bkp")
        self.model.save_weights(self._weights_path, overwrite=True)
        temporary = self._metadata_path + ".tmp"
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump({"epoch": epoch, "batch": batch}, f)
        os.replace(temporary, self._metadata_path)
