"""The compiled LSTM and GRU gate kernels (`kernels.rnn_gates`: `lstm_gates`, `lstm_gates_grad`,
`gru_gates`, `gru_gates_grad`) against their NumPy twins in `Backend` (float32 and float64, odd
sizes, size 1, non-contiguous arrays), the vectorized float32 sigmoid/tanh they use against
float64 over the whole float32 range, and the LSTM and GRU ops without numba (the twins run)."""

import numpy as np
import pytest

import kerasrs
from kerasrs.autodiff import GradientTape, Tensor
from kerasrs.backend import cpu_threads
from kerasrs.backend.base import Backend
from kerasrs.backend.kernels import cpu as kernels_cpu
from kerasrs.ops import recurrent as rnn_ops

pytest.importorskip("numba")

ACTS = [("tanh", "sigmoid"), ("sigmoid", "tanh"), ("relu", "sigmoid"), ("tanh", "linear"),
        ("linear", "relu"), ("tanh", "hard_sigmoid")]
SHAPES = [(1, 1), (5, 3), (33, 17)]


@pytest.fixture
def be():
    return kerasrs.backend.get("numpy")


def _tol(dtype):
    return 1e-12 if dtype == np.float64 else 3e-6


def _array(rng, shape, dtype, contiguous, scale=1.0):
    """``shape`` normals as ``dtype``; when not ``contiguous``, every other column of a wider
    array (a view with a row stride that is not its width)."""
    a = (rng.standard_normal(shape) * scale).astype(dtype)
    if contiguous:
        return a
    wide = np.zeros((shape[0], 2 * shape[1]), dtype)
    wide[:, ::2] = a
    return wide[:, ::2]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("acts", ACTS)
