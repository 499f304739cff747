"""A layer's state tracker (Keras's ``layer._tracker``) and ``Layer._untrack_variable``.

Once built, a layer refuses new weights while its call runs ("You cannot add new elements of
state..."): all state is made in ``__init__`` or ``build``. The tracker holds that rule's lock.
A layer that must change its state after build (a custom layer swapping a weight for another
dtype) unlocks it, adds or untracks weights, and locks it again::

    self._tracker.unlock()
    self._untrack_variable(self.w)
    self.w = self.add_weight(shape=(2,), initializer="zeros", dtype="int8")
    self._tracker.lock()
"""

import numpy as np

# `Layer.__setattr__` counts assignments of public scalar settings (``rate``, ``momentum``...),
# so that `kerasrs.trainers.jit` re-reads the layers' settings (part of a traced step's key: the
# trace holds them as constants) only when the count moved.
SETTING_TYPES = (int, float, str, np.generic, type(None))  # bool is an int
settings_version = [0]


class Tracker:
    """The lock on adding state to a built layer during its call (locked by default)."""

    def __init__(self, layer):
        self._layer = layer
        self.locked = True

    def lock(self, msg=None):
        """Refuse new weights during the layer's call again (``msg`` is accepted for Keras's
        signature)."""
        self.locked = True

    def unlock(self):
        """Accept new weights during the layer's call."""
        self.locked = False

    def untrack(self, variable):
        """Remove ``variable`` from the layer's weights (and its regularized weights)."""
        untrack(self._layer, variable)

    def __repr__(self):
        return f"<Tracker of {self._layer.name}: {'locked' if self.locked else 'unlocked'}>"


def tracker(layer):
    """The layer's `Tracker`, made on first use."""
    found = layer.__dict__.get("_tracker_state")
    if found is None:
        found = layer.__dict__["_tracker_state"] = Tracker(layer)
    return found


def untrack(layer, variable):
    """Remove ``variable`` (by identity) from ``layer``'s own weight lists; no-op if absent."""
    d = layer.__dict__
    for key in ("_trainable_variables", "_non_trainable_variables", "_regularized"):
        if key in d:
            d[key][:] = [v for v in d[key] if v is not variable]
