"""The Keras 3 weights layout (``.weights.h5``, and ``model.weights.h5`` inside ``.keras``).

Each object of the model (the model, each layer, each sublayer, the optimizer) owns one HDF5
group ``<path>/vars`` whose datasets ``"0"``, ``"1"``, ... are its own variables in order
(trainable first, then non-trainable, in creation order; the optimizer's ``variables``), with
the object's ``name`` as a UTF-8 ``@name`` attribute. Paths are Keras's, found the way Keras's
``saving_lib`` finds them:

* a Sequential or functional model's layers go under ``layers/<key>``, where the key is the
  snake_case class name made unique in model order (``dense``, ``dense_1``, ...), not the layer
  name;
* any other sublayer (or list/dict of them, or the optimizer) is found through the attribute
  that holds it: public attributes first, in sorted order, then private ones; its path is the
  attribute name (``layers/lstm/cell``, ``optimizer``);
* an object reachable twice is stored once, at the first path met.

Loading walks the *model's* objects and looks each path up in the file; extra groups in the
file are ignored, as in Keras. Source: Keras 3.15 ``keras/src/saving/saving_lib.py``
(``_save_state``, ``_walk_saveable``, ``_save_container_state``), and the observations in
``tests/fixtures/keras/FORMATS.md`` section 3.
"""

import warnings

import numpy as np

from kerasrs import optimizers
from kerasrs.layers import base, naming
from kerasrs.trainers import trainer

_SKIP_ATTRS = frozenset({"_layers", "_inbound_nodes", "_trainable_variables",
                         "_non_trainable_variables", "_regularized", "_losses", "history",
                         "_compiled_loss", "_compiled_metrics", "_loss_trackers",
                         "_train_variables", "_output_tensor", "_inputs_struct",
                         "_outputs_struct", "inputs", "outputs", "_execution_order", "_node_set"})


# Keras exposes some private sublayers through public properties, and since public attributes
# are walked first, Keras stores them under the public name (MultiHeadAttention's
# ``query_dense`` property returns ``_query_dense``). A kerasrs class without the property is
# given the same path here.
_KERAS_PUBLIC_ALIASES = {
    "MultiHeadAttention": {"_query_dense": "query_dense", "_key_dense": "key_dense",
                           "_value_dense": "value_dense", "_output_dense": "output_dense"},
}


def _name_key(name):
    """Keras's order: public attributes first, then private ones."""
    return f"~{name}" if name.startswith("_") else name


# Classes whose properties are machinery, not children (Keras skips ``dir(Model())`` alike), and
# the models whose layers are stored by class name (``layers/dense``). kerasrs.models adds
# `Model`, `Sequential` and `Functional` with `register_model_class`: models sit above saving.
_BASE_CLASSES = [base.Layer, trainer.Trainer, object]
_GRAPH_MODELS = []
_reference = []


def register_model_class(cls, graph=False):
    """Treat ``cls`` as a base class of models (its properties are not saved as children);
    ``graph``: a Sequential or functional model, whose ``layers`` go under ``layers/<key>``."""
    _BASE_CLASSES.append(cls)
    if graph:
        _GRAPH_MODELS.append(cls)


def _base_attributes():
    """Attributes every layer has (Keras skips ``dir(Layer())`` the same way) and the private
    state of the training machinery; the public ``optimizer`` stays a child, as in Keras."""
    if not _reference:
        layer = object.__new__(base.Layer)
        base.Layer.__init__(layer, name="reference")  # a given name takes no default-name counter
        train = object.__new__(trainer.Trainer)
        trainer.Trainer.__init__(train)
        _reference.append(set(vars(layer)) | {k for k in vars(train) if k.startswith("_")})
    return _reference[0]


def _attribute_names(obj):
    """Instance attributes plus properties defined by the object's own (non-base) classes."""
    skip = _base_attributes()
    names = {k for k in vars(obj) if k not in _SKIP_ATTRS and k not in skip
             and not k.startswith("__")}
    for cls in type(obj).__mro__:
        if cls in _BASE_CLASSES:
            continue
        names.update(k for k, v in vars(cls).items() if isinstance(v, property))
    if isinstance(obj, trainer.Trainer) and not _is_graph_model(obj):
        names.add("layers")  # a subclassed model: Keras meets `layers` among the attributes
    return names - _SKIP_ATTRS


