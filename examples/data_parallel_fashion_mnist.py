"""Train the Fashion-MNIST MLP on several processes with `kerasrs.distribution.DataParallel`.

Usage (after `pip install -e ".[mpi]"`):
    .venv/bin/mpiexec -n 2 .venv/bin/python -m mpi4py \
        examples/data_parallel_fashion_mnist.py --epochs 3

Use at most one process per core. `DataParallel` gives each process its share of the node's
cores for its BLAS and kernel threads (1 each for 2 processes on 2 cores) and rank 0 prints one
line saying so; set OMP_NUM_THREADS (or pass `threads_per_process`) to choose yourself. The same
script runs on one process without `mpiexec`.

Every process loads the data and builds the same model; each step every process trains on its
half (third, ...) of the global batch and the gradients are summed, so the result is what one
process would get with the same global batch. Rank 0 shows the progress, evaluates and saves.
"""

import argparse
import time

import kerasrs
from kerasrs import layers


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=256, help="global batch, all processes")
    parser.add_argument("--save", default="fashion_mnist_mlp_dp.keras")
    args = parser.parse_args()

    dist = kerasrs.distribution.DataParallel()  # before the model: weights on this process's GPU
    kerasrs.distribution.set_distribution(dist)
    (x, y), (x_test, y_test) = kerasrs.datasets.fashion_mnist.load_data()
    x, x_test = x.astype("float32") / 255.0, x_test.astype("float32") / 255.0
    model = kerasrs.Sequential([layers.Input((28, 28)), layers.Flatten(),
                                layers.Dense(512, activation="relu"),
                                layers.Dense(512, activation="relu"),
                                layers.Dense(10, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    start = time.perf_counter()
    model.fit(x, y, batch_size=args.batch_size, epochs=args.epochs, validation_split=0.1,
              verbose=2)
    seconds = time.perf_counter() - start
    _, accuracy = model.evaluate(x_test, y_test, verbose=0)
    model.save(args.save)  # rank 0 writes; the others return at once
    if dist.is_chief:
        print(f"{dist.num_processes} process{'es' * (dist.num_processes > 1)}: {seconds:.1f} s "
              f"for {args.epochs} epoch{'s' * (args.epochs > 1)}, test accuracy {accuracy:.4f}")


if __name__ == "__main__":
    main()
