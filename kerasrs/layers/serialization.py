"""Layer configs in Keras's serialized form, and back.

``serialize(layer)`` gives ``{"module", "class_name", "config", "registered_name",
"build_config"}`` as Keras's ``.keras`` ``config.json`` stores each layer; ``deserialize``
accepts that and the legacy ``{"class_name", "config"}`` form. Classes are found by name among
every `Layer` subclass defined so far (built-in and user-defined), or in ``custom_objects``.
"""

from kerasrs import registry
from kerasrs.layers import base, op_layer

# Names that always mean a kerasrs model class, whatever else is called so (Keras 2 wrote
# "Model" for a functional model). kerasrs.models.functional adds `Functional` under both names:
# models sit above layers, so this module cannot import it.
MODEL_CLASSES = {}


def serialize(layer):
    """The Keras-style dict for ``layer`` (see the module docstring)."""
    module = getattr(type(layer), "_keras_module", "keras.layers")
    out = {"module": module, "class_name": type(layer).__name__, "config": layer.get_config(),
           "registered_name": "Functional" if module.endswith("functional") else None}
    build = layer.get_build_config() if layer.built else None
    if build:
        out["build_config"] = build
    return out


def lookup(class_name, custom_objects=None):
    """The Layer class called ``class_name`` (``custom_objects`` first).

    Raises:
        ValueError: for an unknown name, saying how to register a custom class.
    """
    if custom_objects and class_name in custom_objects:
        return custom_objects[class_name]
    if class_name in MODEL_CLASSES:
        return MODEL_CLASSES[class_name]
    cls = base._LAYER_CLASSES.get(class_name)
    if cls is None:
        raise ValueError(f"Unknown layer class {class_name!r}. Pass it in custom_objects="
                         f"{{'{class_name}': {class_name}}} (or define/import it first). "
                         f"Received: class_name={class_name!r}")
    return cls


def deserialize(config, custom_objects=None):
    """A new layer (unbuilt, unless the config has a ``build_config``) from `serialize`'s dict."""
    if op_layer.is_op_config(config) and not (custom_objects and
                                               config["class_name"] in custom_objects):
        cls = op_layer.op_class_from_keras(config["class_name"], config.get("module"))
    else:
        cls = lookup(config["class_name"], custom_objects)
    inner = dict(config.get("config") or {})
    if getattr(cls, "_from_config_takes_custom_objects", False):
        layer = cls.from_config(inner, custom_objects=custom_objects)
    else:
        layer = cls.from_config(inner)
    if config.get("build_config") and not layer.built:
        layer.build_from_config(config["build_config"])
    return layer


def get(identifier, custom_objects=None):
    """A layer from a layer (returned as is) or a serialized dict."""
    if isinstance(identifier, base.Layer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier, custom_objects)
    raise ValueError(f"layers.get: expected a Layer or a config dict. Received: {identifier!r}")


def fix_registered_names(config, root):
    """Give each layer entry of a serialized layer/model the registered name (and module) of
    its class when that class was registered with `register_keras_serializable`."""
    if not registry.any_registered():
        return config
    by_name = {layer.name: layer for layer in root._flatten_layers()}

    def visit(value):
        if isinstance(value, list):
            for v in value:
                visit(v)
        elif isinstance(value, dict):
            inner = value.get("config")
            if "class_name" in value and isinstance(inner, dict):
                layer = by_name.get(inner.get("name"))
                key = registry.registered_key(type(layer))
                if layer is not None and key and type(layer).__name__ == value["class_name"]:
                    value["registered_name"] = key
                    value["module"] = type(layer).__module__
            for v in value.values():
                visit(v)

    visit(config)
    return config


registry.register_kind(base.Layer, lambda layer: fix_registered_names(serialize(layer), layer),
                       strict=True)
