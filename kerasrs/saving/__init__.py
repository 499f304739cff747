"""Saving and loading models in Keras's file formats; the registry of user objects is re-exported
from `kerasrs.registry`.

Three files, the ones Keras 3 writes (``tests/fixtures/keras/FORMATS.md`` describes them):

* ``model.save("m.keras")``: zip of ``config.json``, ``metadata.json`` and ``model.weights.h5``;
* ``model.save("m.h5")`` (or ``.hdf5``): the legacy full-model HDF5 layout;
* ``model.save_weights("m.weights.h5")``: the Keras 3 weights-only layout.

`load_model` reads both full-model formats and `load_weights` all three (plus Keras 2 legacy
weights files), deciding by the file's content, not its name. Files written by Keras load here,
and files written here load in Keras. Architecture, weights, compile settings and the
optimizer's state (``iterations`` and slots) come back exactly, so training resumes bit for bit.

Every file is written to a temporary name in the target's folder and renamed into place
(`kerasrs.saving.atomic`), so a failed save never damages an existing file. Loading runs no code
from the file: there is no pickle, and a ``Lambda`` layer's Python bytecode is refused under
``safe_mode=True``. A ``.keras`` archive is never extracted to disk, and one whose members would
inflate beyond ``kerasrs.saving.keras_zip.MAX_MEMBER_BYTES`` (64 MiB; a stored weights member is
exempt) is refused before any member is read.
"""

import contextlib
import json
import os
import warnings

from kerasrs.registry import (CustomObjectScope, custom_object_scope,  # noqa: F401
                              get_custom_objects, get_registered_name, get_registered_object,
                              register_keras_serializable, serialize_keras_object)
from kerasrs.saving import atomic, keras_zip, legacy_h5, model_config, weights_h5
from kerasrs.saving.file_editor import KerasFileEditor  # noqa: F401
from kerasrs.saving.npz import load_npz, save_npz  # noqa: F401
from kerasrs.saving.serialization_lib import deserialize_keras_object  # noqa: F401

_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def _extension(filepath):
    name = os.fspath(filepath).lower()
    for ext in (".weights.h5", ".keras", ".h5", ".hdf5"):
        if name.endswith(ext):
            return ext
    return os.path.splitext(name)[1]


def save_model(model, filepath, overwrite=True, include_optimizer=True, **kwargs):
    """Save the architecture, weights, compile settings and optimizer state of ``model``.

    Args:
        model: a built `kerasrs.Model`.
        filepath: path ending in ``.keras`` (Keras 3 archive) or ``.h5``/``.hdf5`` (legacy).
        overwrite: replace an existing file (else FileExistsError).
        include_optimizer: for ``.h5``: also write ``training_config`` and the optimizer state.
        **kwargs: ``zipped`` / ``save_format`` are accepted for Keras compatibility; only the
            default (zipped ``.keras``) is supported.

    Raises:
        ValueError: for another extension, or an unbuilt model.
        FileNotFoundError: if the folder does not exist.
        FileExistsError: if the file exists and ``overwrite`` is False.

    Example:
        >>> import tempfile
        >>> model = kerasrs.Sequential([kerasrs.Input((3,)), kerasrs.layers.Dense(2)])
        >>> path = os.path.join(tempfile.mkdtemp(), "model.keras")
        >>> kerasrs.saving.save_model(model, path)
        >>> kerasrs.models.load_model(path).output_shape
        (None, 2)
    """
    ext = _extension(filepath)
    _check_kwargs(kwargs, "save_model")
    if ext not in (".keras", ".h5", ".hdf5"):
        hint = " A .weights.h5 file holds weights only: use model.save_weights() for it." \
            if ext == ".weights.h5" else ""
        raise ValueError("save_model: invalid filepath extension for saving. Use a .keras "
                         f"extension (Keras 3 format) or .h5 / .hdf5 (legacy format).{hint} "
                         f"Received: filepath={os.fspath(filepath)!r}")
    _require_built(model, "save_model", filepath)
    with atomic.atomic_write(filepath, overwrite, "save_model") as tmp:
        if ext == ".keras":
            keras_zip.write(model, tmp)
        else:
            import h5py  # lazily, as everywhere in saving: `import kerasrs` does not load HDF5

            with h5py.File(tmp, "w") as h5file:
                legacy_h5.write_model(model, h5file, include_optimizer)


def _check_kwargs(kwargs, who):
    kwargs = {k: v for k, v in kwargs.items() if not (k == "zipped" and v in (None, True))
              and not (k == "save_format" and v in (None, "keras", "h5", "tf"))}
    if kwargs:
        raise TypeError(f"{who}: unsupported argument(s) {sorted(kwargs)}. Received: {kwargs}")


