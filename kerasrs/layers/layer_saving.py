"""Keras's saving hooks of `kerasrs.Layer`: how a layer stores and loads its own variables
(``save_own_variables`` / ``load_own_variables``: a dict ``"0", "1", ...`` of arrays, trainable
first, each in creation order). A layer that stores its state its own way overrides them.

A mixin of `Layer` (kerasrs/layers/base.py).
"""

import numpy as np


class LayerSaving:
    """The saving hooks (see the module docstring)."""

    def _saved_variables(self):
        """``[(name, variable)]`` that `save_own_variables` stores, in order: trainable, then
        non-trainable, each in creation order (Keras's layout)."""
        return [(v.name, v) for v in self._trainable_variables + self._non_trainable_variables]

    def save_own_variables(self, store):
        """Put this layer's own variables into the dict ``store`` under "0", "1", ..."""
        for i, (_, var) in enumerate(self._saved_variables()):
            store[str(i)] = var

    def load_own_variables(self, store):
        """Assign this layer's own variables from ``store`` ("0", "1", ...: arrays).

        Raises:
            ValueError: if the number of stored arrays differs from the number of variables.
        """
        self._check_load_own_variables(store)
        for i, (_, var) in enumerate(self._saved_variables()):
            var.assign(_stored_array(store[str(i)], var.dtype))

    def _check_load_own_variables(self, store):
        names = [name for name, _ in self._saved_variables()]
        if len(store.keys()) == len(names):
            return
        if not names and not self.built:
            raise ValueError(f"Layer '{self.name}' was never built and thus it doesn't have any "
                             f"variables. However the weights file lists {len(store.keys())} "
                             "variables for this layer. Build it (call it on data, or implement "
                             "build_from_config) before loading.")
        raise ValueError(f"Layer '{self.name}' expected {len(names)} variables, but received "
                         f"{len(store.keys())} variables during loading. Expected: {names}")


def _stored_array(value, dtype):
    """A stored value (array, h5py dataset, Tensor) as a NumPy array of ``dtype``."""
    value = value.numpy() if hasattr(value, "numpy") else value
    return np.asarray(value[()] if hasattr(value, "id") else value).astype(dtype, copy=False)
