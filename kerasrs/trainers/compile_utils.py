"""What ``compile`` sets up: the per-output losses and metrics, and the running means of fit.

Both are resolved lazily, at the first batch, because only then are the model's outputs known
(a subclassed or unbuilt Sequential model has none before). Multi-output models take losses,
loss weights and metrics as a list (in output order) or a dict keyed by output name; a single
loss is applied to every output. Logs of a multi-output model name each output's loss
``<output>_loss`` and each metric ``<output>_<metric>``.
"""

import numbers

import numpy as np

from kerasrs import autodiff, losses
from kerasrs import metrics as metrics_module
from kerasrs.metrics import base as metrics_base
from kerasrs.metrics import reduction


class RunningMean(metrics_base.Metric):
    """Sample-weighted running mean of per-batch values (what Keras's loss tracker computes):
    ``sum(value_b * n_b) / sum(n_b)`` with ``n_b`` the batch size.

    It is a `Metric` with Keras's ``Mean`` interface (``update_state(values,
    sample_weight=None)``, ``result()``, ``reset_state()``), so a custom ``train_step`` can
    update it like Keras's loss tracker; the state is two Python floats, so the training loop's
    `add` costs next to nothing.
    """

    def __init__(self, name):
        super().__init__(name=name)
        self.reset_state()

    def add(self, value, weight):
        """Fold in a Python float ``value`` with weight ``weight`` (the batch size)."""
        self.total += value * weight
        self.count += weight

    def update_state(self, values, sample_weight=None):
        """As Keras's ``Mean``: a scalar counts once (or ``sample_weight`` times); an array of
        shape ``(batch, ...)`` counts one sample per row."""
        raw = getattr(values, "data", values)
        weight = getattr(sample_weight, "data", sample_weight)
        if np.ndim(raw) == 0 and np.ndim(weight) == 0:
            self.add(float(raw), 1.0 if weight is None else float(weight))
            return
        values, weights = reduction.reduce_to_samplewise(metrics_base.raw(values), sample_weight)
        count = float(weights.sum()) if weights is not None else \
            (values.shape[0] if values.ndim else 1)
        self.total += float(values.sum())
        self.count += count

    def result(self):
        return self.total / self.count if self.count else 0.0

    def reset_state(self):
        self.total, self.count = 0.0, 0.0


def pythonify_logs(logs):
    """Keras's ``pythonify_logs``: keys sorted, nested dicts flattened into the top level,
    scalar values (Tensors, arrays, NumPy numbers) turned into Python floats."""
    out = {}
    for key, value in sorted((logs or {}).items()):
        if isinstance(value, dict):
            out.update(pythonify_logs(value))
            continue
        try:
            value = float(value)
        except (TypeError, ValueError):
            if isinstance(value, autodiff.Tensor):
                value = value.numpy()
        out[key] = value
    return out


