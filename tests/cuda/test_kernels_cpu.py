"""The .cu kernels themselves, run on the CPU (g++ -std=c++20 and cuda_cpu.h), against their
NumPy twins in ``base.Backend``: odd sizes, size 1, several blocks and several passes of each
grid-stride loop. The launch code is the CuPy backend's own (``kernels.Launcher``) with the
CPU module in place of ``cupy.RawModule``. None of the kernels uses warp intrinsics, so all of
them run here."""

import cpu_cuda
import numpy as np
import pytest

from kerasrs.backend import base, kernels
from kerasrs.backend.kernels import dropout
from kerasrs.backend.numpy_backend import NumpyBackend

pytestmark = pytest.mark.skipif(not cpu_cuda.have_compiler(), reason="needs g++ (C++20)")

TWIN = base.Backend  # the reference compositions, not NumpyBackend's tuned overrides
DTYPES = [np.float32, np.float64]


@pytest.fixture(scope="module")
def np_be():
    return NumpyBackend()


@pytest.fixture(scope="module")
def kern():
    """Launchers over the CPU modules: 64-thread blocks and at most 3 blocks per grid-stride
    launch, so loops take several passes."""
    return kernels.Launcher(np, _module, max_block=64, max_grid=3)


@pytest.fixture(scope="module", params=[(64, 3), (256, 4096)], ids=["small-grid", "gpu-grid"])
def kern_any(request):
    """For the block reductions: also the GPU's launch configuration (256-thread blocks)."""
    block, grid = request.param
    return kernels.Launcher(np, _module, max_block=block, max_grid=grid)


_built = {}


def _module(name):
    if name not in _built:
        _built[name] = cpu_cuda.module(name)
    return _built[name]


def tol(dtype):
    return {"rtol": 2e-5, "atol": 2e-6} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-13}


def close(got, want, dtype):
    got, want = (got,) if not isinstance(got, tuple) else got, \
        (want,) if not isinstance(want, tuple) else want
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if g is None or w is None:
            assert g is None and w is None
            continue
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, **tol(dtype))


# -- softmax cross-entropy ------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 1), (5, 7), (4, 300), (9, 64)])
def test_softmax_cross_entropy(kern_any, np_be, rng, dtype, shape):
    n, c = shape
    x = (rng.standard_normal(shape) * 5).astype(dtype)
    x[0, 0] = 800.0  # exp would overflow without the max shift
    sparse = rng.integers(0, c, n)
    dense = rng.random(shape).astype(dtype)
    for labels in (sparse, sparse.astype(np.int32), dense):
        loss, probs = kern_any.softmax_cross_entropy(x, labels)
        close((loss, probs), TWIN.softmax_cross_entropy(np_be, x, labels), dtype)
        assert np.isfinite(loss).all()
        gloss = rng.standard_normal(n).astype(dtype)
        close(kern_any.softmax_cross_entropy_grad(probs, labels, gloss),
              TWIN.softmax_cross_entropy_grad(np_be, probs, labels, gloss), dtype)


def test_softmax_cross_entropy_edge_rows(kern, np_be):
    """A -inf logit, an all -inf row (NaN loss, as the twin) and an out-of-range id (NaN, and
    never a read out of bounds)."""
    x = np.array([[-np.inf, 0.0, 1.0], [-np.inf, -np.inf, -np.inf], [2.0, 2.0, 2.0]])
    labels = np.array([2, 0, 5])
    loss, probs = kern.softmax_cross_entropy(x, labels)
    with np.errstate(all="ignore"):
        want_loss, want_probs = TWIN.softmax_cross_entropy(np_be, x, labels)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-12)  # NaNs in the same places
    np.testing.assert_allclose(probs, want_probs, rtol=1e-12)
    assert np.isnan(loss[1:]).all() and np.isfinite(loss[0])


# -- dropout (bit-exact) ----------------------------------------------------------------------
def test_philox_known_answers(kern):
    """Random123's kat_vectors for philox4x32_10."""
    ctr = np.array([[0, 0, 0, 0], [0xFFFFFFFF] * 4,
                    [0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344]], np.uint32)
    key = np.array([[0, 0], [0xFFFFFFFF] * 2, [0xA4093822, 0x299F31D0]], np.uint32)
    want = np.array([[0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8],
                     [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD],
                     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]], np.uint32)
    np.testing.assert_array_equal(kern.philox4x32_10(ctr, key), want)
    twin = dropout.philox4x32_10(np, [ctr[:, i].astype(np.uint64) for i in range(4)],
                                 (0xA4093822, 0x299F31D0))
    np.testing.assert_array_equal(np.stack(twin, 1)[2], want[2])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (3,), (13, 7), (2, 3, 167)])
