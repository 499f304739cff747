"""California Housing (Pace & Barry 1997): 20,640 districts, 8 features, median house value."""

import numpy as np

from kerasrs.datasets import keras_files

NPZ = keras_files.keras_file(
    "california_housing.npz", "1a2e3a52e0398de6463aebe6f4a8da34fb21fbb6b934cf88c3425e766f2a1a6f")


def load_data(version="large", path="california_housing.npz", test_split=0.2, seed=113):
    """``(x_train, y_train), (x_test, y_test)``; ``version="small"`` keeps the first 600
    samples, as Keras does."""
    if version not in ("large", "small"):
        raise ValueError(f"version must be 'large' or 'small'. Received: version={version!r}")
    with np.load(keras_files.local_path(NPZ, "california_housing"), allow_pickle=False) as f:
        x, y = f["x"], f["y"]
    if version == "small":
        x, y = x[:600], y[:600]
    return keras_files.split_xy(x, y, test_split, seed)
