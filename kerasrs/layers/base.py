"""`Layer`: the base class of every layer and model, and `InputSpec`.

How a layer runs (read this once; subclasses only write ``__init__``, ``build`` and ``call``):

1. ``__init__`` stores the configuration. It must not create weights.
2. On the first ``layer(inputs)`` the layer *builds*: ``build(input_shape)`` receives the shape of
   the first argument (a tuple, or a list/dict of tuples for several inputs) and creates the
   weights with `Layer.add_weight`. A ``build`` whose parameters are named ``<arg>_shape``
   (``build(query_shape, value_shape)``) gets the shape of each call argument of that name.
   Building happens inside the layer's name scope, so a weight's ``path`` is
   ``dense/kernel`` standalone or ``sequential/dense/kernel`` inside a Sequential model.
3. ``call(inputs, ...)`` computes the output by composing `kerasrs.ops` (never backward code).
   It declares only the arguments it uses: ``training`` and ``mask`` are passed only when
   ``call``'s signature has them. ``training=None`` inherits the value of the enclosing layer
   call, so sublayers of a model follow the model's mode.
4. Float inputs are cast to the layer's compute dtype (``floatx()`` unless ``dtype=`` or a global
   dtype policy says otherwise); NumPy arrays and lists become Tensors. Under a mixed policy
   (``mixed_float16``) the variables stay float32 and every op of the call reads them cast to
   the compute dtype (`kerasrs.context.autocast`), so their gradients are float32.
5. Calling a layer on symbolic tensors (from `kerasrs.layers.Input`) does not compute anything:
   it records a `Node` and returns symbolic outputs, see `kerasrs.layers.node`.

Masks travel on tensors as ``tensor._keras_mask`` (Keras's name). A layer with
``supports_masking = True`` passes its input mask on; a layer that makes or changes a mask
overrides ``compute_mask(inputs, mask)``; other layers drop it.
"""

import functools
import inspect

import numpy as np

from kerasrs import autodiff, constraints, context, dtype_policies, initializers
from kerasrs import backend as backend_module
from kerasrs import ops, random
from kerasrs.layers import call_context, naming, node, tracking
from kerasrs.layers import remat as remat_module
from kerasrs.layers.input_spec import InputSpec  # noqa: F401  (re-exported)
from kerasrs.layers.layer_config import (dtype_policy_arg, get_regularizer, record_arguments,
                                         serialize_regularizer, shape_from_config,
                                         shape_to_config)
from kerasrs.layers.node import _shape_of
from kerasrs.metrics.base import Metric
from kerasrs.quantizers import config as quantization_config

_LAYER_CLASSES = {}  # class name -> class, filled by Layer.__init_subclass__ (for from_config)


# per thread and asyncio task: predict in one thread cannot flip training in another
_call_var, _autocast_var, _OUTSIDE = context.layer_call, context.autocast, context.OUTSIDE
_outer_calls = [0]  # counts outermost layer calls: losses added during one carry its number
_IGNORED_KWARGS = {"quantization_config", "lora_alpha", "input_length"}


def _wrap_build(build):
    """Make a subclass's ``build`` open the name scope and mark the layer built (as Keras does)."""

    @functools.wraps(build)
    def wrapped(self, *args, **kwargs):
        if self.__dict__.get("_in_build"):  # super().build(...) from a subclass's build
            return build(self, *args, **kwargs)
        self.__dict__["_in_build"] = True
        try:
            with naming.name_scope(self.name):
                self.__dict__["_path"] = naming.variable_path("")[:-1]
                result = build(self, *args, **kwargs)
        finally:
            self.__dict__["_in_build"] = False
        self.built = True
        if args or not kwargs:  # build() alone is recorded too, so a reload builds it again
            self._build_shapes = {"input_shape": shape_to_config(args[0]) if args else None} \
                if len(args) <= 1 and not kwargs else None
        return result

    wrapped._kerasrs_build = True
    return wrapped


def _wrap_quantize(quantize):
    """Make ``quantize`` resolve its config and check the layer first (as Keras's wrapper):
    ``quantize(mode)`` gets the mode's default config, ``quantize(config=...)`` its mode."""

    @functools.wraps(quantize)
    def wrapped(self, mode=None, type_check=True, config=None, **kwargs):
        config = quantization_config.validate_and_resolve_config(mode, config)
        self._check_quantize_args(config.mode, self.compute_dtype)
        return quantize(self, mode=config.mode, type_check=type_check, config=config, **kwargs)

    wrapped._kerasrs_quantize = True
    return wrapped


