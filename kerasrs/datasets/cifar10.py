"""CIFAR-10 (Krizhevsky 2009): 60,000 32x32 colour images in 10 classes."""

from kerasrs.datasets import keras_files

TAR = keras_files.keras_file(
    "cifar-10-python.tar.gz", "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
    url="https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz")


def load_data():
    """``(x_train, y_train), (x_test, y_test)``: uint8 x (N, 32, 32, 3), y (N, 1)."""
    path = keras_files.local_path(TAR, "cifar10")
    train = keras_files.read_cifar(path, [f"data_batch_{i}" for i in range(1, 6)], "labels")
    test = keras_files.read_cifar(path, ["test_batch"], "labels")
    return train, test
