"""What ``compile`` sets up: the per-output losses and metrics, and the running means of fit.

Both are resolved lazily, at the first batch, because only then are the model's outputs known
(a subclassed or unbuilt Sequential model has none before). Models with several outputs, in any
nested structure, take losses, loss weights and metrics in a structure matched against the
outputs as Keras does (see `kerasrs.trainers.output_structure`); a single loss is applied to
every output. With several losses, logs name each ``<name>_loss``; metrics of a multi-output
model are logged as ``<output>_<metric>``.
"""

import numbers

import numpy as np

from kerasrs import autodiff, losses, tree
from kerasrs import backend as backend_module
from kerasrs import metrics as metrics_module
from kerasrs.metrics import base as metrics_base
from kerasrs.metrics import reduction
from kerasrs.trainers.output_structure import OutputStructure  # noqa: F401 (the trainer's)
from kerasrs.trainers.output_structure import loss_specs, metric_lists


class RunningMean(metrics_base.Metric):
    """Sample-weighted running mean of per-batch values (what Keras's loss tracker computes):
    ``sum(value_b * n_b) / sum(n_b)`` with ``n_b`` the batch size.

    It is a `Metric` with Keras's ``Mean`` interface (``update_state(values,
    sample_weight=None)``, ``result()``, ``reset_state()``), so a custom ``train_step`` can
    update it like Keras's loss tracker; the state is two Python floats, so the training loop's
    `add` costs next to nothing. On a GPU the total is a device scalar (`loss_mean`): the
    loop's `add` does not wait for the device, `result` reads it once per log.
    """

    def __init__(self, name):
        super().__init__(name=name)
        self.reset_state()

    def add(self, value, weight):
        """Fold in ``value`` (a Python float or a 0-d device array) with weight ``weight`` (the
        batch size)."""
        self.total = value * weight + self.total
        self.count += weight

    def update_state(self, values, sample_weight=None):
        """As Keras's ``Mean``: a scalar counts once (or ``sample_weight`` times); an array of
        shape ``(batch, ...)`` counts one sample per row."""
        raw = autodiff.raw(values)
        weight = autodiff.raw(sample_weight)
        if np.ndim(raw) == 0 and np.ndim(weight) == 0:
            self.add(float(raw), 1.0 if weight is None else float(weight))
            return
        values, weights = reduction.reduce_to_samplewise(metrics_base.raw(values), sample_weight)
        count = float(weights.sum()) if weights is not None else \
            (values.shape[0] if values.ndim else 1)
        self.total += float(values.sum())
        self.count += count

    def result(self):
        return float(self.total) / self.count if self.count else 0.0

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
    """A loss value as a Python float (for the non-finite check): `loss_mean` read."""
    return float(loss_mean(value, what))


def loss_mean(value, what):
    """A loss value for the loss mean: a Python float from the host, a 0-d float64 array on
    a device (read only when the mean is logged: no device sync per step). An unreduced loss (a `Loss` with
    ``reduction=None`` in ``compile``) counts as the mean of its values, as Keras's loss
    tracker reports it; its gradient is that of the sum (the tape seeds with ones, as
    TensorFlow does for a non-scalar target).

    Raises:
        ValueError: if ``value`` is empty.
    """
    raw = autodiff.raw(value)
    if getattr(raw, "size", 1) == 0:
        raise ValueError(f"Model: `{what}` returned an empty loss. Received: a value of "
                         f"shape {tuple(raw.shape)}")
    if getattr(raw, "size", 1) != 1:
        raw = raw.mean()
    be = backend_module.backend_of(raw)
    if be.name == "numpy" or not be.is_array(raw):
        return float(raw)
    return raw.astype("float64").reshape(())


def get_loss(identifier, y_true, y_pred):
    """The `Loss` compile uses for ``identifier`` on one output, as Keras's ``get_loss``:
    ``"crossentropy"``/``"ce"`` (any case) become binary cross-entropy when the output's last
    axis is 1, sparse categorical when the targets have a lower rank or a last axis of 1, else
    categorical; a loss function is wrapped in a `LossFunctionWrapper` named after the
    identifier (``"mse"`` stays ``"mse"``).

    Raises:
        ValueError: ``Could not interpret loss identifier`` for an unknown name.
    """
    if isinstance(identifier, str) and identifier.lower() in ("crossentropy", "ce"):
        fn = {"binary": losses.binary_crossentropy,
              "sparse": losses.sparse_categorical_crossentropy,
              "categorical": losses.categorical_crossentropy}[_label_kind(y_true, y_pred)]
        return losses.LossFunctionWrapper(fn, name=identifier)
    obj = losses.get(identifier)
    if isinstance(obj, losses.Loss):
        return obj
    name = identifier if isinstance(identifier, str) else getattr(obj, "__name__", None)
    return losses.LossFunctionWrapper(obj, name=name)


def _label_kind(y_true, y_pred):
    """Keras's ``is_binary_or_sparse_categorical`` on the shapes of one output."""
    true_shape, pred_shape = tuple(np.shape(y_true)), tuple(np.shape(y_pred))
    if pred_shape and pred_shape[-1] == 1:
        return "binary"
    if len(true_shape) < len(pred_shape) or (true_shape and true_shape[-1] == 1
                                             and pred_shape and pred_shape[-1] > 1):
        return "sparse"
    return "categorical"


