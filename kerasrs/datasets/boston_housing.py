"""Boston Housing prices (Harrison & Rubinfeld 1978): 506 samples, 13 features, price in k$."""

import numpy as np

from kerasrs.datasets import keras_files

NPZ = keras_files.keras_file(
    "boston_housing.npz", "f553886a1f8d56431e820c5b82552d9d95cfcb96d1e678153f8839538947dff5")


def load_data(path="boston_housing.npz", test_split=0.2, seed=113):
    """``(x_train, y_train), (x_test, y_test)``: float64 x (N, 13), y (N,), shuffled with
    ``seed`` and split as Keras does."""
    if not 0 <= test_split < 1:
        raise ValueError(f"test_split must be in [0, 1). Received: test_split={test_split}")
    with np.load(keras_files.local_path(NPZ, "boston_housing"), allow_pickle=False) as f:
        x, y = f["x"], f["y"]
    return keras_files.split_xy(x, y, test_split, seed)