@pytest.mark.parametrize("n,u", SHAPES)
@pytest.mark.parametrize("contiguous", [True, False])
def test_lstm_gates_kernel_matches_twin(be, rng, dtype, acts, n, u, contiguous):
    z = _array(rng, (n, 4 * u), dtype, contiguous, scale=3.0)
    c_prev = _array(rng, (n, u), dtype, contiguous)
    z_ref, z_got = z.copy(), z.copy()
    ref = Backend.lstm_gates(be, z_ref, c_prev, *acts)
    out = tuple(_array(rng, (n, u), dtype, contiguous) for _ in range(3))
    got = be.lstm_gates(z_got, c_prev, *acts, out=out)
    assert all(g is o for g, o in zip(got, out))
    for g, r in zip(got + (z_got,), ref + (z_ref,)):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, r, rtol=_tol(dtype), atol=_tol(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("acts", ACTS)
@pytest.mark.parametrize("n,u", SHAPES)
@pytest.mark.parametrize("contiguous", [True, False])
def test_lstm_gates_grad_kernel_matches_twin(be, rng, dtype, acts, n, u, contiguous):
    gates = _array(rng, (n, 4 * u), dtype, True, scale=3.0)
    c_prev = _array(rng, (n, u), dtype, contiguous)
    _, _, tc = Backend.lstm_gates(be, gates, c_prev, *acts)
    if not contiguous:
        wide = np.zeros((n, 8 * u), dtype)
        wide[:, ::2] = gates
        gates, tc = wide[:, ::2], tc[:, ::-1][:, ::-1]
    dh, dc = _array(rng, (n, u), dtype, contiguous), _array(rng, (n, u), dtype, contiguous)
    ref = Backend.lstm_gates_grad(be, gates, c_prev, tc, dh, dc, *acts)
    got = be.lstm_gates_grad(gates, c_prev, tc, dh, dc, *acts)
    for g, r in zip(got, ref):
        assert g.dtype == dtype and g.shape == r.shape
        np.testing.assert_allclose(g, r, rtol=_tol(dtype), atol=_tol(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("acts", ACTS)
@pytest.mark.parametrize("n,u", SHAPES)
@pytest.mark.parametrize("contiguous", [True, False])
def test_gru_gates_kernels_match_twins(be, rng, dtype, acts, n, u, contiguous):
    xz = _array(rng, (n, 3 * u), dtype, contiguous, scale=3.0)
    hz, h_prev = _array(rng, (n, 3 * u), dtype, contiguous), _array(rng, (n, u), dtype, contiguous)
    xz_ref, xz_got = xz.copy(), xz.copy()
    ref = Backend.gru_gates(be, xz_ref, hz, h_prev, *acts)
    out = _array(rng, (n, u), dtype, contiguous)
    assert be.gru_gates(xz_got, hz, h_prev, *acts, out=out) is out
    for g, r in ((out, ref), (xz_got, xz_ref)):
        np.testing.assert_allclose(g, r, rtol=_tol(dtype), atol=_tol(dtype))
    dh = _array(rng, (n, u), dtype, contiguous)
    ref = Backend.gru_gates_grad(be, xz_ref, hz, h_prev, dh, *acts)
    got = be.gru_gates_grad(xz_ref, hz, h_prev, dh, *acts)
    for g, r in zip(got, ref):
        assert g.dtype == dtype and g.shape == r.shape
        np.testing.assert_allclose(g, r, rtol=_tol(dtype), atol=_tol(dtype))


@pytest.fixture
def private_pool(monkeypatch):
    """`cpu_threads` with a pool of its own, shut down after the test (other tests check that
    no thread is left running)."""
    monkeypatch.setattr(cpu_threads, "_pool", [])
    yield
    for executor in cpu_threads._pool:
        executor.shutdown(wait=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernels_split_over_threads_match_twins(be, rng, dtype, private_pool):
    """A step large enough to be split over the cores (`cpu_threads.split`), row ranges
    included."""
    n, u = 700, 64
    z, c_prev = _array(rng, (n, 4 * u), dtype, True, 3.0), _array(rng, (n, u), dtype, True)
    z_ref = z.copy()
    for g, r in zip(be.lstm_gates(z, c_prev), Backend.lstm_gates(be, z_ref, c_prev)):
        np.testing.assert_allclose(g, r, rtol=_tol(dtype), atol=_tol(dtype))
    args = (z, c_prev, c_prev * 0.5, c_prev[::-1], c_prev + 1)
    for g, r in zip(be.lstm_gates_grad(*args), Backend.lstm_gates_grad(be, *args)):
        np.testing.assert_allclose(g, r, rtol=_tol(dtype), atol=_tol(dtype))
    xz, hz = z[:, :3 * u].copy(), z[:, u:].copy()
    xz_ref = xz.copy()
    np.testing.assert_allclose(be.gru_gates(xz, hz, c_prev),
                               Backend.gru_gates(be, xz_ref, hz, c_prev), rtol=_tol(dtype),
                               atol=_tol(dtype))
    args = (xz, hz, c_prev, c_prev[::-1])
    for g, r in zip(be.gru_gates_grad(*args), Backend.gru_gates_grad(be, *args)):
        np.testing.assert_allclose(g, r, rtol=_tol(dtype), atol=_tol(dtype))


def _ulps(got, ref):
    """Distance of float32 ``got`` from the float64 ``ref`` in float32 units in the last place
    of the rounded reference (equal values, both NaN: 0)."""
    r32 = ref.astype(np.float32)
    with np.errstate(invalid="ignore"):
        d = np.abs(got.astype(np.float64) - ref) / np.spacing(np.abs(r32)).astype(np.float64)
    d[(got == r32) | (np.isnan(got) & np.isnan(ref))] = 0
    return d


def test_float32_sigmoid_and_tanh_are_accurate_over_the_whole_range(be):
    """Every 251st float32 bit pattern (all exponents, both signs, subnormals), infinities, NaN
    and signed zeros, through the kernel's input, forget (sigmoid) and cell (tanh) gates."""
    bits = np.arange(0, 2 ** 32, 251, dtype=np.uint64).astype(np.uint32).view(np.float32)
    special = np.float32([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30, -1e-30, 88.0, -88.0,
                          104.0, -104.0, 0.625, -0.625, 0.6249999])
    x = np.concatenate([bits, special])
    u = x.size
    z = np.zeros((1, 4 * u), np.float32)
    z[0, :u] = x      # input gate: sigmoid
    z[0, 2 * u:3 * u] = x  # candidate: tanh
    be.lstm_gates(z, np.zeros((1, u), np.float32), "tanh", "sigmoid")
    with np.errstate(over="ignore", invalid="ignore"):  # (signaling NaN patterns)
        x64 = x.astype(np.float64)
        sigmoid, tanh = 1 / (1 + np.exp(-x64)), np.tanh(x64)
    assert _ulps(z[0, :u], sigmoid).max() <= 3
    assert _ulps(z[0, 2 * u:3 * u], tanh).max() <= 3
    tail = z[0, u - special.size:u], z[0, 3 * u - special.size:3 * u]
    np.testing.assert_array_equal(tail[0][:5], [1, 0, np.nan, 0.5, 0.5])
    np.testing.assert_array_equal(tail[1][:5], [1, -1, np.nan, 0, 0])
    assert np.signbit(tail[1][4]) and tail[1][6] == np.float32(-1e-30)  # tanh keeps -0, tiny x


def _loss_and_grads(op, x, k, rk, b, mask):
    args = [Tensor(a) for a in (x, k, rk, b)]
    with GradientTape() as tape:
        for a in args:
            tape.watch(a)
        y = op(*args, mask=mask, return_sequences=True)
        loss = (y * y).sum()
    return [loss.data] + [g.data for g in tape.gradient(loss, args)]


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("kind,gates", [("lstm", 4), ("gru", 3)])
def test_op_without_numba_runs_the_twins_and_agrees(monkeypatch, rng, masked, kind, gates):
    f, u = 5, 7
    x = rng.standard_normal((3, 4, f)).astype(np.float32)
    k = (rng.standard_normal((f, gates * u)) * 0.5).astype(np.float32)
    rk = (rng.standard_normal((u, gates * u)) * 0.5).astype(np.float32)
    b = rng.standard_normal((4 * u,) if kind == "lstm" else (2, 3 * u)).astype(np.float32)
    mask = np.array([[1, 1, 0, 1], [0, 1, 1, 1], [1, 1, 1, 0]], bool) if masked else None
    op = getattr(rnn_ops, kind)
    compiled = _loss_and_grads(op, x, k, rk, b, mask)
    monkeypatch.setattr(kernels_cpu, "_numba", [None])  # as if numba were missing
    calls = []
    for name in (f"{kind}_gates", f"{kind}_gates_grad"):
        twin = getattr(Backend, name)
        monkeypatch.setattr(Backend, name, lambda self, *a, _twin=twin, _name=name, **kw:
                            calls.append(_name) or _twin(self, *a, **kw))
    plain = _loss_and_grads(op, x, k, rk, b, mask)
    assert calls.count(f"{kind}_gates") == 4 and calls.count(f"{kind}_gates_grad") == 4
    for p, c in zip(plain, compiled):
        np.testing.assert_allclose(p, c, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_hard_sigmoid_gates_match_the_step_by_step_cell(rng, kind):
    """Keras 2's default recurrent activation: the fused op (kernels) against `layers.RNN`
    running a subclass of the cell step by step, outputs and weight gradients."""
    from kerasrs import layers, ops

    x = rng.standard_normal((3, 5, 4)).astype(np.float32) * 2
    kw = dict(recurrent_activation="hard_sigmoid", return_sequences=True)
    fused = getattr(layers, kind)(6, **kw)
    plain_cell = type("Plain", (getattr(layers, f"{kind}Cell"),), {})  # not fused by RNN
    cell = plain_cell(6, recurrent_activation="hard_sigmoid")
    stepped = layers.RNN(cell, return_sequences=True)
    fused.build(x.shape)
    stepped.build(x.shape)
    stepped.set_weights(fused.get_weights())
    grads = []
    for layer in (fused, stepped):
        with kerasrs.GradientTape() as tape:
            y = layer(x)
            loss = ops.sum(y * y)
        gs = tape.gradient(loss, layer.trainable_weights)
        grads.append([y.numpy()] + [g.numpy() for g in gs])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("acts", [("relu", "hard_sigmoid"), ("linear", "sigmoid")])
def test_gate_kernels_on_nan_inf_and_signed_zeros_match_twins(be, dtype, acts):
    values = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -3.0, 3.0, 1e30, -1e30], dtype)
    u = values.size
    z = np.tile(values, 4)[None].copy()
    c_prev = np.zeros((1, u), dtype)
    z_ref = z.copy()
    with np.errstate(all="ignore"):
        ref = Backend.lstm_gates(be, z_ref, c_prev, *acts)
        got = be.lstm_gates(z, c_prev, *acts)
    for g, r in zip(got + (z,), ref + (z_ref,)):
        np.testing.assert_array_equal(g, r)
        real = ~np.isnan(r)  # (a NaN's sign bit means nothing)
        np.testing.assert_array_equal(np.signbit(g[real]), np.signbit(r[real]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("acts", ACTS)
@pytest.mark.parametrize("contiguous", [True, False])
def test_lstm_gates_grad_in_place_over_the_gates_matches_twin(be, rng, dtype, acts,
                                                               contiguous):
    """``out=(gates, dc_prev)``: dz replaces the gates (the LSTM's backward does this)."""
    n, u = 33, 17
    gates = _array(rng, (n, 4 * u), dtype, contiguous, scale=3.0)
    c_prev = _array(rng, (n, u), dtype, contiguous)
    _, _, tc = Backend.lstm_gates(be, gates, c_prev, *acts)
    dh, dc = _array(rng, (n, u), dtype, contiguous), _array(rng, (n, u), dtype, contiguous)
    ref = Backend.lstm_gates_grad(be, gates, c_prev, tc, dh, dc, *acts)
    dc_prev = np.empty_like(ref[1])
    got = be.lstm_gates_grad(gates, c_prev, tc, dh, dc, *acts, out=(gates, dc_prev))
    assert got[0] is gates
    for g, r in zip((gates, dc_prev), ref):
        np.testing.assert_allclose(g, r, rtol=_tol(dtype), atol=_tol(dtype))


def _lstm_op(rng, dtype, masked=False):
    f, u = 5, 6
    x = rng.standard_normal((3, 4, f)).astype(dtype)
    k, rk = ((rng.standard_normal(s) * 0.5).astype(dtype) for s in ((f, 4 * u), (u, 4 * u)))
    b = rng.standard_normal(4 * u).astype(dtype)
    mask = np.array([[1, 1, 0, 1], [0, 1, 1, 1], [1, 1, 1, 0]], bool) if masked else None
    return [Tensor(a) for a in (x, k, rk, b)], mask


def test_lstm_backward_writes_dz_over_the_gates(monkeypatch, rng):
    """The pre-activation gradients take the gates' memory: no second (time, batch, 4 units)
    array is allocated (the gate kernel's memory traffic halves)."""
    from kerasrs.ops.gated_recurrence import LSTMRecurrence

    seen = []
    backward = LSTMRecurrence.backward
    monkeypatch.setattr(LSTMRecurrence, "backward",
                        lambda self, gy: (seen.append(self), backward(self, gy))[1])
    args, _ = _lstm_op(rng, np.float32)
    with GradientTape() as tape:
        tape.watch(args)
        loss = (rnn_ops.lstm(*args, return_sequences=True) ** 2).sum()
    tape.gradient(loss, args)
    assert seen and seen[0].dz is seen[0].z


@pytest.mark.parametrize("masked", [False, True])
def test_lstm_second_backward_of_a_persistent_tape_recomputes_the_gates(rng, masked):
    """A persistent tape runs backward twice; the second finds dz where the gates were and
    must compute them again: both give the same gradients (float64, bit for bit)."""
    args, mask = _lstm_op(rng, np.float64, masked)
    with GradientTape(persistent=True) as tape:
        tape.watch(args)
        loss = (rnn_ops.lstm(*args, mask=mask, return_sequences=True) ** 2).sum()
    first = [g.data.copy() for g in tape.gradient(loss, args)]
    second = [g.data for g in tape.gradient(loss, args)]
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_lstm_gates_loop_calls_the_kernels_directly_after_one_checked_call(be, rng, dtype,
                                                                          monkeypatch):
    """`lstm_gates_loop`: three steps agree with the twins; only the first goes through the
    checked `lstm_gates`/`lstm_gates_grad` when numba takes the arrays (float16: every step)."""
    n, u, acts = 5, 3, ("tanh", "sigmoid")
    checked = []
    for name in ("lstm_gates", "lstm_gates_grad"):
        method = getattr(type(be), name)
        monkeypatch.setattr(type(be), name, lambda self, *a, _m=method, _n=name, **k:
                            checked.append(_n) or _m(self, *a, **k))
    forward, backward = be.lstm_gates_loop(*acts)
    for _ in range(3):
        z = _array(rng, (n, 4 * u), dtype, True, scale=3.0)
        c_prev, dh, dc = (_array(rng, (n, u), dtype, True) for _ in range(3))
        z_ref = z.copy()
        ref = Backend.lstm_gates(be, z_ref, c_prev, *acts)
        h, c, tc = (np.empty_like(c_prev) for _ in range(3))
        forward(z, c_prev, h, c, tc)
        tol = 1e-3 if dtype == np.float16 else _tol(dtype)
        for g, r in zip((z, h, c, tc), (z_ref,) + ref):
            np.testing.assert_allclose(g, r, rtol=tol, atol=tol)
        ref = Backend.lstm_gates_grad(be, z_ref, c_prev, tc, dh, dc, *acts)
        dc_prev = np.empty_like(c_prev)
        backward(z, c_prev, tc, dh, dc, z, dc_prev)  # dz over the gates
        for g, r in zip((z, dc_prev), ref):
            np.testing.assert_allclose(g, r, rtol=tol, atol=tol)
    calls = 3 if dtype == np.float16 else 1
    assert checked == ["lstm_gates", "lstm_gates_grad"] * calls
