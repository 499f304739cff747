"""Train a small model with fit, alone or under ``mpiexec`` with a `DataParallel`.

``python dp_train.py OUT_DIR DTYPE [--parallel] [--no-overlap] [--tiny-batches] [--pad]
[--pydataset]`` writes ``OUT_DIR/rank<r>.npz`` with the final weights, the logs per epoch and
the world size this process saw. Each process starts from different random weights and a
different NumPy seed (both by its rank), so equal results prove the broadcast from rank 0 and
the shared shuffle order; 23 samples in batches of 8 leave a short last batch of 7.

``--tiny-batches`` trains in batches of 2 (so with 3 processes one has no samples in each step),
validates, checkpoints to ``OUT_DIR/ckpt_rank<r>.weights.h5`` and logs to
``OUT_DIR/log_rank<r>.csv`` (only rank 0 may write either). ``--pad`` trains with
``pad_last_batch=True``; ``--pydataset`` feeds the same batches through a
`kerasrs.utils.PyDataset` (2 loader threads) shuffled batch by batch.
"""

import sys

import numpy as np

import kerasrs
from kerasrs import layers

N, BATCH, EPOCHS = 23, 8, 3


def train(dtype, parallel=False, overlap=True, tiny_batches=False, out=None, pad=False,
          pydataset=False):
    """Fit the model; returns (weights, history, rank, world size)."""
    kerasrs.backend.set_floatx(dtype)
    rank, size = 0, 1
    if parallel:  # tiny buckets: several allreduces per step, started during backward
        dist = kerasrs.distribution.DataParallel(overlap=overlap, bucket_size_mb=1e-4)
        kerasrs.distribution.set_distribution(dist)
        rank, size = dist.process_id, dist.num_processes
    data = np.random.default_rng(123)
    x = data.normal(size=(N, 5)).astype(dtype)
    y = data.integers(0, 3, size=N)
    weights = data.uniform(0.5, 2.0, size=N).astype(dtype)
    kerasrs.utils.set_random_seed(rank)
    model = kerasrs.Sequential([
        kerasrs.Input((5,)),
        layers.Dense(7, activation="tanh", kernel_regularizer=kerasrs.regularizers.L2(1e-3)),
        layers.Dense(3)])
    model.compile(kerasrs.optimizers.Adam(0.05),
                  kerasrs.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    np.random.seed(7 + 1000 * rank)  # the shuffle order: rank 0 draws the one used everywhere
    extra = {}
    if tiny_batches:
        path = f"{out}/ckpt_rank{rank}.weights.h5"
        extra = {"batch_size": 2, "validation_data": (x[:9], y[:9]), "callbacks": [
            kerasrs.callbacks.ModelCheckpoint(path, save_weights_only=True),
            kerasrs.callbacks.CSVLogger(f"{out}/log_rank{rank}.csv")]}
    if pad:
        extra["pad_last_batch"] = True
    data = {"x": x, "y": y, "sample_weight": weights}
    if pydataset:
        data = {"x": _Batches(x, y, weights)}
    history = model.fit(**data, **{"batch_size": BATCH, **extra}, epochs=EPOCHS, shuffle=True,
                        verbose=0)
    return [w.numpy() for w in model.weights], history.history, rank, size


class _Batches(kerasrs.utils.PyDataset):
    """The arrays in batches of `BATCH` (the last one short), loaded by 2 threads."""

    def __init__(self, x, y, weights):
        super().__init__(workers=2)
        self.arrays = (x, y, weights)

    def __len__(self):
        return -(-N // BATCH)

    def __getitem__(self, index):
        return tuple(a[index * BATCH:(index + 1) * BATCH] for a in self.arrays)


if __name__ == "__main__":
    out, dtype = sys.argv[1], sys.argv[2]
    weights, history, rank, size = train(dtype, parallel="--parallel" in sys.argv,
                                         overlap="--no-overlap" not in sys.argv,
                                         tiny_batches="--tiny-batches" in sys.argv, out=out,
                                         pad="--pad" in sys.argv,
                                         pydataset="--pydataset" in sys.argv)
    np.savez(f"{out}/rank{rank}.npz", *weights, size=size,
             **{k: np.array(v) for k, v in history.items()})
