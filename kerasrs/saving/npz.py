"""Plain NumPy ``.npz`` weight files: one array per weight, keyed by the weight's path.

``save_npz(model, "w.npz")`` stores ``model.weights`` in order under their paths
(``sequential/dense/kernel``); ``np.load("w.npz")`` reads it without kerasrs and without pickle.
"""

import numpy as np

from kerasrs.saving import atomic, legacy_h5


def save_npz(model, filepath, overwrite=True):
    """Write every weight of ``model`` to ``filepath`` (atomically), keyed by its path.

    Args:
        model: a built `Model` or `Layer`.
        filepath: str or path-like; ``.npz`` is added by NumPy when missing, so give it.
        overwrite: whether to replace an existing file.

    Raises:
        ValueError: if the model has no weights (not built).
    """
    weights = model.weights
    if not weights:
        raise ValueError(f"save_npz: model {model.name!r} has no weights (build it first by "
                         f"calling it on data). Received: filepath={filepath!r}")
    names = _unique_names(weights)
    arrays = {name: np.asarray(w.numpy()) for name, w in zip(names, weights)}
    with atomic.atomic_write(filepath, overwrite, "save_npz") as tmp:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)


def load_npz(model, filepath):
    """Load a `save_npz` file into ``model``.

    Arrays are matched by weight path. If the paths differ (a model built later in the session
    is named ``sequential_1``, so its paths differ) but the file has exactly one array per
    weight, in the same order and with the same shapes, they are matched by position instead.

    Raises:
        FileNotFoundError: if the file does not exist.
        ValueError: naming the weights that are missing or have another shape; nothing is
            assigned then.
    """
    try:
        data = np.load(filepath, allow_pickle=False)
    except FileNotFoundError:
        raise FileNotFoundError(f"load_npz: no file at {filepath!r}. Received: filepath="
                                f"{filepath!r}") from None
    except (ValueError, OSError) as e:
        raise ValueError(f"load_npz: {filepath!r} is not a readable .npz file ({e}). Received: "
                         f"filepath={filepath!r}") from e
    with data:
        weights = model.weights
        names = _unique_names(weights)
        keys = list(data.keys())
        if set(names) <= set(keys):
            pairs = [(w, data[name]) for w, name in zip(weights, names)]
        elif len(keys) == len(weights) and all(
                tuple(data[k].shape) == w.shape for k, w in zip(keys, weights)):
            pairs = [(w, data[k]) for w, k in zip(weights, keys)]
        else:
            missing = [n for n in names if n not in keys]
            raise ValueError(f"load_npz: {filepath!r} does not fit model {model.name!r}: "
                             f"weights {missing} are not in the file, and the file's "
                             f"{len(keys)} arrays do not match the model's {len(weights)} weights "
                             f"by position either. Received: keys {keys}")
        bad = [f"{w.path!r} expects shape {w.shape}, the file has {tuple(a.shape)}"
               for w, a in pairs if tuple(a.shape) != w.shape]
        if bad:
            raise ValueError(f"load_npz: {'; '.join(bad)}. Nothing was loaded. Received: "
                             f"filepath={filepath!r}")
        for w, a in pairs:
            w.assign(np.asarray(a).astype(w.dtype, copy=False))


def _unique_names(weights):
    return legacy_h5._unique_names(weights)