@pytest.mark.parametrize("rate", [0.0, 0.1, 0.5, 0.9])
def test_dropout_mask_is_bit_exact(kern, np_be, dtype, shape, rate):
    for seed, offset in ((0, 0), (1234, 7), (2 ** 63 + 5, 2 ** 40 + 3)):
        got = kern.dropout_mask(shape, rate, seed, offset, dtype)
        want = TWIN.dropout_mask(np_be, shape, rate, seed, offset, dtype)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


# -- embedding gradient ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ishape, dim, input_dim", [((1,), 1, 1), ((4, 5), 3, 7),
                                                    ((3, 41), 17, 5)])
def test_embedding_grad(kern, np_be, rng, dtype, ishape, dim, input_dim):
    idx = rng.integers(0, input_dim, ishape)  # repeats: the scatter must add them up
    gy = rng.standard_normal(ishape + (dim,)).astype(dtype)
    close(kern.embedding_grad(idx, gy, input_dim), TWIN.embedding_grad(np_be, idx, gy, input_dim),
          dtype)


# -- bias + activation ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", ["linear", "relu", "sigmoid", "tanh"])
@pytest.mark.parametrize("shape", [(1, 1), (7, 13), (130, 33)])
def test_bias_act(kern_any, np_be, rng, dtype, act, shape):
    x = rng.standard_normal(shape).astype(dtype)
    b = rng.standard_normal(shape[1]).astype(dtype)
    for bias in (b, None):
        y = kern_any.bias_act(x, bias, act)
        close(y, TWIN.bias_act(np_be, x, bias, act), dtype)
        gy = rng.standard_normal(shape).astype(dtype)
        for need_bias in (True, False):
            close(kern_any.bias_act_grad(y, gy, act, need_bias),
                  TWIN.bias_act_grad(np_be, y, gy, act, need_bias), dtype)
    inplace = x.copy()
    assert kern_any.bias_act(inplace, b, act, out=inplace) is inplace
    close(inplace, TWIN.bias_act(np_be, x, b, act), dtype)


