"""The 2-D convolution's fast path (`ops.convolution.Conv`, no groups: the backend's
``conv2d``/``conv2d_grad``, on the CPU in blocks of samples, output on pooled memory, input
gradient as one GEMM + the ``col2im`` kernel per block). Float64 finite-difference checks,
agreement with the N-d path (a 2-D convolution written as a 3-D one with depth 1) for any
blocking, and safety of the reused memory."""

import gc

import numpy as np
import pytest

import kerasrs
from kerasrs import ops
from kerasrs.autodiff import GradientTape, Tensor
from kerasrs.backend import memory
from kerasrs.backend.kernels import conv2d
from kerasrs.ops.convolution import conv_bias_act
from kerasrs.testing import check_gradients

CASES = [  # (x shape channels-last, kernel shape, strides, padding, dilation)
    ((2, 6, 7, 3), (3, 3, 3, 4), 1, "valid", 1),
    ((2, 6, 7, 3), (3, 3, 3, 4), 1, "same", 1),
    ((1, 7, 8, 2), (3, 2, 2, 3), (2, 3), "same", 1),
    ((2, 8, 7, 2), (2, 3, 2, 2), 2, "valid", 1),
    ((1, 9, 9, 2), (3, 3, 2, 2), 1, "same", (2, 3)),
    ((1, 9, 8, 3), (2, 2, 3, 2), (1, 2), "valid", (3, 2)),
    ((2, 5, 5, 1), (1, 1, 1, 3), 2, "same", 1),
    ((1, 4, 5, 2), (4, 5, 2, 2), 1, "valid", 1),  # the window is the whole input
]


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def _cf(x):
    return np.moveaxis(x, -1, 1).copy()


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("x_shape,k_shape,strides,padding,dilation", CASES)
@pytest.mark.parametrize("bias,activation", [(False, "linear"), (True, "linear"),
                                             (True, "relu"), (False, "tanh")])
def test_conv2d_gradients(x_shape, k_shape, strides, padding, dilation, data_format, bias,
                          activation):
    x, w = _rand(x_shape, 0), _rand(k_shape, 1) * 0.5
    if data_format == "channels_first":
        x = _cf(x)
    inputs = [x, w]
    if bias:
        inputs.append(_rand(k_shape[-1:], 2) + 0.1)

    def f(a, k, *b):
        return conv_bias_act(a, k, b[0] if b else None, strides, padding, data_format,
                                 dilation, activation)

    check_gradients(f, inputs, max_elements=60)


def _as_3d(x, w, strides, padding, dilation):
    """The same 2-D convolution as a 3-D one of depth 1 (the N-d im2col/col2im path)."""
    pair = lambda v: (v, v) if isinstance(v, int) else tuple(v)  # noqa: E731
    return (x[:, None], w[None], (1, *pair(strides)), padding, (1, *pair(dilation)))


@pytest.mark.parametrize("block_bytes", [1, None, 1 << 40])  # one sample, default, all
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("x_shape,k_shape,strides,padding,dilation", [
    ((16, 32, 31, 8), (3, 3, 8, 16), 1, "same", 1),
    ((16, 33, 30, 6), (3, 2, 6, 8), (2, 1), "same", (1, 2)),
    ((9, 30, 31, 5), (4, 3, 5, 7), 2, "valid", 1),
])
def test_conv2d_matches_the_nd_path_for_any_blocking(monkeypatch, block_bytes, dtype, x_shape,
                                                     k_shape, strides, padding, dilation):
    if block_bytes is not None:
        monkeypatch.setattr(conv2d, "CHUNK_BYTES", block_bytes)
        monkeypatch.setattr(conv2d, "SERIAL_CHUNK_BYTES", block_bytes)
    x, w = _rand(x_shape, 0).astype(dtype), _rand(k_shape, 1).astype(dtype)
    gy_full = None
    results = []
    for args in ((x, w, strides, padding, dilation), _as_3d(x, w, strides, padding, dilation)):
        xt, wt = Tensor(args[0]), Tensor(args[1])
        with GradientTape() as tape:
            tape.watch([xt, wt])
            y = ops.conv(xt, wt, args[2], args[3], None, args[4])
        if gy_full is None:
            gy_full = _rand(y.shape, 3).astype(dtype)
        gx, gw = tape.gradient(y, [xt, wt], output_gradients=gy_full.reshape(y.shape))
        results.append([y.numpy().reshape(gy_full.shape), gx.numpy().reshape(x.shape),
                        gw.numpy().reshape(w.shape)])
    tol = 1e-11 if dtype == "float64" else 2e-4
    for got, want in zip(*results):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _step(x, w, b, activation, data_format):
    xt, wt, bt = Tensor(x), Tensor(w), Tensor(b)
    with GradientTape() as tape:
        tape.watch([xt, wt, bt])
        y = conv_bias_act(xt, wt, bt, 1, "same", data_format, 1, activation)
        loss = ops.sum(y * y)
    grads = tape.gradient(loss, [xt, wt, bt])
    return [y.numpy()] + [g.numpy() for g in grads]


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("activation", ["linear", "relu"])
def test_successive_passes_give_identical_results(data_format, activation):
    """Pooled outputs, column buffers and col2im results are reused from one pass to the next:
    a pass must not read what the previous one left there, nor write on what it returned."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 24, 24, 8)).astype("float32")  # pooled sizes (> MIN_BYTES)
    if data_format == "channels_first":
        x = _cf(x)
    w = rng.standard_normal((3, 3, 8, 32)).astype("float32")
    b = rng.standard_normal(32).astype("float32")
    assert 16 * 24 * 24 * 32 * 4 >= memory.MIN_BYTES
    first = _step(x, w, b, activation, data_format)
    kept = [a.copy() for a in first]
    second = _step(x, w, b, activation, data_format)  # while the first results are alive
    for a, c, k in zip(first, second, kept):
        np.testing.assert_array_equal(a, k)  # the first results are untouched
        np.testing.assert_array_equal(c, k)
    del first, second
    gc.collect()
    third = _step(x, w, b, activation, data_format)  # on the memory the first two freed
    for a, k in zip(third, kept):
        np.testing.assert_array_equal(a, k)


def test_model_output_kept_by_the_user_survives_training():
    kerasrs.utils.set_random_seed(0)
    model = kerasrs.Sequential([kerasrs.layers.Input((16, 16, 8)),
                                kerasrs.layers.Conv2D(64, 3, padding="same", activation="relu"),
                                kerasrs.layers.Conv2D(64, 3, padding="same")])
    model.compile(optimizer="adam", loss="mse")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 16, 16, 8)).astype("float32")
    y = rng.standard_normal((32, 16, 16, 64)).astype("float32")
    out = model(x)
    out_np = kerasrs.backend.convert_to_numpy(out)
    predicted = model.predict(x, batch_size=32, verbose=0)
    assert out_np.nbytes >= memory.MIN_BYTES
    kept = out_np.copy()
    kept_predicted = predicted.copy()
    model.fit(x, y, batch_size=32, epochs=3, verbose=0)
    model.predict(x, batch_size=32, verbose=0)
    np.testing.assert_array_equal(out_np, kept)
    np.testing.assert_array_equal(predicted, kept_predicted)
    np.testing.assert_array_equal(kerasrs.backend.convert_to_numpy(out), kept)
    # training changed the weights: the new output differs from the kept one
    assert not np.allclose(kerasrs.backend.convert_to_numpy(model(x)), kept)
