"""Recurrent layers: the fused sequence ops against a per-step NumPy reference and finite
differences, the layers' shapes, masks, dropout, state handling, configs and Keras's numbers."""

import os

import numpy as np
import pytest

import kerasrs
from kerasrs import layers, ops
from kerasrs.ops import recurrent
from kerasrs.testing import check_gradients

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "keras_rnn_attention.npz")


@pytest.fixture(autouse=True)
def fresh_names():
    kerasrs.utils.clear_session()


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def reference(kind, x, kernel, rec, bias, states, mask=None, go_backwards=False,
              reset_after=True, zero_output=False, rmask=None):
    """A plain per-step NumPy RNN with Keras's equations and masking rules."""
    batch, steps, _ = x.shape
    u = rec.shape[0]
    states = [s.copy() for s in states]
    prev_out, outs = np.zeros_like(states[0]), []
    for t in (range(steps - 1, -1, -1) if go_backwards else range(steps)):
        h = states[0]
        hr = h if rmask is None else h * rmask
        xw = x[:, t] @ kernel
        if kind == "simple":
            new = [np.tanh(xw + hr @ rec + bias)]
        elif kind == "lstm":
            z = xw + hr @ rec + bias
            i, f, o = _sigmoid(z[:, :u]), _sigmoid(z[:, u:2 * u]), _sigmoid(z[:, 3 * u:])
            c = f * states[1] + i * np.tanh(z[:, 2 * u:3 * u])
            new = [o * np.tanh(c), c]
        else:
            if reset_after:
                xz, hu = xw + bias[0], hr @ rec + bias[1]
                rh_term = None
            else:
                xz, hu = xw + bias, hr @ rec[:, :2 * u]
            zg = _sigmoid(xz[:, :u] + hu[:, :u])
            r = _sigmoid(xz[:, u:2 * u] + hu[:, u:2 * u])
            rh_term = r * hu[:, 2 * u:] if reset_after else (r * hr) @ rec[:, 2 * u:]
            hh = np.tanh(xz[:, 2 * u:] + rh_term)
            new = [zg * h + (1 - zg) * hh]
        if mask is None:
            out, states = new[0], new
        else:
            m = mask[:, t][:, None]
            out = np.where(m, new[0], 0 if zero_output else prev_out)
            states = [np.where(m, n, s) for n, s in zip(new, states)]
        prev_out = out
        outs.append(out)
    return np.stack(outs, 1), states


KINDS = {  # name: (public op, gates, bias shape, number of states, extra kwargs)
    "simple": (recurrent.simple_rnn, 1, lambda u: (u,), 1, {}),
    "lstm": (recurrent.lstm, 4, lambda u: (4 * u,), 2, {}),
    "gru": (recurrent.gru, 3, lambda u: (2, 3 * u), 1, {"reset_after": True}),
    "gru_v1": (recurrent.gru, 3, lambda u: (3 * u,), 1, {"reset_after": False}),
}


def _problem(kind, seed=0, batch=3, steps=4, features=3, units=2):
    op, gates, bias_shape, n_states, extra = KINDS[kind]
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, steps, features))
    kernel = rng.normal(size=(features, gates * units)) * 0.6
    rec = rng.normal(size=(units, gates * units)) * 0.6
    bias = rng.normal(size=bias_shape(units)) * 0.3
    states = [rng.normal(size=(batch, units)) for _ in range(n_states)]
    mask = np.array([[1, 1, 0, 0], [0, 1, 1, 1], [1, 0, 1, 1]], bool)[:batch, :steps]
    return op, extra, x, kernel, rec, bias, states, mask


def _call(op, extra, kind, x, kernel, rec, bias, states, **kwargs):
    init = list(states) if kind == "lstm" else states[0]
    return op(x, kernel, rec, bias, initial_state=init, **extra, **kwargs)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("go_backwards", [False, True])
