"""The named fused kernels (KERNELS.md): each reference twin in `Backend` against the existing op
compositions, its gradient twin against float64 finite differences, and every backend's
override against the twin (odd sizes, size 1, non-contiguous inputs)."""

import numpy as np
import pytest

import kerasrs
from kerasrs import ops, optimizers
from kerasrs.autodiff import Function, GradientTape, Tensor
from kerasrs.backend.base import Backend
from kerasrs.backend.kernels import cpu as kernels_cpu
from kerasrs.ops import normalization as norm_ops
from kerasrs.ops import recurrent as rnn_ops
from kerasrs.testing import check_gradients

ACTS = ["linear", "relu", "sigmoid", "tanh"]


def host(x):
    return kerasrs.backend.convert_to_numpy(x)


def dev(be, x):
    return be.asarray(np.asarray(x))


def strided(be, a):
    """A non-contiguous device copy of ``a`` (every other row/column of a larger array)."""
    big = np.zeros(tuple(2 * n for n in a.shape), a.dtype)
    big[tuple(slice(None, None, 2) for _ in a.shape)] = a
    return dev(be, big)[tuple(slice(None, None, 2) for _ in a.shape)]


def close(a, b, tol):
    np.testing.assert_allclose(host(a), host(b), rtol=tol, atol=tol)


def both(be, name, *args, **kwargs):
    """(reference twin, this backend's version) of kernel ``name`` on the same arguments;
    in-place arguments are copied first so each sees the original values."""
    copies = [[a.copy() if hasattr(a, "copy") else a for a in args] for _ in range(2)]
    ref = getattr(Backend, name)(be, *copies[0], **kwargs)
    got = getattr(be, name)(*copies[1], **kwargs)
    return ref, got, copies


def tol(dtype):
    return 1e-12 if dtype == np.float64 else 2e-5


# -- bias + activation --------------------------------------------------------------------------
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("shape", [(1, 1), (7, 13), (130, 33)])
def test_bias_act_matches_ops(backend, rng, act, shape):
    x = rng.standard_normal(shape).astype("float32")
    b = rng.standard_normal(shape[1:]).astype("float32")
    expect = Tensor(dev(backend, x)) + b
    if act != "linear":
        expect = getattr(ops, act)(expect)
    for xs in (dev(backend, x), strided(backend, x)):
        ref, got, _ = both(backend, "bias_act", xs, dev(backend, b), act)
        close(ref, expect.data, 2e-6)
        close(got, ref, 2e-6)
    inplace = dev(backend, x)
    assert backend.bias_act(inplace, dev(backend, b), act, out=inplace) is inplace
    close(inplace, expect.data, 2e-6)


class _BiasAct(Function):
    """Test harness: a differentiable op made of the two twins."""

    def __init__(self, act, fused):
        self.act, self.fused = act, fused

    def forward(self, x, b):
        k = self.backend if self.fused else _Twin(self.backend)
        self.k = k
        self.y = k.bias_act(x, b, self.act)
        return self.y

    def backward(self, gy):
        return self.k.bias_act_grad(self.y, gy, self.act)


class _Twin:
    """Calls the reference twins of a backend."""

    def __init__(self, be):
        self.be = be

    def __getattr__(self, name):
        return getattr(Backend, name).__get__(self.be)


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("act", ACTS)
def test_bias_act_gradients(backend, rng, act, fused):
    x = rng.standard_normal((5, 3)) + 0.05  # away from relu's kink
    check_gradients(lambda x, b: _BiasAct(act, fused).apply(x, b),
                    [x, rng.standard_normal(3)])


@pytest.mark.parametrize("act", ACTS)
def test_bias_act_grad_matches_twin(backend, rng, act):
    y = backend.bias_act(dev(backend, rng.standard_normal((9, 5)).astype("float32")), None, act)
    gy = rng.standard_normal((9, 5)).astype("float32")
    (rx, rb), (gx, gb), _ = both(backend, "bias_act_grad", y, strided(backend, gy), act)
    close(gx, rx, 2e-6)
    close(gb, rb, 2e-5)
    assert backend.bias_act_grad(y, dev(backend, gy), act, need_bias=False)[1] is None