# -- convolution columns and pooling ----------------------------------------------------------
GEOMETRIES = [  # x shape, window, strides, dilation, padding
    ((1, 1, 1), (1,), (1,), (1,), ((0, 0),)),
    ((2, 9, 3), (3,), (2,), (1,), ((1, 1),)),
    ((2, 7, 6, 3), (3, 2), (1, 2), (1, 1), ((1, 1), (0, 1))),
    ((1, 8, 9, 2), (2, 3), (2, 1), (2, 2), ((0, 0), (2, 1))),
    ((2, 4, 5, 3, 2), (2, 2, 2), (1, 2, 1), (1, 1, 2), ((1, 0), (0, 0), (1, 1))),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("geom", GEOMETRIES, ids=lambda g: str(g[0]))
def test_im2col_col2im(kern, np_be, rng, dtype, geom):
    shape, window, strides, dilation, padding = geom
    x = rng.standard_normal(shape).astype(dtype)
    cols = kern.im2col(x, window, strides, dilation, padding)
    want = TWIN.im2col(np_be, x, window, strides, dilation, padding)
    np.testing.assert_array_equal(cols, want)  # a pure copy: exact
    g = rng.standard_normal(cols.shape).astype(dtype)
    close(kern.col2im(g, shape, window, strides, dilation, padding),
          TWIN.col2im(np_be, g, shape, window, strides, dilation, padding), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("geom", GEOMETRIES, ids=lambda g: str(g[0]))
@pytest.mark.parametrize("ties", [False, True])
def test_max_pool(kern, np_be, rng, dtype, geom, ties):
    shape, window, strides, _, padding = geom
    x = rng.standard_normal(shape).astype(dtype)
    if ties:  # few distinct values: the first window position must win, as the twin
        x = np.round(x).astype(dtype)
    y, argmax = kern.max_pool(x, window, strides, padding)
    want_y, want_arg = TWIN.max_pool(np_be, x, window, strides, padding)
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(argmax, want_arg)
    assert argmax.dtype == np.int32
    gy = rng.standard_normal(y.shape).astype(dtype)
    close(kern.max_pool_grad(gy, argmax, shape), TWIN.max_pool_grad(np_be, gy, argmax, shape),
          dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("geom", GEOMETRIES[1:], ids=lambda g: str(g[0]))
def test_max_pool_nan_inf_and_padding_only_windows(kern, np_be, rng, dtype, geom):
    """NaN wins its window (the first NaN), a window of -inf picks its first element, and a
    window entirely in the padding gives -inf with argmax -1 and no gradient, as the twin."""
    shape, window, strides, _, padding = geom
    padding = tuple((b + k, a + k) for (b, a), k in zip(padding, window))  # padding-only windows
    x = rng.standard_normal(shape).astype(dtype)
    x[rng.random(shape) < 0.2] = np.nan
    if shape[0] > 1:
        x[-1] = -np.inf
    y, argmax = kern.max_pool(x, window, strides, padding)
    want_y, want_arg = TWIN.max_pool(np_be, x, window, strides, padding)
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(argmax, want_arg)
    assert (want_arg == -1).any() and np.isnan(want_y).any()
    gy = rng.standard_normal(y.shape).astype(dtype)
    close(kern.max_pool_grad(gy, argmax, shape), TWIN.max_pool_grad(np_be, gy, argmax, shape),
          dtype)


# -- layer normalization ----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (6, 300), (70, 33)])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(kern_any, np_be, rng, dtype, shape, affine):
    x = (rng.standard_normal(shape) * 3 + 10).astype(dtype)
    gamma = rng.standard_normal(shape[1]).astype(dtype) if affine else None
    beta = rng.standard_normal(shape[1]).astype(dtype) if affine else None
    y, mean, rstd = kern_any.layer_norm(x, gamma, beta, 1e-3)
    close((y, mean, rstd), TWIN.layer_norm(np_be, x, gamma, beta, 1e-3), dtype)
    gy = rng.standard_normal(shape).astype(dtype)
    got = kern_any.layer_norm_grad(gy, x, gamma, mean, rstd)
    want = TWIN.layer_norm_grad(np_be, gy, x, gamma, mean, rstd)
    for g, w in zip(got, want):  # gx sums cancel: compare on the scale of the gradient
        np.testing.assert_allclose(g, w, rtol=tol(dtype)["rtol"] * 10,
                                   atol=tol(dtype)["rtol"] * 10 * np.abs(w).max())


# -- multi-tensor optimizer steps -------------------------------------------------------------
SIZES = [(1,), (7, 3), (300,), (2, 2, 5)]


def _lists(rng, dtype, k):
    return [[rng.standard_normal(s).astype(dtype) for s in SIZES] for _ in range(k)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("amsgrad", [False, True])
def test_adam_update(kern, np_be, rng, dtype, amsgrad):
    params, grads, ms, vs, vh = _lists(rng, dtype, 5)
    vs = [np.abs(v) for v in vs]
    vh = [np.abs(v) for v in vh] if amsgrad else None
    mine = [[a.copy() for a in lst] for lst in (params, ms, vs, vh or [])]
    for step in (1, 2, 3):
        alpha = 1e-2 * (1 - 0.999 ** step) ** 0.5 / (1 - 0.9 ** step)
        TWIN.adam_update(np_be, params, grads, ms, vs, alpha, 0.9, 0.999, 1e-7, vh)
        kern.adam_update(mine[0], grads, mine[1], mine[2], alpha, 0.9, 0.999, 1e-7,
                         mine[3] if amsgrad else None, chunk=64)
    for got, want in zip(mine, (params, ms, vs, vh or [])):
        for g, w in zip(got, want):
            close(g, w, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("momentum, nesterov", [(0.0, False), (0.9, False), (0.9, True)])
def test_sgd_update(kern, np_be, rng, dtype, momentum, nesterov):
    params, grads, moms = _lists(rng, dtype, 3)
    moms = moms if momentum else None
    mine = [p.copy() for p in params], [m.copy() for m in moms] if moms else None
    for _ in range(3):
        TWIN.sgd_update(np_be, params, grads, moms, 0.1, momentum, nesterov)
        kern.sgd_update(mine[0], grads, mine[1], 0.1, momentum, nesterov, chunk=64)
    for g, w in zip(mine[0] + (mine[1] or []), params + (moms or [])):
        close(g, w, dtype)


# -- recurrent gates --------------------------------------------------------------------------
ACT_PAIRS = [("tanh", "sigmoid"), ("relu", "linear"), ("sigmoid", "tanh"),
             ("tanh", "hard_sigmoid"), ("hard_sigmoid", "relu")]  # every code of the table


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, u", [(1, 1), (5, 7), (3, 130)])
@pytest.mark.parametrize("acts", ACT_PAIRS)
def test_lstm_gates(kern, np_be, rng, dtype, n, u, acts):
    z = rng.standard_normal((n, 4 * u)).astype(dtype)
    c_prev = rng.standard_normal((n, u)).astype(dtype)
    z_mine = z.copy()
    got = kern.lstm_gates(z_mine, c_prev, *acts)
    want = TWIN.lstm_gates(np_be, z, c_prev, *acts)
    close(got, want, dtype)
    close(z_mine, z, dtype)  # both overwrite z with the activated gates
    dh, dc = (rng.standard_normal((n, u)).astype(dtype) for _ in range(2))
    close(kern.lstm_gates_grad(z, c_prev, want[2], dh, dc, *acts),
          TWIN.lstm_gates_grad(np_be, z, c_prev, want[2], dh, dc, *acts), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, u", [(1, 1), (5, 7), (3, 130)])
@pytest.mark.parametrize("acts", ACT_PAIRS)
def test_gru_gates(kern, np_be, rng, dtype, n, u, acts):
    xz = rng.standard_normal((n, 3 * u)).astype(dtype)
    hz = rng.standard_normal((n, 3 * u)).astype(dtype)
    h_prev = rng.standard_normal((n, u)).astype(dtype)
    xz_mine = xz.copy()
    close(kern.gru_gates(xz_mine, hz, h_prev, *acts),
          TWIN.gru_gates(np_be, xz, hz, h_prev, *acts), dtype)
    close(xz_mine, xz, dtype)
    dh = rng.standard_normal((n, u)).astype(dtype)
    close(kern.gru_gates_grad(xz, hz, h_prev, dh, *acts),
          TWIN.gru_gates_grad(np_be, xz, hz, h_prev, dh, *acts), dtype)


# -- the launchers refuse what a kernel would misread -----------------------------------------
def test_launchers_validate_before_launch(kern):
    x = np.zeros((4, 6), np.float32)
    with pytest.raises(TypeError, match="float32 or float64"):
        kern.softmax_cross_entropy(x.astype(np.float16), np.zeros(4, np.int64))
    with pytest.raises(ValueError, match="C-contiguous"):
        kern.softmax_cross_entropy(x[:, ::2], np.zeros(4, np.int64))
    with pytest.raises(ValueError, match="rank 2"):
        kern.layer_norm(np.zeros(3, np.float32), None, None, 1e-3)
    with pytest.raises(TypeError, match="labels"):
        kern.softmax_cross_entropy(x, np.zeros((4, 6)))  # float64 targets for float32 logits
    with pytest.raises(ValueError, match="shape"):
        kern.bias_act(x, np.zeros(5, np.float32))
    with pytest.raises(ValueError, match="activation"):
        kern.bias_act(x, None, "gelu")
    with pytest.raises(ValueError, match="rate"):
        kern.dropout_mask((3,), 1.0, 0)
    loss, probs = kern.softmax_cross_entropy(np.zeros((0, 3), np.float32), np.zeros(0, np.int64))
    assert loss.shape == (0,) and probs.shape == (0, 3)  # empty: no launch
    assert kern.im2col(np.zeros((0, 5, 2), np.float32), (3,), (1,), (1,), ((0, 0),)).shape == \
        (0, 6)


def test_cpu_module_checks_argument_types():
    """What keeps the launchers honest: the exact C type of every argument is checked."""
    f = _module("embedding").get_function("embedding_grad<float>")
    idx, gy, out = np.zeros(2, np.int32), np.zeros((2, 3), np.float32), np.zeros((4, 3), np.float32)
    good = (idx, gy, out, np.int64(6), np.int32(3), np.int32(4))
    f((1,), (32,), good)
    for bad in ((idx, gy, out, 6, np.int32(3), np.int32(4)),             # Python int
                (idx, gy, out, np.int32(6), np.int32(3), np.int32(4)),   # int32 for long long
                (idx.astype(np.int64), gy, out, np.int64(6), np.int32(3), np.int32(4)),
                good[:-1]):
        with pytest.raises(TypeError):
            f((1,), (32,), bad)


def test_softmax_cross_entropy_keeps_precision_for_huge_logits(kern):
    """Behaviour case C06: logits [1e8, 1e8] give ln 2 in float32 (not 1e8 + ln 2 - 1e8 = 0)."""
    x = np.array([[1e8, 1e8], [0.0, 1000.0]], np.float32)
    loss, probs = kern.softmax_cross_entropy(x, np.array([1, 0]))
    np.testing.assert_allclose(loss, [np.log(2), 1000.0], rtol=1e-6)
    np.testing.assert_allclose(kern.softmax_cross_entropy_grad(probs, np.array([1, 0]),
                                                               np.ones(2, np.float32)),
                               [[0.5, -0.5], [-1.0, 1.0]], atol=1e-6)