def test_fused_op_matches_per_step_reference(kind, masked, go_backwards):
    op, extra, x, kernel, rec, bias, states, mask = _problem(kind)
    m = mask if masked else None
    for zero_output in (False, True):
        want_seq, want_states = reference(kind.split("_")[0], x, kernel, rec, bias, states, m,
                                          go_backwards, extra.get("reset_after", True),
                                          zero_output)
        got = _call(op, extra, kind, x, kernel, rec, bias, states, mask=m,
                    go_backwards=go_backwards, return_sequences=True, return_state=True,
                    zero_output_for_mask=zero_output)
        np.testing.assert_allclose(got[0].numpy(), want_seq, atol=1e-12)
        for g, w in zip(got[1:], want_states):
            np.testing.assert_allclose(g.numpy(), w, atol=1e-12)
        last = _call(op, extra, kind, x, kernel, rec, bias, states, mask=m,
                     go_backwards=go_backwards, zero_output_for_mask=zero_output)
        np.testing.assert_allclose(last.numpy(), want_seq[:, -1], atol=1e-12)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("masked,go_backwards,sequences", [
    (False, False, True), (True, False, True), (True, True, False), (False, True, False)])
def test_fused_op_gradients_wrt_inputs_weights_biases_and_initial_states(
        kind, masked, go_backwards, sequences):
    op, extra, x, kernel, rec, bias, states, mask = _problem(kind, seed=1)

    def f(x, kernel, rec, bias, *states):
        out = _call(op, extra, kind, x, kernel, rec, bias, states,
                    mask=mask if masked else None, go_backwards=go_backwards,
                    return_sequences=sequences, return_state=True)
        return list(out)

    check_gradients(f, [x, kernel, rec, bias] + states, atol=1e-7, rtol=1e-5)


@pytest.mark.parametrize("kind", list(KINDS))
def test_recurrent_dropout_mask_matches_reference_and_gradients(kind):
    op, extra, x, kernel, rec, bias, states, _ = _problem(kind, seed=2)
    rmask = (np.random.default_rng(3).random(states[0].shape) > 0.4) / 0.6
    want, _ = reference(kind.split("_")[0], x, kernel, rec, bias, states,
                        reset_after=extra.get("reset_after", True), rmask=rmask)
    got = _call(op, extra, kind, x, kernel, rec, bias, states, return_sequences=True,
                recurrent_dropout_mask=rmask)
    np.testing.assert_allclose(got.numpy(), want, atol=1e-12)
    check_gradients(lambda *a: _call(op, extra, kind, *a[:4], a[4:], return_sequences=True,
                                     recurrent_dropout_mask=rmask),
                    [x, kernel, rec, bias] + states, atol=1e-7)


def test_fused_op_without_bias_and_other_activations():
    rng = np.random.default_rng(4)
    x, kernel, rec = rng.normal(size=(2, 3, 2)), rng.normal(size=(2, 3)), rng.normal(size=(3, 3))
    for act, fn in (("relu", lambda v: np.maximum(v, 0)), ("linear", lambda v: v),
                    ("sigmoid", _sigmoid)):
        h = np.zeros((2, 3))
        for t in range(3):
            h = fn(x[:, t] @ kernel + h @ rec)
        got = recurrent.simple_rnn(x, kernel, rec, activation=act)
        np.testing.assert_allclose(got.numpy(), h, atol=1e-12)
        check_gradients(lambda a, b, c: recurrent.simple_rnn(a, b, c, activation=act,
                                                             return_sequences=True),
                        [x, kernel, rec * 0.5])


def test_fused_op_rejects_bad_shapes_and_activations():
    x, k, r = np.zeros((2, 3, 4)), np.zeros((4, 8)), np.zeros((2, 8))
    with pytest.raises(ValueError, match=r"lstm: the mask must have shape .*\(2, 3\).*\(2, 4\)"):
        recurrent.lstm(x, k, r, mask=np.ones((2, 4), bool))
    with pytest.raises(ValueError, match=r"lstm: `kernel` must have shape \(4, 8\)"):
        recurrent.lstm(x, np.zeros((3, 8)), r)
    with pytest.raises(ValueError, match=r"3-D"):
        recurrent.lstm(np.zeros((2, 4)), k, r)
    with pytest.raises(ValueError, match="no fused form"):
        recurrent.lstm(x, k, r, activation="gelu")
    with pytest.raises(ValueError, match=r"gru: `bias` must have shape \(2, 6\)"):
        recurrent.gru(x, np.zeros((4, 6)), np.zeros((2, 6)), np.zeros((6,)))


