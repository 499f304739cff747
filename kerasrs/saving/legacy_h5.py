"""The legacy Keras HDF5 layout: full models (``model.save("m.h5")``) and legacy weights.

Layout (``tests/fixtures/keras/FORMATS.md`` section 1; Keras 3.15
``keras/src/legacy/saving/legacy_h5_format.py``)::

    /                     @backend, @keras_version (UTF-8 str), @model_config (ASCII JSON),
                          [@training_config (ASCII JSON), only when compiled]
    /model_weights        @backend, @keras_version, @layer_names (ASCII strings, model.layers order)
    /model_weights/<layer name>            @weight_names (ASCII strings; float64 (0,) when empty)
    /model_weights/<layer name>/<weight name>   one dataset per weight; the weight name is the
                          variable path (``sequential/dense/kernel``), so "/" makes subgroups
    /model_weights/top_level_model_weights      the model's own variables (normally none)
    [/optimizer_weights   @weight_names (optimizer variable paths), datasets at those paths]

Weights load **by position**, as Keras loads them: the model's layers that have weights, in
``model.layers`` order, are paired with the file's layers whose ``weight_names`` is non-empty,
in ``layer_names`` order; each layer's weights follow ``weight_names``. ``by_name=True`` pairs
layers by name instead and skips layers that have no partner. Unlike Keras, nothing is assigned
when anything does not fit, errors name the layer, the weight and both shapes, and
``skip_mismatch=True`` skips whole layers (Keras skips single arrays), so that no layer is ever
left half-loaded.
"""

import json
import warnings

import numpy as np

from kerasrs import backend as backend_module
from kerasrs.version import __version__ as KERASRS_VERSION  # kerasrs.version: the function
from kerasrs.saving import model_config, weights_h5

KERAS_VERSION = "3.15.1"  # the Keras release whose layout these files follow
HDF5_OBJECT_HEADER_LIMIT = 64512  # bytes an attribute may hold before Keras splits it


