"""The weight views of `kerasrs.Layer`: `weights`, `variables`, their trainable and
non-trainable parts, `trainable`, `get_weights` / `set_weights` and `count_params`.

A mixin of `Layer` (kerasrs/layers/base.py): a layer's own weights are its
``_trainable_variables`` and ``_non_trainable_variables`` (made by `Layer.add_weight`); these
views add its sublayers' (``_flatten_layers``) and its seed generators' state.
"""

import numpy as np

from kerasrs import backend as backend_module


class LayerWeights:
    """The views of a layer's state (see the module docstring)."""

    @property
    def weights(self):
        """All weights: this layer's own (trainable first, then non-trainable, as created), then
        each sublayer's, each once. This is the order of `get_weights` and of saved files."""
        out, seen = [], set()
        for layer in self._flatten_layers():
            for w in layer._own_weights():
                if id(w) not in seen:
                    seen.add(id(w))
                    out.append(w)
        return out

    @property
    def variables(self):
        """All state: per layer, its weights then the state of its seed generators (Keras's
        ``variables``: `weights` plus the random-seed state, each once)."""
        out, seen = [], set()
        for layer in self._flatten_layers():
            for v in layer._own_weights() + [g.state for g in layer._seed_generators]:
                if id(v) not in seen:
                    seen.add(id(v))
                    out.append(v)
        return out

    @property
    def trainable_weights(self):
        """The weights an optimizer updates (empty when the layer is frozen)."""
        return [w for w in self.weights if w.trainable] if self.trainable else []

    trainable_variables = trainable_weights

    @property
    def non_trainable_weights(self):
        """Weights no optimizer updates: moving statistics, and every weight when frozen."""
        return [w for w in self.weights if not w.trainable] if self.trainable else self.weights

    @property
    def non_trainable_variables(self):
        """`non_trainable_weights` plus the seed generators' state (Keras's meaning)."""
        return [v for v in self.variables if not v.trainable] if self.trainable else \
            self.variables

    @property
    def trainable(self):
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        """Freeze (False) or unfreeze (True) this layer's weights and all sublayers'."""
        value = bool(value)
        for layer in self._flatten_layers():
            layer._trainable = value
            for w in layer._trainable_variables:
                w.trainable = value

    def get_weights(self):
        """The weights' values as a list of NumPy arrays, in `weights` order (copies)."""
        return [np.array(w.numpy()) for w in self.weights]

    def set_weights(self, weights):
        """Overwrite the weights with NumPy arrays given in `weights` order.

        Raises:
            ValueError: if the number of arrays or a shape differs, naming the layer, the
                weight and both shapes. Nothing is assigned in that case.
        """
        params = self.weights
        weights = list(weights)
        if len(weights) != len(params):
            raise ValueError(f"{self.name}.set_weights: the layer has {len(params)} weights "
                             f"({[w.path for w in params]}), but {len(weights)} arrays were given. "
                             f"Received: shapes {[tuple(np.shape(w)) for w in weights]}")
        for p, w in zip(params, weights):
            if tuple(np.shape(w)) != p.shape:
                raise ValueError(f"{self.name}.set_weights: weight {p.path!r} has shape {p.shape}. "
                                 f"Received: an array of shape {tuple(np.shape(w))}")
        for p, w in zip(params, weights):
            p.assign(backend_module.convert_to_numpy(w))

    def count_params(self):
        """Total number of scalars in all weights.

        Raises:
            ValueError: if the layer is not built yet (its weights do not exist).
        """
        if not self.built:
            raise ValueError(f"{self.name}.count_params: the layer is not built yet, so its "
                             "weights do not exist. Call it on data or call build() first.")
        return int(sum(int(np.prod(w.shape)) for w in self.weights))
