"""Training throughput of LSTM(128) over 28 rows of 28 pixels + Dense(10) (Adam, batch 128):
kerasrs against PyTorch eager.

Each Fashion-MNIST image is a sequence of 28 time steps (rows) of 28 features. Same model, data,
batch size and optimizer; both on 2 threads; interleaved in one process and reported as
samples/second and the ratio kerasrs / PyTorch (target >= 0.7). Run:
    .venv/bin/python benchmarks/train_lstm.py [--samples 7680] [--rounds 3]
"""

import argparse

import common
import numpy as np

import kerasrs
from kerasrs import layers


def kerasrs_runner(x, y, batch, units):
    model = kerasrs.Sequential([layers.Input((28, 28)), layers.LSTM(units), layers.Dense(10)])
    model.compile(optimizer="adam",
                  loss=kerasrs.losses.SparseCategoricalCrossentropy(from_logits=True))

    return common.kerasrs_epoch(model, x, y, batch)


def torch_runner(torch, x, y, batch, units):
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(28, units, batch_first=True)
            self.fc = nn.Linear(units, 10)

        def forward(self, inputs):
            _, (h, _) = self.lstm(inputs)
            return self.fc(h[-1])

    model = Net()
    return common.torch_epoch(torch, model, x, y, batch)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=7680)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--units", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=["kerasrs", "pytorch"], default=None)
    args = parser.parse_args()
    x, y = common.fashion_mnist(args.samples, flat=False)
    runs = {}
    if args.only in (None, "kerasrs"):
        runs["kerasrs"] = kerasrs_runner(x, y, args.batch_size, args.units)
    torch = common.load_torch() if args.only in (None, "pytorch") else None
    if torch is not None:
        runs["pytorch"] = torch_runner(torch, x, y, args.batch_size, args.units)
    best = common.interleave(runs, args.rounds)
    common.report(best, 0.7)
    return best


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
