"""Ops on symbolic tensors: ``x * 2 + 1``, ``x[:, :2]``, ``ops.add(a, b)`` in a functional model.

In Keras 3 every ``keras.ops`` function and Python operator accepts a KerasTensor and returns one,
recorded in the functional graph. kerasrs does the same with one generic mechanism:

1. Each public function of `kerasrs.ops` is declared ``@op`` (`kerasrs.ops.dispatch`). Its
   wrapper runs the op; only when it raises does it ask this module whether a symbolic tensor is
   among the arguments (`_Handler.wants`) and, if so, hands the call to `symbolic_op`. Eager
   calls pay one Python call and never look at their arguments.
2. Python operators on a `SymbolicTensor` call the `kerasrs.ops` function (``x + 1`` is
   ``ops.add(x, 1)``), so they take the same path. A concrete Tensor on the left
   (``tensor + symbolic``) reaches `Function.apply`, which passes a symbolic input to
   `_function_hook`.
3. `symbolic_op` creates an `OpLayer`: a weightless layer whose class is named after the op, as
   Keras names its op classes (``Add``, ``GetItem``, ``Sum``...), and whose name is the snake
   case (``add``, ``get_item``). The arguments are split as Keras splits them between an op's
   ``call`` and its constructor (`_split_arguments`): tensor parameters (``x``, ``x1``,
   ``indices``, ``key``..., or any holding a symbolic tensor or an array) become the node's call
   arguments, with the symbolic tensors in place; the other parameters (``axis``, ``newshape``)
   become the layer's config when they differ from their defaults. So ``x * 2`` is the node
   ``multiply(x, 2)`` and ``ops.sum(x, axis=1)`` the layer ``Sum(axis=1)`` on ``x``, as in Keras's
   files, which Keras 3 and kerasrs can both load. Calling the layer on the symbolic arguments
   records the `Node`; the output shape and dtype come from the layer probe of
   `kerasrs.layers.node` (the op runs on zeros whose unknown axes are 2, then 3).
4. A functional model replays the node like any layer call: `OpLayer.__call__` calls the op.

Arguments that JSON cannot hold are stored in Keras's serialized forms: slices as
``{"class_name": "__slice__", ...}``, ``...`` as ``__ellipsis__``; concrete arrays and Tensors stay
on the layer (``constants``, written as Keras's ``__numpy__`` dicts in the config) and the node
refers to them by index (``__constant__``), so replaying a model never converts them again
(Keras cannot read that form: a model holding array constants loads in kerasrs only).
Saved files carry ``module: "keras.src.ops.<family>"`` for these layers, which is how loading tells
the op ``Add`` from the merging layer ``Add``. Masks do not pass through ops.
"""

import inspect

import numpy as np

from kerasrs import autodiff, ops
from kerasrs import backend as backend_module
from kerasrs.layers import base, node, op_shapes
from kerasrs.ops import dispatch

_CLASS_NAMES = {"getitem": "GetItem"}  # Keras's class names where CamelCase(name) differs
# Keras's module of each op class (``keras.src.ops.<family>``); the rest are in "numpy"
_NN = {"one_hot"}  # besides kerasrs.ops.nn's own functions
_CORE = {"cast", "convert_to_tensor", "stop_gradient", "shape", "convert_to_numpy"}
_MATH = {"logsumexp", "erf", "rsqrt", "top_k", "in_top_k", "segment_sum", "segment_max"}
_LINALG = {"norm"}
_OP_CLASSES = {}  # op name -> OpLayer subclass
_KERAS_TO_OP = {}  # Keras class name -> op name (filled lazily)
_ENCODED = ("__slice__", "__ellipsis__", "__constant__", "__numpy__", "__tensor__")


class SymbolicInput(TypeError):
    """A symbolic tensor reached an op's eager code; the enclosing op wrapper records the op."""


