"""Every launch of the CUDA launchers, deliberately broken one way at a time, must fail the
kernel-vs-twin check (issue 24): each pair of its arguments that a device would accept in
either order (two device arrays of one dtype and size, two different scalars of one type)
swapped (scalar zeros excepted: an integer division by zero kills the CPU process, where a GPU
gives garbage), and each grid dimension one block short. A grid-stride dimension is the exception
by design: one block short must still give the right result there, as must one block too many
on any dimension (the kernels leave blocks past the end idle).

The broken launch runs on copies of its arrays placed between guard zones of unwritten
memory, so a swap that sends a kernel past the end of an array reads garbage (NaN) or writes
into a guard (reported) instead of corrupting the test process.
"""

import functools

import numpy as np
import pytest
import standin
from test_cuda_paths import more_cases
from test_cupy_backend_standin import _kernel_cases, check_kernel

from kerasrs import backend as backend_module

GUARD = 1 << 16  # elements of unwritten memory before and after each array of a broken launch
# the grid dimensions each kernel loops over (grid-stride); the others have one block per
# row, column tile, chunk or group of items and must be exact
STRIDED = {"bias_act": {0}, "bias_act_grad": {1}, "layer_norm_bwd_params": {1},
           "dropout_mask": {0}, "embedding_grad": {0}, "im2col": {0}, "col2im": {0},
           "max_pool": {0}, "max_pool_grad": {0}, "lstm_gates": {0}, "lstm_gates_grad": {0},
           "gru_gates": {0}, "gru_gates_grad": {0}}
# Every kernel but these leaves a block past the end of its rows, column tiles or items idle,
# so a grid larger than needed gives the same result; the optimizers' blocks read their chunk
# from a table with no length to check against, so their grid must be exact.
EXACT_GRID = {"adam_update", "sgd_update"}


def _cases(rng):
    """Every kernel case, after column reductions over more than one 32-column tile (a kernel
    is broken in the first case that launches it)."""
    f = lambda *s: rng.standard_normal(s).astype(np.float32)
    x = f(9, 40)
    _, mean, rstd = backend_module.get("numpy").layer_norm(x, None, None, 1e-3)
    wide = {"bias_act_grad": (f(70, 40), f(70, 40), "sigmoid"),  # 2 x 2 blocks
            "layer_norm_grad": (f(9, 40), x, f(40), mean, rstd)}
    cases = [(n, a) for n, a in _kernel_cases(rng).items() if n != "dropout_mask"]
    return list(wide.items()) + cases + list(more_cases(rng).items())


def _interchangeable(args, params):
    """Index pairs of arguments a device would take in either order: arrays for parameters of
    one C type (``pf4``: ``float*``; ``ppf4``: ``float* const*``...) of one size, different
    scalars of one type."""
    pairs = []
    for i, (a, pa) in enumerate(zip(args, params)):
        for j in range(i + 1, len(args)):
            b, pb = args[j], params[j]
            if pa != pb:
                continue
            if isinstance(a, standin.ndarray):
                # equal values swap to the same launch (address tables of one list), unless
                # zeros: outputs that arrive zeroed (column sums) must not be mixed up
                if a.size == b.size and (not np.array_equal(a._a, b._a) or not a._a.any()):
                    pairs.append((i, j))
            elif a != b and a and b:  # (a zero divisor traps on a CPU, not on a GPU)
                pairs.append((i, j))
    return pairs


@functools.cache
def _guard_values(dtype):
    """The guard zone of a float array: random values in [1000, 2000), which a stray write is
    unlikely to repeat and a stray read turns into a wrong result (NaN, the unwritten value,
    would pass through a softmax unchanged); ints and address tables: unwritten (-1, all
    ones), the values that a read used as an index or address cannot go far with."""
    if np.dtype(dtype).kind == "f":
        values = np.random.default_rng(24).uniform(1000, 2000, 2 * GUARD).astype(dtype)
    else:
        values = standin._garbage(np.empty(2 * GUARD, dtype))
    values.flags.writeable = False
    return values


def _guarded(args):
    """Copies of the array arguments between guard zones; (new args, [(original, buffer)])."""
    new, copies = [], []
    for a in args:
        if isinstance(a, standin.ndarray):
            guard = _guard_values(a.dtype)
            buf = np.concatenate([guard[:GUARD], a._a.reshape(-1), guard[GUARD:]])
            new.append(standin.ndarray._of(buf[GUARD:GUARD + a.size].reshape(a.shape)))
            copies.append((a, buf))
        else:
            new.append(a)
    return tuple(new), copies