# -- layers ----------------------------------------------------------------------------------------
X = np.random.default_rng(0).normal(size=(2, 5, 3)).astype("float32")


@pytest.mark.parametrize("cls,n_states", [(layers.SimpleRNN, 1), (layers.LSTM, 2),
                                          (layers.GRU, 1)])
def test_layer_output_shapes_for_return_sequences_and_state(cls, n_states):
    assert cls(4)(X).shape == (2, 4)
    assert cls(4, return_sequences=True)(X).shape == (2, 5, 4)
    out = cls(4, return_sequences=True, return_state=True)(X)
    assert len(out) == 1 + n_states and out[0].shape == (2, 5, 4)
    assert all(s.shape == (2, 4) for s in out[1:])
    np.testing.assert_allclose(out[0].numpy()[:, -1], out[1].numpy())
    assert cls(4, return_state=True).compute_output_shape((None, 5, 3)) == \
        ((None, 4),) + ((None, 4),) * n_states


def test_weights_names_shapes_and_keras_initial_values():
    lstm, gru, gru1 = layers.LSTM(4), layers.GRU(4), layers.GRU(4, reset_after=False)
    for layer in (lstm, gru, gru1):
        layer(X)
    assert [(w.path, w.shape) for w in lstm.weights] == [
        ("lstm/lstm_cell/kernel", (3, 16)), ("lstm/lstm_cell/recurrent_kernel", (4, 16)),
        ("lstm/lstm_cell/bias", (16,))]
    np.testing.assert_array_equal(lstm.cell.bias.numpy(), [0] * 4 + [1] * 4 + [0] * 8)
    rk = lstm.cell.recurrent_kernel.numpy()  # orthogonal: columns of the (4, 16) are orthonormal
    np.testing.assert_allclose(rk @ rk.T, np.eye(4), atol=1e-5)
    assert gru.cell.bias.shape == (2, 12) and gru1.cell.bias.shape == (12,)
    assert layers.SimpleRNN(2, use_bias=False)(X).shape == (2, 2)


def test_layers_match_keras_reference_numbers():
    d = np.load(FIXTURE)
    x, mask, h0, c0 = d["x"], d["mask"], d["h0"], d["c0"]
    cases = {
        "lstm_seq_state_mask": (layers.LSTM(5, return_sequences=True, return_state=True),
                                dict(mask=mask)),
        "lstm_backwards_init": (layers.LSTM(5, go_backwards=True, return_sequences=True,
                                            return_state=True),
                                dict(initial_state=[h0, c0], mask=mask)),
        "gru_seq_mask": (layers.GRU(5, return_sequences=True, return_state=True),
                         dict(mask=mask, initial_state=[h0])),
        "gru_v1_backwards": (layers.GRU(5, reset_after=False, go_backwards=True,
                                        return_sequences=True), dict(mask=mask)),
        "simple_rnn_relu": (layers.SimpleRNN(5, activation="relu", return_sequences=True),
                            dict(mask=mask)),
        "bidir_lstm_concat": (layers.Bidirectional(layers.LSTM(4, return_sequences=True)),
                              dict(mask=mask)),
        "bidir_gru_sum_state": (layers.Bidirectional(layers.GRU(3, return_state=True),
                                                     merge_mode="sum"), dict(mask=mask)),
        "bidir_rnn_ave_seq": (layers.Bidirectional(layers.SimpleRNN(3, return_sequences=True),
                                                   merge_mode="ave"), {}),
    }
    for case, (layer, kwargs) in cases.items():
        layer.build(x.shape)
        layer.set_weights([d[f"{case}/w{i}"] for i in range(len(layer.weights))])
        got = layer(x, **kwargs)
        got = got if isinstance(got, (list, tuple)) else [got]
        for i, g in enumerate(got):
            np.testing.assert_allclose(g.numpy(), d[f"{case}/y{i}"], atol=2e-6, err_msg=case)


