"""Where one eager training step of the benchmark CNN (`models.kerasrs_network("cnn")`, batch
128, Adam, 2 threads) spends its time: wall time per op (forward and backward of each
`Function` class, each backend kernel family) by wrapping them with ``time.perf_counter``,
and optionally a cProfile listing. Numbers nest: a backend kernel's time is also inside the op
that called it. On a loaded machine, ``--threads 1 --cpu-clock`` counts the process's CPU time
instead (with one thread that is the work done, whatever the other processes do). Run from the
repository root:

    PYTHONPATH=. .venv/bin/python benchmarks/cnn_profile.py [--steps 20] [--cprofile]
        [--threads 1 --cpu-clock]
"""

import os
import sys

if "--threads" in sys.argv:  # before NumPy loads its BLAS (common.py sets 2 by default)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = sys.argv[sys.argv.index("--threads") + 1]

import argparse
import collections
import cProfile
import functools
import pstats
import time

import common
import models
import numpy as np

import kerasrs
from kerasrs.autodiff import function as function_module
from kerasrs.backend import numpy_backend

BACKEND_METHODS = ("conv2d", "conv2d_grad", "im2col", "col2im", "max_pool", "max_pool_grad",
                   "bias_act", "bias_act_grad", "softmax_cross_entropy", "dropout", "adam")
totals = collections.defaultdict(float)
clock = [time.perf_counter]


def _timed(name, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start = clock[0]()
        try:
            return fn(*args, **kwargs)
        finally:
            geometry = getattr(args[0], "geometry", None)  # tell the two convolutions apart
            key = f"{name} {geometry.in_shape[1:]}" if geometry is not None else name
            totals[key] += clock[0]() - start
    return wrapper


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def instrument():
    """Wrap every Function subclass's forward/backward and the NumPy backend's kernel methods."""
    for cls in set(_subclasses(function_module.Function)):
        for phase in ("forward", "backward"):
            if phase in vars(cls):
                setattr(cls, phase, _timed(f"{cls.__name__}.{phase}", vars(cls)[phase]))
    backend = numpy_backend.NumpyBackend
    for name in dir(backend):
        if any(name.startswith(m) for m in BACKEND_METHODS) and callable(getattr(backend, name)):
            setattr(backend, name, _timed(f"backend.{name}", getattr(backend, name)))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--cprofile", action="store_true")
    p.add_argument("--threads", type=int, help="BLAS and kernel threads (default 2)")
    p.add_argument("--cpu-clock", action="store_true", help="process CPU time, not wall time")
    args = p.parse_args()
    if args.cpu_clock:
        clock[0] = time.process_time
    kerasrs.utils.set_random_seed(0)
    np.seterr(all="ignore")
    x, y = common.fashion_mnist(args.batch * (args.steps + 4), flat=False)
    x = x.reshape(-1, 28, 28, 1)
    model, loss = models.kerasrs_network("cnn")
    model.compile(optimizer="adam", loss=loss)
    warm = 4 * args.batch
    model.fit(x[:warm], y[:warm], batch_size=args.batch, epochs=1, shuffle=False, verbose=0)
    instrument()
    xs, ys = x[warm:], y[warm:]
    profiler = cProfile.Profile() if args.cprofile else None
    start = clock[0]()
    if profiler:
        profiler.enable()
    model.fit(xs, ys, batch_size=args.batch, epochs=1, shuffle=False, verbose=0)
    if profiler:
        profiler.disable()
    step = (clock[0]() - start) / args.steps
    print(f"{step * 1e3:.2f} ms/step ({args.batch / step:.0f} samples/s, instrumented, "
          f"{'CPU' if args.cpu_clock else 'wall'} clock)")
    for name, t in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"  {name:40s} {t / args.steps * 1e3:7.2f} ms  {t / args.steps / step:6.1%}")
    if profiler:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