def _is_graph_model(obj):
    return isinstance(obj, tuple(_GRAPH_MODELS))


def own_variables(obj):
    """The variables an object stores in its own ``vars`` group, in Keras's order (a layer's
    ``_saved_variables``: trainable then non-trainable, or a quantized layer's own order)."""
    if isinstance(obj, base.Layer):
        return [var for _, var in obj._saved_variables()]
    return list(obj.variables)


def _own_values(obj):
    """The arrays of ``obj``'s ``vars`` group: a layer's `save_own_variables` store (which may
    hold computed values, e.g. a kernel with its LoRA delta merged), else its variables."""
    variables = own_variables(obj)
    if not isinstance(obj, base.Layer):
        return [var.numpy() for var in variables]
    store = {}
    obj.save_own_variables(store)
    return [getattr(v, "numpy", lambda v=v: v)() for _, v in
            sorted(store.items(), key=lambda item: int(item[0]))]


def _is_saveable(value):
    # op layers (``x + 1`` in a functional model) have no weights and, as in Keras, no group
    return isinstance(value, (base.Layer, optimizers.Optimizer)) and \
        not getattr(value, "_op_layer", False)


def walk(model, include_optimizer=True):
    """``[(path, object)]`` for every saveable object under ``model``, in Keras's order.

    ``path`` is ``""`` for the model itself. The optimizer is included when the model has one
    and ``include_optimizer`` is True.
    """
    out, visited = [], set()

    def visit(obj, path):
        if id(obj) in visited:
            return
        visited.add(id(obj))
        out.append((path, obj))
        for attr, child in _children(obj, include_optimizer and path == ""):
            child_path = f"{path}/{attr}" if path else attr
            if _is_saveable(child):
                visit(child, child_path)
            elif isinstance(child, (list, tuple, dict)):
                container(child, child_path, set())

    def container(items, path, seen):
        if id(items) in seen:
            return
        seen.add(id(items))
        used = {}
        for item in (items.values() if isinstance(items, dict) else items):
            if _is_saveable(item):
                visit(item, f"{path}/{_unique(naming.to_snake_case(type(item).__name__), used)}")
            elif isinstance(item, (list, tuple, dict)):
                container(item, f"{path}/{_unique('container', used)}", seen)

    visit(model, "")
    return out


def _children(obj, include_optimizer):
    if not isinstance(obj, base.Layer):  # a LossScaleOptimizer's inner optimizer has a group too
        inner = getattr(obj, "inner_optimizer", None)
        return [("inner_optimizer", inner)] if inner is not None else []
    out = [("layers", obj.layers)] if _is_graph_model(obj) else []
    aliases = {private: public for private, public in
               _KERAS_PUBLIC_ALIASES.get(type(obj).__name__, {}).items()
               if not hasattr(type(obj), public)}
    names = {aliases.get(name, name): name for name in _attribute_names(obj)}
    for path_name in sorted(names, key=_name_key):
        if path_name == "optimizer" and not include_optimizer:
            continue
        try:
            value = getattr(obj, names[path_name])
        except Exception:  # noqa: BLE001 - as Keras: an attribute that fails is not a child
            continue
        out.append((path_name, value))
    return out


def _unique(name, used):
    if name in used:
        used[name] += 1
        return f"{name}_{used[name]}"
    used[name] = 0
    return name


def _vars_path(path):
    return f"{path}/vars" if path else "vars"


# -- writing --------------------------------------------------------------------------------------
def write(model, h5file, include_optimizer=True):
    """Write every object's variables into the open, empty ``h5py.File`` (see module docs)."""
    for path, obj in walk(model, include_optimizer):
        group = h5file.create_group(_vars_path(path))
        name = getattr(obj, "name", None)
        if isinstance(name, str):
            group.attrs["name"] = name
        for i, value in enumerate(_own_values(obj)):
            value = np.asarray(value)
            if path == "optimizer" and i == 0 and value.dtype.kind == "i":
                value = value.astype("int32")  # Keras's iteration counter is int32
            group.create_dataset(str(i), data=value)


# -- reading --------------------------------------------------------------------------------------
def _stored_arrays(h5file, path):
    """The datasets of ``<path>/vars`` in numeric order, or None when the group is missing."""
    group = h5file.get(_vars_path(path))
    if group is None or not hasattr(group, "keys"):
        return None
    keys = sorted((k for k in group.keys() if k.isdigit()), key=int)
    return [group[k] for k in keys]


