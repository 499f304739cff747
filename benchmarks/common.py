"""Helpers shared by the benchmarks: thread pinning, data, interleaved timing."""

import os
import time

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


def interleave(runs, rounds=3):
    """Run each ``name -> fn()`` (which returns samples processed) in turn; best samples/s each."""
    best = {name: 0.0 for name in runs}
    for _ in range(rounds):
        for name, fn in runs.items():
            start = time.perf_counter()
            samples = fn()
            best[name] = max(best[name], samples / (time.perf_counter() - start))
    return best


def kerasrs_epoch(model, x, y, batch):
    """A runner: one epoch of ``model.fit`` (no shuffle, silent); returns the samples seen."""

    def run():
        model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
        return len(x)

    return run


def torch_epoch(torch, model, x, y, batch):
    """A runner: one epoch of the usual PyTorch loop (Adam 1e-3, cross-entropy on logits)."""
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    model.train()
    xt, yt = torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(y)

    def run():
        for i in range(0, len(xt), batch):
            opt.zero_grad()
            loss = loss_fn(model(xt[i:i + batch]), yt[i:i + batch])
            loss.backward()
            opt.step()
        return len(xt)

    return run


def report(best, target):
    """Print samples/s per framework and the kerasrs / PyTorch ratio against ``target``."""
    for name, rate in best.items():
        print(f"{name:8s} {rate:10.0f} samples/s")
    if len(best) == 2:
        print(f"ratio kerasrs/pytorch: {best['kerasrs'] / best['pytorch']:.2f} "
              f"(target >= {target})")
    elif "pytorch" not in best:
        print("PyTorch not installed: no ratio (install torch into this venv to compare)")
