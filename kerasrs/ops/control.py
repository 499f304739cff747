"""Control flow and structured updates with Keras's ``keras.ops`` names. kerasrs runs eagerly, so
loops are Python loops over ops; gradients flow through every op inside them."""

import builtins

import numpy as np

from kerasrs.autodiff import convert_to_tensor
from kerasrs.ops import core, layout, math, reduction, stacking
from kerasrs.ops.core import constant, getitem
from kerasrs.ops.dispatch import op

_slice = builtins.slice


@op
def cond(pred, true_fn, false_fn):
    """``true_fn()`` if ``pred`` else ``false_fn()``."""
    return true_fn() if bool(convert_to_tensor(pred).numpy()) else false_fn()


@op
def switch(index, branches, *operands):
    """``branches[index](*operands)``, the index clamped to the valid range."""
    i = int(np.clip(int(convert_to_tensor(index).numpy()), 0, len(branches) - 1))
    return branches[i](*operands)


@op
def fori_loop(lower, upper, body_fun, init_val):
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)``."""
    val = init_val
    for i in range(int(lower), int(upper)):
        val = body_fun(i, val)
    return val


@op
def while_loop(cond, body, loop_vars, maximum_iterations=None):  # noqa: F811
    """Apply ``body`` to ``loop_vars`` while ``cond(*loop_vars)``; a tuple/list of vars is
    unpacked into both functions, as Keras does."""
    packed = isinstance(loop_vars, (list, tuple))
    vars_ = tuple(loop_vars) if packed else (loop_vars,)
    n = 0
    while bool(convert_to_tensor(cond(*vars_)).numpy()) and (maximum_iterations is None or
                                                             n < maximum_iterations):
        out = body(*vars_)
        vars_ = tuple(out) if packed else (out,)
        n += 1
    return type(loop_vars)(vars_) if packed else vars_[0]


@op
def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns
    ``(carry, stack(ys))``."""
    n = length if xs is None else convert_to_tensor(xs).shape[0]
    order = range(n - 1, -1, -1) if reverse else range(n)
    carry, ys = init, []
    for i in order:
        carry, y = f(carry, None if xs is None else getitem(convert_to_tensor(xs), i))
        ys.append(y)
    if reverse:
        ys = ys[::-1]
    return carry, (stacking.stack(ys, axis=0) if ys and ys[0] is not None else None)


@op
def map(f, xs):  # noqa: A001  (Keras's name)
    """``stack([f(x) for x in xs])`` over the leading axis."""
    xs = convert_to_tensor(xs)
    return stacking.stack([convert_to_tensor(f(getitem(xs, i))) for i in range(xs.shape[0])], 0)


@op
def vectorized_map(function, elements):
    """``function`` over the leading axis of ``elements`` (as `map`)."""
    return map(function, elements)


@op
def associative_scan(f, elems, reverse=False, axis=0):
    """Inclusive scan of ``elems`` along ``axis`` with the associative ``f`` (sequential)."""
    x = convert_to_tensor(elems)
    parts = [getitem(x, tuple([_slice(None)] * (axis % x.ndim) + [i]))
             for i in range(x.shape[axis])]
    if reverse:
        parts = parts[::-1]
    out = [parts[0]]
    for p in parts[1:]:
        out.append(f(out[-1], p))
    if reverse:
        out = out[::-1]
    return stacking.stack(out, axis=axis)


@op
def slice(inputs, start_indices, shape):  # noqa: A001
    """The block of ``inputs`` starting at ``start_indices`` with size ``shape`` (a size of -1:
    to the end of that axis).

    Raises:
        ValueError: when ``start_indices`` or ``shape`` does not have one entry per axis.
    """
    inputs = convert_to_tensor(inputs)
    check_slice_lengths(inputs.ndim, len(start_indices), len(shape))
    key = tuple(_slice(int(s), None if int(n) == -1 else int(s) + int(n))
                for s, n in zip(start_indices, shape))
    return getitem(inputs, key)


def check_slice_lengths(ndim, starts, sizes):
    """Raise ValueError unless ``slice`` has one start and one size per axis of ``inputs``."""
    if sizes != ndim:
        raise ValueError(f"slice: the number of dimensions in `inputs` must match the number of "
                         f"dimensions in `shape`. Received: {ndim} and {sizes}")
    if starts != ndim:
        raise ValueError(f"slice: the number of dimensions in `start_indices` must match the "
                         f"number of dimensions in `inputs`. Received: {starts} and {ndim}")




def _block_mask(x, key):
    m = np.zeros(x.shape, dtype=bool)
    m[key] = True
    return constant(x.backend.asarray(m), x.backend)


@op
def slice_update(inputs, start_indices, updates):
    """``inputs`` with the block at ``start_indices`` replaced by ``updates`` (differentiable in
    both)."""
    x, u = convert_to_tensor(inputs), convert_to_tensor(updates)
    key = tuple(_slice(int(s), int(s) + n) for s, n in zip(start_indices, u.shape))
    pad = [(int(s), x.shape[i] - int(s) - u.shape[i]) for i, s in enumerate(start_indices)]
    return math.where(_block_mask(x, key), layout.pad(u, pad), x)