def _require_built(model, who, filepath):
    if not model.built and model.weights:  # its layers were built one by one: Keras saves too
        warnings.warn(f"{who}: model {model.name!r} has not been built yet (its layers have "
                      "weights, which are saved); build it by calling it on data to save its "
                      f"input shape too. Received: filepath={os.fspath(filepath)!r}",
                      stacklevel=3)
        return
    if not model.built or (not model.weights and not model.layers):
        raise ValueError(f"{who}: model {model.name!r} has not been built yet, so it has no "
                         "weights to save. Call it on data, call build(input_shape), or start "
                         f"it with an Input. Received: filepath={os.fspath(filepath)!r}")


def save_weights(model, filepath, overwrite=True):
    """Save the weights (and optimizer state) of ``model`` in the Keras 3 ``.weights.h5`` layout.

    Raises:
        ValueError: if ``filepath`` does not end in ``.weights.h5`` (as Keras 3), or the model
            is not built.
        FileNotFoundError / FileExistsError: as `save_model`.
    """
    if not os.fspath(filepath).endswith(".weights.h5"):
        raise ValueError("save_weights: the filename must end in `.weights.h5` (the Keras 3 "
                         "weights format; use model.save('x.h5') for the legacy layout). "
                         f"Received: filepath={os.fspath(filepath)!r}")
    _require_built(model, "save_weights", filepath)
    import h5py

    with atomic.atomic_write(filepath, overwrite, "save_weights") as tmp:
        with h5py.File(tmp, "w") as h5file:
            weights_h5.write(model, h5file)


def _file_kind(filepath, who):
    """"hdf5" or "zip", from the file's first bytes.

    Raises:
        FileNotFoundError: if there is no such file.
        ValueError: for an empty file or one that is neither HDF5 nor zip.
    """
    filepath = os.fspath(filepath)
    if not os.path.exists(filepath):
        folder = os.path.dirname(os.path.abspath(filepath))
        where = "" if os.path.isdir(folder) else f" (the folder {folder!r} does not exist)"
        raise FileNotFoundError(f"{who}: no file at {filepath!r}{where}. Received: "
                                f"filepath={filepath!r}")
    if os.path.isdir(filepath):
        raise IsADirectoryError(f"{who}: {filepath!r} is a folder, not a model file. Received: "
                                f"filepath={filepath!r}")
    with open(filepath, "rb") as f:
        head = f.read(8)
    if head == _HDF5_SIGNATURE:
        return "hdf5"
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    import h5py

    if head and h5py.is_hdf5(filepath):  # an HDF5 file with a user block
        return "hdf5"
    what = "is empty" if not head else "is neither an HDF5 file (.h5, .weights.h5) nor a " \
        ".keras zip archive"
    raise ValueError(f"{who}: {filepath!r} {what}, so it is not a Keras model or weights file. "
                     f"Received: first bytes {head!r}")


def _open_h5(filepath, who):
    import h5py

    try:
        return h5py.File(filepath, "r")
    except OSError as e:
        raise ValueError(f"{who}: {os.fspath(filepath)!r} cannot be read: the HDF5 file is "
                         f"truncated or corrupt ({e}). Received: filepath="
                         f"{os.fspath(filepath)!r}") from e


def _reading(who, filepath):
    """Turn low-level read failures inside a file into one clear ValueError."""
    @contextlib.contextmanager
    def guard():
        try:
            yield
        except (OSError, RuntimeError) as e:
            if isinstance(e, (FileNotFoundError, IsADirectoryError)):
                raise
            raise ValueError(f"{who}: reading {os.fspath(filepath)!r} failed; the file is "
                             f"corrupt or truncated ({type(e).__name__}: {e}). Received: "
                             f"filepath={os.fspath(filepath)!r}") from e

    return guard()


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """A model from a ``.keras`` or legacy ``.h5`` file (by Keras or kerasrs).

    Args:
        filepath: str or path-like.
        custom_objects: dict ``name -> class or function`` for user objects that were not
            registered with `register_keras_serializable`.
        compile: compile the model as it was compiled when saved, and restore the optimizer's
            state, so that ``fit`` continues exactly where it stopped.
        safe_mode: refuse Python bytecode (lambdas in `Lambda` layers) and functions from
            unregistered modules.

    Returns:
        The model (compiled when ``compile`` and the file has compile settings).

    Raises:
        FileNotFoundError: if there is no such file.
        ValueError: for a corrupt or unknown file, a ``.keras`` member that inflates beyond
            ``keras_zip.MAX_MEMBER_BYTES`` (naming it and its sizes), an unknown class (naming
            it and saying how to register it), refused bytecode, or weights that do not fit.
    """
    kind = _file_kind(filepath, "load_model")
    with _reading("load_model", filepath):
        if kind == "zip":
            return keras_zip.load_model(os.fspath(filepath), custom_objects, compile, safe_mode)
        with _open_h5(filepath, "load_model") as h5file:
            return _load_legacy_model(h5file, os.fspath(filepath), custom_objects, compile,
                                      safe_mode)


