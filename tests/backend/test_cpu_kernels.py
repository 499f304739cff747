"""Every compiled `NumpyBackend` kernel against its NumPy twin in `base.Backend`, on the shapes
that break range kernels: empty (0 rows), size 1, odd sizes, non-contiguous inputs, float32 and
float64, and sizes where `cpu_threads` really cuts the work into parts (`parts` fixture: 1, 2
and 3 threads, whatever this machine has). Results must not depend on the split: elementwise
kernels and the dropout mask are compared bit for bit across splits."""

import numpy as np
import pytest

import kerasrs
from kerasrs.backend import cpu_threads
from kerasrs.backend.base import Backend

pytest.importorskip("numba")

DTYPES = [np.float32, np.float64]
ACTS = ["linear", "relu", "sigmoid", "tanh"]


@pytest.fixture
def be():
    with kerasrs.backend.using("numpy") as backend:
        yield backend


@pytest.fixture(autouse=True)
def small_grain(monkeypatch):
    """A grain small enough that this file's sizes really split (the default is tuned for
    training steps, where only ~1 ms parts are worth a thread)."""
    monkeypatch.setattr(cpu_threads, "GRAIN", 1 << 15)


@pytest.fixture(params=[1, 2, 3])
def parts(request, monkeypatch):
    """The number of threads a split may use (the pool adapts; a 1-core machine still splits)."""
    monkeypatch.setattr(cpu_threads, "threads", lambda: request.param)
    return request.param


def twin(be, name, *args, **kwargs):
    return getattr(Backend, name)(be, *args, **kwargs)


def tol(dtype):
    return 1e-12 if dtype == np.float64 else 2e-6


def close(got, want, dtype, scale=1):
    np.testing.assert_allclose(got, want, rtol=tol(dtype) * scale, atol=tol(dtype) * scale)


def strided(a):
    """A non-contiguous array equal to ``a`` (every other element of a larger one)."""
    big = np.zeros(tuple(2 * n for n in a.shape), a.dtype)
    view = big[tuple(slice(None, None, 2) for _ in a.shape)]
    view[...] = a
    return view


def assert_splits(n, work_per_item=1):
    """The size really runs in 2+ parts when 2+ threads are allowed."""
    if cpu_threads.threads() > 1:
        assert len(cpu_threads.bounds(n, work_per_item)) > 1, (n, work_per_item)


# -- relu ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0,), (1,), (7, 13), (401, 1001)])
def test_relu_and_grad_match_twin(be, rng, parts, dtype, shape):
    if shape[0] > 400:
        assert_splits(np.prod(shape))
    x = rng.standard_normal(shape).astype(dtype)
    x.reshape(-1)[::5] = 0  # relu'(0) = 0
    for xs in (x, strided(x)):
        np.testing.assert_array_equal(be.relu(xs), twin(be, "relu", xs))
    y = be.relu(x)
    gy = rng.standard_normal(shape).astype(dtype)
    for gs in (gy, strided(gy)):
        got = be.relu_grad(strided(y), gs)
        assert got.dtype == dtype and got.shape == shape
        np.testing.assert_array_equal(got, twin(be, "relu_grad", y, gs))


SPECIAL = [np.nan, -np.inf, np.inf, -0.0, 0.0, -1.0, 2.0, -1e-30, 1e30]


