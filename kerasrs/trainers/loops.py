"""The loops behind `Model.fit`, ``evaluate`` and ``predict``: each walks one `RunState` (see
`kerasrs.trainers.trainer` for the numbers they report)."""

import warnings

from kerasrs.trainers import epoch_iterator, input_checks, interrupts


def fit(run):
    """Train over ``run`` (built by ``Model.fit``); returns the `History`.

    Ctrl-C (SIGINT) stops training once the current batch is done (a second Ctrl-C interrupts at
    once): the unfinished epoch is dropped, ``on_train_end`` runs (so callbacks restore weights,
    close files and keep backups), ``model.history`` keeps the finished epochs, and then
    KeyboardInterrupt is raised. Prefetch workers are stopped on every way out.
    """
    model, cbs, dist, batches = run.model, run.callbacks, run.distribution, run.batches
    interrupted = None
    per_execution = _steps_per_execution(model)
    cbs.on_train_begin()
    # a BackupAndRestore callback sets where a resumed fit starts
    initial_epoch = model.__dict__.pop("_initial_epoch", None) or run.initial_epoch
    sigint = interrupts.DeferredInterrupt()
    try:
        for epoch in range(initial_epoch, run.epochs):
            model.reset_metrics()
            cbs.on_epoch_begin(epoch)
            batches.on_epoch_begin()
            step_logs, step = None, -1
            dist.begin_epoch()  # data-parallel: every process shuffles as rank 0 does
            epoch_batches = batches.epoch()
            if run.pad_size is not False:
                epoch_batches = epoch_iterator.pad_batches(epoch_batches, run.pad_size)
            ended = -1  # the last step whose on_train_batch_end ran
            for step, batch in enumerate(epoch_batches):
                if run.hooks and step % per_execution == 0:
                    cbs.on_train_batch_begin(step)
                try:
                    out = run.step(*dist.shard_step(batch))  # data-parallel: this process's rows
                except input_checks.NonFiniteLoss as e:  # NaN/inf in the data (TerminateOnNaN)
                    warnings.warn(e.message(epoch, run.epochs, step), RuntimeWarning, stacklevel=3)
                    model.stop_training = True  # after this batch's hooks, as TerminateOnNaN
                    out = model.get_metrics_result()
                if run.custom:
                    step_logs = out
                if run.hooks and ((step + 1) % per_execution == 0 or model.stop_training):
                    cbs.on_train_batch_end(step, step_logs if run.custom else
                                           model.get_metrics_result())
                    ended = step
                sigint.requested = dist.any(sigint.requested)  # all processes stop together
                if model.stop_training or sigint.requested:
                    break
            if run.hooks and ended < step:  # a shorter last execution (or an interrupted one)
                cbs.on_train_batch_end(step, step_logs if run.custom else
                                       model.get_metrics_result())
            if sigint.requested:
                break  # Ctrl-C: the unfinished epoch is not logged
            if batches.exhausted and step < 0:
                break  # a generator ran dry: no epoch to report
            batches.on_epoch_end()
            dist.end_epoch(model)  # data-parallel: processes agree on BatchNorm statistics
            # an overridden train_step's last logs are the epoch's logs (Keras 3 reads them too)
            logs = dict(step_logs) if step_logs is not None else model.get_metrics_result()
            val = run.validation
            if val is not None and not val.batches.exhausted and \
                    _should_validate(epoch, run.validation_freq):
                val_logs = evaluate(val)
                if val.batches.exhausted:  # a spent validation generator gives no numbers
                    warnings.warn(_validation_stops(epoch, val.batches), stacklevel=3)
                else:
                    logs.update({f"val_{k}": v for k, v in val_logs.items()})
            cbs.on_epoch_end(epoch, logs)
            run.logs = logs
            if model.stop_training or sigint.requested or batches.exhausted:
                break
    except KeyboardInterrupt as e:  # Ctrl-C that the deferred handler did not catch
        interrupted = e
    finally:
        sigint.restore()
        run.close()  # stops prefetch workers on every way out
    if sigint.requested and interrupted is None:
        interrupted = KeyboardInterrupt("Model.fit was interrupted (Ctrl-C); model.history "
                                        "holds the finished epochs.")
    if run.epochs > 0 and model.optimizer is not None:
        model.optimizer.finalize_variable_values(model.trainable_weights)
    # on an interrupt too: callbacks restore weights, close files and keep their backups
    cbs.on_train_end(run.logs)
    if interrupted is not None:
        raise interrupted
    return model.history