# -- attributes -----------------------------------------------------------------------------------
def write_string_list(group, name, strings):
    """Write a list of strings as Keras does: ASCII byte strings (an empty list becomes a
    float64 array of shape (0,)); lists longer than an HDF5 attribute can hold are split into
    ``name0``, ``name1``, ..."""
    data = [s.encode("utf8") for s in strings]
    if not data:
        group.attrs[name] = np.zeros((0,), dtype="float64")
        return
    width = max(len(s) for s in data)  # Keras sizes chunks as fixed-width NumPy byte arrays
    n = 1
    while -(-len(data) // n) * width > HDF5_OBJECT_HEADER_LIMIT:
        n += 1
    if n == 1:
        group.attrs[name] = data
        return
    import h5py  # lazily, as everywhere in saving: `import kerasrs` does not load HDF5

    for i, chunk in enumerate(np.array_split(np.array(data, dtype=object), n)):
        group.attrs.create(f"{name}{i}", chunk, dtype=h5py.string_dtype("ascii"))


def read_string_list(group, name):
    """Read a string-list attribute (joining ``name0``, ``name1``, ... chunks); bytes are
    decoded and an empty array of any dtype gives ``[]``."""
    if name in group.attrs:
        raw = [group.attrs[name]]
    else:
        raw, i = [], 0
        while f"{name}{i}" in group.attrs:
            raw.append(group.attrs[f"{name}{i}"])
            i += 1
    out = []
    for values in raw:
        values = np.atleast_1d(values)
        out.extend(v.decode("utf8") if isinstance(v, bytes) else str(v) for v in values)
    return out


def read_string(attrs, name):
    value = attrs.get(name)
    if isinstance(value, bytes):
        return value.decode("utf8")
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value.item()
        return value.decode("utf8") if isinstance(value, bytes) else value
    return value


# -- writing --------------------------------------------------------------------------------------
def legacy_weights(layer):
    """A layer's weights in legacy file order: trainable ones, then non-trainable ones."""
    return list(layer.trainable_weights) + list(layer.non_trainable_weights)


def _unique_names(variables):
    """Variable paths, with ``_1``, ``_2`` ... added where two paths collide."""
    seen, out = {}, []
    for var in variables:
        name = str(getattr(var, "path", None) or var.name)
        if name in seen:
            seen[name] += 1
            name = f"{name}_{seen[name]}"
        else:
            seen[name] = 0
        out.append(name)
    return out


def _write_weights(group, variables):
    names = _unique_names(variables)
    write_string_list(group, "weight_names", names)
    for name, var in zip(names, variables):
        group.create_dataset(name, data=np.asarray(var.numpy()))


def write_model_weights(group, model, backend_name):
    """The ``model_weights`` group (or a Keras 2 style weights-only root)."""
    write_string_list(group, "layer_names", [layer.name for layer in model.layers])
    group.attrs["backend"] = backend_name.encode("utf8")
    group.attrs["keras_version"] = KERAS_VERSION.encode("utf8")
    for layer in sorted(model.layers, key=lambda x: x.name):
        _write_weights(group.create_group(layer.name), legacy_weights(layer))
    _write_weights(group.create_group("top_level_model_weights"), _top_level_weights(model))


def _top_level_weights(model):
    return list(model._trainable_variables) + list(model._non_trainable_variables)


def write_model(model, h5file, include_optimizer=True):
    """Write the whole legacy full-model layout into an open, empty ``h5py.File``."""
    backend_name = backend_module.backend()
    h5file.attrs["backend"] = backend_name
    h5file.attrs["keras_version"] = KERAS_VERSION
    h5file.attrs["kerasrs_version"] = KERASRS_VERSION
    h5file.attrs["model_config"] = json.dumps(model_config.legacy_model_config(model)).encode(
        "utf8")
    training = model_config.training_config(model) if include_optimizer else None
    if training is not None:
        h5file.attrs["training_config"] = json.dumps(training).encode("utf8")
    write_model_weights(h5file.create_group("model_weights"), model, backend_name)
    optimizer = getattr(model, "optimizer", None)
    if training is not None and optimizer is not None and optimizer.variables:
        group = h5file.create_group("optimizer_weights")
        variables = optimizer.variables
        names = _unique_names(variables)
        write_string_list(group, "weight_names", names)
        for i, (name, var) in enumerate(zip(names, variables)):
            value = np.asarray(var.numpy())
            if i == 0 and value.dtype.kind == "i":
                value = value.astype("int32")  # Keras's iteration counter is int32
            group.create_dataset(name, data=value)


# -- reading weights ------------------------------------------------------------------------------
def weights_root(h5file, who="load_weights"):
    """The group holding ``layer_names``: the root of a Keras 2 weights file, else
    ``model_weights``.

    Raises:
        ValueError: if the file has neither.
    """
    if "layer_names" in h5file.attrs or "layer_names0" in h5file.attrs:
        return h5file
    if "model_weights" in h5file:
        return h5file["model_weights"]
    raise ValueError(f"{who}: the HDF5 file has no 'model_weights' group and no "
                     "'layer_names' attribute, so it is not a Keras legacy weights file. "
                     f"Received: groups {sorted(h5file.keys())}")


def _stored(group, name, where, who="load_weights"):
    """The datasets named by a layer group's ``weight_names``."""
    layer_group = group.get(name)
    if layer_group is None:
        raise ValueError(f"{who}: the file lists layer {name!r} in 'layer_names' but has "
                         f"no group for it. Received: {where}")
    names = read_string_list(layer_group, "weight_names")
    arrays = []
    for weight_name in names:
        if weight_name not in layer_group:
            raise ValueError(f"{who}: layer {name!r} lists the weight {weight_name!r} in "
                             f"'weight_names' but the file has no such dataset. Received: {where}")
        arrays.append(layer_group[weight_name])
    return names, arrays


def _match_layer(layer, file_name, arrays, index, problems, assignments):
    variables = legacy_weights(layer)
    label = f"layer #{index} {layer.name!r} (file layer {file_name!r})"
    if len(arrays) != len(variables):
        problems.append((layer, f"{label} expects {len(variables)} weights "
                                f"{[v.path for v in variables]}, the file has {len(arrays)}."))
        return
    bad = [f"weight {v.path!r} expects shape {tuple(v.shape)}, the file has shape "
           f"{tuple(a.shape)}" for v, a in zip(variables, arrays) if tuple(a.shape) != v.shape]
    if bad:
        problems.append((layer, f"{label}: " + "; ".join(bad) + "."))
    else:
        assignments.append((layer, list(zip(variables, arrays))))


def plan_load(model, group, by_name=False, where="the file", who="load_weights"):
    """``(assignments, problems)`` pairing the file's layers with the model's (see module docs).
    ``who`` names the entry point in errors (``load_weights`` or ``load_model``).

    Raises:
        ValueError: for a layer-count mismatch in positional mode (nothing can be paired).
    """
    problems, assignments = [], []
    file_layers = read_string_list(group, "layer_names")
    stored = {name: _stored(group, name, where, who) for name in file_layers}
    if by_name:
        index = {}
        for layer in model.layers:
            index.setdefault(layer.name, []).append(layer)
        for k, name in enumerate(file_layers):
            for layer in index.get(name, []):
                _match_layer(layer, name, stored[name][1], k, problems, assignments)
    else:
        model_layers = [layer for layer in model.layers if legacy_weights(layer)]
        saved = [name for name in file_layers if stored[name][0]]
        if len(saved) != len(model_layers):
            raise ValueError(
                f"{who}: layer count mismatch: model {model.name!r} has "
                f"{len(model_layers)} layers with weights {[x.name for x in model_layers]}, "
                f"the file has {len(saved)} {saved}. Legacy .h5 weights load by position, so "
                "nothing was loaded (by_name=True pairs layers by name instead). Received: "
                f"{where}")
        for k, (layer, name) in enumerate(zip(model_layers, saved)):
            _match_layer(layer, name, stored[name][1], k, problems, assignments)
    if "top_level_model_weights" in group:
        _, arrays = _stored(group, "top_level_model_weights", where, who)
        own = _top_level_weights(model)
        if len(arrays) != len(own) or any(tuple(a.shape) != v.shape for v, a in zip(own, arrays)):
            problems.append((model, f"the top-level weights of model {model.name!r} do not fit "
                                    f"(model {len(own)}, file {len(arrays)})."))
        elif own:
            assignments.append((model, list(zip(own, arrays))))
    return assignments, problems


def load_weights(model, h5file, skip_mismatch=False, by_name=False, where="the file",
                 who="load_weights"):
    """Load legacy weights (``model_weights`` or a Keras 2 weights-only root) into ``model``.
    ``who`` is the entry point named in errors and warnings (``load_model`` from there).

    Raises:
        ValueError: for a layer-count mismatch, or (without ``skip_mismatch``) any layer that
            does not fit, naming the layer, the weight and both shapes; nothing is assigned then.
    """
    assignments, problems = plan_load(model, weights_root(h5file, who), by_name, where, who)
    if problems and not skip_mismatch:
        raise ValueError(f"{who}: " + " ".join(msg for _, msg in problems) +
                         f" Nothing was loaded (these would have loaded: "
                         f"{[obj.name for obj, _ in assignments]}). Pass skip_mismatch=True to "
                         f"load the other layers and skip these. Received: {where}")
    for _, msg in problems:
        warnings.warn(f"{who}: skipped loading {msg} It keeps its current weights.",
                      stacklevel=4)
    weights_h5.assign(assignments)


def load_optimizer_weights(model, h5file, where="the file"):
    """Restore ``optimizer_weights`` into the (compiled) model's optimizer, building it first.

    A state that does not fit the optimizer is skipped with a warning (as Keras does), so the
    model still loads; training then starts from a fresh optimizer state.
    """
    group = h5file.get("optimizer_weights")
    optimizer = getattr(model, "optimizer", None)
    if group is None or optimizer is None:
        return
    names = read_string_list(group, "weight_names")
    if not optimizer.built and len(names) > len(optimizer.variables):
        optimizer.build(model.trainable_weights)
    variables = optimizer.variables
    arrays = [group.get(name) for name in names]
    if len(arrays) != len(variables) or any(a is None or tuple(a.shape) != v.shape
                                            for v, a in zip(variables, arrays)):
        warnings.warn(f"load_model: the optimizer state in {where} ({len(arrays)} arrays) does "
                      f"not fit the optimizer {optimizer.name!r} ({len(variables)} variables); "
                      "it was not restored, so training continues from a fresh optimizer state.",
                      stacklevel=4)
        return
    weights_h5.assign([(optimizer, list(zip(variables, arrays)))])


def read_json_attr(h5file, name, where):
    """A JSON attribute (bytes or str) decoded, or None when missing."""
    text = read_string(h5file.attrs, name)
    if text is None:
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError) as e:
        raise ValueError(f"load_model: the @{name} attribute of {where} is not valid JSON "
                         f"({e}). The file is corrupt. Received: {str(text)[:100]!r}") from e
