"""Convolution and pooling ops: values against loop-based NumPy references (written here, on tiny
shapes) and against real Keras 3 values (tests/fixtures/keras_nn_ops.npz), float64 gradients for
inputs and kernels across strides, padding, dilation, groups and data formats, behaviour case
C25 (TensorFlow's asymmetric "same" padding), and the errors for bad shapes."""

import itertools
import json
import math
import pathlib

import numpy as np
import pytest

import kerasrs
from kerasrs import ops
from kerasrs.testing import check_gradients

GRADIENT_TESTED = {"conv", "depthwise_conv", "separable_conv", "conv_transpose", "max_pool",
                   "average_pool"}

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures"


# -- loop-based references (channels_last; slow but obviously right) ---------------------------
def same_pads(n, k, s, d):
    """TensorFlow's "same" padding along one axis: (before, after, output size)."""
    out = math.ceil(n / s)
    total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
    return total // 2, total - total // 2, out


def pads_and_out(spatial, window, strides, dilation, padding):
    pads, outs = [], []
    for n, k, s, d in zip(spatial, window, strides, dilation):
        if padding == "same":
            b, a, o = same_pads(n, k, s, d)
        else:
            b, a, o = 0, 0, (n - (k - 1) * d - 1) // s + 1
        pads.append((b, a))
        outs.append(o)
    return pads, outs


def conv_ref(x, w, strides, padding, dilation):
    """Grouped N-d cross-correlation by loops over output pixels and kernel taps."""
    nd = x.ndim - 2
    strides, dilation = _tup(strides, nd), _tup(dilation, nd)
    pads, outs = pads_and_out(x.shape[1:-1], w.shape[:nd], strides, dilation, padding)
    xp = np.pad(x, [(0, 0), *pads, (0, 0)])
    cg, filters = w.shape[-2], w.shape[-1]
    groups = x.shape[-1] // cg
    og = filters // groups
    y = np.zeros((x.shape[0], *outs, filters))
    for o in itertools.product(*(range(n) for n in outs)):
        for t in itertools.product(*(range(k) for k in w.shape[:nd])):
            pos = tuple(oi * s + ti * d for oi, ti, s, d in zip(o, t, strides, dilation))
            pixel = xp[(slice(None), *pos)]  # (batch, channels)
            for g in range(groups):
                y[(slice(None), *o, slice(g * og, (g + 1) * og))] += (
                    pixel[:, g * cg:(g + 1) * cg] @ w[t][:, g * og:(g + 1) * og])
    return y