def evaluate(run):
    """Loss and metrics over one epoch of ``run``'s batches (``evaluate``, or one validation
    pass of ``fit``); returns the logs. Data-parallel validation shards every batch."""
    model, callbacks, dist = run.model, run.callbacks, run.distribution
    model.reset_metrics()
    callbacks.on_test_begin()
    hooks = callbacks.wants_batch_hooks("test")
    if dist is not None:  # data-parallel validation: every process in step
        hooks = dist.any(hooks)
    logs, per_execution, step = None, _steps_per_execution(model), -1
    for step, batch in enumerate(run.batches.epoch()):
        x, y, sample_weight = batch if dist is None else dist.shard_batch(batch)
        if hooks and step % per_execution == 0:
            callbacks.on_test_batch_begin(step)
        out = run.step(x, y, sample_weight)
        if run.custom:
            logs = out
        if hooks and (step + 1) % per_execution == 0:
            callbacks.on_test_batch_end(step, logs if run.custom else model.get_metrics_result())
    if hooks and (step + 1) % per_execution != 0:  # a shorter last execution
        callbacks.on_test_batch_end(step, logs if run.custom else model.get_metrics_result())
    if logs is None:
        logs = model.get_metrics_result()
    callbacks.on_test_end(logs)
    run.logs = logs
    return logs


def predict(run):
    """The model's outputs for each of ``run``'s batches (NumPy arrays), in order."""
    model, cbs = run.model, run.callbacks
    cbs.on_predict_begin()
    hooks = cbs.wants_batch_hooks("predict")
    outputs = []
    try:
        for step, (x_batch, _, _) in enumerate(run.batches.epoch()):
            if hooks:
                cbs.on_predict_batch_begin(step)
            out = model.predict_on_batch(x_batch)
            outputs.append(out)
            if hooks:
                cbs.on_predict_batch_end(step, {"outputs": out})
    finally:
        run.close()
    cbs.on_predict_end()
    return outputs


def _steps_per_execution(model):
    """``compile``'s ``steps_per_execution`` (1 if not compiled): the batch callbacks of fit and
    evaluate run once per that many batches, as Keras runs them once per execution."""
    config = getattr(model, "_compile_config", None) or {}
    return max(1, int(config.get("steps_per_execution") or 1))


def _validation_stops(epoch, batches):
    """The warning for a one-shot ``validation_data`` that ran dry in ``epoch``."""
    source = epoch_iterator.source_name(batches.adapter.source)
    return (f"Model.fit: `validation_data` (a {source}) ran out "
            f"of batches during the validation of epoch {epoch + 1}, and it cannot restart: "
            f"validation stops here. Epoch {epoch + 1} and later epochs log no val_* values, so "
            f"history's val_* lists end at epoch {epoch}. To validate every epoch, pass arrays, "
            "a PyDataset or a re-iterable object (such as a list of batches), or a generator "
            "that yields `validation_steps` batches per epoch.")


def _should_validate(epoch, validation_freq):
    if isinstance(validation_freq, int):
        if validation_freq < 1:
            raise ValueError("Model.fit: `validation_freq` must be >= 1. Received: "
                             f"validation_freq={validation_freq}")
        return (epoch + 1) % validation_freq == 0
    return epoch + 1 in validation_freq
