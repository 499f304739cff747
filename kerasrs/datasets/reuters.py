"""Reuters newswire topics: 11,228 newswires as word-id sequences, 46 topics."""

import json

import numpy as np

from kerasrs.datasets import keras_files

NPZ = keras_files.keras_file(
    "reuters.npz", "d6586e694ee56d7a4e65172e12b3e987c03096cb01eab99753921ef915959916")
WORD_INDEX = keras_files.keras_file("reuters_word_index.json",
                                    md5="4d44cc38712099c9e383dc6e5f11a921")


def load_data(path="reuters.npz", num_words=None, skip_top=0, maxlen=None, test_split=0.2,
              seed=113, start_char=1, oov_char=2, index_from=3, **kwargs):
    """``(x_train, y_train), (x_test, y_test)``, shuffled with ``seed`` and split by
    ``test_split`` after the word-index rules of `keras_files.encode_sequences`."""
    with np.load(keras_files.local_path(NPZ, "reuters"), allow_pickle=True) as f:
        xs, labels = f["x"], f["y"]
    rng = np.random.RandomState(seed)
    order = np.arange(len(xs))
    rng.shuffle(order)
    xs, labels = keras_files.encode_sequences(list(xs[order]), labels[order], num_words,
                                              skip_top, maxlen, start_char, oov_char, index_from)
    cut = int(len(xs) * (1 - test_split))
    return (xs[:cut], labels[:cut]), (xs[cut:], labels[cut:])


def get_word_index(path="reuters_word_index.json"):
    """The dict word -> id."""
    with open(keras_files.local_path(WORD_INDEX, "reuters")) as f:
        return json.load(f)


def get_label_names():
    """The 46 topic names, in label order (Keras's list)."""
    return ("cocoa", "grain", "veg-oil", "earn", "acq", "wheat", "copper", "housing",
            "money-supply", "coffee", "sugar", "trade", "reserves", "ship", "cotton", "carcass",
            "crude", "nat-gas", "cpi", "money-fx", "interest", "gnp", "meal-feed", "alu", "oilseed",
            "gold", "tin", "strategic-metal", "livestock", "retail", "ipi", "iron-steel", "rubber",
            "heat", "jobs", "lei", "bop", "zinc", "orange", "pet-chem", "dlr", "gas", "silver",
            "wpi", "hog", "lead")
