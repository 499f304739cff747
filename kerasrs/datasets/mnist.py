"""MNIST (LeCun, Bottou, Bengio & Haffner 1998): 70,000 28x28 grayscale handwritten digits.
Labels 0-9. License: CC BY-SA 3.0 (Yann LeCun and Corinna Cortes)."""

import os

import numpy as np

from kerasrs.datasets import fashion_mnist, files

SYSTEM_DIRS = ["/usr/share/datasets/mnist"]
IDX_BASE_URLS = ("https://ossci-datasets.s3.amazonaws.com/mnist/",)
NPZ = files.DatasetFile(
    "mnist.npz", ("https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz",),
    sha256=frozenset({"731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"}))
INSTALL_HINT = ("Put the four MNIST IDX files (train-images-idx3-ubyte.gz, ...) in "
                f"{SYSTEM_DIRS[0]} or in the cache directory.")


def _idx_file(name, md5):
    """An IDX file with the MD5 published for the original distribution."""
    return files.DatasetFile(name, tuple(url + name for url in IDX_BASE_URLS),
                             md5=frozenset({md5}))


IDX_FILES = {
    "x_train": _idx_file("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
    "y_train": _idx_file("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
    "x_test": _idx_file("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
    "y_test": _idx_file("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
}


def _local_idx_dirs():
    """Directories holding all four IDX files: system directories, then the cache."""
    candidates = SYSTEM_DIRS + [files.cache_dir("mnist")]
    return [d for d in candidates
            if all(os.path.isfile(os.path.join(d, s.name)) for s in IDX_FILES.values())]


def load_data(path="mnist.npz"):
    """Load MNIST as NumPy arrays, from a local copy when there is one.

    Uses, in order: the four gzipped IDX files in ``SYSTEM_DIRS`` or in
    ``~/.kerasrs/datasets/mnist/`` (or ``$KERASRS_HOME/datasets/mnist/``); then ``path``
    (Keras's ``mnist.npz``) in that cache; else downloads ``mnist.npz`` from Keras's storage.
    Every file is checked against its published checksum.

    Args:
        path: file name of the ``.npz`` inside the cache directory. Defaults to ``"mnist.npz"``.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: uint8 arrays of shapes ``(60000, 28, 28)``,
        ``(60000,)``, ``(10000, 28, 28)``, ``(10000,)``.

    Raises:
        FileNotFoundError: offline with no local copy (the message says where it looked).
        ValueError: if a file fails its checksum.
    """
    local = _local_idx_dirs()
    if local:
        return fashion_mnist.load_idx_set(IDX_FILES, "mnist", local[:1], INSTALL_HINT)
    spec = NPZ if path == NPZ.name else files.DatasetFile(path, NPZ.urls, NPZ.sha256)
    npz = files.fetch(spec, "mnist", install_hint=INSTALL_HINT)
    with np.load(npz) as f:
        return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])
