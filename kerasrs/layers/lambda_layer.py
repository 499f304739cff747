"""`Lambda`: a Python function of Tensors as a layer (the escape hatch of functional models)."""

import base64
import importlib
import inspect
import marshal
import sys
import types

import numpy as np

from kerasrs import ops
from kerasrs.layers import node
from kerasrs.layers.base import Layer


class Lambda(Layer):
    """Calls ``function(inputs, **arguments)``; the function composes `kerasrs.ops`.

    Args:
        function: callable taking the input Tensor (or list) and returning a Tensor. It may take
            ``mask`` and ``training`` keyword arguments.
        output_shape: optional output shape (with the batch axis) or a callable
            ``input_shape -> output_shape``; by default found by running the function on zeros.
        mask: optional output mask, or a callable ``(inputs, mask) -> mask``.
        arguments: optional dict of extra keyword arguments for ``function``.

    Saving: a named module-level function is stored by module and name; a ``lambda`` is stored
    as Python bytecode (``{"class_name": "__lambda__", ...}``), which only the same Python
    version can read and which `from_config` refuses unless ``safe_mode=False``, because
    loading bytecode runs arbitrary code.
    """

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"{self.name}: `function` must be callable. Received: {function!r}")
        self.function, self._output_shape = function, output_shape
        self.mask, self.arguments = mask, dict(arguments or {})
        self.supports_masking = mask is not None
        params = inspect.signature(function).parameters
        self._fn_mask = "mask" in params
        self._fn_training = "training" in params

    def call(self, inputs, mask=None, training=None):
        kwargs = dict(self.arguments)
        if self._fn_mask:
            kwargs["mask"] = mask
        if self._fn_training:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def compute_output_shape(self, input_shape):
        if self._output_shape is None:
            return node.output_shape_by_probe(self, input_shape)
        if callable(self._output_shape):
            return self._output_shape(input_shape)
        shape = tuple(self._output_shape)
        return shape if len(shape) == len(input_shape) and shape[:1] == tuple(input_shape[:1]) \
            else (input_shape[0],) + shape

    def compute_mask(self, inputs, mask=None):
        return self.mask(inputs, mask) if callable(self.mask) else self.mask

    def get_config(self):
        config = {**super().get_config(), "function": _serialize_function(self.function),
                  "arguments": self.arguments}
        if self._output_shape is not None:
            config["output_shape"] = _serialize_function(self._output_shape) \
                if callable(self._output_shape) else list(self._output_shape)
        if self.mask is not None:
            config["mask"] = _serialize_function(self.mask) if callable(self.mask) else None
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None, safe_mode=True):
        """Rebuild; refuses bytecode lambdas unless ``safe_mode=False`` (see the class docs)."""
        config = dict(config)
        for key in ("function", "output_shape", "mask"):
            if isinstance(config.get(key), dict):
                config[key] = _deserialize_function(config[key], custom_objects, safe_mode)
        return cls(**config)


def _serialize_function(fn):
    if isinstance(fn, types.LambdaType) and fn.__name__ == "<lambda>" or "<locals>" in getattr(
            fn, "__qualname__", ""):
        closure = None if fn.__closure__ is None else [c.cell_contents for c in fn.__closure__]
        code = base64.b64encode(marshal.dumps(fn.__code__)).decode("ascii")
        return {"class_name": "__lambda__", "config": {
            "code": code, "defaults": fn.__defaults__, "closure": closure}}
    return {"module": fn.__module__, "class_name": "function", "config": fn.__name__,
            "registered_name": fn.__name__}


def _deserialize_function(config, custom_objects=None, safe_mode=True):
    if config.get("class_name") == "__lambda__":
        if safe_mode:
            raise ValueError("Lambda.from_config: this Lambda layer's function is Python "
                             "bytecode, and loading it runs arbitrary code. If you trust the "
                             "source, pass safe_mode=False. Received: a '__lambda__' config")
        inner = config["config"]
        code = marshal.loads(base64.b64decode(inner["code"]))
        closure = None if inner.get("closure") is None else tuple(
            types.CellType(v) for v in inner["closure"])
        defaults = tuple(inner["defaults"]) if inner.get("defaults") else None
        # the bytecode is the user's, written against the public package, which is loaded by
        # now: it gets that as ``kerasrs`` (an import from here would run up the layers)
        scope = {"kerasrs": sys.modules["kerasrs"], "ops": ops, "np": np,
                 "__builtins__": __builtins__}
        return types.FunctionType(code, scope, code.co_name, defaults, closure)
    name = config["config"]
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    return getattr(importlib.import_module(config["module"]), name)