def loss_value(value, what):
    """A loss value as a Python float (for the loss mean). An unreduced loss (a `Loss` with
    ``reduction=None`` in ``compile``) counts as the mean of its values, as Keras's loss
    tracker reports it; its gradient is that of the sum (the tape seeds with ones, as
    TensorFlow does for a non-scalar target).

    Raises:
        ValueError: if ``value`` is empty.
    """
    raw = getattr(value, "data", value)
    if getattr(raw, "size", 1) == 0:
        raise ValueError(f"Model: `{what}` returned an empty loss. Received: a value of "
                         f"shape {tuple(raw.shape)}")
    return float(raw.mean()) if getattr(raw, "size", 1) != 1 else float(raw)


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
    do (as in Keras 3). In ``model.metrics`` it stands for all of them, as Keras's
    ``CompileMetrics`` container does: ``name`` is ``"compile_metrics"``, `update_state` takes
    the model's ``(y, y_pred, sample_weight)`` structures and `result` returns a dict."""

    name = "compile_metrics"

    def __init__(self, metrics=None, weighted_metrics=None):
        self.metrics_spec, self.weighted_spec = metrics, weighted_metrics
        self.built = False
        self.entries = []
        self._owner = None  # the model, set by compile (builds this on first use)

    @property
    def has_metrics(self):
        return self.metrics_spec is not None or self.weighted_spec is not None

    def build(self, output_names, y_true, y_pred, output_losses):
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
                        item, loss=output_losses[i], output_shape=tuple(y_pred[i].shape),
                        y_true_shape=None if y_true[i] is None else tuple(np.shape(y_true[i])))
                    if multi:
                        m.name = f"{self.output_names[i]}_{m.name}"
                    if weighted and m.name in {e[1].name for e in self.entries if not e[2]}:
                        m.name = f"weighted_{m.name}"  # Keras: both kept, the weighted renamed
                    self.entries.append((i, m, weighted))
        self.built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Update every compiled metric from the model's targets and outputs (structures as
        the model takes them: an array, or a list/dict per output)."""
        if self._owner is None:
            raise ValueError("compile_metrics: not attached to a compiled model. Received: "
                             "an unattached CompiledMetrics")
        self._owner._update_compiled_metrics(y_true, y_pred, sample_weight)

    def update_flat(self, y_true, y_pred, sample_weight):
        """`update_state` on lists aligned with the outputs (the built form)."""
        for i, metric, weighted in self.entries:
            if y_true[i] is not None:
                metric.update_state(y_true[i], y_pred[i],
                                    sample_weight[i] if weighted else None)

    def results(self):
        return {metric.name: float(metric.result()) for _, metric, _ in self.entries}

    def result(self):
        """``{metric name: value}`` (empty before the first batch)."""
        return self.results()

    def __repr__(self):
        return f"<CompiledMetrics name={self.name} metrics={[m.name for m in self.metrics]}>"

    def reset_state(self):
        for _, metric, _ in self.entries:
            metric.reset_state()

    @property
    def metrics(self):
        return [m for _, m, _ in self.entries]


def check_compile_arguments(loss, loss_weights, metrics, weighted_metrics):
    """Check ``compile``'s loss, loss weights and metrics before any data is seen.

    Raises:
        ValueError: for a loss or metric that cannot be interpreted (listing the valid names),
            or ``metrics``/``weighted_metrics`` that are not a list, tuple or dict.
        TypeError: for ``loss_weights`` that are not a number, or a list/tuple/dict of numbers.
    """
    _check_losses(loss)
    _check_loss_weights(loss_weights)
    for what, spec in (("metrics", metrics), ("weighted_metrics", weighted_metrics)):
        if spec is None:
            continue
        if not isinstance(spec, (list, tuple, dict)):
            raise ValueError(f"compile: `{what}` must be a list, tuple or dict (per output). "
                             f"Received: {what}={spec!r} of type {type(spec).__name__}")
        _check_metrics(what, spec)


def _check_losses(loss):
    if loss is None:
        return
    if isinstance(loss, dict):
        for value in loss.values():
            _check_losses(value)
        return
    if isinstance(loss, (list, tuple)):
        for value in loss:
            _check_losses(value)
        return
    try:
        losses.get(loss)
    except (ValueError, TypeError) as e:
        valid = sorted(losses._BY_NAME) + sorted(losses._CLASSES)
        raise ValueError(f"compile: unknown loss {loss!r}. Valid names: {valid}; or pass a "
                         f"Loss object or a function (y_true, y_pred). Received: loss={loss!r}"
                         ) from e


def _is_weight(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool) or (
        isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf")


def _check_loss_weights(loss_weights):
    if loss_weights is None or _is_weight(loss_weights):
        return
    if isinstance(loss_weights, dict):
        values = list(loss_weights.values())
    elif isinstance(loss_weights, (list, tuple)):
        values = list(loss_weights)
    else:
        values = None
    if values is None or not all(v is None or _is_weight(v) for v in values):
        hint = " compile's arguments are (optimizer, loss, loss_weights, metrics, ...): pass " \
            "metrics by keyword, metrics=[...]." if values and any(
                isinstance(v, str) for v in values) else ""
        raise TypeError(f"compile: `loss_weights` must be a number, or a list, tuple or dict of "
                        f"numbers (one per output).{hint} Received: loss_weights="
                        f"{loss_weights!r}")


def _check_metrics(what, spec):
    items = spec.values() if isinstance(spec, dict) else spec
    for item in items:
        if item is None:
            continue
        if isinstance(item, (list, tuple, dict)):
            _check_metrics(what, item)
            continue
        if isinstance(item, str) and item.lower() in ("accuracy", "acc", "crossentropy", "ce"):
            continue
        try:
            metrics_module.get(item)
        except (ValueError, TypeError) as e:
            valid = sorted(set(metrics_module._METRIC_NAMES) | {"crossentropy", "ce"}
                           | set(metrics_module._CLASSES))
            raise ValueError(f"compile: unknown metric {item!r} in `{what}`. Valid names: "
                             f"{valid}, any loss name, a Metric object or a function "
                             f"(y_true, y_pred). Received: {what}={spec!r}") from e
