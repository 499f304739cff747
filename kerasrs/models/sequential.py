"""`Sequential`: a plain stack of layers, each feeding the next."""

from kerasrs import dtype_policies
from kerasrs.layers import naming, serialization
from kerasrs.layers.base import Layer
from kerasrs.layers.input_layer import InputLayer
from kerasrs.layers.node import SymbolicTensor
from kerasrs.models import functional
from kerasrs.models.model import Model
from kerasrs.saving import weights_h5


class Sequential(Model):
    """A linear stack of layers.

    The model builds (creates every weight) as soon as its input shape is known: from an
    ``Input(shape)`` (or `InputLayer`) given as the first layer, from ``input_shape=`` on the
    first layer, from ``build(input_shape)``, or at the first call / ``fit`` on data. Weight
    paths are ``<model name>/<layer name>/<weight>`` (``sequential/dense/kernel``), as in Keras.

    Args:
        layers: optional list of layers (the first may be ``Input(...)``).
        trainable: bool.
        name: defaults to ``sequential`` (made unique).

    Example:
        >>> model = Sequential([Input((784,)), Dense(64, activation="relu"), Dense(10)])
        >>> model.output_shape
        (None, 10)
    """

    _keras_module = "keras"
    _layers_explicit = True  # `_layers`: the model's own list of its layers

    def __init__(self, layers=None, trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        self._layers = []
        self._output_tensor = None
        for layer in layers or []:
            self.add(layer, rebuild=False)
        self._maybe_rebuild()

    @property
    def layers(self):
        """The layers, without the input layer (as Keras)."""
        return [layer for layer in self._layers if not isinstance(layer, InputLayer)]

    def add(self, layer, rebuild=True):
        """Append a layer (or ``Input(...)`` as the first element).

        Raises:
            TypeError: for something that is not a layer.
            ValueError: for a second input, or a name already used in the model.
        """
        if isinstance(layer, SymbolicTensor) and layer._keras_history is not None:
            layer = layer._keras_history[0]
        if not isinstance(layer, Layer):
            raise TypeError(f"{self.name}.add: expected a Layer. Received: {layer!r}")
        if isinstance(layer, InputLayer):
            if self._layers:
                raise ValueError(f"{self.name}.add: an Input can only be the first layer. "
                                 f"Received: {layer.name!r} after {len(self._layers)} layers")
        elif not self._layers and layer._batch_input_shape is not None:
            self._layers.append(InputLayer(batch_shape=layer._batch_input_shape))
        if any(existing.name == layer.name for existing in self._layers):
            raise ValueError(f"{self.name}.add: all layers of a Sequential model need unique "
                             f"names. Received: a second layer named {layer.name!r}")
        self._layers.append(layer)
        if rebuild:
            self._maybe_rebuild()
        else:
            self.built = False

    def pop(self, rebuild=True):
        """Remove and return the last layer.

        Raises:
            IndexError: if the model has no layers.
        """
        if not self.layers:
            raise IndexError(f"{self.name}.pop: the model has no layers. Received: an empty model")
        layer = self._layers.pop()
        self.built = False
        if rebuild:
            self._maybe_rebuild()
        return layer

    def _maybe_rebuild(self):
        self.built = False
        self._output_tensor = None
        if len(self._layers) > 1 and isinstance(self._layers[0], InputLayer):
            self.build(self._layers[0].batch_shape)

    def build(self, input_shape=None):
        """Build every layer for inputs of ``input_shape`` (batch axis first, may be None)."""
        if not self._layers:
            raise ValueError(f"{self.name}.build: the model has no layers. Received: "
                             f"input_shape={input_shape}")
        if not isinstance(self._layers[0], InputLayer):
            if input_shape is None:
                raise ValueError(f"{self.name}.build: needs an input shape. Received: None")
            self._layers.insert(0, InputLayer(batch_shape=tuple(input_shape)))
        x = self._layers[0].output
        with naming.name_scope(self.name):
            for layer in self.layers:
                x = layer(x)
        self._output_tensor = x
        self.built = True
        self._build_shapes = {"input_shape": list(self._layers[0].batch_shape)}

    build._kerasrs_build = True  # opens its own name scope

    def _build_from_call(self, args, kwargs):
        shape = tuple(args[0].shape)
        self.build((None,) + shape[1:])

    def call(self, inputs, training=None, mask=None):
        if self._layers and isinstance(self._layers[0], InputLayer):
            inputs = functional.check_input(self.name, 0, self._layers[0].output, inputs)
        x = inputs
        for layer in self.layers:
            x = layer(x) if training is None else layer(x, training=training)
        return x

    def compute_output_shape(self, input_shape):
        """Chained through the layers' own shape rules, so that a nested Sequential with unknown
        sides is not probed on tiny inputs (a strided 'valid' stem cannot run on them)."""
        shape = tuple(input_shape)
        for layer in self.layers:
            shape = layer.compute_output_shape(shape)
        return shape

    def _check_input_structure(self, method, x):
        """A Sequential model takes one array: a dict is accepted when it holds the input by its
        name (as Keras), a list of several inputs is an error here, not a confusing one deep in
        the first layer."""
        if isinstance(x, dict):
            self._input_from_dict(x, method)
        if isinstance(x, list) and len(x) != 1:
            raise ValueError(f"{self.name}.{method}: `x` is a list of {len(x)} arrays, but a "
                             f"Sequential model takes a single input array (its input is named "
                             f"{self._input_names()}). Received: {len(x)} arrays of shapes "
                             f"{[tuple(getattr(a, 'shape', ())) for a in x]}")

    def _input_names(self):
        return [self._layers[0].name] if self._layers and isinstance(
            self._layers[0], InputLayer) else []

    def _input_from_dict(self, x, method=None):
        """The value of the dict ``x`` keyed by the input's name; other keys are ignored (as
        Keras does).

        Raises:
            ValueError: if the model has no input (so no name) yet, or ``x`` lacks its name.
        """
        where = self.name if method is None else f"{self.name}.{method}"
        names = self._input_names()
        if not names:
            raise ValueError(f"{where}: a dict of inputs is matched to the model's input by "
                             f"name, but this model has no Input yet (start it with "
                             f"`Input(shape, name=...)`, or pass the array itself). Received: "
                             f"a dict with keys {sorted(x)}")
        if names[0] not in x:
            raise ValueError(f"{where}: missing data for input {names[0]!r}. You passed a data "
                             f"dictionary with keys {sorted(x)}. Expected the following keys: "
                             f"{names}")
        return x[names[0]]

    def _convert_inputs(self, inputs):
        if isinstance(inputs, dict):
            inputs = self._input_from_dict(inputs)
        if isinstance(inputs, (list, tuple)):
            return super()._convert_inputs(inputs)
        return inputs  # converted (and checked) against the input layer in call()

    @property
    def inputs(self):
        return [self._layers[0].output] if self._layers and \
            isinstance(self._layers[0], InputLayer) else None

    @property
    def outputs(self):
        return None if self._output_tensor is None else [self._output_tensor]

    @property
    def input_shape(self):
        return self._layers[0].batch_shape if self.inputs else None

    @property
    def output_shape(self):
        return None if self._output_tensor is None else self._output_tensor.shape

    # -- configuration --------------------------------------------------------------------------
    def get_config(self):
        """Keras's Sequential config: the input layer first, then every layer."""
        layers = [serialization.serialize(layer) for layer in self._layers]
        for entry in layers:
            if entry["class_name"] == "InputLayer":
                entry.pop("build_config", None)
        config = {"name": self.name, "trainable": self.trainable,
                  "dtype": dtype_policies.serialize(self.dtype_policy),
                  "layers": layers}
        if self.built:
            config["build_input_shape"] = list(self._layers[0].batch_shape)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """A new Sequential model from `get_config`'s dict (built if the input is known)."""
        model = cls(name=config.get("name"), trainable=config.get("trainable", True),
                    dtype=config.get("dtype"))
        builds = []
        for entry in config["layers"]:  # built below, inside the model's name scope
            layer = serialization.deserialize(
                {k: v for k, v in entry.items() if k != "build_config"}, custom_objects)
            model.add(layer, rebuild=False)
            builds.append((layer, entry.get("build_config")))
        if not model._layers or not isinstance(model._layers[0], InputLayer):
            shape = config.get("build_input_shape")
            if shape is not None:
                model.build(tuple(shape))
                return model
        model._maybe_rebuild()
        if not model.built:  # a model saved unbuilt, its layers built one by one: as they were
            for layer, build in builds:
                if build and not layer.built:
                    layer.build_from_config(build)
        return model

    _from_config_takes_custom_objects = True


weights_h5.register_model_class(Sequential, graph=True)
