"""`Trainer`: compile, fit, evaluate, predict and the ``*_on_batch`` methods of `Model`.

One training step (`Trainer.train_step`) is one `GradientTape` over the forward pass and the
loss (`compute_loss`: compiled losses plus the layers' regularization losses), ``tape.gradient``
with respect to the trainable weights, ``optimizer.apply``, then the weight constraints. Numbers
follow Keras 3:

* the reported ``loss`` is the running mean of the per-batch (reduced) losses weighted by batch
  size, computed before each update; a short last batch is a normal, smaller batch;
* metrics accumulate over all samples of the epoch (compile ``metrics`` unweighted,
  ``weighted_metrics`` with sample and class weights);
* ``logs`` at ``on_train_batch_end`` are running values, at ``on_epoch_end`` the epoch's, plus
  ``val_*`` after validation. Log keys are sorted, as Keras sorts them.

Customizing (Keras 3's "Customizing what happens in fit()"): a subclass may override
``train_step(data)``, ``test_step(data)`` or ``predict_step(data)``. ``data`` is what
`kerasrs.trainers.data_adapter.pack_x_y_sample_weight` makes of one batch: ``x`` (or ``(x,)`` for a
list of inputs) without targets, ``(x, y)``, or ``(x, y, sample_weight)`` (with sample or class
weights), each leaf a `Tensor`. The dict a train/test step returns (Python numbers or scalar
Tensors; nested dicts are flattened) becomes the logs: callbacks, the progress bar and the
`History` see it. Inside a step, `compute_loss` gives the total loss, `compute_metrics` updates
the compiled metrics and returns `get_metrics_result`, and `metrics` lists the trackers (the
``loss`` mean first). When neither ``train_step`` nor ``compute_metrics`` is overridden, fit
runs the same computation without building a logs dict per batch.
"""

import contextlib
import threading

import numpy as np

from kerasrs import autodiff, distribution, optimizers
from kerasrs.callbacks import CallbackList
from kerasrs.layers import padding
from kerasrs.trainers import compile_utils, data_adapter, epoch_iterator, input_checks, jit
from kerasrs.trainers import loops, run_state
from kerasrs.trainers.loss_metrics import LossMetrics