def conv_transpose_ref(x, w, strides, padding, output_padding, dilation):
    """Scatter every input pixel through the kernel, then crop as Keras's shape rules say."""
    nd = x.ndim - 2
    strides, dilation = _tup(strides, nd), _tup(dilation, nd)
    reach = [(k - 1) * d + 1 for k, d in zip(w.shape[:nd], dilation)]
    full = np.zeros((x.shape[0], *[(n - 1) * s + r for n, s, r in
                                   zip(x.shape[1:-1], strides, reach)], w.shape[-2]))
    for i in itertools.product(*(range(n) for n in x.shape[1:-1])):
        for t in itertools.product(*(range(k) for k in w.shape[:nd])):
            pos = tuple(a * s + b * d for a, b, s, d in zip(i, t, strides, dilation))
            full[(slice(None), *pos)] += x[(slice(None), *i)] @ w[t].T
    index = [slice(None)]
    for axis, (n, r, s) in enumerate(zip(x.shape[1:-1], reach, strides)):
        op = None if output_padding is None else _tup(output_padding, nd)[axis]
        if padding == "valid":
            size = (n - 1) * s + (max(r, s) if op is None else r + op)
            start = 0
        else:
            size = n * s if op is None else (n - 1) * s + r % 2 + op
            # Keras pads the dilated input JAX-style, the larger half first (at most r - 1)
            pad_len = s + r - 2 if op is None else r + r % 2 - 2 + op
            start = r - 1 - min(pad_len // 2 + pad_len % 2, r - 1)
        if start + size > full.shape[1 + axis]:  # output padding past the scatter: zeros
            extra = start + size - full.shape[1 + axis]
            widths = [(0, 0)] * full.ndim
            widths[1 + axis] = (0, extra)
            full = np.pad(full, widths)
        index.append(slice(start, start + size))
    return full[tuple(index)]


def pool_ref(x, pool, strides, padding, kind):
    nd = x.ndim - 2
    pool = _tup(pool, nd)
    strides = pool if strides is None else _tup(strides, nd)
    pads, outs = pads_and_out(x.shape[1:-1], pool, strides, (1,) * nd, padding)
    y = np.zeros((x.shape[0], *outs, x.shape[-1]))
    for o in itertools.product(*(range(n) for n in outs)):
        index = [slice(None)]
        for oi, s, k, (b, _), n in zip(o, strides, pool, pads, x.shape[1:-1]):
            start = oi * s - b
            index.append(slice(max(start, 0), min(start + k, n)))  # real elements only
        window = x[tuple(index)].reshape(x.shape[0], -1, x.shape[-1])
        y[(slice(None), *o)] = window.max(1) if kind == "max" else window.mean(1)
    return y


def _tup(v, n):
    return (v,) * n if isinstance(v, int) else tuple(v)


def _cf(x):
    """channels_last -> channels_first."""
    return np.moveaxis(x, -1, 1)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# -- conv --------------------------------------------------------------------------------------
CONV_CASES = [  # (input shape, kernel shape, strides, padding, dilation)
    ((2, 7, 3), (3, 3, 2), 1, "valid", 1),
    ((2, 8, 2), (3, 2, 3), 2, "same", 1),
    ((1, 9, 2), (2, 2, 2), 1, "same", 3),
    ((2, 5, 6, 3), (3, 3, 3, 2), 1, "valid", 1),
    ((2, 5, 6, 2), (3, 2, 2, 3), (2, 1), "same", 1),
    ((1, 6, 7, 2), (2, 3, 2, 2), 3, "same", 1),
    ((1, 7, 6, 2), (3, 2, 2, 2), 1, "valid", (2, 1)),
    ((2, 6, 5, 4), (3, 3, 2, 4), 2, "same", 1),          # 2 groups
    ((1, 5, 5, 6), (2, 2, 2, 3), 1, "valid", 1),          # 3 groups
    ((1, 4, 5, 3, 2), (2, 3, 2, 2, 2), (1, 2, 1), "same", 1),
    ((1, 5, 4, 4, 1), (3, 2, 2, 1, 2), 1, "valid", (2, 1, 1)),
]


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("x_shape,k_shape,strides,padding,dilation", CONV_CASES)
def test_conv_matches_loop_reference(x_shape, k_shape, strides, padding, dilation, data_format):
    x, w = _rand(*x_shape), _rand(*k_shape, seed=1)
    want = conv_ref(x, w, strides, padding, dilation)
    xin = _cf(x) if data_format == "channels_first" else x
    got = ops.conv(xin, w, strides, padding, data_format, dilation).numpy()
    if data_format == "channels_first":
        got = np.moveaxis(got, 1, -1)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("x_shape,k_shape,strides,padding,dilation", CONV_CASES)
def test_conv_gradients(x_shape, k_shape, strides, padding, dilation, data_format):
    x, w = _rand(*x_shape), _rand(*k_shape, seed=1)
    if data_format == "channels_first":
        x = _cf(x)
    check_gradients(lambda a, b: ops.conv(a, b, strides, padding, data_format, dilation), [x, w],
                    max_elements=60)


def test_conv_float32_stays_float32_and_matches_float64():
    x, w = _rand(2, 9, 9, 3), _rand(3, 3, 3, 5, seed=1)
    y32 = ops.conv(x.astype("float32"), w.astype("float32"), 2, "same")
    assert y32.dtype == np.float32
    np.testing.assert_allclose(y32.numpy(), ops.conv(x, w, 2, "same").numpy(), rtol=1e-4,
                               atol=1e-5)


def test_c25_same_padding_with_stride_2_is_asymmetric():
    """Behaviour case C25: TensorFlow/Keras put the odd padding pixel at the end."""
    kernel = np.arange(9, dtype="float32").reshape(3, 3, 1, 1)
    y = ops.conv(np.ones((1, 2, 2, 1), "float32"), kernel, strides=2, padding="same")
    assert y.shape == (1, 1, 1, 1) and y.numpy().item() == 8.0  # cells 0, 1, 3, 4
    y = ops.conv(np.ones((1, 1, 1, 1), "float32"), kernel, strides=2, padding="same")
    assert y.numpy().item() == 4.0  # the centre only
    x = np.arange(16, dtype="float32").reshape(1, 4, 4, 1)
    y = ops.conv(x, np.ones((3, 3, 1, 1), "float32"), strides=2, padding="same")
    np.testing.assert_array_equal(y.numpy()[0, :, :, 0], [[45, 39], [66, 50]])


def test_c25_pooling_same_padding_follows_the_same_split():
    x = np.arange(16, dtype="float64").reshape(1, 4, 4, 1)
    # 3x3 windows, stride 2, "same": total padding 1 per axis, all of it at the end
    y = ops.average_pool(x, 3, 2, "same").numpy()[0, :, :, 0]
    np.testing.assert_allclose(y, [[5.0, 6.5], [11.0, 12.5]])
    y = ops.max_pool(-x, 3, 2, "same").numpy()[0, :, :, 0]
    np.testing.assert_array_equal(y, [[0, -2], [-8, -10]])


# -- depthwise and separable -------------------------------------------------------------------
def depthwise_ref(x, w, strides, padding, dilation):
    channels = w.shape[-2]
    outs = [conv_ref(x[..., c:c + 1], w[..., c:c + 1, :], strides, padding, dilation)
            for c in range(channels)]
    return np.concatenate(outs, axis=-1)  # channel c*mult + m


@pytest.mark.parametrize("x_shape,k_shape,strides,padding,dilation", [
    ((2, 7, 3), (3, 3, 2), 2, "same", 1),
    ((2, 5, 6, 3), (3, 2, 3, 2), 1, "valid", 1),
    ((1, 6, 6, 2), (3, 3, 2, 1), 2, "same", 1),
    ((1, 7, 6, 2), (2, 2, 2, 3), 1, "same", 2),
])
def test_depthwise_conv_values_and_gradients(x_shape, k_shape, strides, padding, dilation):
    x, w = _rand(*x_shape), _rand(*k_shape, seed=1)
    got = ops.depthwise_conv(x, w, strides, padding, None, dilation).numpy()
    np.testing.assert_allclose(got, depthwise_ref(x, w, strides, padding, dilation), atol=1e-12)
    check_gradients(lambda a, b: ops.depthwise_conv(a, b, strides, padding, None, dilation),
                    [x, w], max_elements=60)


def test_separable_conv_is_depthwise_then_pointwise():
    x, dw, pw = _rand(2, 6, 5, 3), _rand(3, 3, 3, 2, seed=1), _rand(1, 1, 6, 4, seed=2)
    want = conv_ref(depthwise_ref(x, dw, 1, "same", 1), pw, 1, "valid", 1)
    got = ops.separable_conv(x, dw, pw, padding="same").numpy()
    np.testing.assert_allclose(got, want, atol=1e-12)
    check_gradients(lambda a, b, c: ops.separable_conv(a, b, c, 2, "same"), [x, dw, pw],
                    max_elements=40)


def test_separable_conv_channels_first():
    x, dw, pw = _rand(1, 5, 5, 2), _rand(2, 2, 2, 2, seed=1), _rand(1, 1, 4, 3, seed=2)
    want = ops.separable_conv(x, dw, pw).numpy()
    got = ops.separable_conv(_cf(x), dw, pw, data_format="channels_first").numpy()
    np.testing.assert_allclose(np.moveaxis(got, 1, -1), want, atol=1e-12)


# -- conv_transpose ----------------------------------------------------------------------------
TRANSPOSE_CASES = [  # (input shape, kernel shape (*k, filters, in), strides, padding, out_pad, dil)
    ((2, 4, 3), (3, 2, 3), 2, "valid", None, 1),
    ((2, 4, 3), (3, 2, 3), 2, "same", None, 1),
    ((1, 5, 2), (2, 3, 2), 3, "valid", None, 1),     # stride larger than the kernel
    ((1, 5, 2), (3, 2, 2), 1, "same", None, 2),
    ((2, 3, 4, 2), (3, 3, 2, 2), 2, "same", None, 1),
    ((2, 3, 4, 2), (3, 2, 3, 2), (2, 3), "valid", None, 1),
    ((1, 3, 3, 2), (3, 3, 2, 2), 2, "valid", 1, 1),
    ((1, 3, 4, 2), (3, 3, 2, 2), 2, "same", (1, 0), 1),
    ((1, 4, 3, 2), (2, 2, 1, 2), 1, "valid", None, (2, 1)),
    ((1, 2, 3, 2, 2), (2, 2, 2, 2, 2), 2, "same", None, 1),
]


@pytest.mark.parametrize("x_shape,k_shape,strides,padding,output_padding,dilation",
                         TRANSPOSE_CASES)
def test_conv_transpose_values_and_gradients(x_shape, k_shape, strides, padding,
                                             output_padding, dilation):
    x, w = _rand(*x_shape), _rand(*k_shape, seed=1)
    want = conv_transpose_ref(x, w, strides, padding, output_padding, dilation)
    got = ops.conv_transpose(x, w, strides, padding, output_padding, None, dilation).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=1e-12)
    check_gradients(lambda a, b: ops.conv_transpose(a, b, strides, padding, output_padding,
                                                    None, dilation), [x, w], max_elements=60)