# -- im2col / col2im ------------------------------------------------------------------------------
CONV_CASES = [  # (x shape, window, strides, dilation, padding)
    ((1, 1, 1, 1), (1, 1), (1, 1), (1, 1), ((0, 0), (0, 0))),
    ((2, 7, 5, 3), (3, 3), (1, 1), (1, 1), ((1, 1), (1, 1))),
    ((3, 9, 8, 2), (3, 2), (2, 3), (1, 1), ((0, 1), (2, 0))),
    ((2, 9, 9, 4), (3, 3), (1, 1), (2, 2), ((0, 0), (0, 0))),
    ((2, 1, 11, 3), (1, 4), (1, 2), (1, 1), ((0, 0), (1, 2))),  # 1-D as H = 1
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_im2col_gemm_is_conv(backend, rng, case):
    shape, window, strides, dilation, padding = case
    x = rng.standard_normal(shape)
    w = rng.standard_normal((*window, shape[-1], 5))
    xpad = np.pad(x, ((0, 0), *padding, (0, 0)))
    expect = ops.conv(Tensor(dev(backend, xpad)), Tensor(dev(backend, w)), strides=strides,
                      dilation_rate=dilation)
    for xs in (dev(backend, x), strided(backend, x)):
        ref, got, _ = both(backend, "im2col", xs, window, strides, dilation, padding)
        close((ref @ dev(backend, w.reshape(-1, 5))).reshape(expect.shape), expect.data, 1e-12)
        close(got, ref, 0)
    buf = backend.xp.empty(ref.shape, ref.dtype)
    assert backend.im2col(dev(backend, x), window, strides, dilation, padding, out=buf) is buf
    close(buf, ref, 0)


@pytest.mark.parametrize("case", CONV_CASES)
def test_col2im_is_adjoint_of_im2col(backend, rng, case):
    shape, window, strides, dilation, padding = case
    x = rng.standard_normal(shape)
    cols = backend.im2col(dev(backend, x), window, strides, dilation, padding)
    c = rng.standard_normal(cols.shape)
    for cs in (dev(backend, c), strided(backend, c)):
        ref, got, _ = both(backend, "col2im", cs, shape, window, strides, dilation, padding)
        assert ref.shape == shape
        # <im2col(x), c> == <x, col2im(c)>: col2im is im2col's transpose
        np.testing.assert_allclose(float((host(cols) * c).sum()), float((x * host(ref)).sum()),
                                   rtol=1e-12)
        close(got, ref, 1e-12)


# -- max pooling ------------------------------------------------------------------------------------
POOL_CASES = [  # (x shape, pool, strides, keras padding)
    ((1, 1, 1, 1), (1, 1), (1, 1), "valid"),
    ((2, 8, 8, 3), (2, 2), (2, 2), "valid"),
    ((3, 7, 9, 5), (2, 2), (2, 2), "same"),
    ((2, 7, 7, 2), (3, 3), (2, 2), "same"),  # overlapping windows
    ((2, 1, 9, 4), (1, 3), (1, 2), "valid"),
]


def _pads(shape, pool, strides, padding):
    if padding == "valid":
        return tuple((0, 0) for _ in pool)
    out = [-(-n // s) for n, s in zip(shape[1:-1], strides)]
    total = [max((o - 1) * s + k - n, 0) for o, s, k, n in zip(out, strides, pool, shape[1:-1])]
    return tuple((t // 2, t - t // 2) for t in total)


@pytest.mark.parametrize("case", POOL_CASES)
def test_max_pool_matches_ops(backend, rng, case):
    shape, pool, strides, padding = case
    x = rng.standard_normal(shape)
    gy_shape = None
    pads = _pads(shape, pool, strides, padding)
    xt = Tensor(dev(backend, x))
    with GradientTape() as tape:
        tape.watch(xt)
        expect = ops.max_pool(xt, pool, strides, padding)
    gy = rng.standard_normal(expect.shape)
    gx_expect = tape.gradient(expect, xt, output_gradients=gy)
    for xs in (dev(backend, x), strided(backend, x)):
        (ry, ra), (y, a), _ = both(backend, "max_pool", xs, pool, strides, pads)
        close(ry, expect.data, 0)
        close(y, ry, 0)
        assert host(a).dtype == np.int32 and host(ra).dtype == np.int32
        np.testing.assert_array_equal(host(a), host(ra))
    for gs in (dev(backend, gy), strided(backend, gy)):
        ref, got, _ = both(backend, "max_pool_grad", gs, ra, shape)
        close(ref, gx_expect.data, 1e-12)
        close(got, ref, 1e-12)
    del gy_shape


def test_max_pool_ties_go_to_first_position(backend):
    x = np.zeros((1, 2, 2, 1))
    y, a = backend.max_pool(dev(backend, x), (2, 2), (2, 2), ((0, 0), (0, 0)))
    assert int(host(a).ravel()[0]) == 0


# -- layer normalization ----------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (9, 33), (130, 64)])
def test_layer_norm_matches_ops(backend, rng, shape):
    x = rng.standard_normal(shape).astype("float32") * 3 + 1
    g, b = (rng.standard_normal(shape[1:]).astype("float32") for _ in range(2))
    xt, gt, bt = (Tensor(dev(backend, a)) for a in (x, g, b))
    with GradientTape() as tape:
        tape.watch([xt, gt, bt])
        expect = norm_ops.layer_normalization(xt, gt, bt, epsilon=1e-3)
    gy = rng.standard_normal(shape).astype("float32")
    grads = tape.gradient(expect, [xt, gt, bt], output_gradients=gy)
    for xs in (dev(backend, x), strided(backend, x)):
        (ry, rm, rs), (y, m, s), _ = both(backend, "layer_norm", xs, gt.data, bt.data, 1e-3)
        close(ry, expect.data, 3e-5)
        assert host(rm).dtype == np.float32 and host(rm).shape == shape[:1]
        for u, v in ((y, ry), (m, rm), (s, rs)):
            close(u, v, 3e-5)
    for gs in (dev(backend, gy), strided(backend, gy)):
        ref, got, _ = both(backend, "layer_norm_grad", gs, dev(backend, x), gt.data, rm, rs)
        for r, e in zip(ref, grads):
            close(r, e.data, 2e-4 * max(1, shape[0] / 10))
        for r, u in zip(ref, got):
            close(u, r, 2e-4 * max(1, shape[0] / 10))


class _LayerNorm(Function):
    def __init__(self, fused):
        self.fused = fused

    def forward(self, x, g, b):
        self.k = self.backend if self.fused else _Twin(self.backend)
        self.x, self.g = x, g
        y, self.m, self.r = self.k.layer_norm(x, g, b, 1e-3)
        return y

    def backward(self, gy):
        return self.k.layer_norm_grad(gy, self.x, self.g, self.m, self.r)


@pytest.mark.parametrize("fused", [False, True])
def test_layer_norm_gradients(backend, rng, fused):
    check_gradients(lambda x, g, b: _LayerNorm(fused).apply(x, g, b),
                    [rng.standard_normal((4, 5)), rng.standard_normal(5),
                     rng.standard_normal(5)], atol=1e-5, rtol=1e-4)


def test_layer_norm_float64_statistics(backend, rng):
    x = dev(backend, rng.standard_normal((3, 4)))
    _, m, s = backend.layer_norm(x, None, None, 1e-3)
    assert host(m).dtype == np.float64 and host(s).dtype == np.float64


@pytest.mark.parametrize("shape", [(1, 1), (5, 3), (67, 64)])
def test_layer_norm_float64_matches_twin(backend, rng, shape):
    x, gy = rng.standard_normal(shape) * 3 + 1, rng.standard_normal(shape)
    g, b = rng.standard_normal(shape[1:]), rng.standard_normal(shape[1:])
    for xs in (dev(backend, x), strided(backend, x)):
        ref, got, _ = both(backend, "layer_norm", xs, dev(backend, g), dev(backend, b), 1e-5)
        for r, u in zip(ref, got):
            close(u, r, 1e-12)
    _, m, r = ref
    ref, got, _ = both(backend, "layer_norm_grad", strided(backend, gy), dev(backend, x),
                       dev(backend, g), m, r)
    for r, u in zip(ref, got):
        close(u, r, 1e-11)


# -- attention softmax backward ------------------------------------------------------------------
def _attention_case(rng, b, n, t, s, h, dtype):
    """p (softmax weights), gy, o = p v (batch, seq, heads, dim), dp = gy v^T, all ``dtype``."""
    scores = rng.standard_normal((b, n, t, s)) * 2
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    v = rng.standard_normal((b, n, s, h))
    o = (p @ v).transpose(0, 2, 1, 3)
    gy = rng.standard_normal((b, t, n, h))
    dp = gy.transpose(0, 2, 1, 3) @ v.transpose(0, 1, 3, 2)
    return [a.astype(dtype) for a in (dp, p, gy, o)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("sizes", [(1, 1, 1, 1, 1), (3, 2, 5, 7, 3), (4, 4, 28, 28, 16),
                                   (40, 4, 28, 28, 16)])  # the last runs on threads
def test_attention_softmax_grad_matches_twin(backend, rng, dtype, sizes):
    dp, p, gy, o = _attention_case(rng, *sizes, dtype)
    # the softmax Jacobian-vector product written out: P * (dP - sum_s dP P), times the scale
    expect = 0.5 * p * (dp - (dp * p).sum(-1, keepdims=True))
    t = 1e-12 if dtype == "float64" else 3e-5
    for gys, os_ in ((dev(backend, gy), dev(backend, o)),
                     (strided(backend, gy), strided(backend, o))):  # non-contiguous too
        ref, got, copies = both(backend, "attention_softmax_grad", dev(backend, dp),
                                dev(backend, p), gys, os_, 0.5)
        close(ref, expect, 10 * t)
        close(got, ref, t)
        assert host(got).dtype == np.dtype(dtype)


def test_attention_softmax_grad_is_in_place_with_masked_zeros(backend, rng):
    dp, p, gy, o = _attention_case(rng, 2, 3, 4, 5, 2, "float32")
    p[..., 0] = 0  # a masked key: no gradient reaches its score
    d = dev(backend, dp)
    assert backend.attention_softmax_grad(d, dev(backend, p), dev(backend, gy), dev(backend, o),
                                          0.25) is d
    assert not host(d)[..., 0].any()


# -- optimizers -------------------------------------------------------------------------------------
SHAPES = [(1,), (7, 3), (129,), (2, 3, 5), (181, 183)]  # the last runs on threads


def _vars(backend, rng):
    return [kerasrs.Variable(rng.standard_normal(s).astype("float32")) for s in SHAPES]


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adam_update_matches_per_variable_rule(backend, rng, amsgrad):
    """The multi-tensor step (twin and override) against Adam's textbook per-variable rule."""
    ws = [rng.standard_normal(s).astype("float32") for s in SHAPES]
    ms, vs = [np.zeros_like(w) for w in ws], [np.zeros_like(w) for w in ws]
    hats = [np.zeros_like(w) for w in ws] if amsgrad else None
    state = {k: [[dev(backend, a) for a in arrs] for _ in range(2)] for k, arrs in
             (("w", ws), ("m", ms), ("v", vs), ("h", hats or ws))}
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-7
    for step in (1, 2, 3):
        gs = [rng.standard_normal(s).astype("float32") for s in SHAPES]
        alpha = lr * np.sqrt(1 - b2 ** step) / (1 - b1 ** step)
        for i, w in enumerate(ws):
            g = gs[i]
            ms[i] += np.float32(1 - b1) * (g - ms[i])
            vs[i] += np.float32(1 - b2) * (g * g - vs[i])
            v = vs[i]
            if amsgrad:
                hats[i] = np.maximum(hats[i], v)
                v = hats[i]
            w -= np.float32(alpha) * ms[i] / (np.sqrt(v) + np.float32(eps))
        for k, fn in enumerate((Backend.adam_update.__get__(backend), backend.adam_update)):
            g_dev = [strided(backend, g) for g in gs]  # non-contiguous gradients
            fn(state["w"][k], g_dev, state["m"][k], state["v"][k], alpha, b1, b2, eps,
               v_hats=state["h"][k] if amsgrad else None)
    for k in range(2):
        for w, got in zip(ws, state["w"][k]):
            close(got, w, 1e-5)
            assert host(got).dtype == np.float32


@pytest.mark.parametrize("momentum,nesterov", [(0.0, False), (0.9, False), (0.9, True)])
def test_sgd_update_matches_optimizer(backend, rng, momentum, nesterov):
    ws = [rng.standard_normal(s).astype("float32") for s in SHAPES]
    vs = [np.zeros_like(w) for w in ws]
    cur = {k: [[dev(backend, a) for a in arrs] for _ in range(2)] for k, arrs in
           (("w", ws), ("v", vs))}
    lr = 0.05
    for _ in range(3):
        gs = [rng.standard_normal(s).astype("float32") for s in SHAPES]
        for i, w in enumerate(ws):
            if momentum:
                vs[i] = np.float32(momentum) * vs[i] - np.float32(lr) * gs[i]
                w += (np.float32(momentum) * vs[i] - np.float32(lr) * gs[i]) if nesterov \
                    else vs[i]
            else:
                w -= np.float32(lr) * gs[i]
        for k, fn in enumerate((Backend.sgd_update.__get__(backend), backend.sgd_update)):
            fn(cur["w"][k], [strided(backend, g) for g in gs],
               cur["v"][k] if momentum else None, lr, momentum, nesterov)
    for k in range(2):
        for w, got in zip(ws, cur["w"][k]):
            close(got, w, 1e-5)


def _textbook_step(kind, w, g, slots, lr, t, weight_decay, amsgrad=False, momentum=0.0,
                   nesterov=False):
    """One step of Keras 3's AdamW / SGD with decoupled weight decay, per variable, float64."""
    w = w - w * weight_decay * lr
    if kind == "sgd":
        if not momentum:
            return w - lr * g
        slots["v"] = momentum * slots["v"] - lr * g
        return w + (momentum * slots["v"] - lr * g if nesterov else slots["v"])
    slots["m"] = slots["m"] + (1 - 0.9) * (g - slots["m"])
    slots["v"] = slots["v"] + (1 - 0.999) * (g * g - slots["v"])
    slots["h"] = np.maximum(slots["h"], slots["v"])
    alpha = lr * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
    return w - alpha * slots["m"] / (np.sqrt(slots["h"] if amsgrad else slots["v"]) + 1e-7)


@pytest.mark.parametrize("path", ["kernel", "twin"])
@pytest.mark.parametrize("kind, kwargs", [
    ("adam", {}), ("adam", {"amsgrad": True}), ("sgd", {}), ("sgd", {"momentum": 0.9}),
    ("sgd", {"momentum": 0.9, "nesterov": True})])
def test_optimizer_steps_with_weight_decay_match_the_textbook_rule(backend, rng, monkeypatch,
                                                                   path, kind, kwargs):
    """AdamW/AMSGrad and SGD through the optimizer (decay applied once, by the optimizer; Adam's
    bias correction once per step), on the backend's fused multi-tensor kernel and on the twin
    (what runs without numba), against the per-variable rule; one variable is excluded."""
    if path == "twin":
        monkeypatch.setattr(kernels_cpu, "_numba", [None])  # as if numba were missing
    lr, wd = float(np.float32(0.05)), 0.1  # (the learning-rate variable is float32)
    opt = optimizers.AdamW(lr, weight_decay=wd, **kwargs) if kind == "adam" else \
        optimizers.SGD(lr, weight_decay=wd, **kwargs)
    opt.exclude_from_weight_decay(var_names=["skip"])
    w0 = [rng.standard_normal(s) for s in SHAPES]
    variables = [kerasrs.Variable(dev(backend, w), dtype="float64",
                                  name="skip" if i == 1 else f"w{i}") for i, w in enumerate(w0)]
    want = [w.copy() for w in w0]
    slots = [{"m": 0 * w, "v": 0 * w, "h": 0 * w} for w in w0]
    for t in (1, 2, 3):
        gs = [rng.standard_normal(s) for s in SHAPES]
        opt.apply([dev(backend, g) for g in gs], variables)
        want = [_textbook_step(kind, w, g, sl, lr, t, 0.0 if i == 1 else wd, **kwargs)
                for i, (w, g, sl) in enumerate(zip(want, gs, slots))]
    for v, w in zip(variables, want):
        np.testing.assert_allclose(v.numpy(), w, rtol=1e-12, atol=1e-13)


# -- recurrent gates --------------------------------------------------------------------------------
GATE_ACTS = [("tanh", "sigmoid"), ("relu", "sigmoid"), ("tanh", "linear")]


@pytest.mark.parametrize("acts", GATE_ACTS)
@pytest.mark.parametrize("n,units", [(1, 1), (5, 3), (33, 16)])
def test_lstm_gates_match_lstm_op(backend, rng, acts, n, units):
    act, ract = acts
    f = 4
    x = rng.standard_normal((n, 1, f))
    k, rk = rng.standard_normal((f, 4 * units)), rng.standard_normal((units, 4 * units)) * 0.5
    bias, h0, c0 = (rng.standard_normal(s) for s in ((4 * units,), (n, units), (n, units)))
    out, h, c = rnn_ops.lstm(*(Tensor(dev(backend, a)) for a in (x, k, rk, bias)),
                         initial_state=[Tensor(dev(backend, h0)), Tensor(dev(backend, c0))],
                         activation=act, recurrent_activation=ract, return_state=True)
    z = x[:, 0] @ k + h0 @ rk + bias
    for zs in (dev(backend, z), strided(backend, z)):
        (rh, rc, rtc), (gh, gc, gtc), copies = both(backend, "lstm_gates", zs,
                                                    dev(backend, c0), act, ract)
        close(rh, h.data, 1e-12)
        close(rc, c.data, 1e-12)
        for u, v in ((gh, rh), (gc, rc), (gtc, rtc), (copies[1][0], copies[0][0])):
            close(u, v, 1e-12)


class _LSTMCell(Function):
    def __init__(self, acts, fused):
        self.acts, self.fused = acts, fused

    def forward(self, z, c_prev):
        self.k = self.backend if self.fused else _Twin(self.backend)
        self.gates, self.c_prev = z.copy(), c_prev
        h, c, self.tc = self.k.lstm_gates(self.gates, c_prev, *self.acts)
        return self.xp.concatenate([h, c], axis=1)

    def backward(self, g):
        u = self.c_prev.shape[1]
        return self.k.lstm_gates_grad(self.gates, self.c_prev, self.tc, g[:, :u], g[:, u:],
                                      *self.acts)


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("acts", GATE_ACTS)
def test_lstm_gates_gradients(backend, rng, acts, fused):
    z = rng.standard_normal((3, 8)) + 0.05
    check_gradients(lambda z, c: _LSTMCell(acts, fused).apply(z, c),
                    [z, rng.standard_normal((3, 2))])


@pytest.mark.parametrize("acts", GATE_ACTS)
def test_lstm_gates_grad_matches_twin(backend, rng, acts):
    n, u = 7, 5
    gates = backend.asarray(rng.standard_normal((n, 4 * u)))
    _, c, tc = backend.lstm_gates(gates, dev(backend, rng.standard_normal((n, u))), *acts)
    args = [gates, dev(backend, rng.standard_normal((n, u))), tc,
            strided(backend, rng.standard_normal((n, u))), dev(backend, rng.standard_normal((n, u)))]
    ref, got, _ = both(backend, "lstm_gates_grad", *args, *acts)
    for r, u_ in zip(ref, got):
        close(u_, r, 1e-12)


@pytest.mark.parametrize("acts", GATE_ACTS)
@pytest.mark.parametrize("n,units", [(1, 1), (5, 3), (33, 16)])
def test_gru_gates_match_gru_op(backend, rng, acts, n, units):
    act, ract = acts
    f = 4
    x = rng.standard_normal((n, 1, f))
    k, rk = rng.standard_normal((f, 3 * units)), rng.standard_normal((units, 3 * units)) * 0.5
    bias, h0 = rng.standard_normal((2, 3 * units)), rng.standard_normal((n, units))
    out = rnn_ops.gru(*(Tensor(dev(backend, a)) for a in (x, k, rk, bias)),
                  initial_state=Tensor(dev(backend, h0)), activation=act,
                  recurrent_activation=ract)
    xz, hz = x[:, 0] @ k + bias[0], h0 @ rk + bias[1]
    for xs in (dev(backend, xz), strided(backend, xz)):
        ref, got, copies = both(backend, "gru_gates", xs, dev(backend, hz), dev(backend, h0),
                                act, ract)
        close(ref, out.data, 1e-12)
        close(got, ref, 1e-12)
        close(copies[1][0], copies[0][0], 1e-12)


class _GRUCell(Function):
    def __init__(self, acts, fused):
        self.acts, self.fused = acts, fused

    def forward(self, xz, hz, h_prev):
        self.k = self.backend if self.fused else _Twin(self.backend)
        self.gates, self.hz, self.h_prev = xz.copy(), hz, h_prev
        return self.k.gru_gates(self.gates, hz, h_prev, *self.acts)

    def backward(self, g):
        return self.k.gru_gates_grad(self.gates, self.hz, self.h_prev, g, *self.acts)


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("acts", GATE_ACTS)
def test_gru_gates_gradients(backend, rng, acts, fused):
    check_gradients(lambda xz, hz, h: _GRUCell(acts, fused).apply(xz, hz, h),
                    [rng.standard_normal((3, 6)) + 0.05, rng.standard_normal((3, 6)),
                     rng.standard_normal((3, 2))])


@pytest.mark.parametrize("acts", GATE_ACTS)
def test_gru_gates_grad_matches_twin(backend, rng, acts):
    n, u = 6, 5
    gates = dev(backend, rng.standard_normal((n, 3 * u)))
    hz, h0 = dev(backend, rng.standard_normal((n, 3 * u))), dev(backend, rng.standard_normal((n, u)))
    backend.gru_gates(gates, hz, h0, *acts)
    ref, got, _ = both(backend, "gru_gates_grad", gates, hz, h0,
                       strided(backend, rng.standard_normal((n, u))), *acts)
    for r, u_ in zip(ref, got):
        close(u_, r, 1e-12)


# -- the compiled-kernel library: lazy, optional ----------------------------------------------------
def test_import_kerasrs_loads_no_numba_and_leaves_malloc_and_threads_alone():
    import subprocess
    import sys

    code = ("import os, sys; before = dict(os.environ); import kerasrs; "
            "assert 'numba' not in sys.modules, 'numba imported'; "
            "kerasrs.layers.Dense(3, activation='relu')(kerasrs.ops.ones((2, 4))); "
            "assert dict(os.environ) == before, 'environment changed'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_without_numba_the_twins_run_with_one_warning(monkeypatch, rng):
    import sys

    monkeypatch.setitem(sys.modules, "numba", None)  # makes `import numba` fail
    monkeypatch.setattr(kernels_cpu, "_numba", [])  # not yet imported
    be = kerasrs.backend.get("numpy")
    x = rng.standard_normal((5, 4)).astype("float32")
    with pytest.warns(RuntimeWarning, match="numba") as record:
        y = be.bias_act(x, None, "relu")
        be.relu(x)
    assert len([w for w in record if "numba" in str(w.message)]) == 1
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    dp, p, gy, o = _attention_case(rng, 2, 2, 3, 4, 2, "float32")
    expect = Backend.attention_softmax_grad(be, dp.copy(), p, gy, o, 0.5)
    np.testing.assert_array_equal(be.attention_softmax_grad(dp, p, gy, o, 0.5), expect)