@op
def scatter(indices, values, shape):
    """A zeros Tensor of ``shape`` with ``values`` added at ``indices`` (rows of coordinates);
    repeated indices add up. Differentiable in ``values``."""
    v = convert_to_tensor(values)
    idx = np.asarray(convert_to_tensor(indices).numpy(), dtype="int64")
    flat = np.ravel_multi_index(tuple(idx[:, :idx.shape[1]].T), shape[:idx.shape[1]])
    rest = tuple(shape[idx.shape[1]:])
    n = int(np.prod(shape[:idx.shape[1]]))
    onehot = np.zeros((n, idx.shape[0]), dtype=v.dtype)
    onehot[flat, np.arange(idx.shape[0])] = 1
    v2 = layout.reshape(v, (idx.shape[0], -1))
    out = core.matmul(constant(v.backend.asarray(onehot), v.backend), v2)
    return layout.reshape(out, tuple(shape[:idx.shape[1]]) + rest)


@op
def scatter_update(inputs, indices, updates):
    """``inputs`` with the entries at ``indices`` replaced by ``updates``."""
    x = convert_to_tensor(inputs)
    idx = np.asarray(convert_to_tensor(indices).numpy(), dtype="int64")
    mask = np.zeros(x.shape, dtype=bool)
    mask[tuple(idx.T)] = True
    placed = scatter(idx, updates, x.shape)
    return math.where(constant(x.backend.asarray(mask), x.backend), placed, x)


def check_segment_shapes(data_shape, ids_shape):
    """Raise ValueError unless ``segment_ids`` is 1-D with one id per row of ``data`` (sizes
    None are unknown and pass)."""
    if len(ids_shape) != 1 or not data_shape:
        raise ValueError(f"segment ops: Argument `segment_ids` should be an 1-D vector, with one "
                         f"id per row of `data`. Received: data shape {data_shape}, segment_ids "
                         f"shape {ids_shape}")
    if None not in (ids_shape[0], data_shape[0]) and ids_shape[0] != data_shape[0]:
        raise ValueError(f"segment ops: Argument `segment_ids` and `data` should have same "
                         f"leading dimension. Received: data shape {data_shape}, segment_ids "
                         f"shape {ids_shape}")


def _segments(data, segment_ids, num_segments):
    d = convert_to_tensor(data)
    ids = np.asarray(convert_to_tensor(segment_ids).numpy(), dtype="int64")
    check_segment_shapes(tuple(d.shape), ids.shape)
    n = int(ids.max()) + 1 if num_segments is None else int(num_segments)
    return d, ids, n


@op
def segment_sum(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002
    """Sums of the rows of ``data`` that share a segment id (ids outside [0, n) are dropped)."""
    d, ids, n = _segments(data, segment_ids, num_segments)
    onehot = (ids[None, :] == np.arange(n)[:, None]).astype(d.dtype)
    flat = layout.reshape(d, (d.shape[0], -1))
    out = core.matmul(constant(d.backend.asarray(onehot), d.backend), flat)
    return layout.reshape(out, (n,) + tuple(d.shape[1:]))


def _segment_reduce(data, segment_ids, num_segments, reduce, fill):
    d, ids, n = _segments(data, segment_ids, num_segments)
    rows = []
    for s in range(n):
        members = np.nonzero(ids == s)[0]
        rows.append(reduce(layout.take(d, members, axis=0), axis=0) if len(members) else
                    core.multiply(math.sum(d, axis=0), 0.0) + fill)
    return stacking.stack(rows, axis=0)


def _limits(dtype):
    """``np.finfo`` or ``np.iinfo`` of ``dtype`` (the fill of an empty segment)."""
    return np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else np.finfo(dtype)


@op
def segment_max(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002
    """Per-segment maximum (the lowest float for an empty segment, as Keras)."""
    d = convert_to_tensor(data)
    return _segment_reduce(d, segment_ids, num_segments, math.max, _limits(d.dtype).min)


@op
def segment_min(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002
    d = convert_to_tensor(data)
    return _segment_reduce(d, segment_ids, num_segments, math.min, _limits(d.dtype).max)


@op
def segment_prod(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002
    return _segment_reduce(data, segment_ids, num_segments, reduction.prod, 1.0)


@op
def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """``x`` with NaN and infinities replaced by finite numbers (the dtype's extremes by
    default); the gradient flows to the finite entries."""
    x = convert_to_tensor(x)
    if x.dtype.kind in "iub":  # no NaN or inf to replace: the dtype stays (as Keras)
        return x
    big = float(np.finfo(x.dtype).max) if x.dtype.kind == "f" else 0
    x = math.where(math.isnan(x), nan, x)
    x = math.where(core.greater(x, 0) * math.isinf(x), big if posinf is None else posinf, x)
    return math.where(math.isinf(x), -big if neginf is None else neginf, x)


@op
def vectorize(pyfunc, *, excluded=None, signature=None):
    """``pyfunc`` mapped over the leading axis of its Tensor arguments (stacked results)."""
    def mapped(*args):
        ts = [convert_to_tensor(a) for a in args]
        n = ts[0].shape[0] if ts[0].ndim else None
        if n is None:
            return pyfunc(*ts)
        return stacking.stack([convert_to_tensor(pyfunc(*[t[i] for t in ts]))
                               for i in range(n)], axis=0)

    return mapped