class PlainLSTMCell(layers.LSTMCell):
    """The built-in cell under another class: RNN runs it step by step (the unfused path)."""


@pytest.mark.parametrize("go_backwards", [False, True])
def test_step_path_with_a_cell_matches_the_fused_path(go_backwards):
    mask = np.array([[1, 1, 1, 0, 0], [0, 1, 1, 1, 1]], bool)
    fused = layers.LSTM(3, return_sequences=True, return_state=True, go_backwards=go_backwards)
    stepped = layers.RNN(PlainLSTMCell(3), return_sequences=True, return_state=True,
                         go_backwards=go_backwards)
    fused.build(X.shape)
    stepped.build(X.shape)
    stepped.set_weights(fused.get_weights())
    for m in (None, mask):
        a, b = fused(X, mask=m), stepped(X, mask=m)
        for u, v in zip(a, b):
            np.testing.assert_allclose(u.numpy(), v.numpy(), atol=1e-6)
    with kerasrs.GradientTape() as tape:
        loss = ops.sum(stepped(X, mask=mask)[0])
    grads = tape.gradient(loss, stepped.trainable_weights)
    with kerasrs.GradientTape() as tape:
        loss = ops.sum(fused(X, mask=mask)[0])
    for g, w in zip(tape.gradient(loss, fused.trainable_weights), grads):
        np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-5)


def test_cells_alone_and_stacked_cells():
    cell = layers.GRUCell(3)
    h, state = cell(X[:, 0], [np.zeros((2, 3), "float32")])
    assert h.shape == (2, 3) and state[0] is h
    stacked = layers.RNN([layers.SimpleRNNCell(4), layers.LSTMCell(2)], return_state=True)
    out = stacked(X)
    assert out[0].shape == (2, 2) and out[1].shape == (2, 4)  # states grouped per cell (Keras)
    assert [s.shape for s in out[2]] == [(2, 2), (2, 2)]


def test_masked_steps_carry_state_like_truncated_sequences():
    ids = np.array([[3, 7, 1, 0, 0], [5, 2, 8, 4, 9]], "int32")  # right padding with 0
    emb = layers.Embedding(10, 3, mask_zero=True)
    lstm = layers.LSTM(4, return_sequences=True, return_state=True)
    seq, h, c = lstm(emb(ids))
    short_seq, short_h, short_c = lstm(emb(ids[:1, :3]))
    np.testing.assert_allclose(h.numpy()[0], short_h.numpy()[0], atol=1e-6)
    np.testing.assert_allclose(c.numpy()[0], short_c.numpy()[0], atol=1e-6)
    # masked steps repeat the last output; the sequence output keeps the mask
    np.testing.assert_allclose(seq.numpy()[0, 3:], np.repeat(seq.numpy()[0, 2:3], 2, 0))
    np.testing.assert_array_equal(seq._keras_mask.numpy(), ids != 0)
    model = kerasrs.Sequential([layers.Input((5,), dtype="int32"), emb, layers.GRU(4)])
    want = model(ids[1:]).numpy()
    assert np.allclose(model(ids).numpy()[1], want[0], atol=1e-6)
    masked = layers.Masking()(np.where((ids != 0)[..., None], X, 0.0).astype("float32"))
    out_masked = layers.SimpleRNN(3)
    np.testing.assert_allclose(out_masked(masked).numpy()[0],
                               out_masked(X[:1, :3]).numpy()[0], atol=1e-6)