# -- the layer ------------------------------------------------------------------------------------
class OpLayer(base.Layer):
    """One call of a `kerasrs.ops` function in a functional graph (see the module docstring).

    Subclasses, one per op (made by `op_class`), set ``_op_name``. Not meant to be made by hand.

    Args:
        name: the layer name; defaults to the snake case of the class name (``get_item``).
        constants: list of arrays (or Keras ``__numpy__`` dicts) the node arguments refer to.
        **op_kwargs: fixed keyword arguments of the op (``axis``, ``keepdims``...).
    """

    _op_layer = True  # not registered by class name: "Add" stays the merging layer
    _op_name = None
    _keras_module = "keras.src.ops.numpy"

    def __init__(self, name=None, constants=None, **op_kwargs):
        super().__init__(name=name)
        self.op_kwargs = {k: _tuples(_decode(v, ())) for k, v in op_kwargs.items()
                          if self._accepts(k, v)}
        self._plan = _call_plan(self.op, self.op_kwargs)
        self.constants = [_decode(c, ()) for c in constants or ()]
        self._encoded_args = True  # until a node shows otherwise
        self.built = True

    def _accepts(self, key, value):
        """Whether the op takes the keyword ``key``. Keras's op configs hold some options that
        kerasrs's op lacks (``max(initial=None)``, ``one_hot(sparse=False)``): left at their
        neutral values (None, False) they are dropped; other values are refused.

        Raises:
            ValueError: naming the op and the option.
        """
        params = inspect.signature(self.op).parameters
        if key in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
            return True
        if value is None or value is False:
            return False
        raise ValueError(f"{self.name}: kerasrs.ops.{self._op_name} has no option {key!r}, so "
                         f"this op layer cannot be rebuilt. Received: {key}={value!r}")

    @property
    def op(self):
        """The `kerasrs.ops` function this layer applies (the unwrapped one)."""
        return raw_op(self._op_name)

    def __call__(self, *args, **kwargs):
        if node.any_symbolic(args, kwargs):
            self._encoded_args = _has_encoded([list(args), kwargs])
            return node.symbolic_call(self, args, kwargs)
        kwargs.pop("training", None)
        return self.call(*args, **kwargs)

    def call(self, *args, **kwargs):
        args, kwargs = self._op_arguments(args, kwargs)
        return self.op(*args, **kwargs)

    def _op_arguments(self, args, kwargs):
        """``(args, kwargs)`` of the op for a node's call arguments: decoded, with the config's
        keywords added (in their positional places where `_call_plan` says so)."""
        if self._encoded_args:
            args, kwargs = _decode(args, self.constants), _decode(kwargs, self.constants)
        if self._op_name == "getitem" and len(args) > 1 and isinstance(args[1], list):
            args = (args[0], tuple(args[1])) + args[2:]  # JSON turned the key tuple into a list
        if self._plan is None:
            return args, {**kwargs, **self.op_kwargs}
        positional, rest, fixed = [], iter(args), dict(self.op_kwargs)
        for name in self._plan:  # config values go to their places between the node's args
            if name in fixed:
                positional.append(fixed.pop(name))
            else:
                value = next(rest, _MISSING)
                if value is _MISSING:
                    break
                positional.append(value)
        return (*positional, *rest), {**kwargs, **fixed}

    def compute_output_spec(self, *args, **kwargs):
        """The symbolic outputs: shapes by the op's rule in `kerasrs.layers.op_shapes` where it
        has one (dtypes by a probe with unknown axes of size 1, else the inputs' promoted
        dtype), else shapes and dtypes by the probe of `kerasrs.layers.node`."""
        kwargs.pop("training", None)
        op_args, op_kwargs = self._op_arguments(args, kwargs)
        bound = inspect.signature(self.op).bind(*op_args, **op_kwargs)
        bound.apply_defaults()
        shapes = op_shapes.rule_for(self._op_name, bound.arguments)
        if shapes is None:
            specs = node._probe_spec(self, args, kwargs)
            return node.map_structure(lambda s: node.SymbolicTensor(s.shape, s.dtype), specs)
        if any(isinstance(t, node.SymbolicTensor) for t in autodiff._flatten(shapes)):
            return shapes  # a control-flow rule: the outputs themselves
        single = node._is_shape(shapes)
        shapes = [shapes] if single else list(shapes)
        dtypes = self._probe_dtypes(args, kwargs, len(shapes))
        outputs = [node.SymbolicTensor(s, d) for s, d in zip(shapes, dtypes)]
        return outputs[0] if single else outputs

    def _probe_dtypes(self, args, kwargs, count):
        """``count`` output dtypes: from a run on zeros with unknown axes of size 1 (which
        broadcast against anything), or, where that run fails (singular zero matrices, bitwise
        ops on floats), the promoted dtype of the symbolic inputs."""
        try:
            flat = autodiff._flatten(node._probe(self, args, kwargs, 1))
            dtypes = [t.dtype.name for t in flat]
        except Exception:  # noqa: BLE001  (only the dtype is wanted here; the rule gave the shape)
            dtypes = []
        if len(dtypes) != count:
            inputs = [t.dtype for t in autodiff._flatten([list(args), kwargs])
                      if isinstance(t, node.SymbolicTensor)]
            dtypes = [backend_module.result_type(*inputs)] * count
        return dtypes

    def compute_mask(self, inputs, mask=None):
        return None

    def get_config(self):
        config = {"name": self.name, **{k: _encode_value(v) for k, v in self.op_kwargs.items()}}
        if self.constants:
            config["constants"] = [_numpy_config(c) for c in self.constants]
        return config

    def get_build_config(self):
        return None


