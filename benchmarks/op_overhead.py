"""Per-op overhead of kerasrs's tape against PyTorch eager, forward + backward.

Two workloads, interleaved in one process (the machine is shared and noisy, so only ratios of
interleaved runs mean anything):

* tiny: ``sum(x * w)`` on shape (1,) float32 tensors, then the gradient with respect to ``w``:
  pure framework overhead (two recorded ops and their backward).
* matmul: ``sum(a @ b)`` with 512x512 float32 matrices, gradients with respect to both: a
  BLAS race, where a framework should add nothing.

PyTorch runs only if ``import torch`` works; it is limited to 2 threads, like NumPy's BLAS here.

Usage:
    .venv/bin/python benchmarks/op_overhead.py [--rounds 7] [--seconds 0.2]

Prints microseconds per iteration (median over rounds, and the range) and kerasrs/torch ratios
of the medians and of the best rounds (the best round is the least disturbed by other load).
"""

import argparse
import statistics
import time

import numpy as np

import kerasrs
from kerasrs import ops

try:
    import torch

    torch.set_num_threads(2)
except ImportError:  # the benchmark still reports kerasrs alone
    torch = None


def kerasrs_tiny():
    x = kerasrs.Tensor(np.ones(1, "float32"))
    w = kerasrs.Variable(np.full(1, 2.0, "float32"))

    def step():
        with kerasrs.GradientTape() as tape:
            loss = ops.sum(x * w)
        return tape.gradient(loss, w)

    return step


def kerasrs_matmul(n):
    rng = np.random.default_rng(0)
    a = kerasrs.Variable(rng.standard_normal((n, n), dtype="float32"))
    b = kerasrs.Variable(rng.standard_normal((n, n), dtype="float32"))

    def step():
        with kerasrs.GradientTape() as tape:
            loss = ops.sum(ops.matmul(a, b))
        return tape.gradient(loss, [a, b])

    return step


def torch_tiny():
    x = torch.ones(1)
    w = torch.full((1,), 2.0, requires_grad=True)

    def step():
        loss = (x * w).sum()
        return torch.autograd.grad(loss, w)

    return step


def torch_matmul(n):
    g = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=g, requires_grad=True)
    b = torch.randn(n, n, generator=g, requires_grad=True)

    def step():
        loss = (a @ b).sum()
        return torch.autograd.grad(loss, [a, b])

    return step


def time_per_iter(step, seconds):
    """Microseconds per call of ``step``, over a batch of calls lasting about ``seconds``."""
    step()
    calls, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds / 10:  # calibrate the batch size
        step()
        calls += 1
    reps = max(1, calls * 10)
    t0 = time.perf_counter()
    for _ in range(reps):
        step()
    return (time.perf_counter() - t0) / reps * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=0.3, help="per case and round")
    parser.add_argument("--n", type=int, default=512, help="matmul size")
    args = parser.parse_args()

    cases = {"kerasrs tiny": kerasrs_tiny(), "kerasrs matmul": kerasrs_matmul(args.n)}
    if torch is not None:
        cases.update({"torch tiny": torch_tiny(), "torch matmul": torch_matmul(args.n)})
    times = {name: [] for name in cases}
    for _ in range(args.rounds):  # interleaved, so drifts in machine load hit every case alike
        for name, step in cases.items():
            times[name].append(time_per_iter(step, args.seconds))
    med = {name: statistics.median(ts) for name, ts in times.items()}
    print(f"numpy {np.__version__}" + (f", torch {torch.__version__} (2 threads)" if torch else
                                       ", torch not available"))
    for name, us in med.items():
        spread = f"{min(times[name]):.1f}-{max(times[name]):.1f}"
        print(f"{name:16s} {us:10.1f} us/iter  (rounds: {spread})")
    if torch is not None:
        for what, target in (("tiny", 3.0), ("matmul", 1.1)):
            ratio = med[f"kerasrs {what}"] / med[f"torch {what}"]
            best = min(times[f"kerasrs {what}"]) / min(times[f"torch {what}"])
            verdict = "ok" if ratio <= target else "MISSES"
            print(f"ratio kerasrs/torch {what:6s}: median {ratio:5.2f}, best-of-rounds {best:5.2f}"
                  f"  (target <= {target}: {verdict})")


if __name__ == "__main__":
    main()
