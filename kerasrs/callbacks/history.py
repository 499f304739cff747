"""`History`: records the epoch logs; ``fit`` returns it."""

from kerasrs.callbacks.callback import Callback


class History(Callback):
    """Collects each epoch's logs into ``history``: ``{"loss": [...], "val_loss": [...], ...}``
    with one float per epoch, and the epoch numbers (0-based) into ``epoch``.

    It is added to every ``fit`` call; ``fit`` returns it and sets ``model.history`` to it.
    """

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def set_model(self, model):
        super().set_model(model)
        model.history = self

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)