_MISSING = object()


def _call_plan(op, op_kwargs):
    """None when the node's arguments and the config's keywords can simply be passed as
    ``op(*args, **kwargs, **op_kwargs)``; else the op's positional parameter names, for
    `OpLayer.call` to slot config values between the node's arguments (``einsum``'s
    ``subscripts`` comes before the operands)."""
    params = [p for p in inspect.signature(op).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    names = [p.name for p in params if p.kind is not p.VAR_POSITIONAL]
    for i, p in enumerate(params):
        if p.name in op_kwargs and any(q.kind is q.VAR_POSITIONAL or q.name not in op_kwargs
                                       for q in params[i + 1:]):
            return names
    return None


def op_class(op_name):
    """The `OpLayer` subclass for the op ``op_name`` (made once, then cached)."""
    cls = _OP_CLASSES.get(op_name)
    if cls is None:
        class_name = _CLASS_NAMES.get(op_name) or "".join(
            part[:1].upper() + part[1:] for part in op_name.split("_"))
        family = ("nn" if op_name in ops.nn.__all__ or op_name in _NN else "core"
                  if op_name in _CORE else "math" if op_name in _MATH else "linalg"
                  if op_name in _LINALG else "numpy")
        cls = type(class_name, (OpLayer,), {
            "_op_name": op_name, "_keras_module": f"keras.src.ops.{family}",
            "__module__": __name__,
            "__doc__": f"The op ``kerasrs.ops.{op_name}`` as a node of a functional model."})
        _OP_CLASSES[op_name] = cls
    return cls


def op_class_from_keras(class_name, module=""):
    """The `OpLayer` class for a saved op layer (Keras's class name, e.g. ``GetItem``).

    Raises:
        ValueError: if kerasrs has no op of that name.
    """
    if not _KERAS_TO_OP:
        for name in ops.__all__:
            _KERAS_TO_OP[op_class(name).__name__] = name
    name = _KERAS_TO_OP.get(class_name)
    if name is None:
        raise ValueError(f"Unknown op {class_name!r} (module {module!r}): kerasrs.ops has no "
                         f"function of that name, so this op layer cannot be rebuilt. Received: "
                         f"class_name={class_name!r}")
    return op_class(name)


def raw_op(op_name):
    """The plain function of the op ``op_name`` (its ``@op`` wrapper's ``__wrapped__``)."""
    fn = getattr(ops, op_name)
    return getattr(fn, "__wrapped__", fn)


# -- recording an op call -------------------------------------------------------------------------
_STATIC = {  # ops whose answer on a symbolic tensor is known without a node, as in Keras
    "shape": lambda x: tuple(x.shape),
    "ndim": lambda x: len(x.shape),
}


def symbolic_op(fn, args, kwargs):
    """The symbolic output(s) of ``fn(*args, **kwargs)``, recorded as an `OpLayer` node.

    Raises:
        The op's own error type (ValueError, TypeError, IndexError) if it fails on inputs of the
        symbolic shapes, naming the op and the symbolic shapes.
    """
    name = fn.__name__
    if name in _STATIC and len(args) == 1 and not kwargs:
        return _STATIC[name](args[0])
    if name == "getitem" and len(args) == 2 and isinstance(args[1], list):
        # a list key is an index array; in a saved key a list means a tuple (JSON has none)
        args = (args[0], np.asarray(args[1]))
    node_args, config, node_kwargs = _split_arguments(fn, args, kwargs)
    layer = op_class(name)(**config)
    args = _encode(node_args, layer.constants)
    tensor_kwargs = _encode(node_kwargs, layer.constants)
    try:
        return layer(*args, **tensor_kwargs)
    except (ValueError, TypeError, IndexError) as e:
        shapes = [t.shape for t in autodiff._flatten([args, tensor_kwargs])
                  if isinstance(t, node.SymbolicTensor)]
        how = ("by its shape rule" if name in op_shapes.RULES else
               f"the check ran on zeros with unknown axes of size {node._PROBE_SIZES[0]}")
        message = f"{name}: cannot apply the op to symbolic inputs of shapes {shapes} ({how}): {e}"
        try:
            error = type(e)(message)
        except Exception:
            error = ValueError(message)
        raise error from e


_CALL_PARAMS = dispatch.TENSOR_PARAMS | {"key"}  # parameters Keras's op classes take in call()


def _split_arguments(fn, args, kwargs):
    """``(node_args, config, node_kwargs)`` for ``fn(*args, **kwargs)``, as Keras splits an op:
    tensor parameters (by name, or holding a symbolic tensor or an array) and ``*args`` go to
    the node's call, in order (trailing defaults dropped); the other parameters that differ
    from their defaults become the op layer's config."""
    sig = inspect.signature(fn)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    node_args, config, node_kwargs = [], {}, {}
    gap = False  # a default left out before: later tensors go by name, not by position
    for p in sig.parameters.values():
        value = bound.arguments[p.name]
        if p.kind is p.VAR_POSITIONAL:
            node_args.extend((None, v) for v in value)
        elif p.kind is p.VAR_KEYWORD:
            for k, v in value.items():
                (node_kwargs if node.any_symbolic((v,), {}) else config)[k] = v
        elif p.kind is p.KEYWORD_ONLY:
            (node_kwargs if node.any_symbolic((value,), {}) else config)[p.name] = value
        elif p.name in _CALL_PARAMS or node.any_symbolic((value,), {}) or \
                isinstance(value, autodiff.Tensor) or hasattr(value, "__array_interface__"):
            if gap and value is not p.default:
                node_kwargs[p.name] = value
            elif not gap:
                node_args.append((p, value))
        elif p.default is p.empty or not _same(value, p.default):
            config[p.name] = value  # defaults are left out: Keras's op has the same ones
        else:
            gap = True
    while node_args and node_args[-1][0] is not None and \
            node_args[-1][0].default is not inspect.Parameter.empty and \
            node_args[-1][1] is node_args[-1][0].default:
        node_args.pop()
    return [v for _, v in node_args], config, node_kwargs


def _same(value, default):
    return value is default or (type(value) is type(default) and isinstance(
        value, (bool, int, float, str, tuple)) and value == default)


class _Handler:
    """What the `kerasrs.ops` wrappers call when an op raised (see `kerasrs.ops.dispatch`)."""

    @staticmethod
    def wants(args, kwargs):
        return node.any_symbolic(args, kwargs)

    @staticmethod
    def call(fn, args, kwargs):
        if dispatch.depth() > 1:  # an op called inside another op: the outermost one records
            raise SymbolicInput(f"{fn.__name__}: a symbolic tensor reached an op inside another "
                                "op; the outer op records the node.")
        return symbolic_op(fn, args, kwargs)


_FUNCTION_OPS = {"Add": "add", "Subtract": "subtract", "Multiply": "multiply",
                 "Divide": "divide", "Power": "power", "Mod": "mod", "MatMul": "matmul"}


def _function_hook(function, inputs):
    """`Function.apply` met a symbolic input: an operator with a concrete Tensor on the left
    (``tensor + symbolic``) records the op; inside an op wrapper, that wrapper records it."""
    op_name = _FUNCTION_OPS.get(type(function).__name__) \
        if type(function).__module__ == "kerasrs.ops.core" else None
    if dispatch.depth() > 0 or op_name is None:
        raise SymbolicInput(f"{function._name()}: a symbolic tensor (from layers.Input) has no "
                            "values. Apply kerasrs.ops functions or layers to it. Received: "
                            f"inputs {inputs!r}")
    return symbolic_op(raw_op(op_name), inputs, {})


dispatch.handler = _Handler
autodiff.symbolic_hook[0] = _function_hook


# -- encoding arguments ---------------------------------------------------------------------------
def _encode(value, constants):
    """``value`` with slices, ``...``, NumPy scalars and dtypes in JSON-able forms, and arrays
    and Tensors moved to ``constants`` (referred to by index)."""
    if isinstance(value, node.SymbolicTensor) or value is None or \
            isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_encode(v, constants) for v in value]
    if isinstance(value, tuple):
        return tuple(_encode(v, constants) for v in value)
    if isinstance(value, dict):
        return {k: _encode(v, constants) for k, v in value.items()}
    if isinstance(value, autodiff.Tensor) or hasattr(value, "__array_interface__") or \
            hasattr(value, "__cuda_array_interface__"):
        if isinstance(value, np.generic):
            return value.item()
        constants.append(value)
        return {"class_name": "__constant__", "config": {"index": len(constants) - 1}}
    return _encode_value(value)