def test_masks_of_the_wrong_shape_and_bad_inputs_name_the_layer():
    lstm = layers.LSTM(2, name="encoder")
    with pytest.raises(ValueError, match=r"encoder: the mask must have shape \(batch, time\) "
                                         r"= \(2, 5\). Received: mask shape \(2, 4\)"):
        lstm(X, mask=np.ones((2, 4), bool))
    with pytest.raises(ValueError, match=r"encoder.*rank 3.*\(2, 3\)"):
        lstm(X[:, 0])
    with pytest.raises(ValueError, match=r"encoder: each initial state must have shape"):
        lstm(X, initial_state=[np.zeros((2, 3)), np.zeros((2, 2))])
    with pytest.raises(ValueError, match="merge_mode"):
        layers.Bidirectional(layers.LSTM(2), merge_mode="max")
    with pytest.raises(ValueError, match=r"time_distributed.*at least 3 axes"):
        layers.TimeDistributed(layers.Dense(2))(np.ones((2, 3), "float32"))


def test_dropout_only_in_training_and_one_mask_per_sequence():
    layer = layers.LSTM(8, dropout=0.5, recurrent_dropout=0.5, seed=1)
    plain = layers.LSTM(8)
    plain.build(X.shape)
    layer.build(X.shape)
    layer.set_weights(plain.get_weights())
    np.testing.assert_allclose(layer(X).numpy(), plain(X).numpy(), atol=1e-6)  # inference
    a, b = layer(X, training=True).numpy(), layer(X, training=True).numpy()
    assert not np.allclose(a, b) and not np.allclose(a, plain(X).numpy())
    cell = layers.SimpleRNNCell(3, dropout=0.5)  # the cell path: the same mask at every step
    cell.build((2, 3))
    m1 = cell.get_dropout_mask(ops.ones((2, 3)))
    assert cell.get_dropout_mask(ops.ones((2, 3))) is m1
    assert set(np.unique(m1.numpy())) <= {0.0, 2.0}


def test_go_backwards_processes_the_reversed_sequence():
    fwd, bwd = layers.GRU(3, return_sequences=True), layers.GRU(3, return_sequences=True,
                                                                go_backwards=True)
    fwd.build(X.shape)
    bwd.build(X.shape)
    bwd.set_weights(fwd.get_weights())
    np.testing.assert_allclose(bwd(X).numpy(), fwd(X[:, ::-1]).numpy(), atol=1e-6)


def test_stateful_layer_continues_from_the_last_states():
    whole = layers.LSTM(3, return_sequences=True)
    parts = layers.LSTM(3, return_sequences=True, stateful=True)
    whole.build(X.shape)
    parts.build(X.shape)
    parts.set_weights(whole.get_weights())
    joined = np.concatenate([parts(X[:, :2]).numpy(), parts(X[:, 2:]).numpy()], axis=1)
    np.testing.assert_allclose(joined, whole(X).numpy(), atol=1e-6)
    parts.reset_state()
    np.testing.assert_allclose(parts(X).numpy(), whole(X).numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="fixed batch size"):
        layers.LSTM(2, stateful=True).build((None, 5, 3))


@pytest.mark.parametrize("mode", ["concat", "sum", "mul", "ave", None])
def test_bidirectional_merge_modes(mode):
    layer = layers.Bidirectional(layers.SimpleRNN(3, return_sequences=True), merge_mode=mode)
    out = layer(X)
    fwd = layer.forward_layer(X).numpy()
    bwd = layer.backward_layer(X).numpy()[:, ::-1]
    want = {"concat": lambda: np.concatenate([fwd, bwd], -1), "sum": lambda: fwd + bwd,
            "mul": lambda: fwd * bwd, "ave": lambda: (fwd + bwd) / 2,
            None: lambda: None}[mode]()
    if mode is None:
        np.testing.assert_allclose(out[0].numpy(), fwd, atol=1e-6)
        np.testing.assert_allclose(out[1].numpy(), bwd, atol=1e-6)
    else:
        np.testing.assert_allclose(out.numpy(), want, atol=1e-6)
    assert [w.path.split("/")[1] for w in layer.weights] == ["forward_simple_rnn"] * 3 + \
        ["backward_simple_rnn"] * 3
    states = layers.Bidirectional(layers.LSTM(2, return_state=True))(X)
    assert len(states) == 5 and states[0].shape == (2, 4)