def _describe(obj, path):
    return f"{type(obj).__name__} {obj.name!r} (file group '{_vars_path(path)}')"


def plan_load(model, h5file, build_optimizer=True):
    """Match the file's arrays to the model's variables without assigning anything.

    Returns:
        ``(assignments, problems, notes)``: ``assignments`` maps each loadable object to its
        ``[(variable, array)]``; ``problems`` lists ``(object, message)`` for objects that do
        not fit (missing, wrong count, wrong shape); ``notes`` are warnings that do not stop
        the load (an optimizer state that does not fit the optimizer).
    """
    assignments, problems, notes = [], [], []
    for path, obj in walk(model):
        variables = own_variables(obj)
        arrays = _stored_arrays(h5file, path)
        if isinstance(obj, optimizers.Optimizer):
            if arrays is None:
                continue  # no saved state: the optimizer keeps its own
            if build_optimizer and not obj.built and len(arrays) > len(variables):
                obj.build(model.trainable_weights)
                variables = own_variables(obj)
            if len(arrays) != len(variables):
                notes.append(f"the optimizer {obj.name!r} has {len(variables)} variables but the "
                             f"file stores {len(arrays)} ('optimizer/vars'); its state was not "
                             "loaded and training continues from a fresh optimizer state.")
                continue
        problem, pairs = _match(obj, path, variables, arrays or [])
        if problem:
            problems.append((obj, problem))
        elif pairs:
            assignments.append((obj, pairs))
    return assignments, problems, notes


def _match(obj, path, variables, arrays):
    """``(problem message or None, [(variable, array)])`` for one object."""
    if len(arrays) != len(variables):
        if not variables and not getattr(obj, "built", True):
            return (f"{_describe(obj, path)} was never built, so it has no weights, but the file "
                    f"stores {len(arrays)}. Build the model (call it on data) before loading."), []
        return (f"{_describe(obj, path)} expects {len(variables)} weights "
                f"{[v.path for v in variables]}, but the file stores {len(arrays)}."), []
    bad = [f"weight {var.path!r} expects shape {tuple(var.shape)}, the file has shape "
           f"{tuple(data.shape)}" for var, data in zip(variables, arrays)
           if tuple(data.shape) != tuple(var.shape)]
    if bad:
        return f"{_describe(obj, path)}: " + "; ".join(bad) + ".", []
    return None, list(zip(variables, arrays))


def load(model, h5file, skip_mismatch=False, source="the file"):
    """Load ``h5file`` (Keras 3 layout) into ``model``; see `plan_load` for the matching.

    Without ``skip_mismatch`` any problem raises before a single variable changes. With it,
    every object that fits is loaded and the others are left unchanged, with a warning.

    Raises:
        ValueError: naming every layer that does not fit (layer, weight, both shapes).
    """
    assignments, problems, notes = plan_load(model, h5file)
    if problems and not skip_mismatch:
        loaded = [obj.name for obj, _ in assignments]
        raise ValueError(f"load_weights: {len(problems)} object(s) of model {model.name!r} do "
                         f"not fit {source}: " + " ".join(msg for _, msg in problems) +
                         f" Nothing was loaded (these would have loaded: {loaded}). Pass "
                         "skip_mismatch=True to load the others and skip these. Received: "
                         f"{source}")
    for _, msg in problems:
        warnings.warn(f"load_weights: skipped loading {msg} It keeps its current weights.",
                      stacklevel=4)
    for note in notes:
        warnings.warn(f"load_weights: {note}", stacklevel=4)
    assign(assignments)


def _same(pairs, variables):
    return len(pairs) == len(variables) and all(v is w for (v, _), w in zip(pairs, variables))


def assign(assignments):
    """Assign ``[(object, [(variable, h5 dataset or array)])]``, casting to each dtype; a
    layer's own `load_own_variables` does it for the layer (LoRA kernels restart at zero)."""
    for obj, pairs in assignments:
        if isinstance(obj, base.Layer) and _same(pairs, own_variables(obj)):
            obj.load_own_variables({str(i): data for i, (_, data) in enumerate(pairs)})
            continue
        for var, data in pairs:
            var.assign(np.asarray(data[()]).astype(var.dtype, copy=False))