def _encode_value(value):
    """A JSON-able form of one non-tensor argument (slices, ``...``, NumPy scalars, dtypes)."""
    if isinstance(value, slice):
        return {"class_name": "__slice__", "config": {
            "start": _encode_value(value.start), "stop": _encode_value(value.stop),
            "step": _encode_value(value.step)}}
    if value is Ellipsis:
        return {"class_name": "__ellipsis__", "config": {}}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return np.dtype(value).name
    if isinstance(value, (list, tuple)):
        return type(value)(_encode_value(v) for v in value)
    if isinstance(value, dict):
        return {k: _encode_value(v) for k, v in value.items()}
    if hasattr(value, "__array_interface__") or isinstance(value, autodiff.Tensor):
        return _numpy_config(value)
    return value


def _numpy_config(value):
    array = backend_module.convert_to_numpy(value)
    return {"class_name": "__numpy__", "config": {"value": array.tolist(),
                                                  "dtype": array.dtype.name}}


def _has_encoded(value):
    if isinstance(value, (list, tuple)):
        return any(_has_encoded(v) for v in value)
    if isinstance(value, dict):
        return value.get("class_name") in _ENCODED or any(_has_encoded(v)
                                                          for v in value.values())
    return isinstance(value, (slice, type(Ellipsis)))