class CompiledLoss:
    """The compiled losses: ``__call__`` gives the weighted total and each loss's value.

    Attributes (after `build`): losses, weights and names (one per compiled loss, see
    `kerasrs.trainers.output_structure.loss_specs`), output_losses (per output, its first loss
    or None; "accuracy" metrics are resolved from it).
    """

    def __init__(self, loss, loss_weights=None):
        self.loss, self.loss_weights = loss, loss_weights
        self.built = False

    def build(self, outputs, y_true, y_pred):
        """Resolve the losses for ``outputs`` (an `OutputStructure`) from the first batch's
        flat targets and predictions."""
        self.specs = loss_specs(self.loss, self.loss_weights, outputs)
        self.losses = [get_loss(s.spec, y_true[s.index], y_pred[s.index]) for s in self.specs]
        self.weights = [1.0 if s.weight is None else float(s.weight) for s in self.specs]
        self.names = [s.name(outputs.names, loss.name) for s, loss in zip(self.specs,
                                                                          self.losses)]
        self.output_labels = [f"output {n!r}" for n in outputs.names] if outputs.names else \
            ["the output"] if outputs.count == 1 else [f"output #{k}" for k in range(outputs.count)]
        self.output_losses = [None] * outputs.count
        for spec, loss in zip(reversed(self.specs), reversed(self.losses)):
            self.output_losses[spec.index] = loss
        self.built = True

    def __call__(self, y_true, y_pred, sample_weight):
        """Flat lists (one entry per output) in; ``(total Tensor or None, [Tensor per
        loss])``."""
        total, parts = None, []
        for spec, loss, weight in zip(self.specs, self.losses, self.weights):
            i, output = spec.index, self.output_labels[spec.index]
            if y_true[i] is None:
                raise ValueError(f"Model: no targets were given for {output}, which "
                                 f"has the loss {loss.name!r}. Received: y=None")
            try:
                value = loss(y_true[i], y_pred[i], sample_weight[i])
            except (ValueError, TypeError, IndexError) as e:
                shapes = "" if "shape" in str(e) else (
                    f". Received: y with shape {tuple(np.shape(y_true[i]))}, predictions with "
                    f"shape {tuple(y_pred[i].shape)}")  # unless the loss's message has them
                raise type(e)(f"Model: the loss {loss.name!r} failed for {output}: {e}"
                              f"{shapes}") from e
            parts.append(value)
            weighted = value if weight == 1.0 else value * weight
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

    def build(self, outputs, y_true, y_pred, output_losses):
        """Resolve the metrics for ``outputs`` (an `OutputStructure`); log names follow Keras:
        ``<output>_<metric>`` with several outputs, ``_1``, ``_2``... on repeats, and a
        weighted metric named like an unweighted one is ``weighted_<metric>``."""
        prefixes = outputs.metric_names if outputs.count > 1 else None
        self.entries = []  # (output index, metric, weighted)
        taken = {}
        for spec, weighted in ((self.metrics_spec, False), (self.weighted_spec, True)):
            if spec is None:
                continue
            if not isinstance(spec, (list, tuple, dict)):
                raise ValueError(f"compile: `metrics` must be a list or a dict. "
                                 f"Received: {spec!r}")
            what = "weighted_metrics" if weighted else "metrics"
            for i, items in enumerate(metric_lists(spec, outputs, what)):
                for item in items:
                    m = metrics_module.resolve(
                        item, loss=output_losses[i], output_shape=tuple(y_pred[i].shape),
                        y_true_shape=None if y_true[i] is None else tuple(np.shape(y_true[i])))
                    m.name = _unique_name(m.name, prefixes[i] if prefixes else None, weighted,
                                          taken)
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


def _unique_name(name, prefix, weighted, taken):
    """Keras's ``CompileMetrics.result`` naming, decided once at build."""
    full = f"{prefix}_{name}" if prefix else name
    if full in taken and weighted:
        full = f"{prefix}_weighted_{name}" if prefix else f"weighted_{name}"
    if full in taken:
        taken[full] += 1
        full = f"{full}_{taken[full] - 1}"
    else:
        taken[full] = 1
    return full


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
    if isinstance(loss, str) and loss.lower() in ("crossentropy", "ce"):
        return  # resolved from the shapes at the first batch
    try:
        losses.get(loss)
    except (ValueError, TypeError) as e:
        valid = sorted(losses._GET_NAMES) + ["crossentropy", "ce"]
        raise ValueError(f"compile: unknown loss {loss!r} (Could not interpret loss "
                         f"identifier: {loss}). Valid names: {valid}; or pass a Loss object "
                         f"or a function (y_true, y_pred). Received: loss={loss!r}") from e


def _is_weight(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool) or (
        isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf")


def _check_loss_weights(loss_weights):
    leaves = tree.flatten(loss_weights) if tree.is_nested(loss_weights) else None
    if loss_weights is None or _is_weight(loss_weights) or (
            leaves is not None and all(v is None or _is_weight(v) for v in leaves)):
        return
    hint = " compile's arguments are (optimizer, loss, loss_weights, metrics, ...): pass " \
        "metrics by keyword, metrics=[...]." if leaves and any(
            isinstance(v, str) for v in leaves) else ""
    raise TypeError(f"compile: `loss_weights` must be a number, or a list, tuple or dict of "
                    f"numbers (one per loss, in the structure of `loss`).{hint} Received: "
                    f"loss_weights={loss_weights!r}")


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