def same_bits(got, want):
    """Equal values, NaN where NaN, and the same sign of zero."""
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # the twins' inf * 0
def test_relu_and_bias_act_relu_on_special_values(be, dtype):
    """As np.maximum(x, 0): NaN stays NaN, -inf and -0.0 give +0.0."""
    x = np.array(SPECIAL * 3, dtype).reshape(3, -1)
    same_bits(be.relu(x), twin(be, "relu", x))
    for b in (None, np.zeros(x.shape[1], dtype)):
        same_bits(be.bias_act(x, b, "relu"), twin(be, "bias_act", x, b, "relu"))
        inplace = x.copy()
        be.bias_act(inplace, b, "relu", out=inplace)
        same_bits(inplace, twin(be, "bias_act", x, b, "relu"))
    gy = np.array(SPECIAL[::-1] * 3, dtype).reshape(3, -1)
    y = twin(be, "relu", x)
    same_bits(be.relu_grad(y, gy), twin(be, "relu_grad", y, gy))
    same_bits(be.bias_act_grad(y, gy, "relu")[0], twin(be, "bias_act_grad", y, gy, "relu")[0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", ["sigmoid", "tanh", "linear"])
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # the twins' inf * 0
@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
def test_bias_act_other_activations_on_special_values(be, dtype, act):
    x = np.array(SPECIAL + [-1e4, 1e4, 88.0, -88.0, 700.0, -700.0], dtype)[None]
    for b in (None, np.full(x.shape[1], 0.5, dtype)):
        want = twin(be, "bias_act", x, b, act)
        close(be.bias_act(x, b, act), want, dtype)
        inplace = x.copy()
        close(be.bias_act(inplace, b, act, out=inplace), want, dtype)
        gy = np.ones_like(x)
        for got, ref in zip(be.bias_act_grad(want, gy, act), twin(be, "bias_act_grad", want, gy,
                                                                  act)):
            close(got, ref, dtype)


def test_zero_dimensional_arrays_keep_their_shape(be):
    x, gy = np.array(-2.0, "float32"), np.array(3.0, "float32")
    for name, args in (("relu", (x,)), ("relu_grad", (np.array(1.0, "float32"), gy))):
        got, want = getattr(be, name)(*args), twin(be, name, *args)
        assert got.shape == want.shape == () and got.dtype == want.dtype
        same_bits(got, want)


# -- bias + activation --------------------------------------------------------------------------
BIAS_SHAPES = [(0, 5), (1, 1), (7, 13), (3001, 129)]  # the last splits


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("shape", BIAS_SHAPES)
def test_bias_act_matches_twin_for_every_out(be, rng, parts, dtype, act, shape):
    if shape[0] > 3000:
        assert_splits(shape[0], shape[1])
    x = rng.standard_normal(shape).astype(dtype)
    b = rng.standard_normal(shape[1]).astype(dtype)
    want = twin(be, "bias_act", x, b, act)
    for xs in (x, strided(x)):
        close(be.bias_act(xs, b, act), want, dtype)
        close(be.bias_act(xs, None, act), twin(be, "bias_act", x, None, act), dtype)
    # out = x itself (in place), contiguous and not
    for inplace in (x.copy(), strided(x)):
        assert be.bias_act(inplace, b, act, out=inplace) is inplace
        close(inplace, want, dtype)
    # out a separate array, contiguous and not
    for out in (np.empty_like(x), strided(np.empty_like(x))):
        assert be.bias_act(x, b, act, out=out) is out
        close(out, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", ["relu", "tanh"])
@pytest.mark.parametrize("shape", [(7, 13), (3001, 129)])
def test_bias_act_out_overlapping_a_shifted_view_of_x(be, rng, parts, dtype, act, shape):
    """``out`` and ``x`` are different views of one buffer (one row apart): every row must
    be computed from the original ``x``, not from rows already overwritten."""
    n, c = shape
    buf = rng.standard_normal((n + 1, c)).astype(dtype)
    b = rng.standard_normal(c).astype(dtype)
    for x_rows, out_rows in ((slice(1, None), slice(None, -1)), (slice(None, -1), slice(1, None))):
        mine = buf.copy()
        want = twin(be, "bias_act", mine[x_rows].copy(), b, act)
        got = be.bias_act(mine[x_rows], b, act, out=mine[out_rows])
        close(got, want, dtype)
        close(mine[out_rows], want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("shape", BIAS_SHAPES)
def test_bias_act_grad_matches_twin(be, rng, parts, dtype, act, shape):
    y = twin(be, "bias_act", rng.standard_normal(shape).astype(dtype), None, act)
    gy = rng.standard_normal(shape).astype(dtype)
    want_gx, want_gb = twin(be, "bias_act_grad", y, gy, act)
    for ys, gs in ((y, gy), (strided(y), strided(gy))):
        gx, gb = be.bias_act_grad(ys, gs, act)
        assert gx.dtype == dtype and gb.dtype == dtype and gb.shape == shape[1:]
        close(gx, want_gx, dtype)
        close(gb, want_gb, dtype, scale=max(1, shape[0] / 10))
    for out in (gy.copy(), strided(gy)):  # out = gy itself (in place)
        gx, _ = be.bias_act_grad(y, out, act, out=out)
        assert gx is out
        close(out, want_gx, dtype)
    assert be.bias_act_grad(y, gy, act, need_bias=False)[1] is None


# -- dropout masks (Philox): the same bits for any split ----------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rate", [0.0, 0.3, 0.9])
@pytest.mark.parametrize("shape", [(0,), (1,), (3,), (5,), (3, 7), (1001, 333)])
def test_dropout_mask_is_the_twins_bits_for_any_split(be, parts, dtype, rate, shape):
    if shape[0] > 1000:
        assert_splits((np.prod(shape) + 3) // 4, 16)
    for seed, offset in ((0, 0), (12345, 7), (2 ** 64 - 1, 2 ** 40 + 3)):
        got = be.dropout_mask(shape, rate, seed, offset, dtype)
        want = twin(be, "dropout_mask", shape, rate, seed, offset, dtype)
        assert got.dtype == dtype and got.shape == shape
        np.testing.assert_array_equal(got, want)


# -- optimizers: several variables, boundaries inside split parts ---------------------------------
# 100_003 and 200_001 elements put variable boundaries inside the 2 or 3 parts of the total;
# the (0,) variable, the (1,) one and the odd shapes sit between them.
OPT_SHAPES = [(1,), (100_003,), (0,), (7, 3), (401, 499), (5,)]


def _state(rng, dtype, n_sets):
    ws = [rng.standard_normal(s).astype(dtype) for s in OPT_SHAPES]
    ws.append(np.asfortranarray(rng.standard_normal((9, 11)).astype(dtype)))  # not C: NumPy path
    return [[w.copy() for w in ws] for _ in range(n_sets)]


def _grads(rng, dtype, ws):
    return [strided(rng.standard_normal(w.shape).astype(dtype)) for w in ws]


def _alpha(step, lr=0.01, beta_1=0.9, beta_2=0.999):
    """Adam's step size with the bias correction of step ``step`` (what the optimizer passes)."""
    return lr * (1 - beta_2 ** step) ** 0.5 / (1 - beta_1 ** step)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("amsgrad", [False, True])
def test_adam_update_matches_twin_and_any_split(be, rng, monkeypatch, dtype, amsgrad):
    ws = _state(rng, dtype, 3)  # twin, kernel on 1 thread, kernel on 3 threads
    ms = [[np.zeros_like(w) for w in ws[0]] for _ in range(3)]
    vs = [[np.zeros_like(w) for w in ws[0]] for _ in range(3)]
    hats = [[np.zeros_like(w) for w in ws[0]] for _ in range(3)] if amsgrad else [None] * 3
    total = sum(w.size for w in ws[0])
    for step in (1, 2, 3):
        gs = _grads(rng, dtype, ws[0])
        twin(be, "adam_update", ws[0], gs, ms[0], vs[0], _alpha(step), 0.9, 0.999, 1e-7, hats[0])
        for k, n_threads in ((1, 1), (2, 3)):
            monkeypatch.setattr(cpu_threads, "threads", lambda n=n_threads: n)
            if n_threads > 1:
                assert_splits(total, 4)
            be.adam_update(ws[k], gs, ms[k], vs[k], _alpha(step), 0.9, 0.999, 1e-7, hats[k])
    for i in range(len(ws[0])):
        for arrays in (ws, ms, vs) + ((hats,) if amsgrad else ()):
            assert arrays[1][i].dtype == dtype
            close(arrays[1][i], arrays[0][i], dtype, scale=10)
            np.testing.assert_array_equal(arrays[2][i], arrays[1][i])  # split changes nothing


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("momentum,nesterov", [(0.0, False), (0.9, False), (0.9, True)])
def test_sgd_update_matches_twin_and_any_split(be, rng, monkeypatch, dtype, momentum, nesterov):
    ws = _state(rng, dtype, 3)
    vs = [[np.zeros_like(w) for w in ws[0]] for _ in range(3)] if momentum else [None] * 3
    total = sum(w.size for w in ws[0])
    for _ in range(3):
        gs = _grads(rng, dtype, ws[0])
        twin(be, "sgd_update", ws[0], gs, vs[0], 0.05, momentum, nesterov)
        for k, n_threads in ((1, 1), (2, 3)):
            monkeypatch.setattr(cpu_threads, "threads", lambda n=n_threads: n)
            if n_threads > 1:
                assert_splits(total, 2)
            be.sgd_update(ws[k], gs, vs[k], 0.05, momentum, nesterov)
    for i in range(len(ws[0])):
        for arrays in (ws, vs) if momentum else (ws,):
            close(arrays[1][i], arrays[0][i], dtype, scale=10)
            np.testing.assert_array_equal(arrays[2][i], arrays[1][i])


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_optimizer_updates_mixing_dtypes_use_the_twin_for_half_precision(be, rng, optimizer):
    """A float32 first variable must not send float16/bfloat16 ones to the compiled kernels
    (numba cannot type them)."""
    dtypes = ["float32", "float16", kerasrs.backend.base.numpy_dtype("bfloat16"), "float64"]
    ws = [rng.standard_normal(7).astype(d) for d in dtypes]
    ws = [ws, [w.copy() for w in ws]]
    gs = [rng.standard_normal(7).astype(d) for d in dtypes]
    slots = [[[np.zeros(7, d) for d in dtypes] for _ in range(2)] for _ in range(2)]
    for k, fn in enumerate((getattr(Backend, f"{optimizer}_update").__get__(be),
                            getattr(be, f"{optimizer}_update"))):
        if optimizer == "adam":
            fn(ws[k], gs, slots[0][k], slots[1][k], _alpha(1), 0.9, 0.999, 1e-7)
        else:
            fn(ws[k], gs, slots[0][k], 0.01, 0.9, True)
    for want, got in zip(*ws):
        assert got.dtype == want.dtype
        rtol = 1e-6 if got.itemsize >= 4 else 1e-2  # half precision: a rounding apart
        np.testing.assert_allclose(got.astype(float), want.astype(float), rtol=rtol)


def test_optimizer_updates_with_no_variables(be):
    be.adam_update([], [], [], [], 0.1, 0.9, 0.999, 1e-7)
    be.sgd_update([], [], None, 0.1)


# -- layer normalization ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0, 4), (1, 1), (9, 33), (1001, 129)])
def test_layer_norm_and_grad_match_twin(be, rng, parts, dtype, shape):
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    g, b = (rng.standard_normal(shape[1]).astype(dtype) for _ in range(2))
    want = twin(be, "layer_norm", x, g, b, 1e-3)
    for xs in (x, strided(x)):
        for u, v in zip(be.layer_norm(xs, g, b, 1e-3), want):
            assert u.dtype == v.dtype
            close(u, v, dtype, scale=20)
    gy = rng.standard_normal(shape).astype(dtype)
    want = twin(be, "layer_norm_grad", gy, x, g, want[1], want[2])
    got = be.layer_norm_grad(strided(gy), x, g, *be.layer_norm(x, g, b, 1e-3)[1:])
    for u, v in zip(got, want):
        assert u.dtype == dtype
        close(u, v, dtype, scale=20 * max(1, shape[0] / 10))


# -- max pooling --------------------------------------------------------------------------------
def _same_pads(shape, pool, strides):
    out = [-(-n // s) for n, s in zip(shape[1:3], strides)]
    total = [max((o - 1) * s + k - n, 0) for o, s, k, n in zip(out, strides, pool, shape[1:3])]
    return tuple((t // 2, t - t // 2) for t in total)


POOL_CASES = [  # (x shape, pool, strides, "same" or "valid")
    ((0, 4, 4, 3), (2, 2), (2, 2), "valid"),
    ((1, 1, 1, 1), (1, 1), (1, 1), "same"),
    ((3, 7, 9, 5), (2, 2), (2, 2), "same"),
    ((2, 7, 7, 3), (3, 3), (2, 2), "same"),   # overlapping windows, padding on both sides
    ((2, 5, 6, 2), (3, 3), (1, 1), "same"),
    ((2, 8, 9, 4), (3, 2), (2, 3), "valid"),
    ((64, 33, 31, 16), (3, 3), (2, 2), "same"),  # splits
]


def _pool_args(case):
    shape, pool, strides, padding = case
    pads = _same_pads(shape, pool, strides) if padding == "same" else ((0, 0), (0, 0))
    return shape, pool, strides, pads


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", POOL_CASES)
def test_max_pool_and_grad_match_twin(be, rng, parts, dtype, case):
    shape, pool, strides, pads = _pool_args(case)
    x = rng.standard_normal(shape).astype(dtype)
    x[..., :1] = np.round(x[..., :1])  # ties: the first window position wins
    want_y, want_a = twin(be, "max_pool", x, pool, strides, pads)
    if shape[0] > 60:
        assert_splits(shape[0] * want_y.shape[1], want_y.shape[2] * shape[3] * 9)
    for xs in (x, strided(x)):
        y, a = be.max_pool(xs, pool, strides, pads)
        assert y.dtype == dtype and a.dtype == np.int32
        np.testing.assert_array_equal(y, want_y)
        np.testing.assert_array_equal(a, want_a)
    gy = rng.standard_normal(want_y.shape).astype(dtype)
    want_gx = twin(be, "max_pool_grad", gy, want_a, shape)
    for _ in range(2):  # the second result may land on the first's pooled memory
        for gs in (gy, strided(gy)):
            gx = be.max_pool_grad(gs, want_a, shape)
            close(gx, want_gx, dtype)
            del gx


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", POOL_CASES[2:5])
def test_max_pool_nan_and_inf_match_twin(be, rng, dtype, case):
    """A NaN wins its window (the first NaN), also when it is the window's first element; a
    window of -inf picks its first element (an index inside the window, so the gradient lands
    there)."""
    shape, pool, strides, pads = _pool_args(case)
    x = rng.standard_normal(shape).astype(dtype)
    x[rng.random(shape) < 0.1] = np.nan
    x[:, 0, 0] = np.nan  # the first valid element of the first window
    x[-1] = -np.inf
    x[-1, 1, 1] = np.nan
    y, a = be.max_pool(x, pool, strides, pads)
    want_y, want_a = twin(be, "max_pool", x, pool, strides, pads)
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(a, want_a)
    assert np.isnan(y[0, 0, 0]).all()
    # the winner is inside its window and holds the output value
    flat = x.reshape(shape[0], -1)
    winners = np.take_along_axis(flat, a.reshape(shape[0], -1), axis=1).reshape(y.shape)
    np.testing.assert_array_equal(winners, y)
    # NaN propagates as in np.maximum over each window
    ref = np.full(y.shape, -np.inf, dtype)
    xpad = np.pad(x, ((0, 0), *pads, (0, 0)), constant_values=-np.inf)
    for p in range(pool[0]):
        for q in range(pool[1]):
            ref = np.maximum(ref, xpad[:, p:p + strides[0] * (y.shape[1] - 1) + 1:strides[0],
                                       q:q + strides[1] * (y.shape[2] - 1) + 1:strides[1]])
    np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool_windows_entirely_in_the_padding(be, rng, dtype):
    """Padding wider than the window: such windows give -inf and argmax -1, and their
    gradient goes nowhere (not to the sample's last element)."""
    x = rng.standard_normal((2, 3, 4, 2)).astype(dtype)
    pads = ((3, 2), (0, 4))
    y, a = be.max_pool(x, (2, 2), (1, 2), pads)
    want_y, want_a = twin(be, "max_pool", x, (2, 2), (1, 2), pads)
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(a, want_a)
    assert (a == -1).any() and (y[a == -1] == -np.inf).all()
    gy = np.where(a == -1, 1000, 1).astype(dtype)
    gx = be.max_pool_grad(gy, a, x.shape)
    close(gx, twin(be, "max_pool_grad", gy, a, x.shape), dtype)
    assert gx.sum() == (a >= 0).sum()  # only the real windows' ones arrive


# -- im2col / col2im ----------------------------------------------------------------------------
CONV_CASES = [  # (x shape, window, strides, dilation, padding)
    ((0, 5, 5, 3), (3, 3), (1, 1), (1, 1), ((1, 1), (1, 1))),
    ((1, 1, 1, 1), (1, 1), (1, 1), (1, 1), ((0, 0), (0, 0))),
    ((2, 7, 5, 3), (3, 3), (1, 1), (1, 1), ((1, 1), (1, 1))),
    ((3, 9, 8, 2), (3, 2), (2, 3), (1, 1), ((0, 1), (2, 0))),
    ((2, 9, 9, 4), (3, 3), (2, 1), (2, 3), ((2, 1), (3, 3))),
    ((2, 6, 7, 3), (2, 2), (3, 3), (1, 1), ((0, 0), (0, 0))),  # gaps between windows
    ((16, 33, 31, 8), (3, 3), (1, 2), (2, 1), ((2, 2), (1, 1))),  # splits
    ((3, 8, 9, 1), (3, 2), (2, 1), (1, 2), ((1, 2), (2, 1))),  # one channel (own loop)
    ((40, 30, 29, 1), (3, 3), (1, 1), (1, 1), ((1, 1), (1, 1))),  # one channel, splits
]


def _window_out(shape, window, strides, dilation, padding):
    return [(n + b + a - (k - 1) * d - 1) // s + 1 for n, k, s, d, (b, a) in
            zip(shape[1:3], window, strides, dilation, padding)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CONV_CASES)
def test_im2col_col2im_match_twin(be, rng, parts, dtype, case):
    shape, window, strides, dilation, padding = case
    oh, ow = _window_out(shape, window, strides, dilation, padding)
    k = window[0] * window[1] * shape[3]
    if shape[0] > 10:
        assert_splits(shape[0] * oh, ow * k)
        assert_splits(shape[0], oh * ow * k)
    x = rng.standard_normal(shape).astype(dtype)
    want = twin(be, "im2col", x, window, strides, dilation, padding)
    for xs in (x, strided(x)):
        cols = be.im2col(xs, window, strides, dilation, padding)
        assert cols.dtype == dtype
        np.testing.assert_array_equal(cols, want)
    for out in (np.full(want.shape, np.nan, dtype), strided(np.full(want.shape, np.nan, dtype))):
        assert be.im2col(x, window, strides, dilation, padding, out=out) is out
        np.testing.assert_array_equal(out, want)
    c = rng.standard_normal(want.shape).astype(dtype)
    want_gx = twin(be, "col2im", c, shape, window, strides, dilation, padding)
    for _ in range(2):  # the second result may land on the first's pooled memory
        for cs in (c, strided(c)):
            gx = be.col2im(cs, shape, window, strides, dilation, padding)
            assert gx.shape == shape and gx.dtype == dtype
            close(gx, want_gx, dtype, scale=4)
            del gx


# -- blocked 2-D convolution ----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act,with_bias", [("linear", False), ("linear", True), ("relu", False),
                                           ("sigmoid", True)])
@pytest.mark.parametrize("case", [CONV_CASES[0], CONV_CASES[1], CONV_CASES[4], CONV_CASES[5]])
def test_conv2d_and_grad_match_twin_on_strided_and_empty_inputs(be, rng, dtype, act, with_bias,
                                                                 case):
    shape, window, strides, dilation, padding = case
    args = (window, strides, dilation, padding)
    x = rng.standard_normal(shape).astype(dtype)
    kernel = (rng.standard_normal((window[0] * window[1] * shape[3], 5)) * 0.3).astype(dtype)
    bias = rng.standard_normal(5).astype(dtype) if with_bias else None
    want = twin(be, "conv2d", x, kernel, bias, act, *args)
    gy = rng.standard_normal(want.shape).astype(dtype)
    want_g = twin(be, "conv2d_grad", x, kernel, want, gy, act, *args)
    for xs, ks, gs in ((x, kernel, gy), (strided(x), strided(kernel), strided(gy))):
        y = be.conv2d(xs, ks, bias, act, *args)
        assert y.dtype == dtype and y.shape == want.shape
        close(y, want, dtype, scale=10)
        for got, ref in zip(be.conv2d_grad(xs, ks, strided(y), gs, act, *args), want_g):
            assert got.dtype == dtype and got.shape == ref.shape
            close(got, ref, dtype, scale=10 * max(1, shape[0]))
