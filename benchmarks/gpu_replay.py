"""Graph replay on one GPU: eager training against the replayed step and its CUDA-graph capture.

For each benchmark model (benchmarks/models.py; Adam, float32, random data of the model's input
shape, one batch size), four ways to run the same training steps on the CuPy backend, each on
its own copy of the model (same seed), timed in interleaved rounds in one process, each round
ended by a device sync:

* eager: ``model.fit`` (op by op, the batches read from host memory);
* jit: ``model.fit`` of a model compiled with ``jit_compile=True`` (the replayed step inside
  fit: its data handling, loss mean and callbacks included);
* replay: ``kerasrs.graph.compile(trace_train_step(...))`` called on device batches (fused
  RawKernels, planned buffers);
* graph: the same with ``cuda_graph=True`` (one CUDA-graph launch per step after the
  warm-up and capture steps).

Prints milliseconds per step (median and best round), the ratios eager / replay and replay /
graph, and checks that the replay and graph copies end with the same weights (they run the
same steps; a model with dropout is not captured, and its copies draw different masks). ``--standin`` runs it on the test-only CuPy stand-in (tests/cupy_standin; tiny
sizes, to check the script without a GPU: its times mean nothing). Run:
    python benchmarks/gpu_replay.py [--models mlp cnn] [--batch 128] [--steps 30] [--rounds 3]
"""

import argparse
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def runners(name, batch, steps, cp):
    import kerasrs
    from kerasrs import graph, optimizers

    import models

    rng = np.random.default_rng(0)
    x = rng.random((steps * batch, *models.INPUT_SHAPES[name])).astype("float32")
    y = rng.integers(0, 10, steps * batch)
    device_batches = [(cp.asarray(x[k * batch:(k + 1) * batch]),
                       cp.asarray(y[k * batch:(k + 1) * batch])) for k in range(steps)]
    be = kerasrs.backend.get("cupy")

    def fresh():
        kerasrs.utils.set_random_seed(0)
        return models.kerasrs_network(name)

    def fitter(jit_compile):
        model, loss = fresh()
        model.compile(optimizer=optimizers.Adam(1e-3), loss=loss, jit_compile=jit_compile)

        def run():
            model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
        return run, model

    def replayer(cuda_graph):
        model, loss = fresh()
        loss, optimizer = kerasrs.losses.get(loss), optimizers.Adam(1e-3)
        program = graph.compile(graph.trace_train_step(model, optimizer, loss,
                                                       device_batches[0]),
                                cuda_graph=cuda_graph)

        def run():
            for xb, yb in device_batches:
                program(x=xb, y=yb, **graph.hyper_feeds(optimizer, be))
        model.replay_plan = lambda: program.plan_for(x=device_batches[0][0],
                                                     y=device_batches[0][1],
                                                     **graph.hyper_feeds(optimizer, be))
        return run, model

    made = {"eager": fitter(False), "jit": fitter(True), "replay": replayer(False),
            "graph": replayer(True)}
    return {k: v[0] for k, v in made.items()}, {k: v[1] for k, v in made.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["mlp", "cnn"],
                        choices=["mlp", "cnn", "lstm", "transformer"])
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=30, help="steps per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--standin", action="store_true",
                        help="run on the CuPy stand-in (no GPU; checks the script only)")
    args = parser.parse_args()
    if args.standin:
        sys.path.insert(0, str(ROOT / "tests" / "cupy_standin"))
        import standin

        main.standin = standin.installed()  # kept: a collected context would uninstall it
        main.standin.__enter__()
    import cupy as cp

    import kerasrs

    be = kerasrs.backend.get("cupy")
    if args.standin:  # few CPU threads per launch
        be.kernels.max_grid, be.kernels.max_block = 2, 64
    with kerasrs.backend.using("cupy"):
        for name in args.models:
            run, trained = runners(name, args.batch, args.steps, cp)
            for fn in run.values():  # warm-up: compiles, traces, captures
                fn()
            cp.cuda.Device().synchronize()
            times = {k: [] for k in run}
            for _ in range(args.rounds):
                for k, fn in run.items():
                    start = time.perf_counter()
                    fn()
                    cp.cuda.Device().synchronize()
                    times[k].append((time.perf_counter() - start) / args.steps * 1e3)
            print(f"{name}, Adam, float32, batch {args.batch} ({args.steps} steps per round, "
                  f"{args.rounds} rounds):", flush=True)
            for k, ms in times.items():
                print(f"  {k:7s} {statistics.median(ms):8.3f} ms/step (best {min(ms):.3f})")
            med = {k: statistics.median(v) for k, v in times.items()}
            print(f"  eager / replay {med['eager'] / med['replay']:.2f}, eager / jit "
                  f"{med['eager'] / med['jit']:.2f}, replay / graph "
                  f"{med['replay'] / med['graph']:.2f}, eager / graph "
                  f"{med['eager'] / med['graph']:.2f}")
            diff = max(float(np.max(np.abs(a.numpy() - b.numpy()))) for a, b in
                       zip(trained["replay"].weights, trained["graph"].weights))
            plan = trained["graph"].replay_plan()
            same = f"graph vs replay weights after the same steps: max |diff| {diff:.3g}" if \
                plan.captured else "not captured (see the warning): graph ran as replay"
            print(f"  {same}; {len(plan.groups)} fused groups; {plan.launches} graph launches",
                  flush=True)


if __name__ == "__main__":
    main()
