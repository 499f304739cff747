"""The fused 2-D convolution kernels `conv2d` / `conv2d_grad`: every backend's version (on the
CPU: blocked through the cache) against the `Backend` twin, the twin against float64 finite
differences, and blocks that do not divide the batch."""

import numpy as np
import pytest

import kerasrs
from kerasrs.backend import numpy_backend
from kerasrs.backend.kernels import conv2d
from kerasrs.backend.base import Backend
from kerasrs.testing import check_gradients

GEOMETRIES = [  # window, strides, dilation, padding, input (n, h, w, c)
    ((3, 3), (1, 1), (1, 1), ((0, 0), (0, 0)), (5, 9, 8, 3)),
    ((3, 3), (1, 1), (1, 1), ((1, 1), (1, 1)), (2, 7, 7, 1)),
    ((2, 3), (2, 1), (1, 2), ((0, 1), (2, 1)), (3, 8, 9, 4)),
    ((1, 1), (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1, 1, 1)),
    ((3, 3), (1, 1), (1, 1), ((0, 0), (0, 0)), (7, 10, 10, 32)),
]


def host(x):
    return kerasrs.backend.convert_to_numpy(x)


def _case(rng, dtype, window, c, filters=5):
    kernel = rng.standard_normal((window[0] * window[1] * c, filters)).astype(dtype) * 0.3
    bias = rng.standard_normal(filters).astype(dtype)
    return kernel, bias


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of about one sample, so every batch is cut into several (uneven) blocks."""
    monkeypatch.setattr(conv2d, "CHUNK_BYTES", 1500)
    monkeypatch.setattr(conv2d, "SERIAL_CHUNK_BYTES", 1500)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("act", ["linear", "relu", "sigmoid", "tanh"])
@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_conv2d_and_grad_match_twin(backend, rng, small_blocks, dtype, act, geometry):
    window, strides, dilation, padding, shape = geometry
    x = rng.standard_normal(shape).astype(dtype)
    kernel, bias = _case(rng, dtype, window, shape[-1])
    args = (window, strides, dilation, padding)
    xs, ks, bs = (backend.asarray(a) for a in (x, kernel, bias))
    want = Backend.conv2d(backend, xs, ks, bs, act, *args)
    got = backend.conv2d(xs, ks, bs, act, *args)
    tol = 1e-10 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(host(got), host(want), rtol=tol, atol=tol)
    gy = backend.asarray(rng.standard_normal(host(want).shape).astype(dtype))
    for need in [(True, True, True), (False, True, True), (True, False, False)]:
        ref = Backend.conv2d_grad(backend, xs, ks, want, gy, act, *args, *need)
        out = backend.conv2d_grad(xs, ks, got, gy, act, *args, *need)
        for r, o in zip(ref, out):
            assert (r is None) == (o is None)
            if r is not None:
                np.testing.assert_allclose(host(o), host(r), rtol=tol, atol=tol)


@pytest.mark.parametrize("act", ["linear", "tanh"])
def test_conv2d_twin_gradients_float64(rng, act):
    be = numpy_backend.NumpyBackend()
    window, strides, dilation, padding = (2, 3), (2, 1), (1, 2), ((1, 0), (1, 2))
    x = rng.standard_normal((2, 5, 6, 2))
    kernel, bias = _case(rng, "float64", window, 2, filters=3)
    args = (window, strides, dilation, padding)
    gy = rng.standard_normal(Backend.conv2d(be, x, kernel, bias, act, *args).shape)

    def loss(x, kernel, bias):
        return float(np.sum(Backend.conv2d(be, x, kernel, bias, act, *args) * gy))

    y = Backend.conv2d(be, x, kernel, bias, act, *args)
    analytic = Backend.conv2d_grad(be, x, kernel, y, gy, act, *args)
    for i, a in enumerate((x, kernel, bias)):
        numeric = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            args3 = [x.copy(), kernel.copy(), bias.copy()]
            args3[i][idx] += 1e-6
            up = loss(*args3)
            args3[i][idx] -= 2e-6
            numeric[idx] = (up - loss(*args3)) / 2e-6
        np.testing.assert_allclose(analytic[i], numeric, rtol=1e-6, atol=1e-7)


def test_conv2d_layer_gradients_with_blocks(small_blocks):
    """The Conv op on the blocked path: float64 finite differences through ops.conv."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 6, 5, 2))
    k = rng.standard_normal((3, 3, 2, 4)) * 0.3
    check_gradients(lambda x, k: kerasrs.ops.conv(x, k, strides=(2, 1), padding="same"), [x, k])


