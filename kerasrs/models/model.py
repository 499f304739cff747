"""`Model`: a `Layer` that can be trained (compile/fit/evaluate/predict) and summarized.

Three ways to make one, as in Keras:

* functional: ``Model(inputs, outputs)`` over symbolic tensors from `kerasrs.layers.Input`
  (this returns a `kerasrs.models.functional.Functional`);
* `kerasrs.models.Sequential` for a plain stack of layers;
* subclassing: define sublayers in ``__init__`` (they are tracked as attributes) and the
  forward pass in ``call(inputs, training=None)``.

A subclass can also be built like a functional model, ``MyModel(inputs, outputs)`` (to override
``train_step`` of a functional model, say): as Keras 3 does, `Functional` is then put into the
subclass's bases, so the model is a ``MyModel`` and a `Functional` at once.
"""

import inspect
import re
import warnings

import numpy as np

from kerasrs import autodiff, distribution, export as export_module, saving
from kerasrs.layers import base as base_layer
from kerasrs.layers.base import Layer
from kerasrs.layers.node import _shape_of
from kerasrs.models import functional_config
from kerasrs.models import summary as summary_module
from kerasrs.saving import weights_h5
from kerasrs.trainers import trainer


class Model(trainer.Trainer, Layer):
    """A trainable network of layers (see the module docstring for the three kinds).

    Args:
        inputs, outputs: for a functional model (see `Functional`).
        name: str; defaults to the snake_case class name (``my_model``), ``functional`` or
            ``sequential`` made unique.
        trainable: bool.

    Attributes:
        layers: the model's layers (for subclassed models, the sublayers assigned as attributes,
            in assignment order).
        optimizer, loss: set by `compile`. history: the `History` of the last ``fit``.
        stop_training: set to True (e.g. from a callback) to end ``fit`` after this epoch.
    """

    # `Functional` subclasses `Model`, so this module cannot import it: kerasrs.models.functional
    # sets it here when the class is defined (kerasrs.models imports both).
    _functional_class = None

    def __new__(cls, *args, **kwargs):
        if cls is Model and (args or "inputs" in kwargs or "outputs" in kwargs):
            return object.__new__(Model._functional_class)
        return Layer.__new__(cls, *args, **kwargs)

    def __init__(self, *args, **kwargs):
        if _functional_init_arguments(args, kwargs):
            _inject_functional_model_class(type(self))
            Model._functional_class.__init__(self, *args, **kwargs)
            return
        if args:
            raise TypeError(f"{type(self).__name__}: a subclassed Model takes keyword arguments "
                            "(name, trainable, dtype), or (inputs, outputs) to build a "
                            f"functional model. Received: {len(args)} positional argument(s)")
        Layer.__init__(self, **kwargs)
        trainer.Trainer.__init__(self)

    @property
    def layers(self):
        """The model's direct sublayers, in order."""
        return self._sublayers()

    def get_layer(self, name=None, index=None):
        """The layer called ``name``, or at position ``index`` of `layers` (for a functional
        model, the recorded ops are not layers: see ``operations``).

        Raises:
            ValueError: if neither or both are given, or no layer matches (listing the names).
        """
        if (name is None) == (index is None):
            raise ValueError(f"{self.name}.get_layer: give exactly one of `name` and `index` "
                             f"(Provide either a layer name or layer index). Received: "
                             f"name={name!r}, index={index!r}")
        layers = self.layers
        if index is not None:
            if not -len(layers) <= index < len(layers):
                raise ValueError(f"{self.name}.get_layer: index {index} is out of range: Was "
                                 f"asked to retrieve layer at index {index} but model only has "
                                 f"{len(layers)} layers. Received: index={index}")
            return layers[index]
        for layer in layers:
            if layer.name == name:
                return layer
        raise ValueError(f"{self.name}.get_layer: no layer named {name!r} (No such layer: "
                         f"{name}). Existing layers are: {[layer.name for layer in layers]}. "
                         f"Received: name={name!r}")

    def build(self, input_shape=None):
        """Build a subclassed model by running ``call`` once on zeros of ``input_shape``
        (None sizes become 1), without recording gradients."""
        if input_shape is None:
            raise ValueError(f"{self.name}.build: needs an input shape. Received: None")
        zeros = _zeros_like_shape(input_shape, self.compute_dtype)
        self.built = True  # the call below must not come back here; sublayers build in it
        with autodiff.no_grad():
            self(zeros, training=False)
        self._build_shapes = {"input_shape": summary_module.shape_to_list(input_shape)}

    build._kerasrs_build = True  # the call opens the name scope itself

    def _build_from_call(self, args, kwargs):
        """A first eager call of a subclassed model builds its sublayers as they are called,
        unless the subclass defines its own ``build``."""
        if type(self).build is Model.build:
            self.built = True  # the first call's shapes are kept for saving (as Keras)
            self._build_shapes = {"input_shape": summary_module.shape_to_list(
                _shape_of(args[0]))}
        else:
            Layer._build_from_call(self, args, kwargs)

    def summary(self, line_length=None, positions=None, print_fn=None, expand_nested=False,
                show_trainable=False, layer_range=None):
        """Print a Keras-style table of the layers: name (type), output shape, parameter count,
        and for functional models the layers each one is connected to; then the totals with
        their size in memory.

        Args:
            line_length: total width of the table (default 98 with "Connected to", else 78).
            print_fn: function called with the whole text (default: ``print``).
            expand_nested: also list the layers inside nested models.
            show_trainable: add a column saying whether each layer is trainable.
            positions, layer_range: accepted for Keras compatibility (ignored).
        """
        summary_module.print_summary(self, line_length=line_length, print_fn=print_fn,
                                     expand_nested=expand_nested, show_trainable=show_trainable,
                                     model_class=Model)

    def get_config(self):
        """Subclassed models: the base config (override to add your constructor arguments)."""
        return Layer.get_config(self)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """A functional config (with ``layers``/``input_layers``/``output_layers``) rebuilds a
        `Functional` model; otherwise ``cls(**config)`` (subclasses override this together with
        `get_config` when their constructor takes other arguments).

        Raises:
            TypeError: if ``cls(**config)`` fails, saying what to implement.
        """
        if "input_layers" in config and "output_layers" in config and \
                _revivable_as_functional(cls):
            inputs, outputs = functional_config.rebuild(config, custom_objects)
            return cls(inputs, outputs, name=config.get("name"),
                       trainable=config.get("trainable", True))
        try:
            return cls(**config)
        except TypeError as e:
            raise TypeError(f"{cls.__name__}.from_config: could not call {cls.__name__}(**config)"
                            f": {e}. Implement get_config() and from_config() on the subclass. "
                            f"Received: config keys {sorted(config)}") from e

    _from_config_takes_custom_objects = True

    # -- saving: implemented in kerasrs.saving ---------------------------------------------------
    def quantize(self, mode=None, type_check=True, config=None, filters=None):
        """Quantize every layer of the built model that supports it (`Dense`, `EinsumDense`,
        `Embedding`...; others are skipped with a warning), as Keras's ``Model.quantize``.

        Args:
            mode: "int8", "int4" or "float8" (or given by ``config``).
            config: a `kerasrs.quantizers.QuantizationConfig`.
            filters: a regex (or list of them) on layer names, or a callable ``layer -> bool``;
                only matching layers are quantized.

        Raises:
            ValueError: for bad arguments (see `Layer.quantize`).
            NotImplementedError: for "gptq"/"awq": their calibration on a dataset is not
                implemented in kerasrs (a layer's ``quantize("gptq", config)`` gives the layout).
        """
        if config.mode in ("gptq", "awq"):
            raise NotImplementedError(f"{self.name}: {config.mode.upper()} calibration of a "
                                      "model is not implemented in kerasrs; GPTQ/AWQ-quantized "
                                      "Keras files load and run.")
        if filters is not None and not isinstance(filters, (str, list, tuple)) and \
                not callable(filters):
            raise ValueError(f"{self.name}: The `filters` argument must be a regex string, a list "
                             f"of regex strings, or a callable. Received: {type(filters)}")
        for layer in self._flatten_layers():
            if layer is self or len(layer._flatten_layers()) > 1 or \
                    not _name_matches(layer, filters):
                continue
            try:
                layer.quantize(mode, type_check=type_check, config=config)
            except NotImplementedError as e:
                warnings.warn(str(e), stacklevel=2)

    def _check_quantize_args(self, mode, compute_dtype):
        if not self.built:
            raise ValueError(f"Cannot quantize a layer that isn't yet built. Layer "
                             f"'{self.name}' (of type '{type(self).__name__}') is not built yet.")

    def save(self, filepath, overwrite=True, **kwargs):
        """Save architecture, weights, compile settings and optimizer state to ``.keras`` or
        ``.h5`` (see `kerasrs.saving.save_model`). Under a `kerasrs.distribution.DataParallel`
        only rank 0 writes (the processes hold the same weights)."""
        if not distribution.for_fit().is_chief:
            return
        saving.save_model(self, filepath, overwrite=overwrite, **kwargs)

    def export(self, filepath, format="onnx", verbose=None, input_signature=None,  # noqa: A002
               opset_version=None, **kwargs):
        """Write the model for inference, as Keras 3's ``Model.export``; kerasrs writes
        ``format="onnx"`` (`kerasrs.export.export_onnx`: the inference graph, weights as
        initializers, a dynamic batch axis unless ``input_signature`` fixes it; ``pip install
        kerasrs[onnx]``)."""
        export_module.export(self, filepath, format=format, verbose=verbose,
                             input_signature=input_signature, opset_version=opset_version,
                             **kwargs)

    def save_weights(self, filepath, overwrite=True):
        """Save the weights to a Keras 3 ``.weights.h5`` file (`kerasrs.saving.save_weights`);
        only rank 0 writes under a `kerasrs.distribution.DataParallel`."""
        if not distribution.for_fit().is_chief:
            return
        saving.save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath, skip_mismatch=False, by_name=False, **kwargs):
        """Load weights from a ``.weights.h5``, ``.keras`` or legacy ``.h5`` file
        (`kerasrs.saving.load_weights`)."""
        saving.load_weights(self, filepath, skip_mismatch=skip_mismatch, by_name=by_name,
                            **kwargs)

    def to_json(self, **kwargs):
        """The Keras 3 model config as a JSON string (`kerasrs.models.model_from_json`)."""
        return saving.to_json(self, **kwargs)


