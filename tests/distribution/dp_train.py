"""Train a small model with fit, alone or under ``mpiexec`` with a `DataParallel`.

``python dp_train.py OUT_DIR DTYPE [--parallel] [--no-overlap] [--tiny-batches]`` writes
``OUT_DIR/rank<r>.npz`` with the final weights, the logs per epoch and the world size this
process saw. ``--tiny-batches`` trains in batches of 2 (so with 3 processes one has no samples in
each step), validates, checkpoints to ``OUT_DIR/ckpt_rank<r>.weights.h5`` and logs to
``OUT_DIR/log_rank<r>.csv`` (only rank 0 may write either). Each process starts from
different random weights (seeded by its rank), so equal results prove the broadcast from rank 0;
23 samples in batches of 8 leave a short last batch of 7 (one process gets only 2 of it with 3).
"""

import sys

import numpy as np

import kerasrs
from kerasrs import layers

N, BATCH, EPOCHS = 23, 8, 3


def train(dtype, parallel=False, overlap=True, tiny_batches=False, out=None):
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
    np.random.seed(7)  # the shuffle order; rank 0's is the one used
    extra = {}
    if tiny_batches:
        path = f"{out}/ckpt_rank{rank}.weights.h5"
        extra = {"batch_size": 2, "validation_data": (x[:9], y[:9]), "callbacks": [
            kerasrs.callbacks.ModelCheckpoint(path, save_weights_only=True),
            kerasrs.callbacks.CSVLogger(f"{out}/log_rank{rank}.csv")]}
    history = model.fit(x, y, sample_weight=weights, **{"batch_size": BATCH, **extra},
                        epochs=EPOCHS, shuffle=True, verbose=0)
    return [w.numpy() for w in model.weights], history.history, rank, size


if __name__ == "__main__":
    out, dtype = sys.argv[1], sys.argv[2]
    weights, history, rank, size = train(dtype, parallel="--parallel" in sys.argv,
                                         overlap="--no-overlap" not in sys.argv,
                                         tiny_batches="--tiny-batches" in sys.argv, out=out)
    np.savez(f"{out}/rank{rank}.npz", *weights, size=size,
             **{k: np.array(v) for k, v in history.items()})
