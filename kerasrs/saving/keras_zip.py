"""The Keras 3 ``.keras`` archive: a zip of metadata.json, config.json and model.weights.h5.

Entries are written in that order and *stored* (no compression), as Keras writes them
(``tests/fixtures/keras/FORMATS.md`` section 4):

* ``metadata.json``: ``{"keras_version": ..., "date_saved": "%Y-%m-%d@%H:%M:%S"}`` (optional
  when reading);
* ``config.json``: the Keras 3 model config plus ``compile_config`` (``{}`` when the model was
  never compiled);
* ``model.weights.h5``: the `kerasrs.saving.weights_h5` layout, optimizer state included.

Reading is bounded: before any member is read, every member's inflated size (from the zip's
directory) is checked against `MAX_MEMBER_BYTES`, so a zip bomb is refused, not unpacked. The
weights member is exempt only when it is *stored*, as Keras writes it: then reading it costs no
more than its own bytes in the file, however large the model. Members are read into memory and
never extracted, so a member name such as ``../x`` never becomes a file.
"""

import datetime
import io
import json
import zipfile

from kerasrs.version import __version__ as KERASRS_VERSION  # kerasrs.version: the function
from kerasrs.saving import legacy_h5, model_config, weights_h5

WEIGHTS_NAME = "model.weights.h5"

# The most bytes one member of a `.keras` archive may inflate to (64 MiB). A real config.json is
# kilobytes; raise this (``kerasrs.saving.keras_zip.MAX_MEMBER_BYTES = ...``) only for a trusted
# file, e.g. a huge model whose weights were re-zipped with compression.
MAX_MEMBER_BYTES = 64 * 2**20
_CHUNK = 2**20


def write(model, filepath):
    """Write ``model`` to ``filepath`` (an open temporary path; see `kerasrs.saving.atomic`)."""
    import h5py  # lazily, as everywhere in saving: `import kerasrs` does not load HDF5

    config = model_config.model_to_config(model)
    config["compile_config"] = model_config.compile_config(model)
    metadata = {"keras_version": legacy_h5.KERAS_VERSION, "kerasrs_version": KERASRS_VERSION,
                "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")}
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as h5file:
        weights_h5.write(model, h5file)
    with zipfile.ZipFile(filepath, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("metadata.json", json.dumps(metadata))
        archive.writestr("config.json", json.dumps(config))
        archive.writestr(WEIGHTS_NAME, buffer.getvalue())


def open_archive(filepath, who="load_model"):
    """The open archive, its member sizes checked with `check_sizes`."""
    try:
        archive = zipfile.ZipFile(filepath, "r")
    except (zipfile.BadZipFile, EOFError, OSError) as e:
        raise ValueError(f"{who}: {filepath!r} is not a readable .keras archive: the zip "
                         f"file is truncated or corrupt ({e}). Received: filepath="
                         f"{filepath!r}") from e
    try:
        check_sizes(archive, filepath, who)
    except BaseException:
        archive.close()
        raise
    return archive


def check_sizes(archive, filepath, who="load_model"):
    """Refuse the archive if a member would inflate beyond `MAX_MEMBER_BYTES`, before reading it.

    The zip reader never returns more than a member's recorded size, so this bounds every read.

    Raises:
        ValueError: naming the member, its compressed and inflated sizes and the bound.
    """
    for info in archive.infolist():
        if info.filename == WEIGHTS_NAME and info.compress_type == zipfile.ZIP_STORED:
            continue  # read as stored: no more bytes than the file itself holds
        if info.file_size > MAX_MEMBER_BYTES:
            raise ValueError(
                f"{who}: the member {info.filename!r} of {filepath!r} inflates to "
                f"{info.file_size} bytes from {info.compress_size} compressed bytes, more than "
                f"the bound of {MAX_MEMBER_BYTES} bytes; the archive was refused unread (a "
                "damaged file or a zip bomb). If you trust it, raise "
                "kerasrs.saving.keras_zip.MAX_MEMBER_BYTES. Received: filepath="
                f"{filepath!r}")


def read_member(archive, name, filepath):
    """The member's bytes, read in chunks: `ZipFile.read` inflates a member in one call, as far
    as its data goes, even when the directory understates its size."""
    try:
        with archive.open(name) as member:  # stops at the recorded size, checks the CRC there
            return b"".join(iter(lambda: member.read(_CHUNK), b""))
    except KeyError:
        return None
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as e:  # CRC errors, truncation
        raise ValueError(f"load_model: the entry {name!r} of {filepath!r} cannot be read: the "
                         f"archive is corrupt ({e}). Received: filepath={filepath!r}") from e


def _weights(archive, filepath):
    import h5py

    data = read_member(archive, WEIGHTS_NAME, filepath)
    if data is None:
        raise ValueError(f"load_model: {filepath!r} has no {WEIGHTS_NAME} entry, so its "
                         f"weights are missing. Received: entries {archive.namelist()}")
    try:
        return h5py.File(io.BytesIO(data), "r")
    except OSError as e:
        raise ValueError(f"load_model: the {WEIGHTS_NAME} inside {filepath!r} is not a "
                         f"readable HDF5 file ({e}). Received: filepath={filepath!r}") from e


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """Rebuild, compile (when asked and compiled before) and fill a model from a ``.keras`` file.

    Raises:
        ValueError: for a corrupt archive, a missing ``config.json`` or weights, an unknown
            class, or weights that do not fit.
    """
    with open_archive(filepath) as archive:
        raw = read_member(archive, "config.json", filepath)
        if raw is None:
            raise ValueError(f"load_model: {filepath!r} has no config.json entry, so it is not a "
                             f".keras model archive. Received: entries {archive.namelist()}")
        try:
            config = json.loads(raw.decode("utf8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise ValueError(f"load_model: config.json in {filepath!r} is not valid JSON ({e}). "
                             f"The file is corrupt. Received: filepath={filepath!r}") from e
        model = model_config.model_from_config(config, custom_objects, safe_mode, "load_model")
        compile_config = config.get("compile_config") or {}
        if compile and compile_config:  # the optimizer is built by the load if it has slots
            model.compile(**model_config.compile_args(compile_config, custom_objects, safe_mode))
        with _weights(archive, filepath) as h5file:
            weights_h5.load(model, h5file, source=repr(filepath))
    return model


def load_weights(model, filepath, skip_mismatch=False):
    """Load only the weights (and optimizer state) of a ``.keras`` file into ``model``."""
    with open_archive(filepath, "load_weights") as archive, _weights(archive, filepath) as h5file:
        weights_h5.load(model, h5file, skip_mismatch, source=repr(filepath))
