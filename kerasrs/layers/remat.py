"""Rematerialization of layer calls: `RematScope` and how a layer applies it (Keras's
``keras.RematScope``, ``keras.remat`` and ``Layer.rematerialized_call``).

A layer created inside ``with RematScope(mode=...)`` keeps that mode (``layer._remat_mode``);
each of its calls under a `GradientTape` then runs through `remat` (gradient checkpointing,
`kerasrs.autodiff.remat`) when the mode says so:

* ``"full"``: every call of the layer;
* ``"activations"``: only the layer's ``activation`` (layers that have one, e.g. ``Dense``);
* ``"larger_than"``: calls whose outputs hold more than ``output_size_threshold`` values;
* ``"list_of_layers"``: layers whose name is in ``layer_names``;
* None: none (a nested scope can switch rematerialization off).

Layers call `remat` through this module's attribute, so replacing ``kerasrs.layers.remat.remat``
(e.g. with a mock) reaches every layer.
"""

import collections
import contextvars
import functools
import math
import numbers

from kerasrs.autodiff import _flatten
from kerasrs.autodiff import remat  # noqa: F401  (looked up here at each call: see above)

MODES = ("full", "activations", "larger_than", "list_of_layers", None)

_scopes = contextvars.ContextVar("kerasrs_remat_scopes", default=())
_sizing = contextvars.ContextVar("kerasrs_remat_sizing", default=False)  # in the size probe

RematMode = collections.namedtuple("RematMode", ["mode", "output_size_threshold",
                                                 "layer_names"])


class RematScope:
    """Context manager: layers created inside it rematerialize their calls (see the module's
    docstring for the modes). Scopes nest; the innermost one applies.

    Args:
        mode: "full", "activations", "larger_than", "list_of_layers" or None.
        output_size_threshold: for "larger_than": the number of output values above which a
            call is rematerialized. Defaults to 1024.
        layer_names: for "list_of_layers": the names of the layers to rematerialize (a
            list of strings; one string is one name).

    Raises:
        ValueError: for another mode, or an ``output_size_threshold`` that is not an int >= 0.
        TypeError: for ``layer_names`` that are not strings.

    Example:
        >>> with kerasrs.RematScope(mode="list_of_layers", layer_names=["big"]):
        ...     big = kerasrs.layers.Dense(4096, activation="relu", name="big")
        ...     small = kerasrs.layers.Dense(10, name="small")   # called as usual
    """

    def __init__(self, mode="full", output_size_threshold=1024, layer_names=None):
        if mode not in MODES:
            raise ValueError(f"RematScope: Invalid mode '{mode}'. Supported modes are: 'full', "
                             "'activations', 'larger_than', 'list_of_layers', or None. "
                             f"Received: mode={mode!r}")
        if isinstance(output_size_threshold, bool) or \
                not isinstance(output_size_threshold, numbers.Integral) or output_size_threshold < 0:
            raise ValueError("RematScope: `output_size_threshold` must be an int >= 0 (a number "
                             f"of output values). Received: {output_size_threshold!r}")
        if isinstance(layer_names, str):  # list("dense") would be five one-letter names
            layer_names = [layer_names]
        layer_names = list(layer_names or [])
        if not all(isinstance(n, str) for n in layer_names):
            raise TypeError("RematScope: `layer_names` must be layer names (strings). "
                            f"Received: {layer_names!r}")
        self.mode = mode
        self.output_size_threshold = int(output_size_threshold)
        self.layer_names = layer_names
        self._tokens = []

    def __enter__(self):
        self._tokens.append(_scopes.set(_scopes.get() + (self,)))
        return self

    def __exit__(self, *exc):
        _scopes.reset(self._tokens.pop())
        return False


def get_current_remat_mode():
    """The innermost `RematScope`'s settings as a `RematMode`, or None outside every scope."""
    scopes = _scopes.get()
    if not scopes:
        return None
    scope = scopes[-1]
    return RematMode(scope.mode, scope.output_size_threshold, scope.layer_names)


def rematerialized_call(layer, layer_call, args, kwargs):
    """``layer_call`` (the layer's ``call`` or ``quantized_call``) as the layer's remat mode
    says to run it for these arguments: wrapped by `remat`, with the activation wrapped, or
    as it is."""
    mode = layer._remat_mode
    if not mode or mode.mode is None:
        return layer_call
    if mode.mode == "full" or mode.mode == "list_of_layers" and layer.name in mode.layer_names:
        return remat(layer_call)
    if mode.mode == "activations" and getattr(layer, "activation", None) is not None:
        return _with_remat_activation(layer, layer_call)
    if mode.mode == "larger_than" and not _sizing.get():
        token = _sizing.set(True)  # the shape probe calls the layer: plainly, not sized again
        try:
            specs = layer.compute_output_spec(*args, **kwargs)
        finally:
            _sizing.reset(token)
        size = sum(math.prod(d or 1 for d in s.shape) for s in _flatten(specs)
                   if hasattr(s, "shape"))
        if size and size > mode.output_size_threshold:
            return remat(layer_call)
    return layer_call


def _with_remat_activation(layer, layer_call):
    @functools.wraps(layer_call)
    def call(*args, **kwargs):
        activation = layer.activation
        layer.activation = remat(activation)
        try:
            return layer_call(*args, **kwargs)
        finally:
            layer.activation = activation

    return call
