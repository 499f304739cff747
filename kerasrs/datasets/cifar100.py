"""CIFAR-100 (Krizhevsky 2009): 60,000 32x32 colour images, 100 fine / 20 coarse classes."""

from kerasrs.datasets import keras_files

TAR = keras_files.keras_file(
    "cifar-100-python.tar.gz", "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7",
    url="https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz")


def load_data(label_mode="fine"):
    """``(x_train, y_train), (x_test, y_test)`` with "fine" (100) or "coarse" (20) labels."""
    if label_mode not in ("fine", "coarse"):
        raise ValueError(f"label_mode must be 'fine' or 'coarse'. Received: {label_mode!r}")
    path = keras_files.local_path(TAR, "cifar100")
    key = label_mode + "_labels"
    return keras_files.read_cifar(path, ["train"], key), keras_files.read_cifar(path, ["test"], key)
