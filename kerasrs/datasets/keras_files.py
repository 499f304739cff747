"""The small Keras datasets stored as Keras's own files (npz, json, CIFAR tarballs): where they
are published, their checksums (from Keras 3's loaders) and the shared loading rules."""

import os
import pickle
import tarfile

import numpy as np

from kerasrs.datasets import files

_BASE = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"


def keras_file(name, sha256=None, md5=None, url=None):
    return files.DatasetFile(name, (url or _BASE + name,),
                             sha256=frozenset({sha256} if sha256 else ()),
                             md5=frozenset({md5} if md5 else ()))


def local_path(spec, dataset):
    """A verified local copy (cache or download; see `files.fetch`)."""
    return files.fetch(spec, dataset)


def split_xy(x, y, test_split, seed):
    """Shuffle ``(x, y)`` with NumPy's legacy RandomState(seed) and split off the last
    ``test_split`` fraction, as Keras's regression loaders do."""
    rng = np.random.RandomState(seed)
    order = rng.permutation(len(x))
    x, y = x[order], y[order]
    cut = int(len(x) * (1 - test_split))
    return (x[:cut], y[:cut]), (x[cut:], y[cut:])


def encode_sequences(xs, labels, num_words, skip_top, maxlen, start_char, oov_char, index_from):
    """Keras's word-index rules for IMDB and Reuters: shift ids by ``index_from``, prepend
    ``start_char``, drop sequences longer than ``maxlen``, and map ids outside
    ``[skip_top, num_words)`` to ``oov_char`` (or drop them when it is None)."""
    if start_char is not None:
        xs = [[start_char] + [w + index_from for w in x] for x in xs]
    elif index_from:
        xs = [[w + index_from for w in x] for x in xs]
    if maxlen:
        keep = [i for i, x in enumerate(xs) if len(x) < maxlen]
        xs, labels = [xs[i] for i in keep], labels[keep]
    if not num_words:
        num_words = max(max(x) for x in xs if x)
    if oov_char is not None:
        xs = [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    else:
        xs = [[w for w in x if skip_top <= w < num_words] for x in xs]
    out = np.empty(len(xs), dtype=object)
    out[:] = [list(x) for x in xs]
    return out, labels


def read_cifar(path, batches, label_key):
    """``(x, y)`` from the pickled batches inside a CIFAR ``.tar.gz``: x (N, 32, 32, 3) uint8
    (channels last, as Keras returns it), y (N, 1) uint8."""
    xs, ys = [], []
    with tarfile.open(path) as tar:
        members = {os.path.basename(m.name): m for m in tar.getmembers() if m.isfile()}
        for name in batches:
            with tar.extractfile(members[name]) as f:
                d = pickle.load(f, encoding="bytes")
            d = {k.decode() if isinstance(k, bytes) else k: v for k, v in d.items()}
            xs.append(np.asarray(d["data"], dtype="uint8").reshape(-1, 3, 32, 32))
            ys.append(np.asarray(d[label_key], dtype="uint8"))
    x = np.concatenate(xs).transpose(0, 2, 3, 1)
    return x, np.concatenate(ys).reshape(-1, 1)
