"""Data-parallel scaling on this machine: N MPI processes at one thread each against one process
with N threads (the same cores used by threads), N = 1, 2, ... up to the cores available.

The 784-512-512-10 MLP of models.py (Adam) on Fashion-MNIST, global batch 256 (256 / N per
process). The driver launches every setup in fresh processes (under ``mpiexec`` for the
DataParallel ones), alternating the setups round by round, and prints for each the median
samples/second over the rounds with their spread (min-max) and the speed-up over one process on
one thread. Rows:
- "N ranks x 1 thread": DataParallel() as a user makes it (``overlap="auto"``: buckets reduced
  while backward runs, ``--bucket-mb``, when a core is left for the MPI poller, else one
  allreduce of the whole buffer after backward); on a full node "N ranks, overlap=True" and
  "N ranks, overlap=False" force each of the two;
- "1 rank, DataParallel": the cost of the fit hooks alone (one process reduces nothing);
- "ceiling: N x 1/N batch": N times one process on one thread training on batch / N samples
  per step (run alone), what N ranks would reach if communication and sharing the machine cost
  nothing. It stays below N x: the optimizer's pass over every weight and the weight-sized GEMM
  traffic (reading the kernels, writing their gradients) do not shrink with the shard;
- "ceiling, N at once": the same N processes run at the same time (started together under
  ``mpiexec``, lined up by a barrier, no DataParallel), their rates summed: the ceiling with the
  cost of sharing the machine (memory bus, caches, the hypervisor's scheduling) included. This
  is the fair bound for "N ranks x 1 thread": the same samples per process and per optimizer
  step, the same optimizer work per process, only the gradient allreduce missing.
Columns:
- "quiet": samples/s (and speed-up) from the 10th percentile of the step times instead of the
  epoch's; on a machine that other work shares, what the setup does on undisturbed steps;
- "in comm": the share of the epoch spent inside gradient communication calls (starting
  buckets, then waiting after backward; the wait includes waiting for a slower process);
- "waiting": the part of it spent waiting after backward had ended (what overlap did not hide);
- "alone": a blocking allreduce of the gradient buffer with the processes lined up first, times
  the steps (the transfer without any waiting);
- "overlap": of the buckets started before the last one, the share that had finished when
  backward ended (0 without a progress thread: MPI advances them only inside its calls).
A second table splits the median step of every multi-process row per rank, in milliseconds:
"compute" (forward and backward), "comm" (inside the gradient communication calls: for a rank
that finished backward first, mostly waiting for the other), "optimizer" (``optimizer.apply``)
and "other" (the rest: slicing the batch, the loss tracker, metrics, Python); the ceiling rows
have no "comm". Two ranks with the same compute but a large "comm" on one of them are not
balanced step by step (one finished backward first and waited).
Run:
    .venv/bin/python benchmarks/data_parallel.py [--samples 16384] [--rounds 5] [--bucket-mb 1]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np  # the thread variables come from the driver's environment

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


_OVERLAP = {"auto": "auto", "overlap": True, "after": False}  # --worker mode -> DataParallel's


def setups(cores):
    """{name: (processes, mode, threads per process, batch divisor)}; modes "none" and
    "together" are a plain fit, on ``batch / divisor`` samples per step, its rate counted
    ``divisor`` times ("none", one process alone) or summed over the N processes ("together"):
    the ceilings, N processes that only compute, each on its shard."""
    table = {"1 process, 1 thread": (1, "none", 1, 1), "1 rank, DataParallel": (1, "overlap", 1, 1)}
    for n in range(2, cores + 1):
        table[f"1 process, {n} threads"] = (1, "none", n, 1)
        table[f"{n} ranks x 1 thread"] = (n, "auto", 1, 1)  # the default: DataParallel()
        table[f"ceiling: {n} x 1/{n} batch"] = (1, "none", 1, n)
        table[f"ceiling, {n} at once"] = (n, "together", 1, n)
    if cores >= 2:  # both settings of "auto" on a full node
        table[f"{cores} ranks, overlap=True"] = (cores, "overlap", 1, 1)
        table[f"{cores} ranks, overlap=False"] = (cores, "after", 1, 1)
    return table


def worker(args):
    import common

    import kerasrs
    from kerasrs import layers

    np.seterr(all="ignore")
    dist = comm = None
    if args.mode == "together":  # only to start the timed epochs together
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    elif args.mode != "none":
        dist = kerasrs.distribution.DataParallel(bucket_size_mb=args.bucket_mb,
                                                 overlap=_OVERLAP[args.mode])
        kerasrs.distribution.set_distribution(dist)
    x, y = common.fashion_mnist(args.samples)
    model = kerasrs.Sequential([layers.Input((784,)), layers.Dense(512, activation="relu"),
                                layers.Dense(512, activation="relu"), layers.Dense(10)])
    model.compile("adam", kerasrs.losses.SparseCategoricalCrossentropy(from_logits=True))
    run = common.kerasrs_epoch(model, x, y, args.batch_size)
    run()  # warm-up: buffers, optimizer slots, the reducer
    starts = _record_step_starts(kerasrs.distribution.for_fit())
    steps, applies = [], _record_applies(model.optimizer)
    reducing = dist is not None and dist._reducer is not None  # None on one process
    if reducing:
        _record_steps(dist._reducer, steps)
    comm_before = dist.comm_seconds if dist else 0.0
    wait_before = dist.wait_seconds if dist else 0.0
    comm = comm or (dist.comm if dist else None)
    if comm is not None:
        comm.Barrier()
    start = time.perf_counter()
    samples = run()
    seconds = time.perf_counter() - start
    durations = np.diff(starts)  # every step but the last
    result = {"rate": samples / seconds, "kerasrs": os.path.dirname(kerasrs.__file__),
              "quiet_rate": args.batch_size / np.percentile(durations, 10),
              "split": _split(starts, applies, steps)}
    if reducing:  # _allreduce_seconds is collective: every process measures
        n_steps = -(-samples // args.batch_size)
        result.update(comm=(dist.comm_seconds - comm_before) / seconds,
                      waiting=(dist.wait_seconds - wait_before) / seconds,
                      alone=_allreduce_seconds(dist) * n_steps / seconds,
                      overlap=_overlap(steps), buckets=len(dist._reducer.buckets))
    result["split"] = [result["split"]]
    if comm is not None:  # every process's split; "together": the rates summed
        splits = comm.gather(result["split"][0], root=0)
        rates = comm.gather((result["rate"], result["quiet_rate"]), root=0)
        if comm.Get_rank() != 0:
            return
        result["split"] = splits
        if args.mode == "together":
            result["rate"], result["quiet_rate"] = (sum(r) for r in zip(*rates))
    print(json.dumps(result))


def _record_step_starts(hooks):
    """The `time.perf_counter` at the start of every fit step: ``fit`` calls its distribution's
    (or the stand-in's) ``shard_step`` once per step."""
    starts, shard_step = [], hooks.shard_step

    def recorded(batch):
        starts.append(time.perf_counter())
        return shard_step(batch)

    hooks.shard_step = recorded
    return starts


def _record_applies(optimizer):
    """The seconds of every ``optimizer.apply`` call from now on."""
    seconds, apply = [], optimizer.apply

    def recorded(*args, **kwargs):
        tic = time.perf_counter()
        out = apply(*args, **kwargs)
        seconds.append(time.perf_counter() - tic)
        return out

    optimizer.apply = recorded
    return seconds


def _split(starts, applies, steps):
    """Median milliseconds per step of: compute (forward and backward, buckets started during
    backward included), comm (from the end of backward to the reduced gradients), optimizer
    (``optimizer.apply``), other (the rest of the step) and the whole step. Without a reducer
    (``steps`` empty) compute holds all but the optimizer."""
    n = len(starts) - 1
    total = np.diff(starts)
    optimizer = np.array(applies[:n])
    if steps:
        compute = np.array([s["backward_end"] for s in steps[:n]]) - np.array(starts[:n])
        comm = np.array([s["end"] - s["backward_end"] for s in steps[:n]])
    else:
        compute, comm = total - optimizer, np.zeros(n)
    other = total - compute - comm - optimizer
    return {k: round(1e3 * float(np.median(v)), 3) for k, v in
            (("compute", compute), ("comm", comm), ("optimizer", optimizer), ("other", other),
             ("step", total))}


def _record_steps(reducer, steps):
    """Keep a copy of ``reducer.last_step`` after every step."""
    finish = reducer._finish

    def recorded():
        finish()
        steps.append(dict(reducer.last_step))

    reducer._finish = recorded


def _overlap(steps):
    """Of the buckets started before the last one, the share finished before backward ended
    (None with a single bucket)."""
    early = [done for s in steps for done in s["done_in_backward"][:-1]]
    return sum(early) / len(early) if early else None


def _allreduce_seconds(dist, repeats=20):
    """One blocking allreduce of the gradient buffer with all processes lined up first: the
    transfer alone, without the wait for a slower process that ``comm_seconds`` includes."""
    buffer = dist._reducer.buffer.copy()
    mpi = dist._mpi
    best = float("inf")
    for _ in range(repeats):
        dist.comm.Barrier()
        start = mpi.Wtime()
        dist.comm.Allreduce(mpi.IN_PLACE, buffer, op=mpi.SUM)
        best = min(best, mpi.Wtime() - start)
    return best


def driver(args):
    here = os.path.dirname(os.path.abspath(__file__))
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or "mpiexec"
    cores = args.cores or len(os.sched_getaffinity(0))
    table = setups(cores)
    results = {name: [] for name in table}
    for _ in range(args.rounds):
        for name, (ranks, mode, threads, divisor) in table.items():
            env = {**os.environ, **{v: str(threads) for v in THREAD_VARIABLES}}
            cmd = [sys.executable, os.path.join(here, "data_parallel.py"), "--worker", mode,
                   "--samples", str(args.samples // divisor),
                   "--batch-size", str(args.batch_size // divisor),
                   "--bucket-mb", str(args.bucket_mb)]
            if mode != "none":
                cmd = [mpiexec, "-n", str(ranks), *cmd]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True,
                                 timeout=900)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            if mode == "none":  # one process alone: counted as N of them
                result["rate"] *= divisor
                result["quiet_rate"] *= divisor
            results[name].append(result)
    report(results, args)
    return results


def report(results, args):
    base = statistics.median(r["rate"] for r in results["1 process, 1 thread"])
    print(f"MLP 784-512-512-10, Adam, global batch {args.batch_size}, {args.samples} samples, "
          f"buckets of {args.bucket_mb} MiB; median of {args.rounds} rounds (min-max); kerasrs "
          f"from {next(iter(results.values()))[0]['kerasrs']}")
    quiet_base = statistics.median(r["quiet_rate"] for r in results["1 process, 1 thread"])
    print(f"{'setup':27s} {'samples/s':>22s} {'speed-up':>8s} {'quiet':>13s} {'in comm':>8s} "
          f"{'waiting':>8s} {'alone':>6s} {'overlap':>8s}")
    for name, runs in results.items():
        rates = [r["rate"] for r in runs]
        rate = statistics.median(rates)
        quiet = statistics.median(r["quiet_rate"] for r in runs)
        line = (f"{name:27s} {rate:8.0f} ({min(rates):5.0f}-{max(rates):5.0f}) "
                f"{rate / base:7.2f}x {quiet:6.0f} {quiet / quiet_base:5.2f}x")
        if "comm" in runs[0]:
            share = {k: statistics.median(r[k] for r in runs) for k in ("comm", "waiting",
                                                                       "alone")}
            overlaps = [r["overlap"] for r in runs if r["overlap"] is not None]
            overlap = f"{100 * statistics.median(overlaps):7.0f}%" if overlaps else "      -"
            line += (f" {100 * share['comm']:7.1f}% {100 * share['waiting']:7.1f}% "
                     f"{100 * share['alone']:5.1f}% {overlap} ({runs[0]['buckets']} buckets)")
        print(line)
    print("per-step split, ms (median over steps, then over rounds): compute / comm / optimizer"
          " / other = step, one group per rank")
    for name, runs in results.items():
        ranks = len(runs[0]["split"])
        if ranks < 2:
            continue
        parts = []
        for rank in range(ranks):
            m = {k: statistics.median(r["split"][rank][k] for r in runs)
                 for k in ("compute", "comm", "optimizer", "other", "step")}
            parts.append(f"{m['compute']:5.2f} / {m['comm']:4.2f} / {m['optimizer']:4.2f} / "
                         f"{m['other']:4.2f} = {m['step']:5.2f}")
        print(f"{name:27s} " + "   ".join(parts))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=16384)
    parser.add_argument("--batch-size", type=int, default=256, help="global batch")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--bucket-mb", type=float, default=1.0)
    parser.add_argument("--cores", type=int, help="largest N (default: the CPUs available)")
    parser.add_argument("--worker", choices=["none", "together", "auto", "overlap", "after"])
    args = parser.parse_args()
    if args.worker:
        args.mode = args.worker
        worker(args)
    else:
        driver(args)


if __name__ == "__main__":
    main()