def test_conv_transpose_is_the_input_gradient_of_conv():
    x, w = _rand(2, 7, 6, 3), _rand(3, 3, 3, 4, seed=1)
    y = ops.conv(x, w, 2, "same")
    gy = _rand(*y.shape, seed=2)
    xt = kerasrs.Tensor(x)
    with kerasrs.GradientTape() as tape:
        tape.watch(xt)
        y = ops.conv(xt, w, 2, "same")
    gx = tape.gradient(y, xt, output_gradients=gy).numpy()
    # conv_transpose's kernel layout is (*window, filters, in_channels): the conv kernel itself
    got = ops.conv_transpose(gy, w, 2, "same", output_padding=(0, 1)).numpy()
    np.testing.assert_allclose(got, gx, atol=1e-12)


def test_conv_transpose_channels_first():
    x, w = _rand(2, 3, 4, 3), _rand(3, 3, 2, 3, seed=1)
    want = ops.conv_transpose(x, w, 2, "same").numpy()
    got = ops.conv_transpose(_cf(x), w, 2, "same", data_format="channels_first").numpy()
    np.testing.assert_allclose(np.moveaxis(got, 1, -1), want, atol=1e-12)
    check_gradients(lambda a, b: ops.conv_transpose(a, b, 2, "same",
                                                    data_format="channels_first"),
                    [_cf(x), w], max_elements=40)


