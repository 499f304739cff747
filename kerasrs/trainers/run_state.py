"""`RunState`: one ``fit``, ``evaluate`` or ``predict`` run, as `Trainer` sets it up and the loops
of `kerasrs.trainers.loops` walk it; plus the checks of fit's arguments that come before."""

import contextlib
import threading

import numpy as np

from kerasrs.backend import settings
from kerasrs.trainers import data_adapter, epoch_iterator


class RunState:
    """What one run of ``fit``, ``evaluate`` or ``predict`` needs, in one place.

    `Trainer` builds it (data, callbacks, the step function, the distribution) and the loops
    read it; they reach the model only through its public training API (``reset_metrics``,
    ``get_metrics_result``, ``predict_on_batch``, ``stop_training``, ``optimizer``).

    Attributes:
        model: the model being run.
        batches: the `EpochIterator` over the data.
        callbacks: the `CallbackList`.
        step: ``step(x, y, sample_weight[, real_rows])`` for one batch (fit and evaluate);
            returns the logs when ``custom``, else None (the logs are then the model's
            `get_metrics_result`).
        custom: whether ``step`` is an overridden ``train_step``/``test_step`` (or
            ``compute_metrics``) that returns logs.
        hooks: fit: whether the loop calls the per-batch callback hooks (some callback needs
            them; evaluate and predict ask the callbacks when they begin).
        distribution: fit: a `kerasrs.distribution.DataParallel` or the local stand-in, whose
            hooks change nothing; evaluate: the DataParallel of the fit it validates, or None.
        epochs, initial_epoch, validation_freq: fit's epoch range and validation schedule.
        validation: the `RunState` of fit's validation pass (evaluate mode), or None.
        pad_size: fit with ``pad_last_batch``: the batch size a short batch is padded to (None:
            the first batch's size); False when batches are not padded.
        logs: the logs of the run so far (fit: of the last finished epoch).
    """

    def __init__(self, model, batches, callbacks, step=None, custom=False, hooks=False,
                 distribution=None, epochs=1, initial_epoch=0, validation_freq=1,
                 validation=None, pad_size=False):
        self.model, self.batches, self.callbacks = model, batches, callbacks
        self.step, self.custom, self.hooks = step, custom, hooks
        self.distribution = distribution
        self.epochs, self.initial_epoch = epochs, initial_epoch
        self.validation_freq, self.validation = validation_freq, validation
        self.pad_size = pad_size
        self.logs = {}

    def close(self):
        """Stop the data's prefetch workers (and the validation data's), on every way out."""
        self.batches.close()
        if self.validation is not None:
            self.validation.batches.close()


@contextlib.contextmanager
def metrics_in_use(model, method):
    """Context for a run of ``method`` (fit, evaluate) that resets and updates ``model``'s
    loss and metric trackers: the same thread may nest runs (a callback that evaluates during
    fit), another thread may not, since both would mix their numbers into the same state.

    Raises:
        RuntimeError: if a run in another thread is using them, naming its method.
    """
    lock = model.__dict__.setdefault("_metrics_lock", threading.RLock())
    if not lock.acquire(blocking=False):
        raise RuntimeError(f"Model.{method}: {model.name} is running "
                           f"{model.__dict__.get('_metrics_user', 'fit or evaluate')}() in "
                           "another thread, and both runs would reset and update the same loss "
                           "and metric state, so both would report wrong numbers. Wait for it "
                           "to end, or run a copy of the model (kerasrs.models.clone_model, "
                           "then set_weights).")
    outer = model.__dict__.get("_metrics_user")
    model._metrics_user = method
    try:
        yield
    finally:
        model._metrics_user = outer
        lock.release()


def verbosity(verbose):
    """``verbose`` as 0, 1 or 2 ("auto" is 1).

    Raises:
        ValueError: for anything else.
    """
    if verbose == "auto":
        return 1
    if verbose not in (0, 1, 2):
        raise ValueError(f"`verbose` must be 'auto', 0, 1 or 2. Received: verbose={verbose!r}")
    return int(verbose)


def apply_config_caps(epochs, steps_per_epoch):
    """``epochs`` and ``steps_per_epoch`` limited by ``kerasrs.config.set_max_epochs`` /
    ``set_max_steps_per_epoch`` (Keras's caps for quick runs)."""
    if settings.max_epochs() is not None and isinstance(epochs, int):
        epochs = min(epochs, settings.max_epochs())
    cap = settings.max_steps_per_epoch()
    if cap is not None:
        steps_per_epoch = cap if steps_per_epoch is None else min(steps_per_epoch, cap)
    return epochs, steps_per_epoch


def check_epochs(epochs, initial_epoch):
    """Raise ValueError unless both are ints >= 0."""
    for name, value in (("epochs", epochs), ("initial_epoch", initial_epoch)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"Model.fit: `{name}` must be an int >= 0 (the index of the "
                             f"{'last epoch + 1' if name == 'epochs' else 'first epoch'}). "
                             f"Received: {name}={value!r}")


def check_steps_per_epoch(steps_per_epoch):
    """Raise ValueError unless ``steps_per_epoch`` is None or a positive int."""
    if steps_per_epoch is not None and (not isinstance(steps_per_epoch, (int, np.integer))
                                        or steps_per_epoch <= 0):
        raise ValueError(f"Model.fit: `steps_per_epoch` must be a positive int. Received: "
                         f"steps_per_epoch={steps_per_epoch!r}")


def split(x, y, sample_weight, validation_split):
    """``(x, y, sample_weight, validation_data)`` with the last fraction held out (arrays)."""
    if not epoch_iterator.is_array_data(x):
        raise ValueError("Model.fit: `validation_split` needs array data (a dataset or "
                         "generator cannot be split); pass `validation_data` instead. Received: "
                         f"x of type {type(x).__name__}")
    x, y, sample_weight = (data_adapter.standardize(v) for v in (x, y, sample_weight))
    n = data_adapter.num_samples("fit", x=x, y=y, sample_weight=sample_weight)
    train, val = data_adapter.split_validation(x, y, sample_weight, validation_split, n)
    return (*train, val)


def validation_adapter(validation_data, batch_size):
    """An adapter for ``validation_data``: a tuple ``(x, y[, sample_weight])`` of arrays, or a
    dataset/generator."""
    if isinstance(validation_data, (tuple, list)):
        x, y, sample_weight = data_adapter.unpack_validation_data(validation_data)
        return epoch_iterator.get_adapter("fit", x, y, sample_weight, batch_size)
    if epoch_iterator.is_array_data(validation_data):
        data_adapter.unpack_validation_data(validation_data)  # raises: not a tuple
    return epoch_iterator.get_adapter("fit", validation_data)
