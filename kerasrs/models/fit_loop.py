"""The epoch loop behind `Model.fit` (see `kerasrs.models.trainer` for the numbers it reports)."""

import collections
import warnings

import numpy as np

from kerasrs.callbacks import CallbackList
from kerasrs.models import data_adapter, interrupts, trainer


def fit(model, x, y, batch_size, epochs, verbose, callbacks, validation_split, validation_data,
        shuffle, class_weight, sample_weight, initial_epoch, steps_per_epoch, validation_steps,
        validation_batch_size, validation_freq):
    """Run ``Model.fit`` (arguments as documented there); returns the `History`.

    Ctrl-C (SIGINT) stops training once the current batch is done (a second Ctrl-C interrupts at
    once): the unfinished epoch is dropped, ``on_train_end`` runs (so callbacks restore weights,
    close files and keep backups), ``model.history`` keeps the finished epochs, and then
    KeyboardInterrupt is raised.
    """
    _check_epochs(epochs, initial_epoch)
    x, y, sample_weight = (data_adapter.standardize(v) for v in (x, y, sample_weight))
    n = data_adapter.num_samples("fit", x=x, y=y, sample_weight=sample_weight)
    model._check_input_structure("fit", x)
    batch_size = trainer._check_batch_size(batch_size, "fit")
    val = None
    if validation_data is not None:
        val = data_adapter.unpack_validation_data(validation_data)
        n_val = data_adapter.num_samples("fit", x=val[0], y=val[1], sample_weight=val[2])
    elif validation_split:
        (x, y, sample_weight), val = data_adapter.split_validation(
            x, y, sample_weight, validation_split, n)
        n_train = int(data_adapter.leaves(x)[0].shape[0])
        n_val, n = n - n_train, n_train
    if class_weight is not None:
        sample_weight = trainer._with_class_weight(y, sample_weight, class_weight)
    if steps_per_epoch is not None and (not isinstance(steps_per_epoch, int)
                                        or steps_per_epoch <= 0):
        raise ValueError(f"Model.fit: `steps_per_epoch` must be a positive int. Received: "
                         f"steps_per_epoch={steps_per_epoch!r}")
    verbose = trainer._verbose(verbose)
    steps = steps_per_epoch or -(-n // batch_size)
    cbs = CallbackList(callbacks, add_history=True, add_progbar=verbose != 0, model=model,
                       verbose=verbose, epochs=epochs, steps=steps)
    model.stop_training = False
    model._train_variables = model._loss_layers = None
    train_step, custom = model._step_function("train")
    hooks = cbs.wants_batch_hooks("train")
    queue = collections.deque()
    logs = training_logs = {}
    interrupted = None
    cbs.on_train_begin()
    # a BackupAndRestore callback sets where a resumed fit starts
    initial_epoch = model.__dict__.pop("_initial_epoch", None) or initial_epoch
    sigint = interrupts.DeferredInterrupt()
    try:
        for epoch in range(initial_epoch, epochs):
            model.reset_metrics()
            cbs.on_epoch_begin(epoch)
            if steps_per_epoch is None or not queue:
                queue = collections.deque(data_adapter.batch_indices(n, batch_size, shuffle))
            step_logs = None
            for step in range(steps):
                if not queue:
                    warnings.warn(f"Model.fit: the data ran out after {step} of {steps} steps "
                                  f"in epoch {epoch + 1} (steps_per_epoch={steps_per_epoch}); the "
                                  "next epoch starts a new pass over the data.", stacklevel=3)
                    break
                index = queue.popleft()
                if hooks:
                    cbs.on_train_batch_begin(step)
                out = train_step(*(data_adapter.slice_struct(s, index)
                                   for s in (x, y, sample_weight)))
                if custom:
                    step_logs = out
                if hooks:
                    cbs.on_train_batch_end(step, step_logs if custom else
                                           model.get_metrics_result())
                if model.stop_training or sigint.requested:
                    break
            if sigint.requested:
                break  # Ctrl-C: the unfinished epoch is not logged
            # an overridden train_step's last logs are the epoch's logs (Keras 3 reads them too)
            logs = dict(step_logs) if step_logs is not None else model.get_metrics_result()
            if val is not None and _should_validate(epoch, validation_freq):
                size = trainer._check_batch_size(validation_batch_size or batch_size, "fit")
                batches = data_adapter.batch_indices(n_val, size)[:validation_steps]
                val_logs = model._evaluate_batches(*val, batches, cbs)
                logs.update({f"val_{k}": v for k, v in val_logs.items()})
            cbs.on_epoch_end(epoch, logs)
            training_logs = logs
            if model.stop_training or sigint.requested:
                break
    except KeyboardInterrupt as e:  # Ctrl-C that the deferred handler did not catch
        interrupted = e
    finally:
        sigint.restore()
    if sigint.requested and interrupted is None:
        interrupted = KeyboardInterrupt("Model.fit was interrupted (Ctrl-C); model.history "
                                        "holds the finished epochs.")
    if epochs > 0 and model.optimizer is not None:
        model.optimizer.finalize_variable_values(model.trainable_weights)
    # on an interrupt too: callbacks restore weights, close files and keep their backups
    cbs.on_train_end(training_logs)
    if interrupted is not None:
        raise interrupted
    return model.history


def _check_epochs(epochs, initial_epoch):
    for name, value in (("epochs", epochs), ("initial_epoch", initial_epoch)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"Model.fit: `{name}` must be an int >= 0 (the index of the "
                             f"{'last epoch + 1' if name == 'epochs' else 'first epoch'}). "
                             f"Received: {name}={value!r}")


def _should_validate(epoch, validation_freq):
    if isinstance(validation_freq, int):
        if validation_freq < 1:
            raise ValueError("Model.fit: `validation_freq` must be >= 1. Received: "
                             f"validation_freq={validation_freq}")
        return (epoch + 1) % validation_freq == 0
    return epoch + 1 in validation_freq