# -- pooling -----------------------------------------------------------------------------------
POOL_CASES = [  # (input shape, pool, strides, padding)
    ((2, 8, 3), 2, None, "valid"),
    ((2, 9, 2), 3, 2, "same"),
    ((1, 7, 2), 2, 1, "same"),
    ((2, 6, 6, 3), 2, None, "valid"),
    ((2, 7, 7, 2), 2, None, "valid"),      # leftover row and column
    ((1, 7, 6, 2), 3, 2, "same"),
    ((1, 5, 6, 2), (2, 3), (1, 2), "same"),
    ((1, 6, 5, 2), (3, 1), (3, 1), "valid"),
    ((1, 5, 5, 2), 2, 3, "valid"),         # stride larger than the window
    ((1, 4, 5, 3, 2), 2, None, "same"),
    ((1, 5, 4, 4, 1), (3, 2, 2), (2, 1, 2), "valid"),
]


@pytest.mark.parametrize("kind", ["max", "average"])
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("x_shape,pool,strides,padding", POOL_CASES)
def test_pool_matches_loop_reference(x_shape, pool, strides, padding, data_format, kind):
    x = _rand(*x_shape)
    op = ops.max_pool if kind == "max" else ops.average_pool
    xin = _cf(x) if data_format == "channels_first" else x
    got = op(xin, pool, strides, padding, data_format).numpy()
    if data_format == "channels_first":
        got = np.moveaxis(got, 1, -1)
    np.testing.assert_allclose(got, pool_ref(x, pool, strides, padding, kind), atol=1e-12)


