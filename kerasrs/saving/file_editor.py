"""`KerasFileEditor`: inspect and edit the weights stored in a ``.keras`` or ``.weights.h5`` file
without building the model (Keras 3's ``keras.saving.KerasFileEditor``).

Weights are held as ``weights_dict``: object path (``"layers/dense"``) -> ``{index: array}``,
the ``<path>/vars/<i>`` datasets of the file (see `kerasrs.saving.weights_h5`).
"""

import io
import zipfile

import numpy as np

from kerasrs.saving import atomic, keras_zip, weights_h5


class KerasFileEditor:
    """Load ``filepath`` (a ``.keras`` archive or a ``.weights.h5`` file) for editing.

    Raises:
        ValueError: for another file type.
    """

    def __init__(self, filepath):
        import h5py  # lazily, as everywhere in saving: `import kerasrs` does not load HDF5

        self.filepath = str(filepath)
        self._members = {}
        if self.filepath.endswith(".keras"):
            with keras_zip.open_archive(self.filepath, "KerasFileEditor") as archive:
                self._members = {n: keras_zip.read_member(archive, n, self.filepath)
                                 for n in archive.namelist() if n != keras_zip.WEIGHTS_NAME}
                data = keras_zip.read_member(archive, keras_zip.WEIGHTS_NAME, self.filepath)
            with h5py.File(io.BytesIO(data), "r") as f:
                self.weights_dict = _read(f)
        elif self.filepath.endswith(".weights.h5"):
            with h5py.File(self.filepath, "r") as f:
                self.weights_dict = _read(f)
        else:
            raise ValueError(f"KerasFileEditor: expected a .keras or .weights.h5 file. "
                             f"Received: {self.filepath!r}")

    def summary(self):
        """Print every object path with its weights' shapes and dtypes."""
        for path, weights in self.weights_dict.items():
            shapes = ", ".join(f"{k}: {v.shape} {v.dtype}" for k, v in weights.items())
            print(f"{path or '(model)'}: {shapes}")

    def compare(self, reference_model):
        """Compare the stored weights with ``reference_model``'s, path by path and shape by
        shape. Returns ``{"status", "error_count", "match_count"}`` and prints each mismatch."""
        reference = {path: {str(i): np.asarray(v.numpy()) for i, v in
                            enumerate(weights_h5.own_variables(obj))}
                     for path, obj in weights_h5.walk(reference_model)}
        errors = matches = 0
        for path in sorted(set(reference) | set(self.weights_dict)):
            mine, theirs = self.weights_dict.get(path), reference.get(path)
            if mine is None or theirs is None:
                print(f"{path}: only in the {'model' if mine is None else 'file'}")
                errors += 1
                continue
            shapes_a = [v.shape for _, v in sorted(mine.items())]
            shapes_b = [v.shape for _, v in sorted(theirs.items())]
            if shapes_a != shapes_b:
                print(f"{path}: file has {shapes_a}, model has {shapes_b}")
                errors += 1
            else:
                matches += 1
        return {"status": "error" if errors else "success", "error_count": errors,
                "match_count": matches}

    def _path(self, object_name):
        if object_name in self.weights_dict:
            return object_name
        hits = [p for p in self.weights_dict if p.rsplit("/", 1)[-1] == object_name]
        if len(hits) != 1:
            raise ValueError(f"KerasFileEditor: object {object_name!r} matches {len(hits)} "
                             f"paths; use one of {sorted(self.weights_dict)}")
        return hits[0]

    def rename_object(self, object_name, new_name):
        """Rename an object (by path or last name); objects below it move with it."""
        old = self._path(object_name)
        new = old.rsplit("/", 1)[0] + "/" + new_name if "/" in old else new_name
        self.weights_dict = {(new + p[len(old):] if p == old or p.startswith(old + "/") else p):
                             w for p, w in self.weights_dict.items()}

    def delete_object(self, object_name):
        """Remove an object and everything below it."""
        old = self._path(object_name)
        self.weights_dict = {p: w for p, w in self.weights_dict.items()
                             if not (p == old or p.startswith(old + "/"))}

    def add_object(self, object_path, weights):
        """Add ``object_path`` with ``weights`` (a dict name -> array, or a list).

        Raises:
            ValueError: if the path exists.
        """
        if object_path in self.weights_dict:
            raise ValueError(f"KerasFileEditor: {object_path!r} already exists.")
        items = weights.items() if isinstance(weights, dict) else enumerate(weights)
        self.weights_dict[object_path] = {str(k): np.asarray(v) for k, v in items}

    def delete_weight(self, object_name, weight_name):
        """Remove one weight (by its index name, e.g. "1") of an object."""
        del self.weights_dict[self._path(object_name)][str(weight_name)]

    def add_weights(self, object_name, weights):
        """Add weights (dict name -> array) to an existing object."""
        target = self.weights_dict[self._path(object_name)]
        for k, v in weights.items():
            if str(k) in target:
                raise ValueError(f"KerasFileEditor: weight {k!r} of {object_name!r} exists.")
            target[str(k)] = np.asarray(v)

    def save(self, filepath):
        """Write a ``.keras`` archive with the original config and the edited weights
        (atomically)."""
        if not self._members:
            raise ValueError("KerasFileEditor.save: the source was a weights file; use "
                             "resave_weights.")
        with atomic.atomic_write(filepath, who="KerasFileEditor.save") as tmp:
            with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED) as archive:
                for name, data in self._members.items():
                    archive.writestr(name, data)
                archive.writestr(keras_zip.WEIGHTS_NAME, self._weights_bytes())

    def resave_weights(self, filepath):
        """Write the edited weights as a ``.weights.h5`` file (atomically)."""
        with atomic.atomic_write(filepath, who="KerasFileEditor.resave_weights") as tmp:
            with open(tmp, "wb") as f:
                f.write(self._weights_bytes())

    def _weights_bytes(self):
        import h5py

        buffer = io.BytesIO()
        with h5py.File(buffer, "w") as f:
            for path, weights in self.weights_dict.items():
                group = f.require_group(f"{path}/vars" if path else "vars")
                for name, value in weights.items():
                    group.create_dataset(name, data=value)
        return buffer.getvalue()


def _read(h5file):
    import h5py

    out = {}

    def visit(name, obj):
        if isinstance(obj, h5py.Group) and (name == "vars" or name.endswith("/vars")):
            path = name[:-len("/vars")] if name != "vars" else ""
            out[path] = {k: np.asarray(obj[k]) for k in sorted(obj.keys(), key=_order)
                         if isinstance(obj[k], h5py.Dataset)}

    h5file.visititems(visit)
    if "vars" in h5file:
        visit("vars", h5file["vars"])
    return out


def _order(key):
    return (0, int(key)) if key.isdigit() else (1, key)