def _functional_init_arguments(args, kwargs):
    """Keras's test for ``Model(inputs, outputs)``-style arguments."""
    return len(args) == 2 or (len(args) == 1 and "outputs" in kwargs) or (
        "inputs" in kwargs and "outputs" in kwargs)


def _inject_functional_model_class(cls):
    """Replace `Model` by `Functional` among the bases of ``cls`` and of its `Model` bases (Keras
    3's ``inject_functional_model_class``); classes outside the Model hierarchy are left alone.
    Returns the class to use in place of ``cls``."""
    functional = Model._functional_class
    if cls is Model:
        return functional
    if not isinstance(cls, type) or not issubclass(cls, Model) or issubclass(cls, functional):
        return cls
    bases = tuple(_inject_functional_model_class(base) for base in cls.__bases__)
    if bases != cls.__bases__:
        cls.__bases__ = bases
    return cls


def _revivable_as_functional(cls):
    """Whether ``cls(inputs, outputs, name=..., trainable=...)`` can rebuild a functional config
    (Keras's rule: `Model`/`Functional`, the functional signature, or ``(*args, **kwargs)``)."""
    functional = Model._functional_class
    if cls in (Model, functional):
        return True
    spec = inspect.getfullargspec(cls.__init__)
    functional_args = inspect.getfullargspec(functional.__init__).args[1:]
    return spec.args[1:] == functional_args or (spec.varargs is not None
                                                and spec.varkw is not None)


def _zeros_like_shape(shape, dtype):
    if isinstance(shape, dict):
        return {k: _zeros_like_shape(v, dtype) for k, v in shape.items()}
    if isinstance(shape, list) and shape and isinstance(shape[0], (list, tuple)):
        return [_zeros_like_shape(s, dtype) for s in shape]
    return np.zeros(tuple(1 if d is None else d for d in shape), dtype=dtype)


base_layer._BASE_GET_CONFIGS.add(Model.get_config)
weights_h5.register_model_class(Model)


def _name_matches(layer, filters):
    """Keras's quantization filter: a regex or regexes searched in the name, or a callable."""
    if filters is None:
        return True
    if isinstance(filters, str):
        filters = [filters]
    if isinstance(filters, (list, tuple)):
        return any(re.search(f, layer.name) for f in filters)
    return bool(filters(layer))