@pytest.mark.parametrize("kind", ["max", "average"])
@pytest.mark.parametrize("x_shape,pool,strides,padding", POOL_CASES)
def test_pool_gradients(x_shape, pool, strides, padding, kind):
    # distinct values (a shuffled grid) keep max-pool's winners away from ties
    n = math.prod(x_shape)
    x = np.random.default_rng(3).permutation(n).reshape(x_shape) * 0.1
    op = ops.max_pool if kind == "max" else ops.average_pool
    check_gradients(lambda a: op(a, pool, strides, padding), [x], max_elements=80)


@pytest.mark.parametrize("kind", ["max", "average"])
def test_pool_gradients_channels_first(kind):
    x = np.random.default_rng(4).permutation(2 * 3 * 7 * 6).reshape(2, 3, 7, 6) * 0.1
    op = ops.max_pool if kind == "max" else ops.average_pool
    check_gradients(lambda a: op(a, 3, 2, "same", "channels_first"), [x], max_elements=80)


def test_max_pool_gradient_goes_to_one_winner_per_window():
    x = np.array([[1.0, 5.0, 2.0, 2.0], [3.0, 0.0, 2.0, 2.0]]).reshape(1, 2, 4, 1)
    xt = kerasrs.Tensor(x)
    with kerasrs.GradientTape() as tape:
        tape.watch(xt)
        y = ops.max_pool(xt, 2)
    np.testing.assert_array_equal(y.numpy().ravel(), [5.0, 2.0])
    g = tape.gradient(y, xt).numpy().reshape(2, 4)
    # window 1: the 5 wins; window 2 is a 4-way tie: exactly one element gets the gradient
    np.testing.assert_array_equal(g[:, :2], [[0, 1], [0, 0]])
    assert g[:, 2:].sum() == 1.0 and np.count_nonzero(g[:, 2:]) == 1


def test_average_pool_same_divides_by_real_elements():
    x = np.ones((1, 5, 1))
    y = ops.average_pool(x, 4, 1, "same").numpy().ravel()
    np.testing.assert_allclose(y, np.ones(5))  # never diluted by the zero padding


def test_max_pool_float32_and_negative_inputs_with_same_padding():
    x = -np.arange(1, 10, dtype="float32").reshape(1, 3, 3, 1)
    y = ops.max_pool(x, 2, 2, "same")
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y.numpy()[0, :, :, 0], [[-1, -3], [-7, -9]])  # pad is -inf


# -- real Keras values -------------------------------------------------------------------------
def _keras_cases():
    """The conv and pooling cases of the Keras fixture (the activations are in test_nn.py)."""
    data = np.load(FIXTURES / "keras_nn_ops.npz")
    cases = json.loads(str(data["cases"]))
    return data, [(i, op, kw) for i, (op, kw) in enumerate(cases) if op in GRADIENT_TESTED]


_KERAS_DATA, _KERAS_CASES = _keras_cases()


@pytest.mark.parametrize("index,op,kwargs", _KERAS_CASES,
                         ids=[f"{i}-{op}" for i, op, _ in _KERAS_CASES])
def test_matches_keras_values_and_gradients(index, op, kwargs):
    data = _KERAS_DATA
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}
    inputs = [kerasrs.Tensor(data[f"{index}/x{j}"]) for j in range(3)
              if f"{index}/x{j}" in data]
    with kerasrs.GradientTape() as tape:
        tape.watch(inputs)
        y = getattr(ops, op)(*inputs, **kwargs)
    grads = tape.gradient(y, inputs, output_gradients=data[f"{index}/w"])
    want = data[f"{index}/y"]
    assert y.dtype == np.float32 and y.shape == want.shape
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-6 * scale)
    for j, g in enumerate(grads):
        gw = data[f"{index}/g{j}"]
        np.testing.assert_allclose(g.numpy(), gw, rtol=1e-5,
                                   atol=1e-6 * max(1.0, float(np.abs(gw).max())))