def _load_legacy_model(h5file, filepath, custom_objects, compile, safe_mode):
    where = repr(filepath)
    config = legacy_h5.read_json_attr(h5file, "model_config", where)
    if config is None:
        hint = " It looks like a weights-only file: build the model and use load_weights." \
            if "layers" in h5file or "layer_names" in h5file.attrs else ""
        raise ValueError(f"load_model: no model config found in the file at {filepath!r}.{hint} "
                         f"Received: attributes {sorted(h5file.attrs)}")
    if "model_weights" not in h5file:
        raise ValueError(f"load_model: the file at {filepath!r} has a model config but no "
                         "'model_weights' group, so its weights are missing. Received: groups "
                         f"{sorted(h5file.keys())}")
    model = model_config.model_from_config(config, custom_objects, safe_mode)
    legacy_h5.load_weights(model, h5file, where=where, who="load_model")
    training = legacy_h5.read_json_attr(h5file, "training_config", where) if compile else None
    if training is not None:
        model.compile(**model_config.compile_args(training, custom_objects, safe_mode))
        legacy_h5.load_optimizer_weights(model, h5file, where)
    return model


def load_weights(model, filepath, skip_mismatch=False, by_name=False, **kwargs):
    """Load weights into a built ``model`` from any Keras file, chosen by content.

    * ``.weights.h5`` (Keras 3): matched by object path (``layers/dense/vars``), including the
      optimizer state when the model is compiled and the file has one.
    * ``.keras``: the weights inside the archive, the same way.
    * legacy ``.h5`` (full model or Keras 2 weights-only): by position as Keras, or by layer
      name with ``by_name=True`` (layers without a partner are skipped).

    Args:
        skip_mismatch: load every layer that fits and skip (with a warning) the others.
            Without it, any layer that does not fit raises and nothing is loaded.
        by_name: legacy ``.h5`` only.

    Raises:
        FileNotFoundError: if there is no such file.
        ValueError: for a corrupt or unknown file, ``by_name`` with a Keras 3 file, or weights
            that do not fit (naming the layer, the weight and both shapes).
    """
    kwargs.pop("options", None)
    if kwargs:
        raise TypeError(f"load_weights: unexpected argument(s) {sorted(kwargs)}. Received: "
                        f"{kwargs}")
    kind = _file_kind(filepath, "load_weights")
    where = repr(os.fspath(filepath))
    if not model.built:
        raise ValueError(f"load_weights: model {model.name!r} has not been built yet, so it "
                         "has no weights to load into. Call it on data, call build(input_shape), "
                         f"or start it with an Input. Received: filepath={where}")
    with _reading("load_weights", filepath):
        if kind == "zip":
            if by_name:
                raise ValueError(_BY_NAME_ERROR + f"Received: filepath={where}")
            keras_zip.load_weights(model, os.fspath(filepath), skip_mismatch)
            return
        with _open_h5(filepath, "load_weights") as h5file:
            legacy = "model_weights" in h5file or "layer_names" in h5file.attrs or \
                "layer_names0" in h5file.attrs
            if legacy:
                legacy_h5.load_weights(model, h5file, skip_mismatch, by_name, where)
            elif by_name:
                raise ValueError(_BY_NAME_ERROR + f"Received: filepath={where}")
            else:
                weights_h5.load(model, h5file, skip_mismatch, source=where)


_BY_NAME_ERROR = ("load_weights: `by_name` only supports loading legacy '.h5' or '.hdf5' files; "
                  "Keras 3 weights files match layers by their position under class-based keys "
                  "(layers/dense, layers/dense_1), not by layer name. ")


def model_from_json(json_string, custom_objects=None, safe_mode=True):
    """A new (unbuilt unless its input is known) model from `Model.to_json`'s string."""
    try:
        config = json.loads(json_string)
    except (TypeError, ValueError) as e:
        raise ValueError(f"model_from_json: the string is not valid JSON ({e}). Received: "
                         f"{str(json_string)[:100]!r}") from e
    return model_config.model_from_config(config, custom_objects, safe_mode, "model_from_json")


def to_json(model, **kwargs):
    """The model's Keras 3 config as a JSON string (Keras's `Model.to_json`)."""
    return model_config.to_json(model, **kwargs)


__all__ = ["KerasFileEditor", "save_model", "load_model", "save_weights", "load_weights",
           "save_npz", "load_npz",
           "model_from_json", "to_json", "register_keras_serializable", "get_registered_name",
           "get_registered_object", "get_custom_objects", "custom_object_scope",
           "CustomObjectScope", "serialize_keras_object", "deserialize_keras_object"]