def _untouched(a, buf):
    guard = _guard_values(a.dtype)
    return guard[:GUARD].tobytes() == buf[:GUARD].tobytes() and \
        guard[GUARD:].tobytes() == buf[GUARD + a.size:].tobytes()


class _Breaker:
    """Replaces `standin.RawKernel.__call__`: records the launches, and runs launch number
    ``target`` (counted from 0) with ``change(grid, args) -> (grid, args)`` on guarded copies."""

    def __init__(self, monkeypatch, target=None, change=None):
        self.launches, self.target, self.change = [], target, change
        call = standin.RawKernel.__call__

        def launch(kernel, grid, block, args, **kw):
            k = len(self.launches)
            self.launches.append((kernel.name, grid, args, kernel._function.params))
            if k != self.target:
                return call(kernel, grid, block, args, **kw)
            grid, args = self.change(grid, args)
            args, copies = _guarded(args)
            call(kernel, grid, block, args, **kw)
            for a, buf in copies:
                if not _untouched(a, buf):
                    raise AssertionError(f"{kernel.name}: wrote outside an array argument")
                a._a[...] = buf[GUARD:GUARD + a.size].reshape(a.shape)
        monkeypatch.setattr(standin.RawKernel, "__call__", launch)


def _base(name):
    return name.split("<")[0]


def _mutations(launches, sample):
    """(launch number, description, change, expected to be caught) for every launch; with
    ``sample``, of a launch with more than 20 scalar pairs (the window geometries of im2col,
    col2im, max_pool: ~100 each) every tenth pair."""
    out = []
    for k, (name, grid, args, params) in enumerate(launches):
        pairs = _interchangeable(args, params)
        scalars = [p for p in pairs if not isinstance(args[p[0]], standin.ndarray)]
        if sample and len(scalars) > 20:
            pairs = [p for p in pairs if p not in scalars] + scalars[::10]
        for i, j in pairs:
            def swap(g, a, i=i, j=j):
                a = list(a)
                a[i], a[j] = a[j], a[i]
                return g, tuple(a)
            out.append((k, f"{name}: arguments {i} and {j} swapped", swap, True))
        for d, blocks in enumerate(grid):
            def resize(g, a, d=d, by=-1):
                return g[:d] + (g[d] + by,) + g[d + 1:], a
            if blocks > 1:
                out.append((k, f"{name}: grid {grid} one block short on axis {d}", resize,
                            d not in STRIDED.get(_base(name), set())))
            if _base(name) not in EXACT_GRID:
                out.append((k, f"{name}: grid {grid} one block too many on axis {d}",
                            functools.partial(resize, by=1), False))
    return out


@pytest.fixture
def small_blocks(cupy_standin):
    """Blocks of 32 threads: a grid-stride launch of the small test cases gets several
    blocks, so there is a block to take away (and the stand-in runs fewer threads)."""
    backend_module.get("cupy").kernels.max_block = 32
    return cupy_standin


@pytest.mark.parametrize("sample", [True, pytest.param(False, marks=pytest.mark.slow)],
                         ids=["sampled", "all"])
def test_every_swap_and_short_grid_is_caught(small_blocks, monkeypatch, rng, sample):
    missed, counted, seen = [], {"swaps": 0, "short grids": 0, "harmless grids": 0}, set()
    for name, args in _cases(rng):
        with monkeypatch.context() as m:
            recorder = _Breaker(m)
            check_kernel(small_blocks, name, args)
        for k, what, change, caught in _mutations(recorder.launches, sample):
            if recorder.launches[k][0] in seen:
                continue
            counted["swaps" if "swapped" in what else "short grids" if caught else
                    "harmless grids"] += 1
            with monkeypatch.context() as m:
                _Breaker(m, k, change)
                try:
                    check_kernel(small_blocks, name, args)
                except (AssertionError, TypeError, ValueError) as e:
                    if not caught:
                        missed.append(f"{name}, {what}: failed: {e}")
                    continue
            if caught:
                missed.append(f"{name}, {what}: not caught")
        seen.update(launch[0] for launch in recorder.launches)
    assert not missed, "\n".join(missed)
    # the sweep covers something of each kind
    assert counted["swaps"] > (100 if sample else 350) and counted["short grids"] >= 8 and \
        counted["harmless grids"] >= 20, counted
