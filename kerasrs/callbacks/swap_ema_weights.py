"""`SwapEMAWeights`: evaluate and predict with the optimizer's moving average of the weights."""

from kerasrs.callbacks.callback import Callback

__all__ = ["SwapEMAWeights"]


class SwapEMAWeights(Callback):
    """Swap the model's weights with the optimizer's exponential moving average (EMA) for
    evaluation and prediction, then swap back (Keras 3's callback).

    Needs an optimizer made with ``use_ema=True``. Validation inside ``fit``, ``evaluate`` and
    ``predict`` then run on the averaged weights while training goes on with the raw ones. With
    ``swap_on_epoch=True`` the average is also swapped in at each epoch end (so epoch-end
    callbacks such as `ModelCheckpoint` save it) and swapped out at the next epoch start.

    Args:
        swap_on_epoch: also swap at epoch ends (see above).

    Raises:
        ValueError: (at the first swap) if the optimizer does not use EMA.
    """

    def __init__(self, swap_on_epoch=False):
        super().__init__()
        self.swap_on_epoch = swap_on_epoch
        self._ema_in_model = False

    def _pairs(self):
        optimizer = self.model.optimizer
        averages = getattr(optimizer, "_model_variables_moving_average", None)
        if not getattr(optimizer, "use_ema", False) or averages is None:
            raise ValueError("SwapEMAWeights: the optimizer must be created with use_ema=True "
                             "and built (fit once). Received: "
                             f"use_ema={getattr(optimizer, 'use_ema', None)}")
        return zip(optimizer._trainable_variables, averages)

    def _swap(self, to_ema):
        if self._ema_in_model == to_ema:
            return
        for variable, average in self._pairs():
            held = variable.data.copy()
            variable.assign(average.data)
            average.assign(held)
        self._ema_in_model = to_ema

    def on_epoch_begin(self, epoch, logs=None):
        if self.swap_on_epoch:
            self._swap(False)

    def on_epoch_end(self, epoch, logs=None):
        if self.swap_on_epoch:
            self._swap(True)
            if epoch == self.params.get("epochs", 0) - 1:
                for variable, average in self._pairs():  # fit's final overwrite keeps the EMA
                    average.assign(variable.data)

    def on_test_begin(self, logs=None):
        self._swap(True)

    def on_test_end(self, logs=None):
        self._swap(False)

    def on_predict_begin(self, logs=None):
        self._swap(True)

    def on_predict_end(self, logs=None):
        self._swap(False)