class Layer:
    """Base class of layers: weights, deferred build, the call protocol and configuration.

    Args:
        name: str, unique within a model; defaults to the snake_case class name made unique
            (``dense``, ``dense_1``, ...).
        trainable: bool; False freezes every weight of the layer and its sublayers.
        dtype: a dtype name ("float32", "float64", ...) for the weights and the computation, a
            policy name ("mixed_float16", "mixed_bfloat16"), a `DTypePolicy` or its Keras
            config dict. Defaults to the global policy (`kerasrs.config.set_dtype_policy`) at
            creation, else ``floatx()``.
        activity_regularizer: regularizer applied to the output; its value joins `losses`.
        autocast: bool (default True): cast float inputs to the compute dtype and, under a
            mixed policy, read the variables in it; False leaves both as they are.
        input_shape / input_dim / batch_input_shape / batch_size: Keras's way to give the first
            layer of a `Sequential` model its input; the model turns it into an `InputLayer`.

    Attributes:
        built: whether ``build`` has run. supports_masking: whether masks pass through.
        input_spec: an `InputSpec` (or list of them) checked on every call, or None.
    """

    supports_masking = False
    _context_args = ()  # call-context args besides `training` (kerasrs.layers.call_context)
    _remat_mode = None  # a RematMode when created inside a RematScope (kerasrs.layers.remat)
    _allow_non_tensor_positional_args = False  # True: `call` takes flags positionally too
    _untracked_attrs = frozenset()  # attribute names never searched for sublayers

    def __new__(cls, *args, **kwargs):
        obj = object.__new__(cls)
        obj._auto_config = record_arguments(cls, args, kwargs)
        return obj

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not getattr(cls, "_op_layer", False):  # op layers (op_layer.py) share Keras op names
            _LAYER_CLASSES[cls.__name__] = cls
        if "build" in cls.__dict__ and not getattr(cls.__dict__["build"], "_kerasrs_build", 0):
            cls.build = _wrap_build(cls.__dict__["build"])
        if not getattr(cls.quantize, "_kerasrs_quantize", False):  # also from a mixin
            cls.quantize = _wrap_quantize(cls.quantize)

    def __init__(self, name=None, trainable=True, dtype=None, activity_regularizer=None,
                 autocast=True, **kwargs):
        shape = kwargs.pop("input_shape", None)
        input_dim = kwargs.pop("input_dim", None)
        batch_shape = kwargs.pop("batch_input_shape", None)
        batch_size = kwargs.pop("batch_size", None)
        unknown = sorted(k for k in kwargs if k not in _IGNORED_KWARGS)
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) {unknown}. "
                            f"Received: {', '.join(f'{k}={kwargs[k]!r}' for k in unknown)}")
        if input_dim is not None and shape is None:
            shape = (input_dim,)
        if batch_shape is None and shape is not None:
            batch_shape = (batch_size,) + tuple(shape)
        d = self.__dict__
        d["_layers"] = []  # explicitly tracked sublayers (models); attributes are found too
        early = d.pop("_early_variables", [])  # Variables assigned before this __init__
        d["_trainable_variables"] = [v for v in early if v.trainable]
        d["_non_trainable_variables"] = [v for v in early if not v.trainable]
        d["_regularized"], d["_losses"], d["_inbound_nodes"] = [], [], []
        d["_losses_call"] = d["_last_call"] = 0  # outermost-call numbers (see `losses`)
        self._batch_input_shape = None if batch_shape is None else tuple(batch_shape)
        self.name = name or naming.unique_name(naming.to_snake_case(type(self).__name__))
        if not isinstance(self.name, str) or "/" in self.name:
            raise ValueError(f"{type(self).__name__}: `name` must be a string without '/'. "
                             f"Received: name={self.name!r}")
        self._dtype = dtype_policy_arg(dtype, f"{type(self).__name__} {self.name!r}")
        if not isinstance(trainable, (bool, np.bool_)):
            raise ValueError(f"{self.name}: Expected `trainable` to be a boolean. Received: "
                             f"trainable={trainable!r} (of type {type(trainable).__name__})")
        self._trainable = bool(trainable)
        self.autocast = bool(autocast)
        self.activity_regularizer = get_regularizer(activity_regularizer)
        self.built = False
        self.input_spec = None
        self._build_shapes = None
        self._remat_mode = remat_module.get_current_remat_mode()  # the RematScope at creation
        sig = inspect.signature(self.call).parameters
        self._call_has_training = "training" in sig
        self._call_has_mask = "mask" in sig
        # ``call(x1, x2, x1_mask=None, x2_mask=None)``: each argument's mask by name (Keras)
        self._call_arg_masks = tuple(n[:-5] for n in sig if n.endswith("_mask") and n[:-5] in sig)
        self._call_first_arg = next((n for n, p in sig.items() if p.kind in (
            p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)), "inputs")

    # -- attribute tracking: sublayers assigned as attributes are found by `_sublayers` --------
    def __setattr__(self, key, value):
        if isinstance(value, autodiff.Variable) and not getattr(value, "_layer_owned", False):
            self._track_variable(value)
        object.__setattr__(self, key, value)

    def _track_variable(self, var):
        """A `Variable` assigned as an attribute (not made by `add_weight`, not another
        layer's) joins this layer's weights, as in Keras, also when assigned before
        ``Layer.__init__`` ran."""
        var._layer_owned = True
        d = self.__dict__
        if "_trainable_variables" not in d:
            d.setdefault("_early_variables", []).append(var)
        elif var.trainable:
            d["_trainable_variables"].append(var)
        else:
            d["_non_trainable_variables"].append(var)

    @property
    def metrics(self):
        """The `kerasrs.metrics.Metric`s held in attributes of this layer, then its sublayers'
        (Keras's order), each once."""
        out = []
        for value in self.__dict__.values():
            values = value if isinstance(value, (list, tuple)) else (value,)
            out.extend(v for v in values if isinstance(v, Metric))
        for layer in self._sublayers():
            out.extend(layer.metrics)
        seen = set()
        return [m for m in out if not (id(m) in seen or seen.add(id(m)))]

    @property
    def metrics_variables(self):
        """The state variables of `metrics`, in their order."""
        return [v for m in self.metrics for v in m.variables]

    def _sublayers(self):
        """Direct sublayers: explicitly tracked ones, then those held in attributes, in order."""
        found, seen = [], set()
        values = list(self._layers)
        for key, value in self.__dict__.items():
            if key in self._untracked_attrs or key == "_layers":
                continue
            if isinstance(value, Layer):
                values.append(value)
            elif isinstance(value, (list, tuple)):
                values.extend(v for v in value if isinstance(v, Layer))
            elif isinstance(value, dict):
                values.extend(v for v in value.values() if isinstance(v, Layer))
        for layer in values:
            if id(layer) not in seen and layer is not self:
                seen.add(id(layer))
                found.append(layer)
        return found

    def _flatten_layers(self, include_self=True, recursive=True):
        """This layer (with ``include_self``) and its sublayers, each once: with ``recursive``
        all of them depth first, else only the direct ones (Keras's signature)."""
        out, seen, stack = [self] if include_self else [], {id(self)}, self._sublayers()
        while stack:
            layer = stack.pop(0)
            if id(layer) in seen:
                continue
            seen.add(id(layer))
            out.append(layer)
            if recursive:
                stack[:0] = layer._sublayers()
        return out

    @property
    def _seed_generators(self):
        """The `kerasrs.random.SeedGenerator`s this layer holds in attributes (its own, not its
        sublayers'), in assignment order, each once."""
        found = []
        for key, value in self.__dict__.items():
            values = value if isinstance(value, (list, tuple)) else (value,)
            for v in values:
                if isinstance(v, random.SeedGenerator) and all(v is not f for f in found):
                    found.append(v)
        return found

    def _build_at_init(self):
        """Mark a layer without state built at construction (Keras's rule): only when its class
        keeps `Layer.build`, so a subclass that defines ``build`` still builds on first call."""
        if type(self).build is Layer.build:
            self.built = True

    # -- dtypes ---------------------------------------------------------------------------------
    @property
    def dtype_policy(self):
        """The layer's `kerasrs.dtype_policies.DTypePolicy` (or `DTypePolicyMap`): from
        ``dtype=``, else the global policy when the layer was created, else ``floatx()``.
        Setting a quantized policy (``"int8_from_float32"``) on a built layer quantizes it."""
        return self._stored_policy() or dtype_policies.DTypePolicy(backend_module.floatx())

    def _stored_policy(self):
        """The explicit policy or None; a dtype name stored in ``_dtype`` is turned into one."""
        policy = self._dtype
        if policy is not None and not isinstance(policy, dtype_policies.DTypePolicy):
            policy = self.__dict__["_dtype"] = dtype_policies.get(policy)
        return policy

    def _policy(self):
        """The policy that sets this layer's dtypes, or None (floatx): the stored one, or its
        entry for the layer's `path` when it is a `DTypePolicyMap`."""
        policy = self._dtype
        if policy is None:
            return None
        if policy.__class__ is dtype_policies.DTypePolicyMap:
            return policy[self.path] if self.path else policy.default_policy
        return policy if isinstance(policy, dtype_policies.DTypePolicy) else \
            self._stored_policy()

    @dtype_policy.setter
    def dtype_policy(self, value):
        policy = dtype_policy_arg(value, f"{type(self).__name__} {self.name!r}")
        stored = self._stored_policy()
        if isinstance(stored, dtype_policies.DTypePolicyMap) and self.path:
            if self.path in stored:
                del stored[self.path]
            stored[self.path] = policy
        else:
            self._dtype = policy
        mode = getattr(policy, "quantization_mode", None)
        if mode is not None and self.built and not getattr(self, "_is_quantized", False):
            if mode == "gptq":
                raise ValueError(f"{self.name}: Implicitly enabling GPTQ quantization by "
                                 f"setting `dtype_policy` to '{value}' is not supported. GPTQ "
                                 "requires a calibration dataset and a `GPTQConfig` object. "
                                 "Please use the `.quantize('gptq', config=...)` method on the "
                                 "layer or model instead.")
            self.quantize(mode)

    _dtype_policy = dtype_policy  # Keras's attribute name

    @property
    def dtype(self):
        """Name of the weights' dtype (the policy's ``variable_dtype``): "float32" unless set."""
        policy = self._policy()
        return policy.variable_dtype if policy else backend_module.floatx()

    variable_dtype = dtype

    @property
    def compute_dtype(self):
        """Name of the dtype inputs are cast to and computed in ("float16" under
        ``mixed_float16``)."""
        policy = self._policy()
        return policy.compute_dtype if policy else backend_module.floatx()

    @property
    def quantization_mode(self):
        """The quantization mode ("int8", "int4", "float8", "gptq", "awq") or None."""
        policy = self._policy()
        return None if policy is None else policy.quantization_mode

    @property
    def path(self):
        """The layer's name scope path (``sequential/dense``) once built, else None."""
        return self.__dict__.get("_path")

    # -- weights --------------------------------------------------------------------------------
    def add_weight(self, *args, name=None, shape=None, initializer=None, dtype=None,
                   trainable=True, regularizer=None, constraint=None, **kwargs):
        """Create a weight `kerasrs.Variable` owned by this layer (call it from ``build``).

        Positional arguments follow Keras, ``add_weight(shape, initializer, dtype, trainable)``,
        or, when the first one is a string, ``add_weight(name, shape, initializer, dtype)``.

        Args:
            name: short name (``kernel``); the variable's ``path`` adds the name scopes.
            shape: tuple of ints. Defaults to ``()``.
            initializer: name, `Initializer`, callable ``(shape, dtype)`` or None
                ("glorot_uniform" for float weights, "zeros" otherwise).
            dtype: defaults to the layer's dtype.
            trainable: whether optimizers update it.
            regularizer: name, object or callable ``weight -> scalar``; its value joins `losses`.
            constraint: callable ``weight -> weight`` applied after each optimizer update.

        Returns:
            The new `kerasrs.Variable`.
        """
        given = {"name": name, "shape": shape, "initializer": initializer, "dtype": dtype,
                 "trainable": trainable}
        order = ("name", "shape", "initializer", "dtype", "trainable") if args and isinstance(
            args[0], str) else ("shape", "initializer", "dtype", "trainable")
        if len(args) > len(order):
            raise TypeError(f"{self.name}.add_weight: too many positional arguments. "
                            f"Received: {len(args)}")
        for key, value in zip(order, args):
            if given[key] is not None and key != "trainable":
                raise TypeError(f"{self.name}.add_weight: got two values for `{key}`.")
            given[key] = value
        name, shape, initializer, dtype, trainable = (given[k] for k in (
            "name", "shape", "initializer", "dtype", "trainable"))
        kwargs.pop("aggregation", None), kwargs.pop("autocast", None)
        kwargs.pop("overwrite_with_gradient", None)
        if kwargs:
            raise TypeError(f"{self.name}.add_weight: unexpected argument(s) {sorted(kwargs)}.")
        shape = () if shape is None else (shape,) if isinstance(shape, int) else tuple(shape)
        dtype = backend_module.standardize_dtype(dtype or self.dtype)
        if initializer is None:
            initializer = "glorot_uniform" if backend_module.is_float_dtype(dtype) else "zeros"
        init = initializers.get(initializer)
        name = name or "variable"
        in_own_scope = naming.current_scope() == self.name
        if in_own_scope and self.built and not self.__dict__.get("_in_build") and \
                self._tracker.locked:
            raise ValueError(f"{self.name}: You cannot add new elements of state (variables or "
                             "sub-layers) to a layer that is already built. All state must be "
                             "created in the `__init__()` method or in the `build()` method. "
                             f"Received: add_weight(name={name!r}) during the layer's call")
        var = autodiff.Variable(init, shape=shape, dtype=dtype, trainable=trainable, name=name)
        var._layer_owned = True
        if in_own_scope:
            var.path = naming.variable_path(name)
        else:  # outside build (enable_lora, quantize): under the path the layer was built at
            var.path = f"{self.path or naming.variable_path(self.name)}/{name}"
        var.regularizer = get_regularizer(regularizer)
        var.constraint = constraints.get(constraint)
        if trainable:
            var.trainable = self._trainable
            self._trainable_variables.append(var)
        else:
            self._non_trainable_variables.append(var)
        if var.regularizer is not None:
            self._regularized.append(var)
        return var

    @property
    def _tracker(self):
        """The lock on adding weights during the call (`kerasrs.layers.tracking`)."""
        return tracking.tracker(self)

    def _untrack_variable(self, variable):
        """Remove ``variable`` from this layer's weights (Keras's method; returns None)."""
        tracking.untrack(self, variable)

    def _own_weights(self):
        return self._trainable_variables + self._non_trainable_variables

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

    # -- losses ---------------------------------------------------------------------------------
    def add_loss(self, loss):
        """Add a scalar Tensor to `losses`. Values added during one outermost call replace those
        of earlier calls (Keras clears them at the start of each outermost call). A call on
        symbolic tensors adds none (it computes no values)."""
        if context.symbolic_probe.get() or not autodiff.remat_loss_added(loss):
            return
        if self._losses_call != _outer_calls[0]:
            self._losses = []
            self._losses_call = _outer_calls[0]
        self._losses.append(loss)

    @property
    def losses(self):
        """Scalar Tensors to add to the training loss: values from `add_loss` and activity
        regularizers during the last outermost call, and the weight regularizers evaluated now."""
        return self._collect_losses(self._flatten_layers())

    def _collect_losses(self, layers):
        """`losses` over a precomputed `_flatten_layers()` list (the fit loop caches it)."""
        out = []
        for layer in layers:
            if layer._losses and layer._losses_call >= self._last_call:
                out.extend(layer._losses)
            for w in layer._regularized:
                if w.trainable:
                    out.append(w.regularizer(w))
        return out

    # -- build and call -------------------------------------------------------------------------
    def build(self, input_shape=None):
        """Create the weights for inputs of ``input_shape`` (batch axis first, may be None)."""
        self.built = True

    def call(self, inputs, *args, **kwargs):
        """The forward computation on Tensors; subclasses override it."""
        raise self._not_implemented_error(self.call)

    def compute_output_shape(self, input_shape):
        """Output shape for ``input_shape``; by default found by running ``call`` on zeros.

        Raises:
            NotImplementedError: for a layer without ``call`` (nothing to run).
        """
        if type(self).call is Layer.call:
            raise self._not_implemented_error(
                self.compute_output_shape,
                "Should implement `def compute_output_shape(self, input_shape)`.")
        return node.output_shape_by_probe(self, input_shape)

    def compute_output_spec(self, *args, **kwargs):
        """The outputs of a call on ``args`` as `SymbolicTensor`s (shape and dtype, no values);
        the arguments may be symbolic tensors or Tensors. Builds the layer if needed."""
        if not args and kwargs:
            args = (kwargs.pop(self._call_first_arg),)
        kwargs.pop("training", None)
        if not self.built:
            self._build_from_call(args, kwargs)
        specs = node.output_spec(self, args, kwargs)
        return node.map_structure(lambda s: node.SymbolicTensor(s.shape, s.dtype), specs)

    def compute_mask(self, inputs, mask=None):
        """The mask of the output: by default the input mask if `supports_masking`, else None."""
        return mask if self.supports_masking else None

    def _overrides(self, method):
        """Whether this layer's class defines its own ``method`` (e.g. a shape rule,
        ``compute_output_shape``) instead of `Layer`'s."""
        return getattr(type(self), method) is not getattr(Layer, method)

    @property
    def _call_context_args(self):
        """The call arguments that flow from this layer's call to the layers it calls:
        ``training`` and those registered (`kerasrs.layers.call_context`)."""
        return {"training", *self._context_args}

    def _register_call_context_args(self, *names):
        """Make the call arguments ``names`` flow from this layer's call to the layers it calls
        (Keras's method; see `kerasrs.layers.call_context`). Only before the first call."""
        call_context.register(self, names)

    def __call__(self, *args, **kwargs):
        self.__dict__["_called"] = True
        if not args and kwargs:  # keyword-only inputs: layer(query=q, value=v)
            name = self._call_first_arg if self._call_first_arg in kwargs else "inputs"
            args = (kwargs.pop(name),) if name in kwargs else ()
        if len(args) > 1 and not self._allow_non_tensor_positional_args:
            self._check_positional_args(args)
        if node.any_symbolic(args, kwargs):
            return node.symbolic_call(self, args, kwargs)
        if not args:
            raise TypeError(f"{self.name}: call the layer on an input. Received: no arguments")
        training = kwargs.pop("training", None)
        outer, scopes = _call_var.get()  # the enclosing layer call's `training`, or _OUTSIDE
        if training is None and outer is not _OUTSIDE:
            training = outer
        context_values = call_context.resolve(self, kwargs) if self._context_args else None
        mask = kwargs.pop("mask", None)
        inputs = self._convert_inputs(args[0])
        args = (inputs,) + args[1:]
        if mask is None:
            mask = _mask_of(inputs)
        if not self.built:
            self._build_from_call(args, kwargs)
        if self.input_spec is not None:
            self._check_input_spec(inputs)
        if outer is _OUTSIDE:
            _outer_calls[0] += 1
            self._last_call = _outer_calls[0]
        if training is not None and self._call_has_training:
            kwargs["training"] = training
        if mask is not None and self._call_has_mask:
            kwargs["mask"] = mask
        if self._call_arg_masks:
            self._add_argument_masks(args, kwargs)
        policy = self._policy()  # mixed policies read float32 variables in compute_dtype
        autocast = policy.autocast_dtype if policy is not None else None
        if not self.autocast and _autocast_var.get() is not None:
            autocast = None  # Keras: autocast=False leaves an enclosing layer's cast off here
        call_token = _call_var.set((training, scopes + (self.name,)))
        autocast_token = None if autocast is _autocast_var.get() else _autocast_var.set(autocast)
        context_token = None if context_values is None else call_context.enter(context_values)
        try:
            call = self.call if policy is None or policy.quantization_mode is None else \
                self.quantized_call
            if self._remat_mode is not None:
                call = self.rematerialized_call(call, *args, **kwargs)
            outputs = call(*args, **kwargs)
        finally:
            if context_token is not None:
                call_context.leave(context_token)
            if autocast_token is not None:
                _autocast_var.reset(autocast_token)
            _call_var.reset(call_token)
        if self.activity_regularizer is not None:
            for out in autodiff._flatten(outputs):
                if isinstance(out, autodiff.Tensor):
                    self.add_loss(self._activity_loss(out))
        if mask is not None or type(self).compute_mask is not Layer.compute_mask:
            self._set_output_mask(inputs, outputs, mask)
        return outputs

    def rematerialized_call(self, layer_call, *args, **kwargs):
        """``layer_call`` (``call`` or ``quantized_call``) wrapped for the `RematScope` the layer
        was created in (`kerasrs.layers.remat`); ``layer_call`` itself outside every scope."""
        return remat_module.rematerialized_call(self, layer_call, args, kwargs)

    def stateless_call(self, trainable_variables, non_trainable_variables, *args,
                       return_losses=False, **kwargs):
        """Call the layer with the given values of its state instead of the current ones, and
        leave the state as it was (Keras's functional call).

        Args:
            trainable_variables / non_trainable_variables: values (arrays or Tensors), one per
                entry of `trainable_variables` / `non_trainable_variables`, in that order.
            *args, **kwargs: the call's arguments. return_losses: also return `losses`.

        Returns:
            ``(outputs, new_non_trainable_values)`` (Tensors: the non-trainable state after the
            call, e.g. moving statistics and seed states), and the losses with
            ``return_losses``. The values are assigned for the call and put back after it, so
            no gradient flows to the given arrays (record a `GradientTape` on the variables).

        Raises:
            ValueError: if a list's length differs from the layer's.
        """
        own_t, own_nt = self.trainable_variables, self.non_trainable_variables
        for what, own, given in (("trainable_variables", own_t, trainable_variables),
                                 ("non_trainable_variables", own_nt, non_trainable_variables)):
            if len(given) != len(own):
                raise ValueError(f"{self.name}.stateless_call: the layer has {len(own)} "
                                 f"{what}. Received: {len(given)} values")
        state = own_t + own_nt
        saved = [np.array(v.numpy()) for v in state]
        try:
            for var, value in zip(state, list(trainable_variables) + list(non_trainable_variables)):
                if value is not var:
                    var.assign(backend_module.convert_to_numpy(value))
            outputs = self(*args, **kwargs)
            new_nt = [autodiff.convert_to_tensor(np.array(v.numpy())) for v in own_nt]
            losses = self.losses if return_losses else None
        finally:
            for var, value in zip(state, saved):
                var.assign(value)
        return (outputs, new_nt, losses) if return_losses else (outputs, new_nt)

    def _activity_loss(self, output):
        """The activity regularizer's value on ``output``, divided by the batch size (Keras's
        rule: the penalty's strength does not depend on the batch size; 0 for an empty batch)."""
        loss = self.activity_regularizer(output)
        if output.ndim == 0:
            return loss
        return loss / output.shape[0] if output.shape[0] else loss * 0

    def _check_positional_args(self, args):
        """Keras's rule: only tensors (or None) are passed positionally after the first input;
        flags and numbers go by keyword, so ``layer(x, True)`` cannot bind ``True`` to the wrong
        parameter unnoticed."""
        for arg in autodiff._flatten(list(args[1:])):
            if arg is not None and not isinstance(arg, (autodiff.Tensor, node.SymbolicTensor,
                                                        np.ndarray)):
                raise ValueError(f"{self.name}: Only input tensors may be passed as positional "
                                 "arguments. The following argument value should be passed as "
                                 f"a keyword argument: {arg!r} (of type {type(arg).__name__})")

    def _convert_inputs(self, inputs):
        """Tensors from arrays/lists; float tensors cast to the layer's compute dtype."""
        if type(inputs) is autodiff.Tensor and inputs.data.dtype == self.compute_dtype:
            return inputs  # the common case, decided without the checks below
        if isinstance(inputs, (list, tuple)) and not _is_data(inputs):
            return type(inputs)(self._convert_inputs(x) for x in inputs)
        if isinstance(inputs, dict):
            return {k: self._convert_inputs(v) for k, v in inputs.items()}
        if inputs is None:
            return None
        if not isinstance(inputs, autodiff.Tensor):
            mask = getattr(inputs, "_keras_mask", None)
            inputs = autodiff.convert_to_tensor(inputs)
            if mask is not None:
                inputs._keras_mask = mask
        if self.autocast and backend_module.is_float_dtype(inputs.dtype) and inputs.dtype != \
                backend_module.standardize_dtype(self.compute_dtype):
            mask = getattr(inputs, "_keras_mask", None)
            inputs = ops.cast(inputs, self.compute_dtype)
            if mask is not None:
                inputs._keras_mask = mask
        return inputs

    def _add_argument_masks(self, args, kwargs):
        """Fill ``<arg>_mask`` parameters of ``call`` not given with the masks the arguments
        carry (a tuple or list of masks for a tuple or list argument; nothing if none has one)."""
        bound = inspect.signature(self.call).bind_partial(*args, **kwargs).arguments
        for name in self._call_arg_masks:
            if f"{name}_mask" in kwargs or bound.get(name) is None:
                continue
            value = bound[name]
            mask = type(value)(getattr(v, "_keras_mask", None) for v in value) \
                if isinstance(value, (list, tuple)) else getattr(value, "_keras_mask", None)
            if mask is not None and any(m is not None for m in autodiff._flatten(mask)):
                kwargs[f"{name}_mask"] = mask

    def _build_from_call(self, args, kwargs):
        """Run ``build`` with the shapes of the call's arguments (see the module docstring)."""
        params = [p for p in inspect.signature(self.build).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if len(params) > 1:
            self._check_build_signature(params)
            bound = inspect.signature(self.call).bind_partial(*args, **kwargs).arguments
            shapes = {p.name: _shape_of(bound[p.name[:-6]]) for p in params
                      if p.name[:-6] in bound and bound[p.name[:-6]] is not None}
            self.build(**shapes)
            self._build_shapes = {"shapes_dict": {k: shape_to_config(v)
                                                  for k, v in shapes.items()}}
        else:
            self.build(_shape_of(args[0]))
        self.built = True

    def _check_build_signature(self, params):
        """A ``build`` with several parameters gets one shape per call argument: each parameter
        must be named ``<arg>_shape`` after an argument of ``call``."""
        call_args = inspect.signature(self.call).parameters
        for p in params:
            arg = p.name[:-6] if p.name.endswith("_shape") else None
            if arg is None or arg not in call_args:
                problem = (f"which does not end in `_shape`" if arg is None else
                           f"but `call()` does not have argument `{arg}`")
                raise ValueError(f"{self.name}: a `build()` method with more than one argument "
                                 "gets the shape of each `call()` argument, so every argument "
                                 "needs a `_shape` suffix and must match an argument of "
                                 f"`call()`, e.g. `build(self, foo_shape, bar_shape)`. Received "
                                 f"`build()` argument `{p.name}`, {problem}.")

    def _check_input_spec(self, inputs):
        specs = self.input_spec if isinstance(self.input_spec, (list, tuple)) else [self.input_spec]
        tensors = autodiff._flatten(inputs)
        for i, (spec, x) in enumerate(zip(specs, tensors)):
            if spec is not None and x is not None:
                spec.check(self.name, i, tuple(x.shape))

    def _set_output_mask(self, inputs, outputs, mask):
        out_mask = self.compute_mask(inputs, mask)
        outs = autodiff._flatten(outputs)
        masks = autodiff._flatten(out_mask) if isinstance(out_mask, (list, tuple)) else \
            [out_mask] * len(outs)
        for out, m in zip(outs, masks):
            if isinstance(out, autodiff.Tensor):
                out._keras_mask = m

    # -- symbolic graph helpers -------------------------------------------------------------------
    @property
    def input(self):
        """The symbolic input of the layer's only call on symbolic tensors."""
        return self._single_node("input").call_args[0]

    @property
    def output(self):
        """The symbolic output of the layer's only call on symbolic tensors."""
        outs = self._single_node("output").outputs
        return outs[0] if len(outs) == 1 else outs

    def _single_node(self, what):
        if not self._inbound_nodes:
            raise AttributeError(f"{self.name}: the layer has never been called on symbolic "
                                 f"tensors, so it has no {what}.")
        if len(self._inbound_nodes) > 1 and what == "input":
            raise AttributeError(f"{self.name}: the layer was called on {len(self._inbound_nodes)} "
                                 f"symbolic inputs; its {what} is ambiguous.")
        return self._inbound_nodes[0]

    # -- quantization (Keras's hooks; Dense, EinsumDense and Embedding implement them) -------
    def quantize(self, mode=None, type_check=True, config=None):
        """Quantize the layer's weights in place (``"int8"``, ``"int4"``, ``"float8"``,
        ``"gptq"``, ``"awq"``); see `kerasrs.layers.quantized`.

        Raises:
            ValueError: for an unknown mode, an unbuilt or already quantized layer, or int8
                with a float16 compute dtype.
            NotImplementedError: for a layer that cannot be quantized.
        """
        raise self._not_implemented_error(self.quantize)

    def quantized_build(self, input_shape, mode):
        raise self._not_implemented_error(self.quantized_build)

    def _check_quantize_args(self, mode, compute_dtype):
        if not self.built:
            raise ValueError(f"Cannot quantize a layer that isn't yet built. Layer "
                             f"'{self.name}' (of type '{type(self).__name__}') is not built yet.")
        if getattr(self, "_is_quantized", False):
            raise ValueError(f"Layer '{self.name}' is already quantized with dtype_policy="
                             f"'{self.dtype_policy.name}'. Received: mode={mode}")
        if mode not in dtype_policies.QUANTIZATION_MODES:
            raise ValueError(f"{self.name}: Invalid quantization mode. Expected one of "
                             f"{dtype_policies.QUANTIZATION_MODES}. Received: mode={mode}")
        if mode == "int8" and compute_dtype == "float16":
            raise ValueError(f"{self.name}: Quantization mode='{mode}' doesn't work well with "
                             "compute_dtype='float16'. Consider loading model/layer with "
                             "another dtype policy such as 'mixed_bfloat16' or 'mixed_float16' "
                             "before calling `quantize()`.")

    def quantized_call(self, *args, **kwargs):
        """The call of a quantized layer: ``_<mode>_call``."""
        mode = self.quantization_mode
        if mode not in dtype_policies.QUANTIZATION_MODES:
            raise self._quantization_mode_error(mode)
        return getattr(self, f"_{mode}_call")(*args, **kwargs)

    def _int8_call(self, *args, **kwargs):
        raise self._not_implemented_error(self._int8_call)

    def _int4_call(self, *args, **kwargs):
        raise self._not_implemented_error(self._int4_call)

    def _float8_call(self, *args, **kwargs):
        raise self._not_implemented_error(self._float8_call)

    def _gptq_call(self, *args, **kwargs):
        raise self._not_implemented_error(self._gptq_call)

    def _awq_call(self, *args, **kwargs):
        raise self._not_implemented_error(self._awq_call)

    def _not_implemented_error(self, attr, msg=None):
        name = attr.__name__ if callable(attr) else str(attr)
        kind = "method" if callable(attr) else "attribute"
        return NotImplementedError(f"Layer {type(self).__name__} does not have a `{name}` "
                                   f"{kind} implemented.{' ' + msg if msg else ''}")

    def _quantization_mode_error(self, mode):
        return NotImplementedError(f"{self.name}: Invalid quantization mode. Expected one of "
                                   f"{dtype_policies.QUANTIZATION_MODES}. Received: "
                                   f"quantization_mode={mode}")

    # -- saving (Keras's hooks: a layer may store its state its own way) -----------------------
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

    # -- configuration --------------------------------------------------------------------------
    def get_config(self):
        """The constructor arguments as a JSON-able dict (Keras's keys)."""
        config = {"name": self.name}
        if type(self).get_config in _BASE_GET_CONFIGS:  # a subclass without its own get_config
            config.update(getattr(self, "_auto_config", None) or {})
        config.update(trainable=self.trainable,  # these win over the recorded arguments (Keras)
                      dtype=dtype_policies.serialize(self.dtype_policy))
        if self.activity_regularizer is not None:
            config["activity_regularizer"] = serialize_regularizer(self.activity_regularizer)
        return config

    @classmethod
    def from_config(cls, config):
        """A new, unbuilt layer from ``get_config()``'s dict.

        Raises:
            TypeError: if the constructor refuses the config (Keras's type and phrase, with the
                constructor's own error chained).
        """
        if isinstance(config.get("dtype"), dict):  # Keras: the constructor sees a policy
            policy = dtype_policies.deserialize(config["dtype"])
            if policy.__class__ is not dtype_policies.DTypePolicyMap and \
                    policy.quantization_mode is None:
                policy = policy.name  # a plain policy as its name, as Keras passes it
            config = {**config, "dtype": policy}
        try:
            return cls(**config)
        except Exception as e:  # noqa: BLE001 - reported with the config, as Keras does
            raise TypeError(f"{cls.__name__}.from_config: Error when deserializing class "
                            f"'{cls.__name__}' using config={config}. Exception encountered: "
                            f"{e}") from e

    def get_build_config(self):
        """What ``build`` was called with, for rebuilding before loading weights."""
        return self._build_shapes

    def build_from_config(self, config):
        """Build from `get_build_config`'s dict (no-op for None)."""
        if not config:
            return
        if "input_shape" in config:
            self.build(shape_from_config(config["input_shape"]))
        elif "shapes_dict" in config:
            self.build(**{k: shape_from_config(v) for k, v in config["shapes_dict"].items()})

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


# -- helpers --------------------------------------------------------------------------------------


def _is_data(x):
    """A (nested) list of numbers, i.e. array data, rather than a list of several inputs."""
    if isinstance(x, (list, tuple)):
        return len(x) > 0 and all(_is_data(v) for v in x)
    return isinstance(x, (int, float, bool, np.generic))


def _stored_array(value, dtype):
    """A stored value (array, h5py dataset, Tensor) as a NumPy array of ``dtype``."""
    value = value.numpy() if hasattr(value, "numpy") else value
    return np.asarray(value[()] if hasattr(value, "id") else value).astype(dtype, copy=False)


def _mask_of(inputs):
    if isinstance(inputs, (list, tuple)):
        masks = [getattr(x, "_keras_mask", None) for x in inputs]
        return None if all(m is None for m in masks) else masks
    return getattr(inputs, "_keras_mask", None)


Layer.quantize = _wrap_quantize(Layer.quantize)
_BASE_GET_CONFIGS = {Layer.get_config}  # Model.get_config joins (kerasrs.models.model)


