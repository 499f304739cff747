"""MLP and CNN training steps on one GPU: kerasrs (CuPy backend) against PyTorch eager (CUDA).

The networks of train_mlp.py and train_cnn.py, Adam, batch 128, the same data; both frameworks
read each batch from host memory (kerasrs's fit moves it to the device once per step; the
PyTorch loop does ``.to("cuda")``), and each epoch ends with a device sync. Interleaved in one
process; prints samples/second and the ratio kerasrs / PyTorch (target >= 1.0). Run:
    python benchmarks/gpu_train.py [--samples 15360] [--rounds 3]
"""

import argparse
import pathlib
import sys
import time

import numpy as np

import kerasrs
from kerasrs import layers

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))


def kerasrs_runner(model, x, y, batch):
    import cupy

    model.compile(optimizer="adam",
                  loss=kerasrs.losses.SparseCategoricalCrossentropy(from_logits=True))

    def run():
        with kerasrs.backend.using("cupy"):
            model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
        cupy.cuda.Device().synchronize()
        return len(x)

    return run


def torch_runner(torch, model, x, y, batch):
    model = model.cuda().train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    xt, yt = torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(y)

    def run():
        for i in range(0, len(xt), batch):
            opt.zero_grad()
            xb, yb = xt[i:i + batch].to("cuda"), yt[i:i + batch].to("cuda")
            loss_fn(model(xb), yb).backward()
            opt.step()
        torch.cuda.synchronize()
        return len(xt)

    return run


def models(torch):
    nn = torch.nn
    with kerasrs.backend.using("cupy"):
        mlp = kerasrs.Sequential([layers.Input((784,)), layers.Dense(512, activation="relu"),
                                  layers.Dense(512, activation="relu"), layers.Dense(10)])
        cnn = kerasrs.Sequential([
            layers.Input((28, 28, 1)), layers.Conv2D(32, 3, activation="relu"),
            layers.Conv2D(64, 3, activation="relu"), layers.MaxPooling2D(2),
            layers.Flatten(), layers.Dense(128, activation="relu"), layers.Dense(10)])
    t_mlp = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    t_cnn = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(9216, 128), nn.ReLU(),
                          nn.Linear(128, 10))
    return {"mlp": (mlp, t_mlp), "cnn": (cnn, t_cnn)}


def interleave(runs, rounds):
    best = {name: 0.0 for name in runs}
    for name, fn in runs.items():
        fn()  # warm-up: kernel compilation, cuBLAS/cuDNN plans
    for _ in range(rounds):
        for name, fn in runs.items():
            start = time.perf_counter()
            n = fn()
            best[name] = max(best[name], n / (time.perf_counter() - start))
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=15360)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import torch

    kerasrs.utils.set_random_seed(0)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.random((args.samples, 28, 28, 1), dtype=np.float32)  # speed only: data is random
    y = rng.integers(0, 10, args.samples)
    ratios = {}
    for key, (km, tm) in models(torch).items():
        kx = x.reshape(len(x), -1) if key == "mlp" else x
        tx = kx if key == "mlp" else x.transpose(0, 3, 1, 2)
        best = interleave({"kerasrs": kerasrs_runner(km, kx, y, args.batch_size),
                           "pytorch": torch_runner(torch, tm, tx, y, args.batch_size)},
                          args.rounds)
        ratios[key] = best["kerasrs"] / best["pytorch"]
        print(f"{key}: kerasrs {best['kerasrs']:9.0f} samples/s, pytorch {best['pytorch']:9.0f}"
              f" samples/s, ratio {ratios[key]:.2f} (target >= 1.0)", flush=True)
    return ratios


if __name__ == "__main__":
    main()
