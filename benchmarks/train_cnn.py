"""Training throughput of the Fashion-MNIST CNN (Adam, batch 128): kerasrs against PyTorch eager.

The model is ``build_cnn()`` of examples/fashion_mnist.py (Conv2D(32, 3, relu) - Conv2D(64, 3, relu) -
MaxPooling2D - Dropout(0.25) - Flatten - Dense(128, relu) - Dropout(0.5) - Dense(10, softmax)) and the same
network in PyTorch (NCHW, logits + CrossEntropyLoss, the same mathematics). Same data, batch
size and optimizer; both on 2 threads; interleaved in one process (so both run under the same
malloc settings) and reported as training samples/second and the ratio kerasrs / PyTorch. Run:
    .venv/bin/python benchmarks/train_cnn.py [--samples 7680] [--rounds 3]
"""

import argparse
import pathlib
import sys

import common  # noqa: F401  (sets thread counts first)
import numpy as np

import kerasrs

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
import fashion_mnist  # noqa: E402


def kerasrs_runner(x, y, batch):
    model = fashion_mnist.build_cnn()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")

    def run():
        model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
        return len(x)

    return run


def torch_runner(torch, x, y, batch):
    nn = torch.nn
    model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Dropout(0.25), nn.Flatten(),
                          nn.Linear(9216, 128), nn.ReLU(), nn.Dropout(0.5), nn.Linear(128, 10))
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    xt = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
    yt = torch.from_numpy(y)

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
    for name, rate in best.items():
        print(f"{name:8s} {rate:10.0f} samples/s")
    if "pytorch" in best:
        print(f"ratio kerasrs/pytorch: {best['kerasrs'] / best['pytorch']:.2f} (target >= 0.7)")
    else:
        print("PyTorch not installed: no ratio (run it with an interpreter that has torch)")
    return best


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
