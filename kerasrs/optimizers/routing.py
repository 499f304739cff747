"""`OptimizerMap` and `MultiOptimizer`: different optimizers for different variables (Keras 3).

A map key is a variable path or a regular expression matched in full against it
(``"encoder/.*"``); unmatched variables go to the default optimizer.
"""

import re

from kerasrs import registry
from kerasrs.optimizers import base, serialization


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
        if not isinstance(optimizer, base.Optimizer) or isinstance(optimizer, MultiOptimizer):
            raise ValueError(f"OptimizerMap: values must be (single) Optimizers. Received: "
                             f"{optimizer!r}")
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
    ``variable -> Optimizer``) picks; each sub-optimizer keeps its own state, learning rate and
    step count.

    Raises:
        ValueError: when the map gives something that is not a (single) Optimizer.
    """

    def __init__(self, optimizer_map, loss_scale_factor=None, name=None):
        super().__init__(learning_rate=0.0, loss_scale_factor=loss_scale_factor, name=name)
        self._optimizer_map = optimizer_map
        self._inner = []
        for opt in list(getattr(optimizer_map, "values", lambda: [])()) + [
                getattr(optimizer_map, "default_optimizer", None)]:
            if opt is not None and all(opt is not o for o in self._inner):
                self._inner.append(opt)

    @property
    def optimizers(self):
        return list(self._inner)

    def build(self, variables):
        if self.built:
            return
        groups = {}
        self._route = {}
        for var in variables:
            opt = self._optimizer_map(var)
            if not isinstance(opt, base.Optimizer) or isinstance(opt, MultiOptimizer):
                raise ValueError(f"{self.name}: the optimizer for {var.path!r} must be a single "
                                 f"Optimizer. Received: {opt!r}")
            if all(opt is not o for o in self._inner):
                self._inner.append(opt)
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
        per_opt = {}
        for g, var in zip(grads, trainable_variables):
            opt = self._route[id(var)]
            per_opt.setdefault(id(opt), (opt, [], []))
            per_opt[id(opt)][1].append(g)
            per_opt[id(opt)][2].append(var)
        for opt, gs, vs in per_opt.values():
            opt.apply(gs, vs)
        self._iterations.data += 1

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
