"""`OptimizerMap` and `MultiOptimizer`: different optimizers for different variables (Keras 3).

A map key is a variable path or a regular expression matched in full against it
(``"encoder/.*"``); an exact key wins over the patterns, two matching patterns are an error, and
unmatched variables go to the default optimizer. Nesting, as in Keras: a map's optimizers are
single optimizers (neither a `MultiOptimizer` nor a `LossScaleOptimizer`); a
`LossScaleOptimizer` may wrap a `MultiOptimizer`.
"""

import re

from kerasrs import registry
from kerasrs.optimizers import base, serialization
from kerasrs.optimizers.loss_scale_optimizer import LossScaleOptimizer


class OptimizerMap:
    """Variable path (or full-match regex) -> optimizer, with a default.

    Raises:
        TypeError: for a default that is not an Optimizer or a map that is not a dict.
    """

    def __init__(self, default_optimizer, optimizer_map=None):
        if not isinstance(default_optimizer, base.Optimizer):
            raise TypeError(f"OptimizerMap: default_optimizer must be an Optimizer. Received: "
                            f"{default_optimizer!r}")
        if optimizer_map is not None and not isinstance(optimizer_map, dict):
            raise TypeError(f"OptimizerMap: optimizer_map must be a dict. Received: "
                            f"{optimizer_map!r}")
        self.default_optimizer = default_optimizer
        self._map = {}
        for key, opt in (optimizer_map or {}).items():
            self[key] = opt

    def __getitem__(self, key):
        """The optimizer for path ``key``: an exact key, else the one regex that matches it in
        full, else the default.

        Raises:
            ValueError: if several patterns match.
        """
        if key in self._map:
            return self._map[key]
        hits = [p for p in self._map if re.fullmatch(p, key)]
        if len(hits) > 1:
            raise ValueError(f"OptimizerMap: multiple optimizers match variable {key!r}: {hits}")
        return self._map[hits[0]] if hits else self.default_optimizer

    def __setitem__(self, key, optimizer):
        if key in self._map:
            raise ValueError(f"OptimizerMap: {key!r} is already mapped to {self._map[key]!r}")
        if not isinstance(key, str):
            raise ValueError(f"OptimizerMap: keys must be strings. Received: {key!r}")
        _check_single(optimizer, f"OptimizerMap[{key!r}]")
        self._map[key] = optimizer

    def __delitem__(self, key):
        del self._map[key]

    def __len__(self):
        return len(self._map)

    def __iter__(self):
        return iter(self._map)

    def values(self):
        return self._map.values()

    def __call__(self, variable):
        return self[getattr(variable, "path", None) or variable.name]

    def get_config(self):
        return {"default_optimizer": serialization.serialize(self.default_optimizer),
                "optimizer_map": {k: serialization.serialize(v) for k, v in self._map.items()}}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(serialization.deserialize(config["default_optimizer"], custom_objects),
                   {k: serialization.deserialize(v, custom_objects)
                    for k, v in config.get("optimizer_map", {}).items()})


