"""The structure of a model's outputs, and compile's losses and metrics laid over it.

A model may return one tensor or a nested structure (dicts, lists, tuples). `compile` then takes
``loss``, ``loss_weights``, ``metrics`` and ``weighted_metrics`` in a structure of their own,
matched against the outputs as Keras 3's ``CompileLoss``/``CompileMetrics`` match them:

* one loss (a name, `Loss` or function) applies to every output;
* a list with one loss per output is taken in the outputs' flattening order (dicts by sorted
  key); a dict is matched by key (for dict outputs) or by output name (the output layers'
  names, for list outputs); deeper structures are matched level by level;
* a list of losses where one output is expected means several losses on that output, summed;
* ``loss_weights`` has the structure of ``loss`` (or as many values as it has losses), or is one
  number for all;
* each loss gets a name: its path in the outputs (``"x"`` for a dict output, ``"1/o2"`` in a
  nested tuple), with a list position replaced by the output's name (or, without output names,
  the loss's name); with more than one loss, fit logs ``<name>_loss`` for each.

Targets and sample weights are flattened alongside (`OutputStructure.flatten`): the same
structure as the outputs (lists and tuples alike), a dict keyed by output name, a flat list in
output order, or one array for a single output (one sample-weight array for all outputs).
"""

from kerasrs import tree


class OutputStructure:
    """The outputs' nesting, from the first batch's ``y_pred``.

    Args:
        y_pred: the model's outputs (any structure).
        names: the model's flat output names (``model.output_names``), or None.

    Attributes:
        count: the number of outputs. struct: ``y_pred`` with each output replaced by its flat
        index. paths: each output's path of keys/indices. names: flat output names or None.
        metric_names: the names metric logs are prefixed with (a flat dict's keys, else
        ``names``).
    """

    def __init__(self, y_pred, names=None):
        flat = tree.flatten(y_pred)
        self.count = len(flat)
        self.struct = tree.pack_sequence_as(y_pred, list(range(self.count)))
        self.paths = [path for path, _ in tree.flatten_with_path(self.struct)]
        self.names = list(names) if names is not None and len(names) == self.count else None
        flat_dict = isinstance(y_pred, dict) and len(y_pred) == self.count
        self.metric_names = [p[0] for p in self.paths] if flat_dict else self.names
        self.is_flat = tree.is_nested(y_pred) and len(y_pred) == self.count

    def flatten(self, y, what="y"):
        """``y`` (targets or sample weights) as a list aligned with the outputs, None where an
        output has none.

        Raises:
            ValueError: for a structure that fits neither the outputs nor their names.
        """
        n = self.count
        if y is None:
            return [None] * n
        if not isinstance(y, (list, tuple, dict)):
            if n == 1 or what == "sample_weight":
                return [y] * n
            raise ValueError(f"Model: the model has {n} outputs ({self._describe()}), so "
                             f"`{what}` must be a list or dict of {n} arrays. Received: one "
                             f"array of shape {tuple(getattr(y, 'shape', ()))}")
        if _fits(y, self.struct):
            return [_lookup(y, path) for path in self.paths]
        if isinstance(y, dict) and self.names and not isinstance(self.struct, dict):
            unknown = [k for k in y if k not in self.names]
            if not unknown:
                return [y.get(name) for name in self.names]
        elif isinstance(y, (list, tuple)) and len(y) == n and not any(
                tree.is_nested(v) for v in y):
            return list(y)
        if isinstance(y, dict):
            raise ValueError(f"Model: `{what}` has keys {list(y)} that are not output names "
                             f"({self._describe()}). Received: keys {list(y)}")
        raise ValueError(f"Model: the model has {n} outputs ({self._describe()}) but `{what}` "
                         f"has {len(y)} entries, in structure "
                         f"{tree.map_structure(lambda _: '*', y)}. Received: "
                         f"{len(tree.flatten(y))} arrays")

    def _describe(self):
        keys = self.metric_names or self.names
        return f"{keys}" if keys else f"structure {tree.map_structure(lambda _: '*', self.struct)}"


def _fits(y, struct):
    """Whether ``y`` nests like ``struct`` (lists and tuples alike; dict keys a subset)."""
    if isinstance(struct, dict):
        return isinstance(y, dict) and all(k in struct and _fits(v, struct[k])
                                           for k, v in y.items())
    if isinstance(struct, (list, tuple)):
        return isinstance(y, (list, tuple)) and len(y) == len(struct) and all(
            _fits(v, s) for v, s in zip(y, struct))
    return not isinstance(y, (list, tuple, dict))


def _lookup(y, path):
    for key in path:
        if isinstance(y, dict) and key not in y:
            return None
        y = y[key]
    return y


# -- losses -----------------------------------------------------------------------------------
class LossSpec:
    """One compiled loss: the output it applies to, what the user gave, its weight, and where
    it sits in ``loss`` (for the weights) and in the outputs (for its name)."""

    def __init__(self, index, spec, out_path, loss_path):
        self.index, self.spec, self.out_path, self.loss_path = index, spec, out_path, loss_path
        self.weight = None

    def name(self, names, loss_name):
        """Keras's name: the output path, a trailing list index replaced by the output name."""
        path = self.out_path
        if not path or isinstance(path[-1], int):
            path = path[:-1] + ((names[self.index] if names else loss_name),)
        return "/".join(str(p) for p in path)


