"""Data-parallel training throughput: 1 process against 2 MPI processes, one BLAS thread each
(and, for reference, 1 process with 2 BLAS threads: the same two cores used by threads).

The 784-512-512-10 MLP of models.py (Adam) on Fashion-MNIST, global batch 256 (128 per
process with 2). The driver launches itself under ``mpiexec`` and alternates the setups round by
round (best epoch of each), then prints samples/second, the speed-up and the share of the epoch
spent in gradient communication: time inside MPI calls (which includes waiting for the slower
process) and "transfer alone" (a blocking allreduce of the same buffer with the processes lined
up, times the steps). "1 rank, DataParallel" is the machinery's own cost (buffer copies,
hooks). Two ranks run with the allreduce overlapped with backward (buckets of
``--bucket-mb``) and after backward (one allreduce). Run:
    .venv/bin/python benchmarks/data_parallel.py [--samples 8192] [--rounds 3] [--bucket-mb 1]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

# name: (processes, mode, BLAS threads per process)
SETUPS = {"1 process": (1, "none", 1), "1 process, 2 threads": (1, "none", 2),
          "1 rank, DataParallel": (1, "overlap", 1), "2 ranks, overlapped": (2, "overlap", 1),
          "2 ranks, after backward": (2, "after", 1)}


def worker(args):
    import common  # after the thread variables are set (by the driver's environment)
    import numpy as np

    import kerasrs
    from kerasrs import layers

    np.seterr(all="ignore")
    dist = None
    if args.mode != "none":
        dist = kerasrs.distribution.DataParallel(bucket_size_mb=args.bucket_mb,
                                                 overlap=args.mode == "overlap")
        kerasrs.distribution.set_distribution(dist)
    x, y = common.fashion_mnist(args.samples)
    model = kerasrs.Sequential([layers.Input((784,)), layers.Dense(512, activation="relu"),
                                layers.Dense(512, activation="relu"), layers.Dense(10)])
    model.compile("adam", kerasrs.losses.SparseCategoricalCrossentropy(from_logits=True))
    run = common.kerasrs_epoch(model, x, y, args.batch_size)
    run()  # warm-up: buffers, optimizer slots
    comm_before = dist.comm_seconds if dist else 0.0
    start = time.perf_counter()
    samples = run()
    seconds = time.perf_counter() - start
    comm = (dist.comm_seconds if dist else 0.0) - comm_before
    transfer = _allreduce_seconds(dist) * -(-samples // args.batch_size) if dist else 0.0
    if dist is None or dist.is_chief:
        print(json.dumps({"rate": samples / seconds, "comm_share": comm / seconds,
                          "transfer_share": transfer / seconds}))


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
    best = {name: None for name in SETUPS}
    for _ in range(args.rounds):
        for name, (ranks, mode, threads) in SETUPS.items():
            env = {**os.environ, **{v: str(threads) for v in (
                "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}}
            cmd = [sys.executable, os.path.join(here, "data_parallel.py"), "--worker", mode,
                   "--samples", str(args.samples), "--batch-size", str(args.batch_size),
                   "--bucket-mb", str(args.bucket_mb)]
            if mode != "none":
                cmd = [mpiexec, "-n", str(ranks), *cmd]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            if best[name] is None or result["rate"] > best[name]["rate"]:
                best[name] = result
    base = best["1 process"]["rate"]
    for name, result in best.items():
        print(f"{name:24s} {result['rate']:8.0f} samples/s  x{result['rate'] / base:4.2f}  "
              f"in communication calls {100 * result['comm_share']:4.1f}% of the epoch "
              f"(transfer alone {100 * result['transfer_share']:4.1f}%)")
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=8192)
    parser.add_argument("--batch-size", type=int, default=256, help="global batch")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bucket-mb", type=float, default=1.0)
    parser.add_argument("--worker", choices=["none", "overlap", "after"])
    args = parser.parse_args()
    if args.worker:
        args.mode = args.worker
        worker(args)
    else:
        driver(args)


if __name__ == "__main__":
    main()
