"""Training throughput of the Fashion-MNIST CNN (Adam, batch 128): kerasrs against PyTorch eager.

The model is ``build_cnn()`` of examples/fashion_mnist.py (Conv2D(32, 3, relu) - Conv2D(64, 3, relu) -
MaxPooling2D - Dropout(0.1) - Flatten - Dense(128, relu) - Dropout(0.3) - Dense(10, softmax)) and the same
network in PyTorch (NCHW, logits + CrossEntropyLoss, the same mathematics). Same data, batch
size and optimizer; both on 2 threads; interleaved in one process (so both run under the same
malloc settings) and reported as training samples/second and the ratio kerasrs / PyTorch. Run:
    .venv/bin/python benchmarks/train_cnn.py [--samples 7680] [--rounds 3]
"""

import argparse
import pathlib
import sys

import common
import numpy as np

import kerasrs

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
import fashion_mnist


def kerasrs_runner(x, y, batch):
    model = fashion_mnist.build_cnn()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")

    return common.kerasrs_epoch(model, x, y, batch)


def torch_runner(torch, x, y, batch):
    nn = torch.nn
    model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Dropout(0.1), nn.Flatten(),
                          nn.Linear(9216, 128), nn.ReLU(), nn.Dropout(0.3), nn.Linear(128, 10))
    return common.torch_epoch(torch, model, x.transpose(0, 3, 1, 2), y, batch)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=7680)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    kerasrs.utils.set_random_seed(0)
    x, y = common.fashion_mnist(args.samples, flat=False)
    x = x[..., None]
    runs = {"kerasrs": kerasrs_runner(x, y, args.batch_size)}
    torch = common.load_torch()
    if torch is not None:
        torch.manual_seed(0)
        runs["pytorch"] = torch_runner(torch, x, y, args.batch_size)
    best = common.interleave(runs, args.rounds)
    common.report(best, 0.7)
    return best


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
