"""Training throughput, kerasrs against PyTorch eager, each framework in a fresh process.

For each model and round, one subprocess trains with kerasrs, then one with PyTorch (alternating,
so drifts of a shared machine hit both), on the same data (real Fashion-MNIST, written once to a
temporary file), batch 128, Adam, 2 threads each (OMP/OpenBLAS/MKL variables set for the child
only). A worker trains a few warm-up batches (imports, first allocations, any JIT compile), then
times whole epochs. Printed: samples/s per round, medians, the ratio kerasrs / PyTorch per round
and of the medians, and each framework's fraction of the model's GEMM floor (its GEMM FLOPs at
the sgemm rate measured on this machine, `models.train_flops`). Run:

    .venv/bin/python benchmarks/compare.py --model all --torch-python /work/refvenv/bin/python

Without torch in the given interpreter, only kerasrs is timed.

``--jit`` adds a third side, kerasrs with ``compile(jit_compile=True)`` (replayed step graphs;
its warm-up traces, validates and compiles every step shape the epoch uses), and prints the
ratios replay / eager kerasrs and replay / PyTorch per round, their medians and spreads, and the
machine's load average before and after each model (the machine is shared: a high load makes
every number noisier). Targets: replay >= 1.3x eager kerasrs for the MLP at batch 32 and for the
LSTM, >= 1.2x PyTorch for every model::

    .venv/bin/python benchmarks/compare.py --jit --model mlp --batch-size 32 --rounds 5 \
        --torch-python /work/refvenv/bin/python
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
MODELS = ("mlp", "cnn", "lstm", "transformer")
TARGETS = {"mlp": 1.3, "cnn": 1.0, "lstm": 1.0, "transformer": 1.1}
JIT_TARGETS = {"eager": {"mlp": 1.3, "lstm": 1.3}, "pytorch": 1.2}  # replay / ..., see --jit
THREADS = {v: "2" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                            "NUMBA_NUM_THREADS")}
SAMPLES = {"mlp": 15360, "cnn": 2560, "lstm": 7680, "transformer": 7680}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=MODELS + ("all",), default="all")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--samples", type=int, default=None, help="per timed epoch (default per model)")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--kerasrs-python", default=sys.executable)
    p.add_argument("--torch-python", default=sys.executable)
    p.add_argument("--jit", action="store_true",
                   help="also time kerasrs with compile(jit_compile=True) (replayed steps)")
    p.add_argument("--worker", choices=("kerasrs", "pytorch", "gemm"), help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    models = MODELS if args.model == "all" else (args.model,)
    has_torch = subprocess.run([args.torch_python, "-c", "import torch"], capture_output=True,
                               env=child_env()).returncode == 0
    if not has_torch:
        print(f"PyTorch is not importable by {args.torch_python}: timing kerasrs only "
              "(pass --torch-python /path/to/python with torch).")
    gflops = spawn(args.kerasrs_python, ["--worker", "gemm"])["gflops"]
    print(f"sgemm rate, 2 threads: {gflops:.0f} GFLOP/s (the GEMM floor below uses it)")
    with tempfile.TemporaryDirectory() as tmp:
        data = write_data(args, tmp)
        for model in models:
            compare(args, model, data, gflops, has_torch)


def compare(args, model, data, gflops, has_torch):
    sides = ["kerasrs"] + (["replay"] if args.jit else []) + (["pytorch"] if has_torch else [])
    samples = args.samples or SAMPLES[model]
    rates = {s: [] for s in sides}
    floor = gflops * 1e9 / models_flops(model)
    print(f"\n== {model}: {samples} samples/epoch, batch {args.batch_size}, GEMM floor "
          f"{floor:,.0f} samples/s; load average before: {_load()}")
    for r in range(args.rounds):
        for side in sides:
            python = args.torch_python if side == "pytorch" else args.kerasrs_python
            worker = "pytorch" if side == "pytorch" else "kerasrs"
            out = spawn(python, ["--worker", worker, "--model", model, "--data", data,
                                 "--samples", str(samples), "--batch-size", str(args.batch_size)]
                        + (["--jit"] if side == "replay" else []))
            rates[side].append(out["rate"])
        line = "  ".join(f"{s} {rates[s][-1]:8,.0f}" for s in sides)
        if has_torch:
            line += f"  ratio {rates['kerasrs'][-1] / rates['pytorch'][-1]:.2f}"
        print(f"round {r + 1}: {line}  samples/s")
    med = {s: statistics.median(v) for s, v in rates.items()}
    for s in sides:
        print(f"median {s:8s} {med[s]:8,.0f} samples/s = {med[s] / floor:.0%} of the GEMM floor")
    if has_torch:
        print(f"ratio kerasrs/pytorch of the medians: {med['kerasrs'] / med['pytorch']:.2f} "
              f"(target >= {TARGETS[model]}); per round: "
              + ", ".join(f"{k / t:.2f}" for k, t in zip(rates["kerasrs"], rates["pytorch"])))
    if args.jit:
        _ratios("replay/eager", rates["replay"], rates["kerasrs"],
                JIT_TARGETS["eager"].get(model))
        if has_torch:
            _ratios("replay/pytorch", rates["replay"], rates["pytorch"],
                    JIT_TARGETS["pytorch"])
    print(f"load average after: {_load()}")


def _ratios(name, a, b, target):
    """Per-round ratios a/b (same round: the same machine state), their median and spread."""
    per_round = [x / y for x, y in zip(a, b)]
    goal = f" (target >= {target})" if target else ""
    print(f"{name}: median {statistics.median(per_round):.2f}, spread {min(per_round):.2f}-"
          f"{max(per_round):.2f}{goal}; per round: " + ", ".join(f"{r:.2f}" for r in per_round))


def _load():
    try:
        return " ".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


def models_flops(model):
    sys.path.insert(0, str(HERE))
    import models

    return models.train_flops(model)


def child_env():
    """The pinned thread counts, and this checkout's kerasrs ahead of any installed one (an
    editable install of another worktree would otherwise be timed)."""
    path = os.pathsep.join(p for p in (str(HERE.parent), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, **THREADS, "PYTHONPATH": path}


def spawn(python, argv):
    """Run this script as a worker in a fresh process; its last stdout line is JSON."""
    proc = subprocess.run([python, str(pathlib.Path(__file__).resolve()), *argv],
                          capture_output=True, text=True, env=child_env())
    if proc.returncode:
        sys.exit(f"worker {argv} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def write_data(args, tmp):
    """Fashion-MNIST training images (float32 in [0, 1]) and labels, in one .npz for all."""
    import numpy as np

    import kerasrs

    try:
        (x, y), _ = kerasrs.datasets.fashion_mnist.load_data()
    except (OSError, ValueError) as e:  # offline machine without the Debian package
        print(f"(Fashion-MNIST unavailable: {e}; using random data of the same shape)")
        rng = np.random.default_rng(0)
        x, y = rng.integers(0, 256, (60000, 28, 28), dtype=np.uint8), rng.integers(0, 10, 60000)
    path = os.path.join(tmp, "data.npz")
    np.savez(path, x=x[:max(SAMPLES.values()) if args.samples is None else args.samples],
             y=y[:len(x)])
    return path


def worker(args):
    import numpy as np

    if args.worker == "gemm":
        a = np.random.default_rng(0).random((2048, 2048), dtype=np.float32)
        best = min(_timed(lambda: a @ a) for _ in range(5))
        print(json.dumps({"gflops": 2 * 2048 ** 3 / best / 1e9}))
        return
    sys.path.insert(0, str(HERE))
    import models

    if args.worker == "pytorch":
        import torch

        torch.set_num_threads(2)
        torch.manual_seed(0)
        build = models.torch_model
    else:
        import kerasrs

        kerasrs.utils.set_random_seed(0)
        build = (lambda name: models.kerasrs_model(name, jit_compile=True)) if args.jit else \
            models.kerasrs_model
    np.seterr(all="ignore")
    with np.load(args.data) as f:
        x = (f["x"][:args.samples].astype("float32") / 255.0)
        y = f["y"][:args.samples].astype("int64")
    x = x.reshape((len(x),) + models.INPUT_SHAPES[args.model])
    run = build(args.model)
    # warm-up; with --jit: both step shapes the epoch uses traced twice (and kernels compiled)
    warm = 4 * args.batch_size + len(x) % args.batch_size
    run(x[:warm], y[:warm], args.batch_size)
    run(x[:warm], y[:warm], args.batch_size)
    seconds = _timed(lambda: run(x, y, args.batch_size))
    print(json.dumps({"rate": len(x) / seconds}))


def _timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