class MultiOptimizer(base.Optimizer):
    """Delegates each variable to the optimizer an `OptimizerMap` (or any callable
    ``variable -> Optimizer``) picks; each sub-optimizer keeps its own state, learning rate,
    step count, clipping and EMA (`finalize_variable_values` reaches each one).

    There is no single learning rate: reading or setting ``learning_rate`` raises
    AttributeError, as in Keras (use `optimizers`). ``loss_scale_factor`` is handed to every
    sub-optimizer, which unscales its own gradients.

    Raises:
        ValueError: when the map gives something that is not a single Optimizer (a
            `MultiOptimizer` or a `LossScaleOptimizer` cannot be nested inside).
    """

    def __init__(self, optimizer_map, loss_scale_factor=None, name=None):
        self._inner = []
        super().__init__(learning_rate=0.0, loss_scale_factor=loss_scale_factor, name=name)
        self._optimizer_map = optimizer_map
        for opt in list(getattr(optimizer_map, "values", lambda: [])()) + [
                getattr(optimizer_map, "default_optimizer", None)]:
            if opt is not None:
                self._add_inner(opt)

    def _add_inner(self, opt):
        if all(opt is not o for o in self._inner):
            opt.loss_scale_factor = self.loss_scale_factor
            self._inner.append(opt)

    @property
    def optimizers(self):
        return list(self._inner)

    @property
    def learning_rate(self):
        raise AttributeError(f"{self.name}: a MultiOptimizer has no single learning rate; read "
                             "it on the sub-optimizers (`optimizer.optimizers`).")

    @learning_rate.setter
    def learning_rate(self, value):
        raise AttributeError(f"{self.name}: a MultiOptimizer has no single learning rate; set "
                             f"it on the sub-optimizers (`optimizer.optimizers`). Received: "
                             f"learning_rate={value!r}")

    @property
    def loss_scale_factor(self):
        return self._loss_scale_factor

    @loss_scale_factor.setter
    def loss_scale_factor(self, value):
        self._loss_scale_factor = value
        for opt in self._inner:
            opt.loss_scale_factor = value

    def build(self, variables):
        if self.built:
            return
        groups = {}
        self._route = {}
        for var in variables:
            opt = self._optimizer_map(var)
            _check_single(opt, f"{self.name}: the optimizer for {var.path!r}")
            self._add_inner(opt)
            self._route[id(var)] = opt
            groups.setdefault(id(opt), []).append(var)
        for opt in self._inner:
            if id(opt) in groups:
                opt.build(groups[id(opt)])
        super().build(variables)

    def apply(self, grads, trainable_variables=None):
        """One step: each sub-optimizer applies the gradients of its own variables."""
        grads = list(grads)
        if trainable_variables is None:
            trainable_variables = self._trainable_variables
        trainable_variables = self._built_for(grads, trainable_variables)
        unknown = [v.path for v in trainable_variables if id(v) not in self._route]
        if unknown:
            raise ValueError(f"{self.name}: an optimizer only updates the variables it was "
                             f"built with. Received: unknown variables {unknown}")
        for opt, gs, vs in self._split(trainable_variables, grads):
            opt.apply(gs, vs)
        self._iterations.data += 1

    def _split(self, variables, values=None):
        """``[(sub-optimizer, its values, its variables)]`` in the sub-optimizers' order."""
        values = variables if values is None else values
        per_opt = {id(opt): (opt, [], []) for opt in self._inner}
        for value, var in zip(values, variables):
            _, own_values, own_variables = per_opt[id(self._route[id(var)])]
            own_values.append(value)
            own_variables.append(var)
        return [entry for entry in per_opt.values() if entry[2]]

    def finalize_variable_values(self, var_list):
        """Each sub-optimizer finalizes its own variables (its EMA, if it keeps one)."""
        if not self.built:
            return
        known = [v for v in var_list if id(v) in self._route]
        for opt, _, variables in self._split(known):
            opt.finalize_variable_values(variables)

    def set_weights(self, weights):
        """Assign arrays to `variables`: this optimizer's own, then each sub-optimizer's.

        Raises:
            ValueError: if the optimizer is not built or the count differs.
        """
        if not self.built or len(weights) != len(self.variables):
            raise ValueError(f"{self.name}: set_weights needs a built optimizer and "
                             f"{len(self.variables)} arrays. Received: {len(weights)} arrays, "
                             f"built={self.built}")
        weights = list(weights)
        for var, value in zip(self._variables, weights):
            var.assign(value)
        start = len(self._variables)
        for opt in self._inner:
            count = len(opt.variables)
            if count:
                opt.set_weights(weights[start:start + count])
            start += count

    @property
    def variables(self):
        out = list(self._variables)
        for opt in self._inner:
            out.extend(opt.variables)
        return out

    def get_config(self):
        mapping = self._optimizer_map
        cfg = mapping.get_config() if isinstance(mapping, OptimizerMap) else \
            registry.serialize_keras_object(mapping)
        return {"name": self.name, "optimizer_map": cfg,
                "loss_scale_factor": self.loss_scale_factor}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        mapping = config.pop("optimizer_map")
        if isinstance(mapping, dict) and "default_optimizer" in mapping:
            mapping = OptimizerMap.from_config(mapping, custom_objects)
        return cls(mapping, **config)


def _check_single(optimizer, where):
    """Keras's nesting rule: only single optimizers inside a map or a `MultiOptimizer`."""
    if not isinstance(optimizer, base.Optimizer):
        raise ValueError(f"{where}: must be an Optimizer. Received: {optimizer!r}")
    for kind in (LossScaleOptimizer, MultiOptimizer):
        if isinstance(optimizer, kind):
            raise ValueError(f"{where}: a {kind.__name__} cannot be used inside a "
                             f"MultiOptimizer or an OptimizerMap; wrap the MultiOptimizer "
                             f"instead. Received: {optimizer!r}")
