"""Where one eager training step of the benchmark CNN (`models.kerasrs_network("cnn")`, batch
128, Adam, 2 threads) spends its time: wall time per op (forward and backward of each
`Function` class, each backend kernel family) by wrapping them with ``time.perf_counter``,
and optionally a cProfile listing. Numbers nest: a backend kernel's time is also inside the op
that called it. Run from the repository root:

    .venv/bin/python benchmarks/cnn_profile.py [--steps 20] [--cprofile]
"""

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


def _timed(name, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            geometry = getattr(args[0], "geometry", None)  # tell the two convolutions apart
            key = f"{name} {geometry.in_shape[1:]}" if geometry is not None else name
            totals[key] += time.perf_counter() - start
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
    args = p.parse_args()
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
    start = time.perf_counter()
    if profiler:
        profiler.enable()
    model.fit(xs, ys, batch_size=args.batch, epochs=1, shuffle=False, verbose=0)
    if profiler:
        profiler.disable()
    step = (time.perf_counter() - start) / args.steps
    print(f"{step * 1e3:.2f} ms/step ({args.batch / step:.0f} samples/s, instrumented)")
    for name, t in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"  {name:40s} {t / args.steps * 1e3:7.2f} ms  {t / args.steps / step:6.1%}")
    if profiler:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
