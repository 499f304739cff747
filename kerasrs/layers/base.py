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

The class is written in parts: this module has construction, attribute tracking, `add_weight`,
losses, ``__call__`` and the configuration; its mixins have the steps of a call and
``stateless_call`` (`layer_calls`), the dtypes (`layer_dtypes`), the weight views
(`layer_weights`), Keras's quantization and saving hooks (`layer_quantization`,
`layer_saving`); call-context arguments, rematerialization and the state tracker are in
`call_context`, `remat` and `tracking`.

Masks travel on tensors as ``tensor._keras_mask`` (Keras's name). A layer with
``supports_masking = True`` passes its input mask on; a layer that makes or changes a mask
overrides ``compute_mask(inputs, mask)``; other layers drop it.
"""

import functools
import inspect

import numpy as np

from kerasrs import autodiff, constraints, context, dtype_policies, initializers
from kerasrs import backend as backend_module
from kerasrs import random
from kerasrs.layers import call_context, naming, node, tracking
from kerasrs.layers import remat as remat_module
from kerasrs.layers.input_spec import InputSpec  # noqa: F401  (re-exported)
from kerasrs.layers.layer_calls import LayerCalls
from kerasrs.layers.layer_config import (dtype_policy_arg, get_regularizer, record_arguments,
                                         serialize_regularizer, shape_from_config,
                                         shape_to_config)
from kerasrs.layers.layer_dtypes import LayerDTypes
from kerasrs.layers.layer_quantization import LayerQuantization
from kerasrs.layers.layer_saving import LayerSaving
from kerasrs.layers.layer_weights import LayerWeights
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


class Layer(LayerCalls, LayerDTypes, LayerWeights, LayerQuantization, LayerSaving):
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
    _layers_explicit = False  # True: `_layers` is a list the class keeps (Sequential)
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
        elif key[0] != "_" and isinstance(value, tracking.SETTING_TYPES):
            tracking.settings_version[0] += 1  # a traced step may hold the old value
        object.__setattr__(self, key, value)

    def _track_variable(self, var):
        """A `Variable` assigned as an attribute (not made by `add_weight`, not another layer's)
        joins this layer's weights, as in Keras, also when assigned before ``__init__`` ran."""
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
        """The `Metric`s held in attributes of this layer, then its sublayers', each once."""
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

    @property
    def _layers(self):
        """Direct sublayers (Keras's attribute): `_sublayers`; for a model that keeps its
        layers in a list of its own (``_layers_explicit``: Sequential, Functional) that list."""
        return self.__dict__["_layers"] if self._layers_explicit else self._sublayers()

    @_layers.setter
    def _layers(self, value):
        self.__dict__["_layers"] = value

    def _sublayers(self):
        """Direct sublayers: explicitly tracked ones, then those held in attributes, in order."""
        found, seen = [], set()
        values = list(self.__dict__.get("_layers", ()))
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

    @property
    def path(self):
        """The layer's name scope path (``sequential/dense``) once built, else None."""
        return self.__dict__.get("_path")

    # -- weights --------------------------------------------------------------------------------
    def add_weight(self, *args, name=None, shape=None, initializer=None, dtype=None,
                   trainable=True, regularizer=None, constraint=None, **kwargs):
        """Create a weight `kerasrs.Variable` owned by this layer (call it from ``build``).

        Up to three arguments may be positional, as in Keras 3: ``add_weight(shape,
        initializer, dtype)``; ``name`` and the rest are keywords.

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

        Raises:
            ValueError: for a string as the first positional argument (Keras 2's
                ``add_weight(name, shape)``: Keras 3 takes the name as a keyword), or an
                argument given both positionally and as a keyword.
            TypeError: for more than three positional arguments.
        """
        if len(args) > 3:
            raise TypeError(f"{self.name}: add_weight() takes at most 3 positional arguments "
                            f"(shape, initializer, dtype) but {len(args)} were given.")
        if args and isinstance(args[0], str):
            raise ValueError(f"{self.name}: add_weight(): `name` must be passed as a keyword "
                             f"argument. Received: add_weight({args[0]!r}, ...). Use: "
                             f"add_weight(shape=..., name={args[0]!r}).")
        given = {"shape": shape, "initializer": initializer, "dtype": dtype}
        for key, value in zip(("shape", "initializer", "dtype"), args):
            if given[key] is not None:
                raise ValueError(f"{self.name}: add_weight(): `{key}` was passed both "
                                 "positionally and as a keyword argument.")
            given[key] = value
        shape, initializer, dtype = given["shape"], given["initializer"], given["dtype"]
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

    def _activity_loss(self, output):
        """The activity regularizer's value on ``output``, divided by the batch size (Keras's
        rule: the penalty's strength does not depend on the batch size; 0 for an empty batch)."""
        loss = self.activity_regularizer(output)
        if output.ndim == 0:
            return loss
        return loss / output.shape[0] if output.shape[0] else loss * 0

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


def _mask_of(inputs):
    if isinstance(inputs, (list, tuple)):
        masks = [getattr(x, "_keras_mask", None) for x in inputs]
        return None if all(m is None for m in masks) else masks
    return getattr(inputs, "_keras_mask", None)


Layer.quantize = _wrap_quantize(Layer.quantize)
_BASE_GET_CONFIGS = {Layer.get_config}  # Model.get_config joins (kerasrs.models.model)