def test_time_distributed_applies_the_layer_to_each_step():
    dense = layers.Dense(4)
    td = layers.TimeDistributed(dense)
    out = td(X)
    assert out.shape == (2, 5, 4) and [w.path for w in td.weights] == [
        "time_distributed/dense/kernel", "time_distributed/dense/bias"]
    np.testing.assert_allclose(out.numpy()[:, 2], dense(X[:, 2]).numpy(), atol=1e-6)
    assert td.compute_output_shape((None, 5, 3)) == (None, 5, 4)


def _round_trip(layer):
    from kerasrs.layers import serialization

    config = serialization.serialize(layer)
    clone = serialization.deserialize({k: v for k, v in config.items() if k != "build_config"})
    assert type(clone) is type(layer) and clone.get_config() == layer.get_config()
    return clone


def test_config_round_trips():
    for layer in (layers.LSTM(3, return_sequences=True, go_backwards=True, dropout=0.1),
                  layers.GRU(2, reset_after=False, activation="relu"),
                  layers.SimpleRNN(4, return_state=True, use_bias=False),
                  layers.RNN(layers.LSTMCell(3), return_sequences=True),
                  layers.RNN([layers.GRUCell(2), layers.SimpleRNNCell(3)]),
                  layers.Bidirectional(layers.GRU(3, return_sequences=True), merge_mode="sum"),
                  layers.TimeDistributed(layers.Dense(3))):
        clone = _round_trip(layer)
        assert clone(X)[0].shape == layer(X)[0].shape
    config = layers.LSTM(3).get_config()
    assert config["units"] == 3 and config["unit_forget_bias"] is True and "cell" not in config
    assert config["recurrent_initializer"]["class_name"] == "Orthogonal"


def test_symbolic_models_with_states_and_bidirectional():
    inputs = layers.Input((5, 3))
    seq, h, c = layers.LSTM(4, return_sequences=True, return_state=True)(inputs)
    out = layers.Bidirectional(layers.GRU(2))(seq, initial_state=None)
    model = kerasrs.Model(inputs, [out, h, c])
    results = model(X)
    assert [r.shape for r in results] == [(2, 4), (2, 4), (2, 4)]


def test_lstm_model_fit_reduces_the_loss():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 6, 2)).astype("float32")
    y = (x[:, :, 0].sum(1) > 0).astype("float32")[:, None]  # the sign of a running sum
    kerasrs.utils.set_random_seed(0)
    model = kerasrs.Sequential([layers.Input((6, 2)), layers.LSTM(8), layers.Dense(1)])
    model.compile(optimizer=kerasrs.optimizers.Adam(0.02),
                  loss=kerasrs.losses.BinaryCrossentropy(from_logits=True))
    history = model.fit(x, y, batch_size=16, epochs=8, verbose=0)
    assert history.history["loss"][-1] < 0.6 * history.history["loss"][0]


