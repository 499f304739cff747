"""Prefetch: with PyDataset workers, an epoch takes about max(load, step) per batch, not the sum.

A PyDataset whose ``__getitem__`` takes a known time (a sleep, as waiting for disk or network
does) feeds an MLP whose training step is measured first; the load time is then set equal to
it. Epochs are timed with ``workers=1`` (loads in the loop, as Keras does), with 2 and 4 worker
threads, and with 2 worker processes, alternating, best of a few rounds.

    python benchmarks/prefetch.py [--batches 40] [--rounds 3]
"""

import argparse
import time

import common  # noqa: F401  (pins BLAS threads before NumPy loads)
import numpy as np

import kerasrs
from kerasrs import layers


class Delayed(kerasrs.utils.PyDataset):
    """``batches`` batches of Fashion-MNIST-sized data, each taking ``load`` seconds to load."""

    def __init__(self, x, y, batch_size, batches, load, **kwargs):
        super().__init__(**kwargs)
        self.x, self.y, self.batch_size, self.batches, self.load = x, y, batch_size, batches, load

    def __len__(self):
        return self.batches

    def __getitem__(self, index):
        time.sleep(self.load)
        start = (index * self.batch_size) % (len(self.x) - self.batch_size)
        return self.x[start:start + self.batch_size], self.y[start:start + self.batch_size]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    x, y = common.fashion_mnist(n=20000)
    kerasrs.utils.set_random_seed(0)
    model = kerasrs.Sequential([layers.Input((784,)), layers.Dense(512, activation="relu"),
                                layers.Dense(256, activation="relu"), layers.Dense(10)])
    model.compile("adam", kerasrs.losses.SparseCategoricalCrossentropy(from_logits=True))
    no_load = Delayed(x, y, args.batch_size, args.batches, 0.0)
    model.fit(no_load, epochs=1, shuffle=False, verbose=0)  # warm up (build, buffers)
    load = _epoch(model, no_load) / args.batches  # load time per batch ~ the step time
    configs = {"step only (no load)": (0.0, {}),
               "workers=1 (in the loop)": (load, {"workers": 1}),
               "workers=2 threads": (load, {"workers": 2}),
               "workers=4 threads": (load, {"workers": 4}),
               "workers=2 processes": (load, {"workers": 2, "use_multiprocessing": True})}
    data = {name: Delayed(x, y, args.batch_size, args.batches, delay, **opts)
            for name, (delay, opts) in configs.items()}
    times = {name: [] for name in configs}
    for _ in range(args.rounds):  # alternate, so that machine load hits every config alike
        for name, dataset in data.items():
            times[name].append(_epoch(model, dataset))
    best = {name: min(t) for name, t in times.items()}
    steps, loads = best["step only (no load)"], load * args.batches
    print(f"{args.batches} batches of {args.batch_size}: step {steps:.2f} s/epoch (measured), "
          f"load {loads:.2f} s/epoch (set); sum {steps + loads:.2f} s, max "
          f"{max(steps, loads):.2f} s")
    for name, seconds in best.items():
        print(f"  {name:26s} best {seconds:6.2f} s/epoch ({seconds / max(steps, loads):.2f} x max)"
              f", median {np.median(times[name]):6.2f} s")


def _epoch(model, dataset):
    start = time.perf_counter()
    model.fit(dataset, epochs=1, shuffle=False, verbose=0)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
