"""The glue: Keras-internal names the tests use, mapped onto kerasrs, each with its reason.

Everything public in Keras resolves by rule (``keras_hook``: ``keras.src.X`` -> its public name
``keras.P.N`` -> ``kerasrs.P.N``). What is left are names that exist only inside Keras; where a
kerasrs equivalent exists, and only then, it is listed here. ``README.md``'s glue table is
generated from these entries (``report.py``). No entry skips a test or changes an assertion:
each only says which kerasrs object a Keras-internal name stands for.
"""

import ast
import functools
import importlib
import inspect
import pathlib
import re

BACKEND_NAME = "kerasrs"


def _backend():
    return BACKEND_NAME


def _removesuffix(x, suffix):
    return x.removesuffix(suffix)


def _get_keras_mask(x):
    return getattr(x, "_keras_mask", None)


def _set_keras_mask(x, mask):
    x._keras_mask = mask


# Keras modules run from the wheel's source, like the test files: pure-Python helpers that tests
# use as their oracle (to compute the expected result), never the code under test.
WHEEL_MODULES = {
    "keras.src.backend.common.backend_utils": (
        "the conv-transpose tests compute their expected output shapes with its pure-Python "
        "`compute_conv_transpose_output_shape` (standard library only); kerasrs's shapes are "
        "compared with it"),
}

# The active backend's implementation modules, which ``keras.src.backend`` star-imports (under
# torch, ``keras.src.backend.numpy`` is ``keras/src/backend/torch/numpy.py``). Tests use them to
# build reference tensors; kerasrs's single set of ops is their counterpart.
MODULES = {
    "keras.src.backend.numpy": ("kerasrs.ops", "the active backend's NumPy ops (Keras-internal"
                                " module) are kerasrs's ops"),
    "keras.src.backend.nn": ("kerasrs.ops.nn", "the active backend's nn ops are kerasrs.ops.nn"),
    "keras.src.backend.linalg": ("kerasrs.ops.linalg", "the active backend's linalg ops are "
                                 "kerasrs.ops.linalg"),
    "keras.src.backend.random": ("kerasrs.random", "the active backend's random module is "
                                 "kerasrs.random"),
    "keras.src.backend.common.remat": ("kerasrs.layers.remat", "Keras's module of "
                                       "RematScope, remat and get_current_remat_mode (public as "
                                       "keras.RematScope, keras.remat) is kerasrs's module of "
                                       "the same role; its layers call `remat` through it, so "
                                       "a test's mock.patch of its `remat` reaches them"),
    "keras.src.ops.operation_utils": ("kerasrs.ops.operation_utils", "Keras's shape helpers "
                                      "(broadcast_shapes, reduce_shape...) are kerasrs's, which "
                                      "its symbolic ops use"),
}

# Functions the active backend contributes to ``keras.src.backend`` by its star import: the
# backend half of the public op of the same name.
_BACKEND_OPS = ("convert_to_tensor", "convert_to_numpy", "is_tensor", "cast", "shape", "cond",
                "vectorized_map", "scatter", "stop_gradient")

GLUE = {
    # Keras's tests branch on the backend's name (skip on "numpy", leave out the training check
    # of run_layer_test on "numpy", torch-only or jax-only expectations). kerasrs is none of
    # these backends (it trains, unlike Keras's NumPy backend), so it answers a name of its own
    # and every such branch takes its generic path: nothing is skipped or loosened for it.
    "keras.src.backend.backend": (_backend, "kerasrs is none of Keras's backends: every "
                                  "backend-specific branch of a test takes its generic path"),
    "keras.src.backend.config.backend": (_backend, "same object as keras.src.backend.backend"),
    "keras.backend.backend": (_backend, "same object as keras.src.backend.backend"),
    "keras.config.backend": (_backend, "same object as keras.src.backend.backend"),
    "keras.src.backend.SUPPORTS_SPARSE_TENSORS": (
        False, "backend capability flag: kerasrs has no sparse tensors (as Keras on torch)"),
    "keras.src.backend.SUPPORTS_RAGGED_TENSORS": (
        False, "backend capability flag: kerasrs has no ragged tensors (as Keras on torch)"),
    "keras.src.backend.SUPPORTS_COMPLEX_DTYPES": (
        True, "backend capability flag: kerasrs tensors hold complex64/complex128"),
    "keras.src.utils.removesuffix": (_removesuffix, "Keras's Python-version shim of "
                                     "str.removesuffix (used by test_case.py)"),
    "keras.src.utils.python_utils.removesuffix": (_removesuffix, "the same shim"),
    "keras.src.backend.common.masking.get_keras_mask": (
        _get_keras_mask, "Keras-internal accessor of a tensor's `_keras_mask`, the attribute "
        "kerasrs tensors carry their mask in as well"),
    "keras.src.backend.common.masking.set_keras_mask": (
        _set_keras_mask, "Keras-internal setter of the same `_keras_mask` attribute"),
    "keras.src.layers.rnn.dropout_rnn_cell.DropoutRNNCell": (
        "kerasrs.layers.recurrent.dropout_cell.DropoutRNNCell", "Keras's mixin of per-sequence "
        "dropout masks for recurrent cells has no public name (custom cells inherit it from "
        "keras.src); kerasrs's mixin of the same role, which its own cells inherit"),
    "keras.src.models.functional.Functional": (
        "kerasrs.models.Functional", "Keras's functional-model class is internal (users get it "
        "from keras.Model(inputs, outputs)); kerasrs's class of the same role"),
    **{f"keras.src.backend.{name}": (f"kerasrs.ops.{name}", "the active backend's half of "
                                     f"keras.ops.{name}")
       for name in _BACKEND_OPS},
}


