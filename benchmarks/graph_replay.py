"""Replayed training step (kerasrs.graph) against eager kerasrs, for a Dense MLP.

The model is the benchmarks' MLP (784-512-512-10, relu, Adam, sparse cross-entropy from
logits, float32; ``--units`` changes the hidden width) on Fashion-MNIST batches. Three ways to
run one training step, timed in alternating rounds in one process (the machine is shared and
noisy: only ratios of interleaved rounds mean anything; every kernel is compiled before the
first round):

* fit: ``model.fit`` over the batches, per step (the loop users run);
* tape: the bare eager step, ``GradientTape`` + ``optimizer.apply`` (what fit does per batch,
  without its data handling, loss mean and callbacks);
* replay: ``kerasrs.graph.compile(trace_train_step(...))`` called on each batch.

Usage:
    .venv/bin/python benchmarks/graph_replay.py [--batches 32 128] [--rounds 5] [--steps 40]
        [--units 512] [--profile]

Prints milliseconds per step (median of rounds and the best round), the ratios eager / replay,
and with ``--profile`` where one replayed step spends its time (per step kind, summed).
"""

import argparse
import collections
import statistics
import time

import common  # noqa: F401  (2 BLAS threads, set before NumPy loads)

import kerasrs
from kerasrs import graph, layers, losses, optimizers


def mlp(seed, units):
    kerasrs.utils.set_random_seed(seed)
    return kerasrs.Sequential([layers.Input((784,)), layers.Dense(units, activation="relu"),
                               layers.Dense(units, activation="relu"), layers.Dense(10)])


def runners(x, y, batch, units):
    loss = losses.SparseCategoricalCrossentropy(from_logits=True)
    fit_model = mlp(0, units)
    fit_model.compile(optimizers.Adam(1e-3), loss)
    tape_model, tape_opt = mlp(0, units), optimizers.Adam(1e-3)
    replay_model, replay_opt = mlp(0, units), optimizers.Adam(1e-3)
    program = graph.compile(graph.trace_train_step(replay_model, replay_opt, loss,
                                                   (x[:batch], y[:batch])))
    steps = len(x) // batch
    batches = [(x[k * batch:(k + 1) * batch], y[k * batch:(k + 1) * batch])
               for k in range(steps)]

    def fit():
        fit_model.fit(x[:steps * batch], y[:steps * batch], batch_size=batch, epochs=1,
                      shuffle=False, verbose=0)

    def tape():
        variables = tape_model.trainable_weights
        for xb, yb in batches:
            with kerasrs.GradientTape() as t:
                value = loss(yb, tape_model(xb, training=True))
            tape_opt.apply(t.gradient(value, variables), variables)

    def replay():
        for xb, yb in batches:
            program(x=xb, y=yb, **graph.hyper_feeds(replay_opt))

    return {"fit": fit, "tape": tape, "replay": replay}, program, replay_opt, batches, steps


def profile(program, optimizer, batches, repeats=20):
    """Seconds per replayed step, summed by step label."""
    hyper = graph.hyper_feeds(optimizer)  # (the values do not change the time)
    plan = program.plan_for(x=batches[0][0], y=batches[0][1], **hyper)
    totals = collections.Counter()
    bindings = program.graph.bindings
    for _ in range(repeats):
        for xb, yb in batches:
            values = list(plan.template)
            for name, i in program.graph.input_ids().items():
                values[i] = {"x": xb, "y": yb, **hyper}[name]
            for name, i in program.graph.parameter_ids().items():
                values[i] = bindings[name].data
            fns = {}
            with kerasrs.autodiff.no_grad():
                for (step, drop), label in zip(plan.steps, plan.labels):
                    start = time.perf_counter()
                    step(values, fns)
                    totals[label] += time.perf_counter() - start
                    for j in drop:
                        values[j] = None
            start = time.perf_counter()
            plan._apply_updates(values, bindings)
            totals["updates copied at the end"] += time.perf_counter() - start
    steps = repeats * len(batches)
    return {label: t / steps for label, t in totals.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[32, 128])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=40, help="steps per round")
    parser.add_argument("--units", type=int, default=512,
                        help="hidden width (512: the benchmarks' MLP; 64 shows the per-op "
                             "overhead that replay removes)")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    for batch in args.batches:
        x, y = common.fashion_mnist(args.steps * batch)
        run, program, optimizer, batches, steps = runners(x, y, batch, args.units)
        for fn in run.values():  # warm up: compile kernels, build optimizers, fill pools
            fn()
        times = {name: [] for name in run}
        for _ in range(args.rounds):
            for name, fn in run.items():
                start = time.perf_counter()
                fn()
                times[name].append((time.perf_counter() - start) / steps * 1e3)
        print(f"MLP 784-{args.units}-{args.units}-10, Adam, float32, batch {batch} ({steps} "
              f"steps per round, {args.rounds} rounds):")
        for name, ms in times.items():
            print(f"  {name:7s} {statistics.median(ms):7.3f} ms/step (best {min(ms):.3f})")
        for name in ("fit", "tape"):
            median = statistics.median(times[name]) / statistics.median(times["replay"])
            best = min(times[name]) / min(times["replay"])
            print(f"  {name} / replay: median {median:.2f}, best {best:.2f}")
        if args.profile:
            parts = profile(program, optimizer, batches)
            total = sum(parts.values())
            print(f"  replay profile ({total * 1e3:.3f} ms/step in steps):")
            # the bound on replay / eager: replay with no cost outside its steps' kernels
            bound = statistics.median(times["fit"]) / (total * 1e3)
            print(f"  fit / time in steps: {bound:.2f} (the most replay could gain over fit)")
            for label, seconds in sorted(parts.items(), key=lambda item: -item[1]):
                print(f"    {label:30s} {seconds * 1e3:7.3f} ms  {100 * seconds / total:5.1f} %")


if __name__ == "__main__":
    main()