def _decode(value, constants):
    """Undo `_encode` (and read Keras's ``__numpy__``/``__tensor__`` forms)."""
    if isinstance(value, list):
        return [_decode(v, constants) for v in value]
    if isinstance(value, tuple):
        return tuple(_decode(v, constants) for v in value)
    if not isinstance(value, dict):
        return value
    kind, inner = value.get("class_name"), value.get("config")
    if kind == "__slice__":
        return slice(*(_decode(inner.get(k), constants) for k in ("start", "stop", "step")))
    if kind == "__ellipsis__":
        return Ellipsis
    if kind == "__constant__":
        return constants[inner["index"]]
    if kind == "__numpy__":
        return np.array(inner["value"], dtype=inner["dtype"])
    if kind == "__tensor__":
        return autodiff.convert_to_tensor(np.array(inner["value"], dtype=inner["dtype"]))
    return {k: _decode(v, constants) for k, v in value.items()}


def _tuples(value):
    """Lists (JSON's tuples) as tuples, for shape and axis arguments read from a config."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def is_op_config(config):
    """Whether a serialized layer entry is an op layer (``module`` ``keras.src.ops.*``)."""
    return str(config.get("module") or "").startswith(("keras.src.ops", "keras.ops"))


__all__ = []  # internal: nothing to re-export from kerasrs.layers
