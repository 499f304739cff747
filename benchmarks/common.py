"""Helpers shared by the benchmarks: thread pinning, data, a kerasrs epoch runner."""

import os

# Both frameworks on 2 threads, set before NumPy/torch load their BLAS.
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "2")

import numpy as np


def load_torch():
    """torch with 2 threads, or None when it is not installed (it is never a kerasrs dependency)."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(2)
    return torch


def fashion_mnist(n=None, flat=True):
    """Real Fashion-MNIST training images as float32 in [0, 1] and int64 labels (synthetic if absent)."""
    try:
        import kerasrs

        (x, y), _ = kerasrs.datasets.fashion_mnist.load_data()
    except (OSError, ValueError) as e:  # offline machine without the Debian package
        print(f"(Fashion-MNIST unavailable: {e}; using random data of the same shape)")
        rng = np.random.default_rng(0)
        x = rng.integers(0, 256, (60000, 28, 28), dtype=np.uint8)
        y = rng.integers(0, 10, 60000)
    x = x[:n].astype("float32") / 255.0
    return (x.reshape(len(x), -1) if flat else x), y[:n].astype("int64")


def kerasrs_epoch(model, x, y, batch):
    """A runner: one epoch of ``model.fit`` (no shuffle, silent); returns the samples seen."""

    def run():
        model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
        return len(x)

    return run
