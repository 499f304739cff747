"""Where one training step of compare.py's LSTM model goes (LSTM(128) over 28 rows, Dense(10),
batch 128, Adam, 2 threads), and old-vs-new step timings in alternating subprocesses.

    python benchmarks/lstm_step.py profile [--jit] [--cpu-time]  # phases + cProfile of steps
    python benchmarks/lstm_step.py time [--jit]         # one line: median ms per step
    python benchmarks/lstm_step.py compare OLD NEW [--jit] [--rounds 5] [--threads 2] [--cpu-time]
        # OLD/NEW: kerasrs checkouts; each round runs `time` under each (alternating) and the
        # report is the median of the per-round ratios old/new; `time` reports the fastest of
        # 25 epochs of 4 steps (on a shared machine the 2-thread GEMMs stall at random)

Random data (the speed does not depend on the values); threads pinned as in compare.py.
"""

import os
import sys

THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
for _var in THREADS:
    os.environ.setdefault(_var, "2")

import argparse  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

BATCH, STEPS, FEATURES, UNITS = 128, 28, 28, 128


def build(jit):
    import kerasrs
    from kerasrs import layers

    model = kerasrs.Sequential([layers.Input((STEPS, FEATURES)), layers.LSTM(UNITS),
                                layers.Dense(10)])
    model.compile(optimizer="adam", jit_compile=jit,
                  loss=kerasrs.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    x = rng.random((BATCH * 20, STEPS, FEATURES), dtype=np.float32)
    y = rng.integers(0, 10, BATCH * 20)
    model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)  # warm up
    return model, x, y


