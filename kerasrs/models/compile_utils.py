"""What ``compile`` sets up: the per-output losses and metrics, and the running means of fit.

Both are resolved lazily, at the first batch, because only then are the model's outputs known
(a subclassed or unbuilt Sequential model has none before). Multi-output models take losses,
loss weights and metrics as a list (in output order) or a dict keyed by output name; a single
loss is applied to every output. Logs of a multi-output model name each output's loss
``<output>_loss`` and each metric ``<output>_<metric>``.
"""

import numpy as np


class RunningMean:
    """Sample-weighted running mean of per-batch values (what Keras's loss tracker computes):
    ``sum(value_b * n_b) / sum(n_b)`` with ``n_b`` the batch size."""

    def __init__(self, name):
        self.name = name
        self.reset_state()

    def update_state(self, value, weight):
        self.total += float(value) * weight
        self.count += weight

    def result(self):
        return self.total / self.count if self.count else 0.0

    def reset_state(self):
        self.total, self.count = 0.0, 0.0


def per_output(value, names, what, allow_single=True):
    """``value`` spread over the outputs: a list in ``names`` order (None where not given)."""
    n = len(names)
    if isinstance(value, dict):
        unknown = [k for k in value if k not in names]
        if unknown:
            raise ValueError(f"compile: `{what}` has keys {unknown} that are not output names. "
                             f"Output names: {names}. Received: {what}={value!r}")
        return [value.get(k) for k in names]
    if isinstance(value, (list, tuple)) and n > 1:
        if len(value) != n:
            raise ValueError(f"compile: `{what}` must have one entry per output ({n}: {names}). "
                             f"Received: {len(value)} entries")
        return list(value)
    if isinstance(value, (list, tuple)) and n == 1 and what != "metrics":
        if len(value) != 1:
            raise ValueError(f"compile: the model has one output but `{what}` has {len(value)} "
                             f"entries. Received: {what}={value!r}")
        return list(value)
    if not allow_single and n > 1 and value is not None:
        raise ValueError(f"compile: for a model with {n} outputs, give `{what}` as a list or a "
                         f"dict keyed by output name ({names}). Received: {what}={value!r}")
    return [value] * n


class CompiledLoss:
    """The compiled losses: ``__call__`` gives the weighted total and each output's loss."""

    def __init__(self, loss, loss_weights=None):
        self.loss, self.loss_weights = loss, loss_weights
        self.built = False

    def build(self, output_names):
        from kerasrs import losses

        self.output_names = list(output_names)
        specs = per_output(self.loss, self.output_names, "loss")
        self.losses = [None if s is None else losses.get(s) for s in specs]
        weights = per_output(self.loss_weights, self.output_names, "loss_weights")
        self.weights = [1.0 if w is None else float(w) for w in weights]
        self.built = True

    def __call__(self, y_true, y_pred, sample_weight):
        """Lists (one entry per output) in; ``(total Tensor or None, [per-output Tensor])``."""
        total, parts = None, []
        for i, loss in enumerate(self.losses):
            if loss is None:
                parts.append(None)
                continue
            if y_true[i] is None:
                raise ValueError(f"Model: no targets were given for output "
                                 f"{self.output_names[i]!r}, which has a loss. Received: y=None")
            try:
                value = loss(y_true[i], y_pred[i], sample_weight[i])
            except (ValueError, TypeError, IndexError) as e:
                raise type(e)(f"Model: the loss {loss.name!r} failed for output "
                              f"{self.output_names[i]!r}: {e} (targets shape "
                              f"{tuple(np.shape(y_true[i]))}, predictions shape "
                              f"{tuple(y_pred[i].shape)}). Received: y with shape "
                              f"{tuple(np.shape(y_true[i]))}") from e
            parts.append(value)
            weighted = value if self.weights[i] == 1.0 else value * self.weights[i]
            total = weighted if total is None else total + weighted
        return total, parts


class CompiledMetrics:
    """The compiled metrics per output; ``metrics`` get no sample weights, ``weighted_metrics``
    do (as in Keras 3)."""

    def __init__(self, metrics=None, weighted_metrics=None):
        self.metrics_spec, self.weighted_spec = metrics, weighted_metrics
        self.built = False

    def build(self, output_names, y_true, y_pred, losses):
        from kerasrs import metrics as metrics_module

        self.output_names = list(output_names)
        multi = len(self.output_names) > 1
        self.entries = []  # (output index, metric, weighted)
        for spec, weighted in ((self.metrics_spec, False), (self.weighted_spec, True)):
            if spec is None:
                continue
            if not isinstance(spec, (list, tuple, dict)):
                raise ValueError(f"compile: `metrics` must be a list or a dict. "
                                 f"Received: {spec!r}")
            if multi and isinstance(spec, (list, tuple)) and len(spec) != len(self.output_names):
                spec = [list(spec)] * len(self.output_names)  # the same metrics on every output
            for i, items in enumerate(per_output(spec, self.output_names, "metrics")):
                items = [] if items is None else items if isinstance(items, (list, tuple)) \
                    else [items]
                for item in items:
                    m = metrics_module.resolve(
                        item, loss=losses[i], output_shape=tuple(y_pred[i].shape),
                        y_true_shape=None if y_true[i] is None else tuple(np.shape(y_true[i])))
                    if multi:
                        m.name = f"{self.output_names[i]}_{m.name}"
                    self.entries.append((i, m, weighted))
        self.built = True

    def update_state(self, y_true, y_pred, sample_weight):
        for i, metric, weighted in self.entries:
            if y_true[i] is not None:
                metric.update_state(y_true[i], y_pred[i],
                                    sample_weight[i] if weighted else None)

    def results(self):
        return {metric.name: float(metric.result()) for _, metric, _ in self.entries}

    def reset_state(self):
        for _, metric, _ in self.entries:
            metric.reset_state()

    @property
    def metrics(self):
        return [m for _, m, _ in self.entries]
