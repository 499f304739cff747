"""How much faster a replayed step could be than an eager one: the time `fit` spends inside the
replayed program's steps (its kernels and their direct calls) against eager `fit`'s step.

For each of compare.py's models (`models.kerasrs_network`, batch 128 unless ``--batch-size``,
Adam, 2 threads), one process trains an eager model and a ``jit_compile=True`` model on the same
random data, alternating epochs (only ratios of interleaved rounds mean anything on a shared
machine). Each step of the replayed program is wrapped with a clock after the warm-up, so the
replay's own time is split in two: inside the steps, and the rest (the step loop, `fit`'s data
slicing, callbacks and loss means, shared with eager `fit`).

``eager / in steps`` bounds ``replay / eager``: a replay with no cost at all outside its kernels
would reach it, and no more, unless its kernels themselves got faster than eager's. Prints
milliseconds per step (median of the rounds, and the best round) and the two ratios.

    .venv/bin/python benchmarks/replay_bound.py [--model mlp lstm] [--batch-size 32] [--rounds 7]
"""

import argparse
import statistics
import time

import common  # noqa: F401  (2 BLAS threads, set before NumPy loads)
import models
import numpy as np

import kerasrs


def timed(step, total):
    """``step`` adding its seconds to ``total[0]``."""
    def run(values, fns):
        start = time.perf_counter()
        step(values, fns)
        total[0] += time.perf_counter() - start
    return run


def measure(name, batch, rounds, steps):
    rng = np.random.default_rng(0)
    n = batch * steps
    x = rng.random((n,) + models.INPUT_SHAPES[name], dtype=np.float32)
    y = rng.integers(0, 10, n)
    fitted = {}
    for jit in (False, True):
        kerasrs.utils.set_random_seed(0)
        model, loss = models.kerasrs_network(name)
        model.compile(optimizer="adam", loss=loss, jit_compile=jit)
        model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)  # traces, compiles
        fitted[jit] = model
    inside = [0.0]
    for entry in fitted[True]._jit.entries.values():
        for plan in entry.program._plans.values():
            plan.steps = [(timed(step, inside), drop) for step, drop in plan.steps]
    times = {"eager": [], "replay": [], "in steps": []}
    for _ in range(rounds):
        for jit, label in ((False, "eager"), (True, "replay")):
            inside[0] = 0.0
            start = time.perf_counter()
            fitted[jit].fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
            times[label].append((time.perf_counter() - start) * 1e3 / steps)
            if jit:
                times["in steps"].append(inside[0] * 1e3 / steps)
    return times


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", nargs="+", choices=models.INPUT_SHAPES, default=list(models.INPUT_SHAPES))
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--steps", type=int, default=30, help="steps per round")
    args = p.parse_args()
    for name in args.model:
        times = measure(name, args.batch_size, args.rounds, args.steps)
        med = {k: statistics.median(v) for k, v in times.items()}
        best = {k: min(v) for k, v in times.items()}
        print(f"{name}, batch {args.batch_size} ({args.rounds} rounds of {args.steps} steps): " +
              ", ".join(f"{k} {med[k]:.3f} ms (best {best[k]:.3f})" for k in times))
        print(f"  eager / replay {med['eager'] / med['replay']:.2f} (best rounds "
              f"{best['eager'] / best['replay']:.2f}); eager / in steps, the bound: "
              f"{med['eager'] / med['in steps']:.2f} (best rounds "
              f"{best['eager'] / best['in steps']:.2f})")


if __name__ == "__main__":
    main()
