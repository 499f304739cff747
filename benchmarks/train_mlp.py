"""Training throughput of the 784-512-512-10 MLP (Adam, batch 128): kerasrs against PyTorch eager.

Same model, data, batch size and optimizer; both on 2 threads; interleaved in one process and
reported as samples/second and the ratio kerasrs / PyTorch. Run:
    .venv/bin/python benchmarks/train_mlp.py [--samples 15360] [--rounds 3]
"""

import argparse

import common  # noqa: F401  (sets thread counts first)
import numpy as np

import kerasrs
from kerasrs import layers


def kerasrs_runner(x, y, batch):
    model = kerasrs.Sequential([layers.Input((784,)), layers.Dense(512, activation="relu"),
                                layers.Dense(512, activation="relu"), layers.Dense(10)])
    model.compile(optimizer="adam",
                  loss=kerasrs.losses.SparseCategoricalCrossentropy(from_logits=True))

    def run():
        model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
        return len(x)

    return run


def torch_runner(torch, x, y, batch):
    nn = torch.nn
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def run():
        for i in range(0, len(xt), batch):
            opt.zero_grad()
            loss = loss_fn(model(xt[i:i + batch]), yt[i:i + batch])
            loss.backward()
            opt.step()
        return len(xt)

    return run


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
    for name, rate in best.items():
        print(f"{name:8s} {rate:10.0f} samples/s")
    if "pytorch" in best:
        print(f"ratio kerasrs/pytorch: {best['kerasrs'] / best['pytorch']:.2f} "
              f"(target >= 1.0)")
    else:
        print("PyTorch not installed: no ratio (pip install torch in a separate venv to compare)")
    return best


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