def check_weight_gradients(fn, variables, eps=1e-6, atol=1e-7, per_weight=10, seed=0):
    """Tape gradients of ``sum(w * fn())`` w.r.t. layer Variables against central differences."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(fn().shape)
    with kerasrs.GradientTape() as tape:
        loss = ops.sum(ops.multiply(fn(), w))
    grads = tape.gradient(loss, variables)
    for var, g in zip(variables, grads):
        for j in rng.choice(var.data.size, min(per_weight, var.data.size), replace=False):
            pos = np.unravel_index(j, var.shape)
            old = float(var.data[pos])
            var.data[pos] = old + eps
            up = float((fn().numpy() * w).sum())
            var.data[pos] = old - eps
            down = float((fn().numpy() * w).sum())
            var.data[pos] = old
            numeric = (up - down) / (2 * eps)
            assert abs(g.numpy().reshape(-1)[j] - numeric) <= atol + 1e-5 * abs(numeric), \
                (var.path, j, g.numpy().reshape(-1)[j], numeric)


@pytest.mark.parametrize("make", [
    lambda: layers.LSTM(3, return_sequences=True, dtype="float64"),
    lambda: layers.GRU(3, go_backwards=True, dtype="float64"),
    lambda: layers.SimpleRNN(3, return_sequences=True, dtype="float64"),
    lambda: layers.Bidirectional(layers.LSTM(2, return_sequences=True, dtype="float64"),
                                 dtype="float64"),
    lambda: layers.TimeDistributed(layers.Dense(2, dtype="float64"), dtype="float64")])
def test_layer_gradients_float64_wrt_inputs_and_weights(make):
    layer = make()
    x = X.astype("float64")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    kwargs = {} if isinstance(layer, layers.TimeDistributed) else {"mask": mask}
    layer(x, **kwargs)
    check_gradients(lambda a: layer(a, **kwargs), [x], atol=1e-7)
    check_weight_gradients(lambda: layer(x, **kwargs), layer.weights)


@pytest.mark.parametrize("layer_cls", [layers.LSTM, layers.GRU, layers.SimpleRNN])
def test_empty_batch_gives_empty_outputs_and_gradients(layer_cls):
    """A batch of 0 samples: outputs and input gradients are empty, weight gradients zero
    (the GRU's input gradient reshape used to fail)."""
    layer = layer_cls(3, return_sequences=True)
    x = kerasrs.ops.convert_to_tensor(np.zeros((0, 4, 2), "float32"))
    with kerasrs.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
        loss = ops.sum(y)
    assert tuple(y.shape) == (0, 4, 3)
    gx, *gw = tape.gradient(loss, [x] + layer.trainable_weights)
    assert tuple(gx.shape) == (0, 4, 2)
    for g, w in zip(gw, layer.trainable_weights):
        assert g.shape == w.shape and not np.any(g.numpy())


@pytest.mark.slow
def test_lstm_rows_example_learns_on_a_subset_of_fashion_mnist():
    import importlib.util

    path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "lstm_rows.py")
    spec = importlib.util.spec_from_file_location("lstm_rows", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    try:
        accuracy = example.main(["--samples", "4096", "--epochs", "2", "--verbose", "0"])
    except (OSError, RuntimeError) as e:  # no dataset on this machine
        pytest.skip(f"Fashion-MNIST unavailable: {e}")
    assert accuracy > 0.6  # 10 classes: chance is 0.1; about 0.72 here


class _SumCell(layers.Layer):
    """A user cell written as Keras documents it: ``states`` is a list, also of one state."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = self.state_size = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), initializer="ones")
        self.recurrent_kernel = self.add_weight(shape=(self.units, self.units),
                                                initializer="ones")

    def call(self, inputs, states):
        out = ops.matmul(inputs, self.kernel) + ops.matmul(states[0], self.recurrent_kernel)
        return out, [out]


def test_a_single_state_user_cell_receives_a_list_of_states():
    x = np.arange(24, dtype="float32").reshape(2, 3, 4)
    # per example: h_t = sum(x_t) + 2 h_(t-1); backwards from the last step
    np.testing.assert_allclose(layers.RNN(_SumCell(2), go_backwards=True)(x).numpy(),
                               [[202, 202], [538, 538]])
    stacked = layers.RNN([_SumCell(3), _SumCell(2)])(x).numpy()
    np.testing.assert_allclose(stacked, [[786, 786], [4386, 4386]])


def test_a_stateful_rnn_refuses_another_batch_size():
    layer = layers.RNN(_SumCell(2), stateful=True)
    layer(np.ones((4, 5, 3), "float32"))
    with pytest.raises(ValueError, match="batch size"):
        layer(np.ones((1, 5, 3), "float32"))


def test_conv_lstm_masked_steps_carry_the_states():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 4, 5, 3)).astype("float32")
    layer = layers.ConvLSTM1D(2, 3, padding="same", return_sequences=True)
    assert layer.supports_masking
    mask = np.array([[True, True, False, False], [True, True, True, True]])
    masked = layer(x, mask=mask).numpy()
    full = layer(x).numpy()
    np.testing.assert_allclose(masked[0, 2], masked[0, 1])  # a masked step repeats the state
    np.testing.assert_allclose(masked[1], full[1], rtol=1e-6)
    np.testing.assert_allclose(masked[0, :2], full[0, :2], rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(layer.compute_mask(x, mask)), mask)
