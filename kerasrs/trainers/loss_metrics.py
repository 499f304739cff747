"""`LossMetrics`: the metric trackers and the loss/metric computation of `Trainer`.

A mixin of `kerasrs.trainers.trainer.Trainer` (kept apart so that the trainer module holds the
loops): the trackers in Keras 3's order (`metrics`, `metrics_names`), their results
(`get_metrics_result`, summed over the processes of a data-parallel ``fit``), and the two
customization points a ``train_step`` calls, `compute_loss` and `compute_metrics`. The compiled
loss and metric containers are built on the first batch, when the outputs' structure is known.
"""

from kerasrs import autodiff
from kerasrs.metrics.base import Metric
from kerasrs.trainers import compile_utils, data_adapter


class LossMetrics:
    """Metric trackers and loss computation, mixed into `Trainer` (see the module docstring)."""

    # -- metrics ----------------------------------------------------------------------------------
    @property
    def metrics_names(self):
        """Names of the values evaluate/train_on_batch return, in their order."""
        names = [t.name for t in self._loss_trackers] or ["loss"]
        if self._compiled_metrics is not None and self._compiled_metrics.built:
            names += [m.name for m in self._compiled_metrics.metrics]
        return names

    @property
    def metrics(self):
        """The model's metric trackers, in Keras 3's order: the ``loss`` mean, the compiled
        metrics (one container named ``compile_metrics``, as in Keras, whose ``update_state(y,
        y_pred, sample_weight)`` updates them all and whose ``result()`` is a dict), the
        per-output loss means of a multi-output model, then any `Metric` assigned as an
        attribute of the model. ``fit`` and ``evaluate`` reset them all at the start of each
        epoch; `get_metrics_result` reads them."""
        out = []
        if self.compiled:
            out.append(self._loss_tracker)
            if self._compiled_metrics.has_metrics:
                out.append(self._compiled_metrics)
            out.extend(self._loss_trackers[1:])
        seen = {id(m) for m in out}
        for value in vars(self).values():
            if isinstance(value, Metric) and id(value) not in seen:
                seen.add(id(value))
                out.append(value)
        return out

    def get_metrics_result(self):
        """``{name: value}`` for every tracker in `metrics` (Python floats, keys sorted; the
        compiled metrics' dict is merged in). In a data-parallel ``fit`` the states are summed
        over the processes first."""
        if self._fit_distribution is not None:
            with self._fit_distribution.global_metric_states(self.metrics):
                return self._local_metrics_result()
        return self._local_metrics_result()

    def _local_metrics_result(self):
        logs = {}
        for metric in self.metrics:
            result = metric.result()
            if isinstance(result, dict):
                logs.update(result)
            else:
                logs[metric.name] = result
        return compile_utils.pythonify_logs(logs)

    def reset_metrics(self):
        """Reset every tracker in `metrics`."""
        for metric in self.metrics:
            metric.reset_state()

    def _build_compiled(self, y, y_pred, sample_weight):
        outputs = compile_utils.OutputStructure(y_pred, getattr(self, "output_names", None))
        self._compiled_outputs = outputs
        y_flat, p_flat = outputs.flatten(y), autodiff._flatten(y_pred)
        self._compiled_loss.build(outputs, y_flat, p_flat)
        self._compiled_metrics.build(outputs, y_flat, p_flat, self._compiled_loss.output_losses)
        self._loss_trackers = [self._loss_tracker]
        if len(self._compiled_loss.names) > 1:  # as Keras: a mean per loss when several
            self._loss_trackers += [compile_utils.RunningMean(f"{name}_loss")
                                    for name in self._compiled_loss.names]

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The total loss, a scalar `Tensor`: the compiled losses (weighted by ``loss_weights``)
        plus the layers' `losses` (regularization and ``add_loss`` terms). As in Keras, it
        also folds each output's loss into the per-output loss means of a multi-output model;
        ``x`` and ``training`` are not used by this default.

        Raises:
            ValueError: if there is nothing to minimize (no compiled loss and no layer losses).
        """
        total = None
        if self._compiled_loss is not None:
            if not self._compiled_loss.built:
                self._build_compiled(y, y_pred, sample_weight)
            outputs = self._compiled_outputs
            total, parts = self._compiled_loss(outputs.flatten(y), autodiff._flatten(y_pred),
                                               outputs.flatten(sample_weight, "sample_weight"))
            if len(self._loss_trackers) > 1:
                self._track_output_losses(parts, x if x is not None else y_pred)
        if self._loss_layers is None:  # cached like the trainable variables, per fit
            self._loss_layers = self._flatten_layers()
        extra = self._collect_losses(self._loss_layers)
        if extra:
            reg = extra[0]
            for value in extra[1:]:
                reg = reg + value
            total = reg if total is None else total + reg
        if total is None:
            raise ValueError(f"{self.name}: there is no loss to minimize. Pass `loss` to "
                             "compile() (or add layer losses). Received: loss=None")
        return total

    def _track_output_losses(self, parts, x):
        """Fold each output's loss into its loss mean, weighted by the batch's rows (a traced
        step replaces this: the parts become outputs of its graph, `kerasrs.trainers.jit`)."""
        n = data_adapter.batch_size_of(x)
        for tracker, part in zip(self._loss_trackers[1:], parts):
            tracker.add(compile_utils.loss_mean(part, "compute_loss"), n)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Update the compiled metrics with this batch and return `get_metrics_result` (the
        loss mean is not updated here: the step does that). ``x`` is not used by this
        default."""
        self._update_compiled_metrics(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def _update_compiled_metrics(self, y, y_pred, sample_weight):
        cm = self._compiled_metrics
        if cm is None or not cm.has_metrics:
            return
        if not cm.built:
            self._build_compiled(y, y_pred, sample_weight)
        outputs = self._compiled_outputs
        cm.update_flat(outputs.flatten(y), autodiff._flatten(y_pred),
                       outputs.flatten(sample_weight, "sample_weight"))
