"""Small standard datasets as NumPy arrays (Keras's ``keras.datasets``).

Each ``<name>.load_data()`` returns ``(x_train, y_train), (x_test, y_test)``, reading a local
copy when one exists (system package or the ``~/.kerasrs/datasets`` cache) and downloading the
published files otherwise, always checking their checksums. `py_dataset` holds `PyDataset`
(Keras's ``keras.utils.PyDataset``), the base class of datasets written in Python, which fit and
the preprocessing layers' ``adapt`` read. Nothing here imports the rest of kerasrs.
"""

from kerasrs.datasets import (boston_housing, california_housing, cifar10,  # noqa: F401
                              cifar100, fashion_mnist, idx, imdb, mnist, reuters)

__all__ = ["boston_housing", "california_housing", "cifar10", "cifar100", "fashion_mnist", "idx",
           "imdb", "mnist", "reuters"]