# -- errors ------------------------------------------------------------------------------------
def test_conv_rejects_input_of_wrong_rank_naming_both_shapes():
    with pytest.raises(ValueError, match=r"conv: .*rank 4.*Received: inputs shape \(2, 5, 3\), "
                                         r"kernel shape \(3, 3, 3, 4\)"):
        ops.conv(np.zeros((2, 5, 3)), np.zeros((3, 3, 3, 4)))


def test_conv_rejects_kernel_larger_than_valid_input():
    with pytest.raises(ValueError, match=r"conv: the window .*larger than the input.*Received: "
                                         r"inputs shape \(1, 2, 2, 1\), kernel shape "
                                         r"\(3, 3, 1, 1\)"):
        ops.conv(np.zeros((1, 2, 2, 1)), np.zeros((3, 3, 1, 1)))
    with pytest.raises(ValueError, match="larger than the input"):  # dilation counts
        ops.conv(np.zeros((1, 4, 4, 1)), np.zeros((2, 2, 1, 1)), dilation_rate=4)


def test_conv_rejects_channel_mismatch_naming_both_shapes():
    with pytest.raises(ValueError, match=r"conv: the input has 3 channels.*kernel's 2 input "
                                         r"channels.*Received: inputs shape \(1, 5, 5, 3\), "
                                         r"kernel shape \(3, 3, 2, 4\)"):
        ops.conv(np.zeros((1, 5, 5, 3)), np.zeros((3, 3, 2, 4)))
    with pytest.raises(ValueError, match=r"output channels are not a multiple of 2"):
        ops.conv(np.zeros((1, 5, 5, 4)), np.zeros((3, 3, 2, 3)))
    with pytest.raises(ValueError, match=r"the input has 5 channels.*channels_first"):
        ops.conv(np.zeros((1, 5, 5, 3)), np.zeros((3, 3, 2, 4)), data_format="channels_first")


def test_depthwise_and_transpose_reject_channel_mismatch():
    with pytest.raises(ValueError, match=r"depthwise_conv: .*3 channels.*expects 2.*Received: "
                                         r"inputs shape \(1, 5, 5, 3\), kernel shape"):
        ops.depthwise_conv(np.zeros((1, 5, 5, 3)), np.zeros((3, 3, 2, 1)))
    with pytest.raises(ValueError, match=r"depthwise_conv: needs a kernel of rank 3, 4 or 5.*"
                                         r"Received: inputs shape \(1, 5, 3\), kernel shape "
                                         r"\(3, 3, 3, 1\)"):
        ops.depthwise_conv(np.zeros((1, 5, 3)), np.zeros((3, 3, 3, 1)))
    with pytest.raises(ValueError, match=r"depthwise_conv: the window .*Received: inputs shape "
                                         r"\(1, 2, 2, 3\), kernel shape \(3, 3, 3, 1\)"):
        ops.depthwise_conv(np.zeros((1, 2, 2, 3)), np.zeros((3, 3, 3, 1)))
    with pytest.raises(ValueError, match=r"conv_transpose: the input has 3 channels.*expects 2"):
        ops.conv_transpose(np.zeros((1, 5, 5, 3)), np.zeros((3, 3, 4, 2)))


