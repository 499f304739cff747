"""Training throughput of the 784-512-512-10 MLP (Adam, batch 128): kerasrs against PyTorch eager.

Same model, data, batch size and optimizer; both on 2 threads; interleaved in one process and
reported as samples/second and the ratio kerasrs / PyTorch. Run:
    .venv/bin/python benchmarks/train_mlp.py [--samples 15360] [--rounds 3]
"""

import argparse

import common
import numpy as np

import kerasrs
from kerasrs import layers


def kerasrs_runner(x, y, batch):
    model = kerasrs.Sequential([layers.Input((784,)), layers.Dense(512, activation="relu"),
                                layers.Dense(512, activation="relu"), layers.Dense(10)])
    model.compile(optimizer="adam",
                  loss=kerasrs.losses.SparseCategoricalCrossentropy(from_logits=True))

    return common.kerasrs_epoch(model, x, y, batch)


def torch_runner(torch, x, y, batch):
    nn = torch.nn
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    return common.torch_epoch(torch, model, x, y, batch)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=15360)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    x, y = common.fashion_mnist(args.samples)
    runs = {"kerasrs": kerasrs_runner(x, y, args.batch_size)}
    torch = common.load_torch()
    if torch is not None:
        runs["pytorch"] = torch_runner(torch, x, y, args.batch_size)
    best = common.interleave(runs, args.rounds)
    common.report(best, 1.0)
    return best


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
