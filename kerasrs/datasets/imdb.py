"""IMDB movie reviews (Maas et al. 2011): 50,000 reviews as word-id sequences, sentiment 0/1."""

import json

import numpy as np

from kerasrs.datasets import keras_files

NPZ = keras_files.keras_file(
    "imdb.npz", "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f")
WORD_INDEX = keras_files.keras_file("imdb_word_index.json", md5="bfafd718b763782e994055a2d397834f")


def load_data(path="imdb.npz", num_words=None, skip_top=0, maxlen=None, seed=113, start_char=1,
              oov_char=2, index_from=3, **kwargs):
    """``(x_train, y_train), (x_test, y_test)``: x an object array of int lists, y int labels.
    Train and test are shuffled separately with ``seed``; see `keras_files.encode_sequences`
    for the other arguments."""
    with np.load(keras_files.local_path(NPZ, "imdb"), allow_pickle=True) as f:
        x_train, y_train, x_test, y_test = f["x_train"], f["y_train"], f["x_test"], f["y_test"]
    rng = np.random.RandomState(seed)
    order = np.arange(len(x_train))
    rng.shuffle(order)
    x_train, y_train = x_train[order], y_train[order]
    order = np.arange(len(x_test))
    rng.shuffle(order)
    x_test, y_test = x_test[order], y_test[order]
    xs = list(x_train) + list(x_test)
    labels = np.concatenate([y_train, y_test])
    n_train = len(x_train)
    if maxlen:
        n_train = sum(len(x) + (start_char is not None) < maxlen for x in x_train)
    xs, labels = keras_files.encode_sequences(xs, labels, num_words, skip_top, maxlen, start_char,
                                              oov_char, index_from)
    return (xs[:n_train], labels[:n_train]), (xs[n_train:], labels[n_train:])


def get_word_index(path="imdb_word_index.json"):
    """The dict word -> id (ids before ``index_from`` shifting)."""
    with open(keras_files.local_path(WORD_INDEX, "imdb")) as f:
        return json.load(f)