def step_ms(model, x, y, clock=time.perf_counter):
    """Milliseconds per training step over one fit epoch of ``len(x) / BATCH`` steps."""
    t0 = clock()
    model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    return (clock() - t0) * 1e3 / (len(x) // BATCH)


class Phases:
    """Wall time per phase: wrapped methods add to ``totals[Class.method]``; ``np.matmul``
    calls (the per-step GEMMs) add to ``totals[matmul in <innermost wrapped method>]``."""

    def __init__(self, clock=time.perf_counter):
        self.totals, self.stack, self.clock = {}, [], clock

    def add(self, label, seconds):
        self.totals[label] = self.totals.get(label, 0.0) + seconds

    def wrap(self, cls, name):
        inner, label = getattr(cls, name), f"{cls.__name__}.{name}"

        def wrapper(*args, **kwargs):
            self.stack.append(label)
            t0 = self.clock()
            try:
                return inner(*args, **kwargs)
            finally:
                self.add(label, self.clock() - t0)
                self.stack.pop()

        setattr(cls, name, wrapper)

    def wrap_loop(self, cls, name):
        """Time the per-step functions that ``cls.name`` returns (``lstm_gates_loop``)."""
        inner = getattr(cls, name)

        def timed(label, f):
            def step(*args):
                t0 = self.clock()
                f(*args)
                self.add(label, self.clock() - t0)
            return step

        def wrapper(*args, **kwargs):
            forward, backward = inner(*args, **kwargs)
            return (timed(f"{name}: forward step", forward),
                    timed(f"{name}: backward step", backward))

        setattr(cls, name, wrapper)

    def wrap_matmul(self):
        inner = np.matmul

        def matmul(*args, **kwargs):
            t0 = self.clock()
            try:
                return inner(*args, **kwargs)
            finally:
                where = self.stack[-1] if self.stack else "elsewhere"
                self.add(f"np.matmul in {where}", self.clock() - t0)

        np.matmul = matmul


def profile(jit, clock):
    import cProfile
    import pstats

    from kerasrs.backend.numpy_backend import NumpyBackend
    from kerasrs.ops import gated_recurrence

    model, x, y = build(jit)
    phases = Phases(clock)
    lstm = gated_recurrence.LSTMRecurrence
    for cls, name in [(lstm, "forward"), (lstm, "backward"), (NumpyBackend, "lstm_gates"),
                      (NumpyBackend, "lstm_gates_grad")] + \
            [(lstm, n) for n in ("_weight_grads",) if hasattr(lstm, n)]:
        phases.wrap(cls, name)
    if hasattr(NumpyBackend, "lstm_gates_loop"):  # (the per-step kernels, after one checked call)
        phases.wrap_loop(NumpyBackend, "lstm_gates_loop")
    phases.wrap_matmul()
    steps = len(x) // BATCH
    total = step_ms(model, x, y, clock) * steps / 1e3
    print(f"step: {total * 1e3 / steps:.2f} ms (eager{' + jit' if jit else ''}); "
          "phases nest (forward includes its kernels and GEMMs)")
    for k, v in sorted(phases.totals.items(), key=lambda kv: -kv[1]):
        print(f"  {k:45s} {v * 1e3 / steps:7.2f} ms/step  {100 * v / total:5.1f} %")
    gemm_probe()
    prof = cProfile.Profile()
    prof.enable()
    step_ms(model, x, y)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(18)


def gemm_probe(n=200):
    """The per-step recurrent GEMMs at this shape, alone (microseconds each)."""
    rng = np.random.default_rng(1)
    a = rng.random((BATCH, FEATURES + UNITS + 1), dtype=np.float32)
    w = rng.random((FEATURES + UNITS + 1, 4 * UNITS), dtype=np.float32)
    h = rng.random((BATCH, UNITS), dtype=np.float32)
    u = rng.random((UNITS, 4 * UNITS), dtype=np.float32)
    dz = rng.random((BATCH, 4 * UNITS), dtype=np.float32)
    ut = np.ascontiguousarray(u.T)
    out, out_h = np.empty((BATCH, 4 * UNITS), np.float32), np.empty((BATCH, UNITS), np.float32)
    cases = {"[x,h,1] @ W  (forward, 157 inner)": lambda: np.matmul(a, w, out=out),
             "h @ U        (forward, 128 inner)": lambda: np.matmul(h, u, out=out),
             "dz @ U.T view (backward)": lambda: np.matmul(dz, u.T, out=out_h),
             "dz @ copy(U.T) (backward)": lambda: np.matmul(dz, ut, out=out_h)}
    for label, f in cases.items():
        f()
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        print(f"  gemm {label:36s} {(time.perf_counter() - t0) / n * 1e6:6.1f} us")


def compare(old, new, jit, rounds, threads, cpu_time):
    env = {**os.environ, **{v: threads for v in THREADS}}
    cmd = [sys.executable, os.path.abspath(__file__), "time"] + (["--jit"] if jit else []) + \
        (["--cpu-time"] if cpu_time else [])
    ratios, figures = [], {"old": [], "new": []}
    for r in range(rounds):
        for side, path in (("old", old), ("new", new)):
            out = subprocess.run(cmd, env={**env, "PYTHONPATH": path}, cwd=path, check=True,
                                 capture_output=True, text=True).stdout
            figures[side].append(float(out.split()[0]))
        ratios.append(figures["old"][-1] / figures["new"][-1])
        print(f"round {r}: old {figures['old'][-1]:.2f} ms, new {figures['new'][-1]:.2f} ms, "
              f"old/new {ratios[-1]:.3f}", flush=True)
    print(f"median old/new {statistics.median(ratios):.3f} over {rounds} rounds "
          f"(median ms/step old {statistics.median(figures['old']):.2f}, "
          f"new {statistics.median(figures['new']):.2f})")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=("profile", "time", "compare"))
    p.add_argument("paths", nargs="*")
    p.add_argument("--jit", action="store_true")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeats", type=int, default=25)
    p.add_argument("--threads", default="2")
    p.add_argument("--cpu-time", action="store_true",
                   help="time by the process's CPU time (meaningful with --threads 1 only: "
                        "OpenBLAS threads spin between GEMMs)")
    args = p.parse_args()
    if args.mode == "profile":
        profile(args.jit, time.thread_time if args.cpu_time else time.perf_counter)
    elif args.mode == "time":  # the fastest of many short epochs: the least disturbed
        model, x, y = build(args.jit)
        x, y = x[:BATCH * 4], y[:BATCH * 4]
        clock = time.process_time if args.cpu_time else time.perf_counter
        print(min(step_ms(model, x, y, clock) for _ in range(args.repeats)))
    else:
        compare(*args.paths, args.jit, args.rounds, args.threads, args.cpu_time)


if __name__ == "__main__":
    main()
