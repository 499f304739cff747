"""The epoch loop behind `Model.fit` (see `kerasrs.models.trainer` for the numbers it reports)."""

import numpy as np

from kerasrs import distribution
from kerasrs.callbacks import CallbackList
from kerasrs.models import data_adapter, epoch_iterator, interrupts, trainer


def fit(model, x, y, batch_size, epochs, verbose, callbacks, validation_split, validation_data,
        shuffle, class_weight, sample_weight, initial_epoch, steps_per_epoch, validation_steps,
        validation_batch_size, validation_freq, pad_last_batch=False):
    """Run ``Model.fit`` (arguments as documented there); returns the `History`.

    Ctrl-C (SIGINT) stops training once the current batch is done (a second Ctrl-C interrupts at
    once): the unfinished epoch is dropped, ``on_train_end`` runs (so callbacks restore weights,
    close files and keep backups), ``model.history`` keeps the finished epochs, and then
    KeyboardInterrupt is raised. Prefetch workers are stopped on every way out.
    """
    _check_epochs(epochs, initial_epoch)
    if validation_split and validation_data is None:
        x, y, sample_weight, validation_data = _split(x, y, sample_weight, validation_split)
    data = epoch_iterator.get_adapter("fit", x, y, sample_weight, batch_size, shuffle,
                                      class_weight)
    if isinstance(data, epoch_iterator.ArrayAdapter):
        model._check_input_structure("fit", data.x)
    if steps_per_epoch is not None and (not isinstance(steps_per_epoch, (int, np.integer))
                                        or steps_per_epoch <= 0):
        raise ValueError(f"Model.fit: `steps_per_epoch` must be a positive int. Received: "
                         f"steps_per_epoch={steps_per_epoch!r}")
    batches = epoch_iterator.EpochIterator(data, steps_per_epoch, "fit")
    pad_size = getattr(data, "batch_size", None)
    val = None
    if validation_data is not None:
        val = epoch_iterator.EpochIterator(
            _validation_adapter(validation_data, validation_batch_size or batch_size),
            validation_steps, "fit (validation_data)", resume=False)
    verbose = trainer._verbose(verbose)
    dist = distribution.for_fit()  # a DataParallel, or a stand-in whose hooks change nothing
    dist.begin_fit(model, getattr(data, "x", None))
    verbose, callbacks = dist.for_this_process(verbose, callbacks)  # rank 0 reports
    cbs = CallbackList(callbacks, add_history=True, add_progbar=verbose != 0, model=model,
                       verbose=verbose, epochs=epochs, steps=batches.num_steps)
    model.stop_training = False
    model._train_variables = model._loss_layers = None
    train_step, custom = model._step_function("train")
    hooks = dist.any(cbs.wants_batch_hooks("train"))  # same collectives on every process
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
            batches.on_epoch_begin()
            step_logs, step = None, -1
            dist.begin_epoch()  # data-parallel: every process shuffles as rank 0 does
            epoch_batches = batches.epoch()
            if pad_last_batch:
                epoch_batches = epoch_iterator.pad_batches(epoch_batches, pad_size)
            for step, batch in enumerate(epoch_batches):
                if hooks:
                    cbs.on_train_batch_begin(step)
                out = train_step(*dist.shard_step(batch))  # data-parallel: this process's rows
                if custom:
                    step_logs = out
                if hooks:
                    cbs.on_train_batch_end(step, step_logs if custom else
                                           model.get_metrics_result())
                sigint.requested = dist.any(sigint.requested)  # all processes stop together
                if model.stop_training or sigint.requested:
                    break
            if sigint.requested:
                break  # Ctrl-C: the unfinished epoch is not logged
            if batches.exhausted and step < 0:
                break  # a generator ran dry: no epoch to report
            batches.on_epoch_end()
            dist.end_epoch(model)  # data-parallel: processes agree on BatchNorm statistics
            # an overridden train_step's last logs are the epoch's logs (Keras 3 reads them too)
            logs = dict(step_logs) if step_logs is not None else model.get_metrics_result()
            if val is not None and _should_validate(epoch, validation_freq):
                val_logs = model._evaluate_batches(val, cbs)
                if not val.exhausted:  # a spent validation generator gives no numbers
                    logs.update({f"val_{k}": v for k, v in val_logs.items()})
            cbs.on_epoch_end(epoch, logs)
            training_logs = logs
            if model.stop_training or sigint.requested or batches.exhausted:
                break
    except KeyboardInterrupt as e:  # Ctrl-C that the deferred handler did not catch
        interrupted = e
    finally:
        sigint.restore()
        batches.close()  # stops prefetch workers on every way out
        if val is not None:
            val.close()
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


def _split(x, y, sample_weight, validation_split):
    """``(x, y, sample_weight, validation_data)`` with the last fraction held out (arrays)."""
    if not epoch_iterator.is_array_data(x):
        raise ValueError("Model.fit: `validation_split` needs array data (a dataset or "
                         "generator cannot be split); pass `validation_data` instead. Received: "
                         f"x of type {type(x).__name__}")
    x, y, sample_weight = (data_adapter.standardize(v) for v in (x, y, sample_weight))
    n = data_adapter.num_samples("fit", x=x, y=y, sample_weight=sample_weight)
    train, val = data_adapter.split_validation(x, y, sample_weight, validation_split, n)
    return (*train, val)


def _validation_adapter(validation_data, batch_size):
    """An adapter for ``validation_data``: a tuple ``(x, y[, sample_weight])`` of arrays, or a
    dataset/generator."""
    if isinstance(validation_data, (tuple, list)):
        x, y, sample_weight = data_adapter.unpack_validation_data(validation_data)
        return epoch_iterator.get_adapter("fit", x, y, sample_weight, batch_size)
    if epoch_iterator.is_array_data(validation_data):
        data_adapter.unpack_validation_data(validation_data)  # raises: not a tuple
    return epoch_iterator.get_adapter("fit", validation_data)


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