def loss_specs(loss, loss_weights, outputs):
    """The `LossSpec`s of ``compile(loss=..., loss_weights=...)`` for ``outputs`` (an
    `OutputStructure`), in the order Keras computes them.

    Raises:
        ValueError: for a loss structure that does not fit the outputs, or loss weights that
            do not fit the losses.
    """
    struct, names = outputs.struct, outputs.names
    by_name = names or []
    if isinstance(loss, dict) and not isinstance(struct, dict):
        unknown = [k for k in loss if k not in by_name]
        if unknown:
            raise ValueError(f"compile: `loss` has keys {unknown} that are not output names. "
                             f"Expected keys in {by_name}. Received: loss keys {list(loss)}")
        loss = [loss.get(name) for name in by_name]
    if isinstance(loss_weights, dict) and not isinstance(struct, dict) and by_name and all(
            k in by_name for k in loss_weights):
        loss_weights = [loss_weights.get(name) for name in by_name]
    if not tree.is_nested(loss):
        loss = tree.map_structure(lambda _: loss, struct)
    specs = []
    _walk(loss, struct, (), (), specs)
    _set_weights(specs, loss, loss_weights)
    return specs


def _walk(loss, struct, out_path, loss_path, specs):
    if loss is None:
        return
    if not tree.is_nested(loss):
        for sub, index in tree.flatten_with_path(struct):
            specs.append(LossSpec(index, loss, out_path + sub, loss_path))
        return
    if isinstance(loss, (list, tuple)):
        leaves = tree.flatten_with_path(struct)
        if tree.is_nested(struct) and len(loss) == len(leaves) and not any(
                tree.is_nested(v) for v in loss):  # one loss per output, in flat order
            for k, (spec, (sub, index)) in enumerate(zip(loss, leaves)):
                if spec is not None:
                    specs.append(LossSpec(index, spec, out_path + sub, loss_path + (k,)))
            return
        if not isinstance(struct, (list, tuple)):  # several losses on this output
            for k, spec in enumerate(loss):
                _walk(spec, struct, out_path, loss_path + (k,), specs)
            return
        if len(loss) != len(struct):
            raise ValueError(f"compile: `loss` at {list(out_path) or 'the top'} has "
                             f"{len(loss)} entries but the outputs there have {len(struct)}. "
                             f"Received: {loss!r}")
        for k, spec in enumerate(loss):
            _walk(spec, struct[k], out_path + (k,), loss_path + (k,), specs)
        return
    if not isinstance(struct, dict) or any(k not in struct for k in loss):
        keys = list(struct) if isinstance(struct, dict) else None
        raise ValueError(f"compile: `loss` has keys {list(loss)} at "
                         f"{list(out_path) or 'the top'}, but the outputs there "
                         f"{'have keys ' + str(keys) if keys else 'are not a dict'}. "
                         f"Received: {loss!r}")
    for key, spec in loss.items():
        _walk(spec, struct[key], out_path + (key,), loss_path + (key,), specs)


def _set_weights(specs, loss, weights):
    if weights is None:
        return
    if not tree.is_nested(weights):
        for spec in specs:
            spec.weight = weights
        return
    if not _fits(weights, loss):  # a partial dict leaves the other losses at weight 1
        flat_loss = tree.flatten(loss)
        flat_weights = tree.flatten(weights)
        if len(flat_loss) != len(flat_weights):
            raise ValueError(f"compile: `loss_weights` must match the number of losses, got "
                             f"{len(flat_loss)} losses and {len(flat_weights)} weights. "
                             f"Received: loss_weights={weights!r}")
        weights = tree.pack_sequence_as(loss, flat_weights)
    for spec in specs:
        spec.weight = _lookup(weights, spec.loss_path)


# -- metrics ----------------------------------------------------------------------------------
def metric_lists(metrics, outputs, what="metrics"):
    """``metrics`` as one list of metric identifiers per output (Keras's rules, plus one
    kerasrs convenience: a flat list that is not one entry per output applies to every
    output).

    Raises:
        ValueError: for a structure that matches neither the outputs nor their names.
    """
    n = outputs.count
    if metrics is None:
        return [[] for _ in range(n)]
    if n == 1:
        return [[m for m in tree.flatten(metrics) if m is not None]]
    names = outputs.metric_names
    if outputs.is_flat:
        if isinstance(metrics, (list, tuple)) and len(metrics) == n:
            return [_items(m) for m in metrics]
        if isinstance(metrics, dict) and names and all(k in names for k in metrics):
            return [_items(metrics.get(name)) for name in names]
    if isinstance(metrics, (list, tuple)) and not any(tree.is_nested(m) for m in metrics):
        return [list(metrics) for _ in range(n)]  # kerasrs: the same metrics on every output
    out = [[] for _ in range(n)]
    if not _spread(metrics, outputs.struct, out):
        raise ValueError(f"compile: Invalid `{what}`. `{what}` should contain metrics and "
                         f"either be a dict or a list matching the output names of the model "
                         f"{names} or match the output structure of the model: "
                         f"{tree.map_structure(lambda _: 'X', outputs.struct)}. Received: "
                         f"{what}={metrics!r}")
    return out


def _items(value):
    if value is None:
        return []
    return [m for m in value if m is not None] if isinstance(value, (list, tuple)) else [value]


def _spread(metrics, struct, out):
    """Fill ``out`` (per flat output) from ``metrics`` nested like ``struct``; False on a
    mismatch."""
    if metrics is None:
        return True
    if not tree.is_nested(struct):
        if isinstance(metrics, dict):
            return False
        out[struct].extend(_items(metrics))
        return True
    if isinstance(struct, dict):
        return isinstance(metrics, dict) and all(
            k in struct and _spread(v, struct[k], out) for k, v in metrics.items())
    return isinstance(metrics, (list, tuple)) and len(metrics) == len(struct) and all(
        _spread(m, s, out) for m, s in zip(metrics, struct))
