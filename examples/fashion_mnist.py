"""Train a classifier on real Fashion-MNIST: the kerasrs main job.

Usage:
    python examples/fashion_mnist.py --model mlp --epochs 5
    python examples/fashion_mnist.py --model cnn --epochs 3 --backend numpy

Loads the 60,000 training and 10,000 test images (Debian's dataset-fashion-mnist package, the cache in
~/.kerasrs/datasets, or a download), builds the model, prints its summary, trains with a progress bar,
evaluates on the test set, prints the test accuracy and saves the model.
"""

import argparse
import math
import time

import numpy as np

import kerasrs
from kerasrs import layers

VALIDATION_SPLIT = 0.1  # the last 10 % of the training images, as Keras takes it


def build_mlp():
    """784-512-512-10 multilayer perceptron (Keras's mnist_mlp without dropout: five epochs are
    too few for dropout to pay off)."""
    return kerasrs.Sequential([
        layers.Input(shape=(28, 28)),
        layers.Flatten(),
        layers.Dense(512, activation="relu"),
        layers.Dense(512, activation="relu"),
        layers.Dense(10, activation="softmax"),
    ], name="mlp")


def build_cnn():
    """The classic two-convolution network of Keras's ``mnist_cnn`` example."""
    return kerasrs.Sequential([
        layers.Input(shape=(28, 28, 1)),
        layers.Conv2D(32, 3, activation="relu"),
        layers.Conv2D(64, 3, activation="relu"),
        layers.MaxPooling2D(2),
        layers.Dropout(0.1),  # mnist_cnn uses 0.25 and 0.5: too much for a 3-epoch run
        layers.Flatten(),
        layers.Dense(128, activation="relu"),
        layers.Dropout(0.3),
        layers.Dense(10, activation="softmax"),
    ], name="cnn")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=None,
                        help="minibatch size (default: 128 for the MLP, 64 for the CNN)")
    parser.add_argument("--backend", choices=["numpy", "cupy"], default=None,
                        help="array backend (default: $KERASRS_BACKEND or numpy)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", default=None, help="where to save the trained model "
                        "(default: fashion_mnist_<model>.h5)")
    parser.add_argument("--verbose", type=int, default=1, choices=[0, 1, 2])
    parser.add_argument("--train-samples", type=int, default=None,
                        help="use only the first N training images (quick runs)")
    parser.add_argument("--test-samples", type=int, default=None,
                        help="evaluate on only the first N test images")
    parser.add_argument("--dtype-policy", default=None,
                        help='global dtype policy, e.g. "mixed_float16" or "mixed_bfloat16"')
    args = parser.parse_args(argv)

    if args.batch_size is None:
        args.batch_size = 128 if args.model == "mlp" else 64
    if args.backend:
        kerasrs.backend.set_backend(args.backend)
    kerasrs.utils.set_random_seed(args.seed)
    if args.dtype_policy:
        kerasrs.config.set_dtype_policy(args.dtype_policy)  # compile adds loss scaling for float16

    (x_train, y_train), (x_test, y_test) = kerasrs.datasets.fashion_mnist.load_data()
    x_train, y_train = x_train[:args.train_samples], y_train[:args.train_samples]
    x_test, y_test = x_test[:args.test_samples], y_test[:args.test_samples]
    x_train = x_train.astype("float32") / 255.0
    x_test = x_test.astype("float32") / 255.0
    if args.model == "cnn":
        x_train, x_test = x_train[..., None], x_test[..., None]
    print(f"Fashion-MNIST: {len(x_train)} training and {len(x_test)} test images, "
          f"backend {kerasrs.backend.backend()}")

    model = build_mlp() if args.model == "mlp" else build_cnn()
    model.summary()
    # Adam with the learning rate annealed to 0 over the run (cosine decay, Loshchilov and
    # Hutter 2017): the last epochs average out minibatch noise instead of bouncing around.
    steps = args.epochs * math.ceil(len(x_train) * (1 - VALIDATION_SPLIT) / args.batch_size)
    schedule = kerasrs.optimizers.schedules.CosineDecay(1e-3, decay_steps=steps)
    model.compile(optimizer=kerasrs.optimizers.Adam(learning_rate=schedule),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    start = time.perf_counter()
    model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs,
              validation_split=VALIDATION_SPLIT, verbose=args.verbose)
    seconds = time.perf_counter() - start
    loss, accuracy = model.evaluate(x_test, y_test, batch_size=512, verbose=0)
    print(f"Trained {args.epochs} epochs in {seconds:.1f} s "
          f"({args.epochs * len(x_train) * (1 - VALIDATION_SPLIT) / seconds:.0f} samples/s)")
    print(f"Test loss: {loss:.4f}  Test accuracy: {accuracy:.4f}")
    path = args.save or f"fashion_mnist_{args.model}.h5"
    if hasattr(model, "save"):
        try:
            model.save(path)
            print(f"Saved the trained model to {path}")
        except NotImplementedError as e:  # saving lands with its own issue
            print(f"Model not saved: {e}")
    return accuracy


if __name__ == "__main__":
    main()