@pytest.mark.parametrize("kwargs,pattern", [
    ({"padding": "full"}, r"`padding` must be 'valid' or 'same'. Received: padding='full'"),
    ({"strides": 0}, r"`strides` must be a positive int or a tuple of 2"),
    ({"strides": (1, 2, 1)}, r"`strides` must be .* tuple of 2"),
    ({"dilation_rate": -1}, r"`dilation_rate` must be"),
    ({"data_format": "NHWC"}, r"`data_format` must be 'channels_last' or 'channels_first'"),
])
def test_conv_rejects_bad_arguments(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        ops.conv(np.zeros((1, 5, 5, 1)), np.zeros((3, 3, 1, 1)), **kwargs)


def test_pooling_rejects_bad_rank_and_oversized_window():
    with pytest.raises(ValueError, match=r"max_pool: inputs must have rank 3, 4 or 5.*Received: "
                                         r"inputs shape \(4, 4\)"):
        ops.max_pool(np.zeros((4, 4)), 2)
    with pytest.raises(ValueError, match=r"average_pool: the window .*larger than the input"):
        ops.average_pool(np.zeros((1, 2, 2, 1)), 3)
    with pytest.raises(ValueError, match=r"`pool_size` must be"):
        ops.max_pool(np.zeros((1, 4, 4, 1)), (2, 2, 2))


# -- CuPy against the NumPy reference ------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("op,args", [
    ("conv", ((3, 3, 4, 6), 2, "same")),
    ("depthwise_conv", ((3, 3, 4, 2), 1, "valid")),
    ("conv_transpose", ((3, 3, 5, 4), 2, "same")),
])
def test_conv_ops_on_cupy_match_numpy(op, args):
    if not kerasrs.backend.is_available("cupy"):
        pytest.skip("cupy backend not available")
    x, w = _rand(2, 9, 8, 4).astype("float32"), _rand(*args[0], seed=1).astype("float32")
    want = getattr(ops, op)(x, w, *args[1:]).numpy()
    with kerasrs.backend.using("cupy") as be:
        xt, wt = kerasrs.Tensor(be.asarray(x)), kerasrs.Tensor(be.asarray(w))
        with kerasrs.GradientTape() as tape:
            tape.watch([xt, wt])
            y = getattr(ops, op)(xt, wt, *args[1:])
        gx, gw = tape.gradient(y, [xt, wt])
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-4)
    assert gx.shape == x.shape and gw.shape == w.shape


@pytest.mark.gpu
@pytest.mark.parametrize("op", ["max_pool", "average_pool"])
def test_pooling_on_cupy_matches_numpy(op):
    if not kerasrs.backend.is_available("cupy"):
        pytest.skip("cupy backend not available")
    x = _rand(2, 9, 8, 4).astype("float32")
    gy = _rand(2, 5, 4, 4, seed=1).astype("float32")

    def run():
        xt = kerasrs.Tensor(kerasrs.backend.get().asarray(x))
        with kerasrs.GradientTape() as tape:
            tape.watch(xt)
            y = getattr(ops, op)(xt, 3, 2, "same")
        return y.numpy(), tape.gradient(y, xt, output_gradients=gy).numpy()

    want = run()
    with kerasrs.backend.using("cupy"):
        got = run()
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# -- a real Keras CNN, op by op --------------------------------------------------------------------
def test_keras_m2_cnn_forward_loss_and_gradients_op_by_op():
    """Keras 3.15 fixture m2: Conv2D(8,3,relu) -> MaxPooling2D -> Conv2D(16,3,relu) ->
    GlobalAveragePooling2D -> Dense(10), categorical cross-entropy from logits, batch mean.
    Every activation, the loss and every weight gradient must match at float32 precision."""
    data = np.load(FIXTURES / "keras" / "m2_io.npz")
    names = ["conv2d/kernel", "conv2d/bias", "conv2d_1/kernel", "conv2d_1/bias",
             "dense/kernel", "dense/bias"]
    weights = [kerasrs.Tensor(data[f"weights/sequential/{n}"]) for n in names]
    k1, b1, k2, b2, kd, bd = weights
    with kerasrs.GradientTape() as tape:
        tape.watch(weights)
        h1 = ops.relu(ops.conv(data["x"], k1) + b1)
        p1 = ops.max_pool(h1, 2)
        h2 = ops.relu(ops.conv(p1, k2) + b2)
        g = ops.mean(h2, axis=(1, 2))
        logits = ops.matmul(g, kd) + bd
        loss = ops.mean(ops.categorical_crossentropy(data["labels"], logits, from_logits=True))
    grads = tape.gradient(loss, weights)
    for got, key in [(h1, "acts/conv2d"), (p1, "acts/max_pooling2d"), (h2, "acts/conv2d_1"),
                     (g, "acts/global_average_pooling2d"), (logits, "y")]:
        np.testing.assert_allclose(got.numpy(), data[key], rtol=1e-5, atol=1e-6, err_msg=key)
    assert loss.dtype == np.float32
    np.testing.assert_allclose(loss.numpy(), data["loss_value"], rtol=1e-6)
    for grad, name in zip(grads, names):
        want = data[f"grads/sequential/{name}"]
        np.testing.assert_allclose(grad.numpy(), want, rtol=1e-5,
                                   atol=1e-6 * max(1.0, float(np.abs(want).max())), err_msg=name)