def test_blocked_conv2d_repeats_exactly():
    """Two passes on the same inputs give the same bits (scratch and pooled buffers reused)."""
    be = numpy_backend.NumpyBackend()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((9, 12, 12, 16)).astype("float32")
    kernel, bias = _case(rng, "float32", (3, 3), 16, filters=8)
    args = ((3, 3), (1, 1), (1, 1), ((1, 1), (1, 1)))
    y1 = be.conv2d(x, kernel, bias, "relu", *args)
    g1 = be.conv2d_grad(x, kernel, y1, y1, "relu", *args)
    y2 = be.conv2d(x, kernel, bias, "relu", *args)
    g2 = be.conv2d_grad(x, kernel, y2, y2, "relu", *args)
    np.testing.assert_array_equal(y1, y2)
    for a, b in zip(g1, g2):
        np.testing.assert_array_equal(a, b)
    assert not np.shares_memory(y1, y2)


@pytest.mark.parametrize("act", ["linear", "relu", "sigmoid"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_one_channel_conv2d_runs_without_columns(monkeypatch, rng, act, dtype):
    """A one-channel input (an image network's first layer) is convolved tap by tap: no column
    matrix is written, forward or backward (its input gradient not asked), and the results
    match the twin, over two parts of the output rows."""
    be = numpy_backend.NumpyBackend()
    monkeypatch.setattr(conv2d, "im2col_rows", None)  # any use of the columns fails
    monkeypatch.setattr(conv2d.cpu_threads, "GRAIN", 64)  # several parts even when small
    window, strides, dilation, padding = (3, 2), (1, 2), (2, 1), ((1, 2), (0, 1))
    x = rng.standard_normal((4, 9, 8, 1)).astype(dtype)
    kernel, bias = _case(rng, dtype, window, 1, filters=6)
    args = (window, strides, dilation, padding)
    want = Backend.conv2d(be, x, kernel, bias, act, *args)
    got = be.conv2d(x, kernel, bias, act, *args)
    tol = 1e-12 if dtype == "float64" else 2e-6
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    gy = rng.standard_normal(want.shape).astype(dtype)
    ref = Backend.conv2d_grad(be, x, kernel, want, gy, act, *args, False, True, True)
    out = be.conv2d_grad(x, kernel, got, gy, act, *args, False, True, True)
    assert out[0] is None
    for r, o in zip(ref[1:], out[1:]):
        assert o.dtype == np.dtype(dtype)
        np.testing.assert_allclose(o, r, rtol=tol, atol=tol * 10)




@pytest.mark.parametrize("threads, samples", [(1, 3), (2, 12)])
def test_conv2d_blocks_fit_l2_on_one_thread(monkeypatch, threads, samples):
    """The benchmark CNN's second convolution (26x26x32 -> 64, batch 128): on one thread, blocks
    whose columns fit a 2 MB L2 (their GEMMs ran 20-30 % faster than with 8 MB blocks); with
    BLAS threads, 8 MB blocks (fewer hand-overs to the threads)."""
    monkeypatch.setattr(conv2d.cpu_threads, "threads", lambda: threads)
    x = np.zeros((128, 26, 26, 32), "float32")
    _, chunks, cols = conv2d._blocks(x, (3, 3), (1, 1), (1, 1), ((0, 0), (0, 0)), 288)
    assert chunks[0] == (0, samples) and chunks[-1][1] == 128
    assert cols.nbytes <= (2 << 20 if threads == 1 else 8 << 20)