class Trainer(LossMetrics):
    """The training API mixed into `kerasrs.Model` (see the module docstring)."""

    def __init__(self):
        self.compiled = False
        self.optimizer = None
        self.loss = None
        self.stop_training = False
        self.history = None
        self._compiled_loss = self._compiled_metrics = None
        self._loss_tracker = None
        self._loss_trackers = []
        self._compiled_outputs = None
        self._train_variables = self._loss_layers = None

    _fit_distribution = None  # a kerasrs.distribution.DataParallel, set by fit while training
    _jit = None  # the replayed steps (kerasrs.trainers.jit.JitSteps) of jit_compile
    _run_eagerly = False
    _data_check = None  # fit's input_checks.DataCheck while training (NaN in the data: see there)

    # -- compile --------------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None,
                weighted_metrics=None, run_eagerly=None, steps_per_execution=1, jit_compile="auto",
                auto_scale_loss=True):
        """Configure training: the optimizer, the loss(es) and the metrics.

        The argument order is Keras 3's: ``compile(optimizer, loss, loss_weights, metrics,
        ...)``, so pass ``metrics`` by keyword. Everything is checked here, before any data is
        seen: unknown loss or metric names, and loss weights that are not numbers, raise now.

        Args:
            optimizer: name ("rmsprop", "adam", "sgd", ...) or `kerasrs.optimizers.Optimizer`.
                Compiling again makes a new optimizer (from a name) and keeps the weights.
            loss: name, `Loss`, function ``(y_true, y_pred) -> per-sample values``, or per
                output a list, dict (keyed by output name) or nested structure like the
                outputs; one loss applies to every output, a list of losses for one output
                adds them. ``"crossentropy"`` picks binary, sparse or categorical cross-entropy
                from the shapes, as Keras does.
            loss_weights: a float, or floats in the structure of ``loss`` weighting each loss
                in the total.
            metrics: list of names ("accuracy", "mae", ...) or `Metric`s, or per output a list
                of lists or a dict. "accuracy"/"acc" picks the accuracy that fits the loss.
            weighted_metrics: like ``metrics``, but given the sample and class weights.
            auto_scale_loss: wrap the optimizer in a `LossScaleOptimizer` when the model's
                dtype policy is ``mixed_float16`` (as Keras 3). Defaults to True.
            jit_compile: True: fit, evaluate and predict trace each step into a graph once per
                input signature and replay it (`kerasrs.trainers.jit`); what cannot be traced
                raises `kerasrs.graph.TraceError` naming it. "auto" (the default): runs
                eagerly, unless `kerasrs.config.enable_auto_jit_compile` was called: then it
                traces and falls back to eager steps, with one warning, where it must.
                False: eager.
            run_eagerly: True runs eagerly whatever ``jit_compile`` says.
            steps_per_execution: int, the batches per execution: the batch callbacks of
                ``fit`` and ``evaluate`` run once per execution, as in Keras
                (``on_*_batch_begin`` with its first batch's index, ``on_*_batch_end`` with
                its last's); the steps themselves still run one by one.

        Raises:
            ValueError: for an unknown optimizer, loss or metric (listing the valid names), or
                ``metrics`` that is not a list, tuple or dict.
            TypeError: for ``loss_weights`` that are not numbers.
        """
        compile_utils.check_compile_arguments(loss, loss_weights, metrics, weighted_metrics)
        self.optimizer = optimizers.get(optimizer)
        if auto_scale_loss and self.dtype_policy.name == "mixed_float16" and not isinstance(
                self.optimizer, optimizers.LossScaleOptimizer):  # as Keras 3 does
            self.optimizer = optimizers.LossScaleOptimizer(self.optimizer)
        self.loss = loss
        self._compiled_loss = compile_utils.CompiledLoss(loss, loss_weights)
        self._compiled_metrics = compile_utils.CompiledMetrics(metrics, weighted_metrics)
        self._compiled_metrics._owner = self
        self._loss_tracker = compile_utils.RunningMean("loss")
        self._loss_trackers = [self._loss_tracker]
        self._compiled_outputs = None
        self._train_variables = self._loss_layers = None
        self.compiled = True
        self.stop_training = False
        input_checks.check_variable_dtypes(self)
        self._compile_config = {
            "optimizer": optimizer if isinstance(optimizer, str) else
            optimizers.serialize(self.optimizer), "loss": loss, "loss_weights": loss_weights,
            "metrics": metrics, "weighted_metrics": weighted_metrics, "run_eagerly": run_eagerly,
            "steps_per_execution": steps_per_execution, "jit_compile": jit_compile}
        self._run_eagerly = bool(run_eagerly)
        self._set_jit()

    def _set_jit(self):
        """The replayed steps that compile's ``jit_compile`` and ``run_eagerly`` ask for."""
        mode = jit.resolve(self._compile_config["jit_compile"], self._run_eagerly)
        self._jit = jit.JitSteps(self, mode) if mode else None

    jit_compile = jit.jit_compile_property

    @property
    def run_eagerly(self):
        """bool: True when every step runs op by op whatever ``jit_compile`` says (Keras's
        attribute; compile's ``run_eagerly``). Setting it on a compiled model switches its
        traced steps off (True) or back on as compiled (False)."""
        return self._run_eagerly

    @run_eagerly.setter
    def run_eagerly(self, value):
        self._run_eagerly = bool(value)
        if self.compiled:
            self._set_jit()

    def get_compile_config(self):
        """The arguments of the last ``compile`` (None if never compiled)."""
        return dict(self._compile_config) if self.compiled else None

    def compile_from_config(self, config):
        """``compile(**config)``, with a serialized optimizer turned back into an object."""
        config = dict(config)
        if isinstance(config.get("optimizer"), dict):
            config["optimizer"] = optimizers.deserialize(config["optimizer"])
        self.compile(**config)

    def __getstate__(self):
        """What pickle (and ``copy.deepcopy``) copy: everything but the locks fit and evaluate
        keep for their threads (a copy starts unlocked, as a new model) and the replayed steps
        of ``jit_compile`` (compiled code; the copy traces its own)."""
        state = self.__dict__.copy()
        for name in ("_fit_lock", "_metrics_lock", "_jit"):
            state.pop(name, None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self.compiled:
            self._set_jit()

    def _require_compiled(self, method):
        if not self.compiled:
            raise ValueError(f"Model.{method}: the model must be compiled first: call "
                             "model.compile(optimizer, loss) before fit/evaluate/train_on_batch.")

    # -- one batch ------------------------------------------------------------------------------
    def _forward_backward(self, x, y, sample_weight, real=None):
        """Forward pass, loss, gradients and one optimizer step; folds the loss into the loss
        mean. ``real``: the batch is padded after this many rows (``pad_last_batch``); the
        forward pass runs on the whole batch, the loss on the real rows only. Returns
        ``(y_pred, y, sample_weight)`` of the rows that count."""
        optimizer = self.optimizer
        dist = self._fit_distribution
        check = self._data_check
        nan_data = check is not None and check.non_finite  # eager: it stops before the update
        if self._jit is not None and dist is None and not nan_data:  # jit: a replayed step
            out = self._jit.train(x, y, sample_weight, real)
            if out is not None:
                return out
        # dynamic loss scaling overflows on purpose now and then (the step is skipped): no
        # NumPy overflow warnings for that (np.errstate is local to this thread and block)
        scaling = getattr(optimizer, "skips_non_finite_steps", False)

        def quiet():
            return np.errstate(over="ignore", invalid="ignore") if scaling else \
                contextlib.nullcontext()

        with quiet(), autodiff.GradientTape() as tape:
            # a data-parallel process without samples in this step still joins the allreduce;
            # in inference mode no layer updates its statistics from the empty batch
            training = dist is None or (
                data_adapter.batch_size_of(x) if real is None else real) > 0
            if real is None:
                y_pred = self(x, training=training)
            else:
                with padding.real_rows(real, data_adapter.batch_size_of(x)):
                    y_pred = self(x, training=training)
                x, y, sample_weight = (data_adapter.slice_struct(s, slice(0, real))
                                       for s in (x, y, sample_weight))
                y_pred = data_adapter.first_rows(y_pred, real)
            loss = self.compute_loss(x, y, y_pred, sample_weight, training=True)
            scaled = loss if optimizer is None else optimizer.scale_loss(loss)
        self._track_loss(loss, x)
        if nan_data:  # stop before a NaN update (TerminateOnNaN)
            input_checks.stop_at_non_finite_loss(loss, dist, training)
        variables = self._train_variables
        if variables is None:
            variables = self._train_variables = self.trainable_weights
        if variables:
            with quiet():
                grads = tape.gradient(scaled, variables) if dist is None else \
                    dist.gradients(self, tape, scaled, variables, data_adapter.batch_size_of(x))
            optimizer.apply(grads, variables)
            for v in variables:
                if getattr(v, "constraint", None) is not None:
                    v.assign(autodiff.convert_to_tensor(v.constraint(v)).data)
        return y_pred, y, sample_weight

    def _track_loss(self, loss, x):
        """Fold this batch's loss into the loss mean, weighted by the batch's rows."""
        self._loss_tracker.add(compile_utils.loss_mean(loss, "compute_loss"),
                               data_adapter.batch_size_of(x))

    def train_step(self, data):
        """One optimizer step on one batch; returns the logs (Keras 3's signature).

        Args:
            data: ``x``, ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)`` (see
                `kerasrs.trainers.data_adapter.unpack_x_y_sample_weight`).

        Returns:
            `compute_metrics`'s dict: the running ``loss`` and metrics of the epoch so far.
        """
        x, y, sample_weight = data_adapter.unpack_x_y_sample_weight(data)
        y_pred, _, _ = self._forward_backward(x, y, sample_weight)
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def _train_batch(self, x, y, sample_weight, real=None):
        """`train_step` without building the logs (fit's path when nothing is overridden)."""
        y_pred, y, sample_weight = self._forward_backward(x, y, sample_weight, real)
        self._update_compiled_metrics(y, y_pred, sample_weight)

    def _test_batch(self, x, y, sample_weight):
        self._update_compiled_metrics(y, self._test_forward(x, y, sample_weight), sample_weight)

    def _test_forward(self, x, y, sample_weight):
        """Forward pass and loss in inference mode; folds the loss into the loss mean and
        returns the predictions."""
        y_pred = self._jit.test(x, y, sample_weight) if self._jit is not None else None
        if y_pred is not None:  # jit_compile: a replayed step
            return y_pred
        with autodiff.no_grad():
            y_pred = self(x, training=False)
            loss = self.compute_loss(x, y, y_pred, sample_weight, training=False)
        self._track_loss(loss, x)
        return y_pred

    def test_step(self, data):
        """Forward pass and loss on one batch in inference mode; returns the logs (Keras 3's
        signature, ``data`` as in `train_step`)."""
        x, y, sample_weight = data_adapter.unpack_x_y_sample_weight(data)
        y_pred = self._test_forward(x, y, sample_weight)
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def predict_step(self, data):
        """The model's outputs for one batch (``data`` as in `train_step`; targets ignored)."""
        x, _, _ = data_adapter.unpack_x_y_sample_weight(data)
        return self(x, training=False)

    def _step_function(self, mode):
        """``(step(x, y, sample_weight), custom)``. When ``{mode}_step`` and
        ``compute_metrics`` are the defaults, ``step`` is the internal path that returns None
        (logs are read with `get_metrics_result` only when needed); otherwise it packs the
        batch into ``data``, calls the (overridden) step and returns its logs."""
        cls = type(self)
        name = f"{mode}_step"
        if getattr(cls, name) is getattr(Trainer, name) and \
                cls.compute_metrics is Trainer.compute_metrics:
            return (self._train_batch if mode == "train" else self._test_batch), False
        if self._jit is not None and getattr(cls, name) is not getattr(Trainer, name):
            self._jit.custom_step(name)
        user_step = getattr(self, name)

        def step(x, y, sample_weight, real=None):
            if real is not None:  # an overridden step gets the short batch, unpadded
                x, y, sample_weight = (data_adapter.slice_struct(s, slice(0, real))
                                       for s in (x, y, sample_weight))
            data = data_adapter.pack_x_y_sample_weight(
                *(data_adapter.to_tensors(v) for v in (x, y, sample_weight)))
            if mode == "train":
                return compile_utils.pythonify_logs(user_step(data))
            with autodiff.no_grad():
                return compile_utils.pythonify_logs(user_step(data))

        return step, True

    def _ordered(self, logs, return_dict):
        if return_dict:
            return logs
        names = self.metrics_names
        values = [logs[name] for name in names if name in logs]
        values += [logs[key] for key in sorted(logs) if key not in names]
        return values[0] if len(values) == 1 else values

    # -- fit ------------------------------------------------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1, pad_last_batch=False):
        """Train for ``epochs`` epochs (see the module docstring for the numbers).

        Args:
            x, y: arrays, or lists/dicts of arrays for several inputs/outputs. ``x`` may also
                be a `kerasrs.utils.PyDataset`, a generator or an iterable of batches (``x``,
                ``(x, y)`` or ``(x, y, sample_weight)``), with ``y`` and ``sample_weight`` None.
            batch_size: samples per step (default 32); the last batch may be smaller.
            epochs: index of the last epoch (training runs ``initial_epoch .. epochs - 1``).
            verbose: "auto" or 1 (a tqdm bar per epoch on a terminal or in a notebook; on any
                other output, such as a log file, one line per epoch as with 2), 2 (a line per
                epoch), 0 (silent).
            callbacks: list of `Callback`s.
            validation_split: fraction of the data, taken from the end before shuffling, used
                only for validation. Ignored when ``validation_data`` is given.
            validation_data: ``(x_val, y_val)`` or ``(x_val, y_val, sample_weight_val)``.
            shuffle: True (reshuffle each epoch), False, or "batch" (shuffle batch order).
            class_weight: dict ``{class id: weight}`` multiplying each sample's loss.
            sample_weight: array ``(n,)`` of per-sample loss weights (or per output).
            initial_epoch: epoch to start from (for resuming).
            steps_per_epoch: batches per epoch; the data iterator then runs on across epochs
                and restarts (with a warning if it ran out mid-epoch) when exhausted.
            validation_steps, validation_batch_size: limits for the validation pass.
            validation_freq: validate every this many epochs (int) or at these epochs (list,
                counting from 1).
            pad_last_batch: kerasrs extension. If True, a short last batch is padded to
                ``batch_size`` (to the first batch's size for datasets and generators) by
                repeating its rows, so every step sees one shape; the padding is left out of
                the loss, the metrics, the gradient and BatchNormalization's statistics, so the
                step equals the one on the short batch. An overridden ``train_step`` gets the
                short batch.

        NaN or inf in the data: fit warns, naming the array and the count, and then stops at
        the first batch whose loss is NaN or inf, before that batch's update, with a second
        warning; the weights are those of the last step with a finite loss, and the epoch's
        logs end with the bad loss (Keras's ``TerminateOnNaN``, on by default when the data
        hold such values; an overridden ``train_step`` is stopped only through
        ``super().train_step``). Arrays of up to 64 MiB are checked before the first step;
        larger ones (a ``np.memmap``), generators and PyDatasets batch by batch in the first
        pass, so memory stays O(batch).

        Returns:
            The `History` callback; ``history.history`` maps each log name to a list per epoch.

        Raises:
            ValueError: if the model is not compiled (as Keras).
            RuntimeError: if another thread fits or evaluates it.
            ValueError: for data of different lengths, no samples, None or non-numeric data,
                ``epochs`` that is not an int >= 0, or other bad arguments.
        """
        self._require_compiled("fit")
        epochs, steps_per_epoch = run_state.apply_config_caps(epochs, steps_per_epoch)
        lock = self.__dict__.setdefault("_fit_lock", threading.Lock())
        if not lock.acquire(blocking=False):
            raise RuntimeError(f"Model.fit: {self.name} is already being trained by a fit() "
                               "running in another thread; two fits on one model would share "
                               "its weights, optimizer and History. Wait for the first to end, or "
                               "train a copy (kerasrs.models.clone_model).")
        try:
            run_state.check_epochs(epochs, initial_epoch)
            if validation_split and validation_data is None:
                x, y, sample_weight, validation_data = run_state.split(x, y, sample_weight,
                                                                       validation_split)
            batches = self._epoch_iterator("fit", x, y, sample_weight, batch_size, shuffle,
                                           class_weight, steps_per_epoch)
            val = None
            if validation_data is not None:
                val = epoch_iterator.EpochIterator(
                    run_state.validation_adapter(validation_data,
                                                 validation_batch_size or batch_size),
                    validation_steps, "fit (validation_data)", resume=False)
            run = self._fit_state(batches, val, epochs, initial_epoch, verbose, callbacks,
                                  validation_freq, pad_last_batch)
            with run_state.metrics_in_use(self, "fit"):
                return loops.fit(run)
        finally:
            self._fit_distribution = self._data_check = None  # fit is over, even after an error
            lock.release()

    def _fit_state(self, batches, validation, epochs, initial_epoch, verbose, callbacks,
                   validation_freq, pad_last_batch):
        """fit's `RunState` over the `EpochIterator`s of the data and of ``validation`` (or
        None): the distribution begun, the callbacks, the train and test steps."""
        data = batches.adapter
        verbose = run_state.verbosity(verbose)
        dist = distribution.for_fit()  # a DataParallel, or a stand-in whose hooks change nothing
        dist.begin_fit(self, getattr(data, "x", None),
                       custom_train_step=type(self).train_step is not Trainer.train_step)
        verbose, callbacks = dist.for_this_process(verbose, callbacks)  # rank 0 reports
        cbs = CallbackList(callbacks, add_history=True, add_progbar=verbose != 0, model=self,
                           verbose=verbose, epochs=epochs, steps=batches.num_steps)
        self.stop_training = False
        self._train_variables = self._loss_layers = None
        self._data_check = data.check
        train_step, custom = self._step_function("train")
        hooks = dist.any(cbs.wants_batch_hooks("train"))  # same collectives on every process
        if validation is not None:
            test_step, test_custom = self._step_function("test")
            validation = run_state.RunState(self, validation, cbs, test_step, test_custom,
                                            distribution=self._fit_distribution)
        return run_state.RunState(
            self, batches, cbs, train_step, custom, hooks, dist, epochs, initial_epoch,
            validation_freq, validation,
            getattr(data, "batch_size", None) if pad_last_batch else False)

    def _epoch_iterator(self, method, x, y=None, sample_weight=None, batch_size=None,
                        shuffle=False, class_weight=None, steps=None):
        """Check ``method``'s data (values, and structure for arrays) and walk it with an
        `EpochIterator` (``steps``: ``steps_per_epoch`` in fit)."""
        check = input_checks.check_data_source(self, method, x, y, sample_weight, class_weight,
                                               stacklevel=4)
        data = epoch_iterator.get_adapter(method, x, y, sample_weight, batch_size, shuffle,
                                          class_weight)
        data.check = check
        if isinstance(data, epoch_iterator.ArrayAdapter):
            self._check_input_structure(method, data.x)
        if method == "fit":
            run_state.check_steps_per_epoch(steps)
        return epoch_iterator.EpochIterator(data, steps, method, resume=method == "fit")

    # -- evaluate / predict ---------------------------------------------------------------------
    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict=False, **kwargs):
        """Loss and metrics on the data in inference mode, over all samples.

        ``x`` is arrays (with ``y`` and ``sample_weight``), or a `kerasrs.utils.PyDataset`, a
        generator or an iterable of ``(x, y[, sample_weight])`` batches; ``steps`` limits the
        batches (a generator is advanced exactly ``steps`` times). The loss is the mean over
        samples, batches weighted by their size.

        Returns:
            A float (loss only), a list ``[loss, *metrics]`` in `metrics_names` order, or a dict
            with ``return_dict=True``.

        Raises:
            TypeError: for ``x`` of a kind not listed above.
            RuntimeError: while another thread fits or evaluates this model (both runs would
                update the same metric state).
        """
        self._require_compiled("evaluate")
        batches = self._epoch_iterator("evaluate", x, y, sample_weight, batch_size, steps=steps)
        verbose = run_state.verbosity(verbose)
        self._loss_layers = None
        cbs = callbacks if isinstance(callbacks, CallbackList) else CallbackList(
            callbacks, add_progbar=verbose != 0, model=self, verbose=verbose,
            steps=batches.num_steps)
        test_step, custom = self._step_function("test")
        run = run_state.RunState(self, batches, cbs, test_step, custom,
                                 distribution=self._fit_distribution)
        try:
            with run_state.metrics_in_use(self, "evaluate"):
                logs = loops.evaluate(run)
        finally:
            run.close()
        return self._ordered(logs, return_dict)

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """The model's outputs for ``x`` as NumPy arrays, computed in batches in inference mode.

        Any number of samples works, including 1 (``x[:1]``); a single sample without its batch
        axis is rejected with the expected shape. ``x`` may also be a `PyDataset`, a generator
        or an iterable of batches (targets in the batches are ignored); ``steps`` limits the
        batches (a generator is advanced exactly ``steps`` times).

        Returns:
            An array ``(n, ...)``, or a list/dict of arrays for several outputs.

        Raises:
            ValueError: if there is no batch to predict on.
        """
        batches = self._epoch_iterator("predict", x, batch_size=batch_size, steps=steps)
        verbose = run_state.verbosity(verbose)
        cbs = CallbackList(callbacks, add_progbar=verbose != 0, model=self, verbose=verbose,
                           steps=batches.num_steps)
        outputs = loops.predict(run_state.RunState(self, batches, cbs))
        if not outputs:
            raise ValueError("Model.predict: the data gave no batch to predict on. Received: "
                             f"an empty {type(x).__name__}")
        flat = [autodiff._flatten(o) for o in outputs]
        joined = [np.concatenate([f[i] for f in flat], axis=0) for i in range(len(flat[0]))]
        return autodiff._pack(outputs[0], iter(joined))

    # -- single batches -------------------------------------------------------------------------
    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, return_dict=False):
        """One optimizer step on this batch. Returns this batch's loss (computed before the
        update) and metrics, as `evaluate` returns them (metrics are reset first, as in Keras
        3.15)."""
        self._require_compiled("train_on_batch")
        x, y, sample_weight = (data_adapter.standardize(v) for v in (x, y, sample_weight))
        data_adapter.num_samples("train_on_batch", x=x, y=y, sample_weight=sample_weight)
        self._check_input_structure("train_on_batch", x)
        if class_weight is not None:
            sample_weight = data_adapter.with_class_weight(y, sample_weight, class_weight)
        self._train_variables = self._loss_layers = None
        self.reset_metrics()
        train_step, custom = self._step_function("train")
        logs = train_step(x, y, sample_weight)
        return self._ordered(logs if custom else self.get_metrics_result(), return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        """Loss and metrics on this batch (inference mode), as `evaluate` returns them."""
        self._require_compiled("test_on_batch")
        x, y, sample_weight = (data_adapter.standardize(v) for v in (x, y, sample_weight))
        data_adapter.num_samples("test_on_batch", x=x, y=y, sample_weight=sample_weight)
        self._check_input_structure("test_on_batch", x)
        self.reset_metrics()
        self._loss_layers = None
        test_step, custom = self._step_function("test")
        logs = test_step(x, y, sample_weight)
        return self._ordered(logs if custom else self.get_metrics_result(), return_dict)

    def predict_on_batch(self, x):
        """The outputs for one batch as NumPy arrays (inference mode, no gradients); an
        overridden `predict_step` is called with ``data`` as `train_step` gets it."""
        if self._jit is not None and type(self).predict_step is Trainer.predict_step:
            out = self._jit.predict(x)  # jit_compile: a replayed step (None: run eagerly)
            if out is not None:
                return out
        with autodiff.no_grad():
            if type(self).predict_step is Trainer.predict_step:
                out = self(x, training=False)
            else:
                out = self.predict_step(
                    data_adapter.pack_x_y_sample_weight(data_adapter.to_tensors(x)))
        return autodiff._pack(out, iter([np.asarray(autodiff.convert_to_tensor(o).numpy())
                                         for o in autodiff._flatten(out)]))

    def _check_input_structure(self, method, x):
        """Hook: raise if ``x``'s structure cannot fit the model (`Sequential` checks dicts)."""
