"""Train the Fashion-MNIST MLP on several processes with `kerasrs.distribution.DataParallel`.

Usage (after `pip install -e ".[mpi]"`; one BLAS thread per process):
    OMP_NUM_THREADS=1 .venv/bin/mpiexec -n 2 .venv/bin/python -m mpi4py \
        examples/data_parallel_fashion_mnist.py --epochs 3

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
        print(f"{dist.num_processes} processes: {seconds:.1f} s for {args.epochs} epochs, "
              f"test accuracy {accuracy:.4f}")


if __name__ == "__main__":
    main()