def prepare():
    """What ``import keras`` does to the process that the test files rely on at import time:
    ``import ml_dtypes`` registers bfloat16 and the float8 types with NumPy (class bodies build
    ``np.array(0, dtype="bfloat16")``). kerasrs imports ml_dtypes lazily."""
    import ml_dtypes  # noqa: F401


PREPARE_REASON = ("`import keras` imports ml_dtypes, which registers bfloat16/float8 with NumPy; "
                  "test files use `np.dtype(\"bfloat16\")` at import time; kerasrs imports it "
                  "lazily, so the hook imports it first")


def value(full):
    """The object the glue entry ``full`` stands for."""
    target = GLUE[full][0]
    if isinstance(target, str):
        module, _, name = target.rpartition(".")
        return getattr(importlib.import_module(module), name)
    return target


# -- Keras's per-op Operation classes ---------------------------------------------------------
# Each Keras op ``f`` has an internal Operation subclass ``F`` (``knp.Add()(x, y)``): built with
# the op's non-tensor arguments, called with its tensor arguments. Users call ``keras.ops.f``;
# kerasrs has no per-op class, so ``F(*a, **k)(*t, **kt)`` calls ``kerasrs.ops.f(*t, **kt,
# **k)`` with ``a`` bound to the names of ``F.__init__``'s parameters (read from the wheel's
# source; the Operation's own ``name=`` is dropped). ``symbolic_call`` and
# ``compute_output_spec`` call the same function (kerasrs answers symbolic inputs itself).
OP_CLASS_REASON = ("Keras's internal per-op Operation classes (knp.Add, kimage.Resize...): "
                   "kerasrs.ops.<op> called with the class's init arguments as keywords")


@functools.lru_cache(maxsize=None)
def _op_classes(module):
    """``{ClassName: (function name, [init parameter names])}`` for a ``keras.src.ops`` module."""
    from keras_hook import _exists

    path = _exists(module)
    if path is None:
        return {}
    tree = ast.parse(pathlib.Path(path).read_text(encoding="utf-8"))
    classes = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(
                getattr(b, "id", getattr(b, "attr", None)) == "Operation" for b in node.bases):
            params = []
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    params = [a.arg for a in item.args.args[1:] + item.args.kwonlyargs]
            classes[node.name] = [None, params]
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and \
                        sub.func.id in classes and classes[sub.func.id][0] is None:
                    classes[sub.func.id][0] = node.name
    return {k: tuple(v) for k, v in classes.items() if v[0] is not None}


def _snake(name):
    return re.sub(r"(?<!^)(?=[A-Z][a-z])", "_", name).lower()


def op_class(module, name):
    """A stand-in class for the Operation class ``module.name``, or None if it is not one."""
    if not module.startswith("keras.src.ops.") or module.endswith("_test"):
        return None
    found = _op_classes(module).get(name)
    if found is None:
        return None
    fn_name, params = found
    public = module.rsplit(".", 1)[-1]
    fn = None
    for namespace in ("kerasrs.ops", f"kerasrs.ops.{public}"):
        try:
            fn = getattr(importlib.import_module(namespace), fn_name, None)
        except ImportError:
            fn = None
        if fn is not None:
            break
    if fn is None:
        return None
    return _make_op_class(name, fn, tuple(params))


def _make_op_class(name, fn, params):
    from kerasrs import Operation

    signature = inspect.signature(fn).parameters.values()
    variadic = any(p.kind is p.VAR_POSITIONAL for p in signature)
    positional = [p.name for p in signature if p.kind in (p.POSITIONAL_ONLY,
                                                          p.POSITIONAL_OR_KEYWORD)]
    def __init__(self, *args, **kwargs):
        kwargs.pop("name", None)
        bound = dict(zip([p for p in params if p != "name"], args))
        bound.update(kwargs)
        self._op_kwargs = bound
        Operation.__init__(self)

    def call(self, *args, **kwargs):
        # the call's positional arguments fill, in order, the parameters the init did not
        kwargs = {**kwargs, **self._op_kwargs}
        if variadic:  # einsum(subscripts, *operands): the named leading ones go first
            lead = [kwargs.pop(p) for p in positional if p in kwargs]
            return fn(*lead, *args, **kwargs)
        free = [p for p in positional if p not in kwargs]
        kwargs.update(zip(free, args))
        return fn(*args[len(free):], **kwargs)

    attrs = {"__init__": __init__, "call": call, "__call__": call, "symbolic_call": call,
             "compute_output_spec": call, "__doc__": f"glue: kerasrs.ops.{fn.__name__}"}
    return type(name, (Operation,), attrs)
