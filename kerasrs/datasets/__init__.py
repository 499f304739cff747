"""Small standard datasets as NumPy arrays (Keras's ``keras.datasets``).

Each ``<name>.load_data()`` returns ``(x_train, y_train), (x_test, y_test)``, reading a local
copy when one exists (system package or the ``~/.kerasrs/datasets`` cache) and downloading the
published files otherwise, always checking their checksums. Nothing here imports the rest of
kerasrs.
"""

from kerasrs.datasets import fashion_mnist, idx, mnist  # noqa: F401

__all__ = ["fashion_mnist", "mnist", "idx"]
