"""Attention layers and the fused attention op: NumPy references, Keras's numbers, gradients,
masks (behaviour case C09: no NaN, float16 too), dropout, configs and bad-input errors."""

import math
import os

import numpy as np
import pytest

import kerasrs
from kerasrs import layers, ops
from kerasrs.ops import attention as attention_ops
from kerasrs.testing import check_gradients

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "keras_rnn_attention.npz")


@pytest.fixture(autouse=True)
def fresh_names():
    kerasrs.utils.clear_session()


def masked_softmax(s, mask):
    """Keras's Softmax layer with a mask: add -1e9 where masked, softmax, zero the masked."""
    if mask is not None:
        s = s + np.where(mask, 0.0, -1e9)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return p if mask is None else p * mask


def mha_reference(layer, q, v, k, mask):
    """MultiHeadAttention written out with NumPy einsums on the layer's weights."""
    wq, bq, wk, bk, wv, bv, wo, bo = [w.numpy().astype(np.float64) for w in layer.weights]
    qp = np.einsum("btd,dnh->btnh", q, wq) + bq
    kp = np.einsum("bsd,dnh->bsnh", k, wk) + bk
    vp = np.einsum("bsd,dnh->bsnh", v, wv) + bv
    s = np.einsum("btnh,bsnh->bnts", qp / math.sqrt(wq.shape[-1]), kp)
    p = masked_softmax(s, None if mask is None else mask[:, None])
    o = np.einsum("bnts,bsnh->btnh", p, vp)
    return np.einsum("btnh,nho->bto", o, wo) + bo, p


RNG = np.random.default_rng(0)
Q = RNG.normal(size=(2, 5, 6)).astype("float32")
V = RNG.normal(size=(2, 4, 7)).astype("float32")
K = RNG.normal(size=(2, 4, 3)).astype("float32")
MASK = RNG.random((2, 5, 4)) > 0.3
MASK[0, 1] = False  # a query that may attend to nothing


@pytest.mark.parametrize("use_mask", [False, True])
def test_mha_matches_numpy_reference_fused_and_composed(use_mask):
    layer = layers.MultiHeadAttention(num_heads=3, key_dim=2, value_dim=4,
                                      bias_initializer="random_normal")
    m = MASK if use_mask else None
    fused = layer(Q, V, key=K, attention_mask=m)
    composed, scores = layer(Q, V, key=K, attention_mask=m, return_attention_scores=True)
    want, want_p = mha_reference(layer, Q, V, K, m)
    np.testing.assert_allclose(fused.numpy(), want, atol=2e-5)
    np.testing.assert_allclose(composed.numpy(), want, atol=2e-5)
    np.testing.assert_allclose(scores.numpy(), want_p, atol=2e-6)
    assert fused.shape == (2, 5, 6) and scores.shape == (2, 3, 5, 4)
    if use_mask:  # the fully masked query row: weights 0 and output = the output bias
        assert np.all(scores.numpy()[0, :, 1] == 0)
        np.testing.assert_allclose(fused.numpy()[0, 1], layer.weights[-1].numpy(), atol=1e-6)


def test_mha_weights_follow_keras_layout():
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=4, output_shape=5)
    layer(Q, V, key=K)
    assert [(w.path, w.shape) for w in layer.weights] == [
        ("multi_head_attention/query/kernel", (6, 2, 3)),
        ("multi_head_attention/query/bias", (2, 3)),
        ("multi_head_attention/key/kernel", (3, 2, 3)), ("multi_head_attention/key/bias", (2, 3)),
        ("multi_head_attention/value/kernel", (7, 2, 4)),
        ("multi_head_attention/value/bias", (2, 4)),
        ("multi_head_attention/attention_output/kernel", (2, 4, 5)),
        ("multi_head_attention/attention_output/bias", (5,))]
    # Glorot fans count all contracted and all new axes: limit sqrt(6 / (6 + 2 * 3))
    assert np.abs(layer.weights[0].numpy()).max() <= math.sqrt(6 / 12) + 1e-6


def test_layers_match_keras_reference_numbers():
    d = np.load(FIXTURE)
    q, v, k, am = d["q"], d["v"], d["k"], d["attention_mask"]

    def load(layer, case):
        layer.set_weights([d[f"{case}/w{i}"] for i in range(len(layer.weights))])

    mha = layers.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=4)
    mha.build(q.shape, v.shape, k.shape)
    load(mha, "mha")
    y, s = mha(q, v, key=k, attention_mask=am, return_attention_scores=True)
    np.testing.assert_allclose(y.numpy(), d["mha/y0"], atol=2e-6)
    np.testing.assert_allclose(s.numpy(), d["mha/y1"], atol=2e-6)
    np.testing.assert_allclose(mha(q, v, key=k, attention_mask=am).numpy(), d["mha/y0"],
                               atol=2e-6)
    causal = layers.MultiHeadAttention(num_heads=3, key_dim=2, output_shape=5, use_bias=False)
    causal.build(q.shape, q.shape)
    load(causal, "mha_causal")
    np.testing.assert_allclose(causal(q, q, use_causal_mask=True).numpy(), d["mha_causal/y0"],
                               atol=2e-6)
    qd, qm, vm = d["qd"], d["query_mask"], d["value_mask"]
    for case, layer in {"attention_dot_scale": layers.Attention(use_scale=True),
                        "attention_concat": layers.Attention(score_mode="concat"),
                        "additive": layers.AdditiveAttention()}.items():
        layer.build([qd.shape, v.shape])
        load(layer, case)
        y, s = layer([qd, v], mask=[qm, vm], return_attention_scores=True)
        np.testing.assert_allclose(y.numpy(), d[f"{case}/y0"], atol=2e-6, err_msg=case)
        np.testing.assert_allclose(s.numpy(), d[f"{case}/y1"], atol=2e-6, err_msg=case)
    att = layers.Attention()
    np.testing.assert_allclose(att([qd, v, qd[:, :4]], mask=[None, vm],
                                   use_causal_mask=True).numpy(),
                               d["attention_causal_key/y0"], atol=2e-6)


@pytest.mark.parametrize("with_mask,with_dropout", [(False, False), (True, False), (True, True)])
def test_fused_attention_op_value_and_gradients(with_mask, with_dropout):
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(2, 3, 2, 3)), rng.normal(size=(2, 4, 2, 3)), \
        rng.normal(size=(2, 4, 2, 5))
    mask = (rng.random((2, 1, 3, 4)) > 0.4) if with_mask else None
    if with_mask:
        mask[1, 0, 2] = False
    keep = (rng.random((2, 2, 3, 4)) > 0.3) / 0.7 if with_dropout else None
    s = np.einsum("btnh,bsnh->bnts", q, k) / math.sqrt(3)
    p = masked_softmax(s, mask) * (1 if keep is None else keep)
    want = np.einsum("bnts,bsnv->btnv", p, v)
    got = attention_ops.attention(q, k, v, mask=mask, dropout_keep=keep)
    np.testing.assert_allclose(got.numpy(), want, atol=1e-12)
    check_gradients(lambda a, b, c: attention_ops.attention(a, b, c, mask=mask,
                                                            dropout_keep=keep), [q, k, v])


def test_dot_product_attention_keras_op():
    rng = np.random.default_rng(2)
    q, k, v = rng.normal(size=(1, 3, 2, 4)), rng.normal(size=(1, 3, 2, 4)), \
        rng.normal(size=(1, 3, 2, 4))
    causal = attention_ops.dot_product_attention(q, k, v, is_causal=True)
    s = np.einsum("btnh,bsnh->bnts", q, k) / 2.0
    want = np.einsum("bnts,bsnv->btnv", masked_softmax(s, np.tril(np.ones((3, 3), bool))), v)
    np.testing.assert_allclose(causal.numpy(), want, atol=1e-12)
    bias = rng.normal(size=(1, 2, 3, 3))
    with_bias = attention_ops.dot_product_attention(q, k, v, bias=bias, scale=0.3)
    want = np.einsum("bnts,bsnv->btnv", masked_softmax(s * 2 * 0.3 + bias, None), v)
    np.testing.assert_allclose(with_bias.numpy(), want, atol=1e-12)
    check_gradients(lambda a, b: attention_ops.dot_product_attention(q, a, v, bias=b), [k, bias])
    with pytest.raises(ValueError, match=r"dot_product_attention: the mask must broadcast"):
        attention_ops.dot_product_attention(q, k, v, mask=np.ones((2, 5), bool))


def test_c09_masked_softmax_at_layer_level_float32_and_float16():
    """C09: scores [1, 2, 3] with the last key masked give [0.268941, 0.731059, 0]."""
    for dtype, tol in (("float32", 1e-6), ("float16", 1e-3)):
        layer = layers.Attention(dtype=dtype)
        q = np.array([[[1.0]]], dtype)
        k = np.array([[[1.0], [2.0], [3.0]]], dtype)
        _, w = layer([q, k], mask=[None, np.array([[True, True, False]])],
                     return_attention_scores=True)
        assert w.dtype == np.dtype(dtype) and np.isfinite(w.numpy()).all()
        np.testing.assert_allclose(w.numpy()[0, 0].astype("float64"),
                                   [0.268941, 0.731059, 0.0], atol=tol)
    # MultiHeadAttention in float16: a fully masked row gives zeros, not NaN; gradients finite
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=2, dtype="float16")
    q16, mask = Q.astype("float16"), np.ones((2, 5, 5), bool)
    mask[:, 0] = False
    with kerasrs.GradientTape() as tape:
        out, scores = mha(q16, q16, attention_mask=mask, return_attention_scores=True)
        fused = mha(q16, q16, attention_mask=mask)
        loss = ops.sum(ops.add(ops.sum(out), ops.sum(fused)))
    grads = tape.gradient(loss, mha.trainable_weights)
    assert np.isfinite(out.numpy()).all() and np.isfinite(fused.numpy()).all()
    assert np.all(scores.numpy()[:, :, 0] == 0)
    assert all(np.isfinite(g.numpy()).all() for g in grads)
    # the fused op in float16 with a fully masked row, against a float64 reference
    x = np.random.default_rng(3).normal(size=(1, 3, 1, 2))
    m = np.array([[[[True, False, True], [False, False, False], [True, True, True]]]])
    got = attention_ops.attention(x.astype("float16"), x.astype("float16"),
                                  x.astype("float16"), mask=m).numpy()
    want = attention_ops.attention(x, x, x, mask=m).numpy()
    assert np.isfinite(got).all() and np.all(got[0, 1] == 0)
    np.testing.assert_allclose(got, want, atol=2e-3)


def test_attention_layer_gradients_float64():
    for layer in (layers.Attention(use_scale=True, dtype="float64"),
                  layers.AdditiveAttention(dtype="float64"),
                  layers.Attention(score_mode="concat", dtype="float64")):
        q, v = Q[:, :3, :3].astype("float64"), K.astype("float64")
        vm = np.array([[True, True, False, True], [True, True, True, True]])
        layer.build([q.shape, v.shape])
        check_gradients(lambda a, b: layer([a, b], mask=[None, vm]), [q, v])


def check_weight_gradients(fn, variables, eps=1e-6, atol=1e-7, per_weight=12, seed=0):
    """Tape gradients of ``sum(w * fn())`` w.r.t. layer Variables against central differences."""
    rng = np.random.default_rng(seed)
    probe = fn().numpy()
    w = rng.standard_normal(probe.shape)
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


def test_mha_gradients_float64_wrt_inputs_and_weights():
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=2, dtype="float64",
                                      bias_initializer="random_normal")
    q, v = Q[:, :3, :4].astype("float64"), V[:, :, :4].astype("float64")
    mask = MASK[:, :3]
    layer.build(q.shape, v.shape)
    check_gradients(lambda q, v: layer(q, v, attention_mask=mask), [q, v], atol=1e-7)
    check_gradients(lambda q, v: layer(q, v, attention_mask=mask, return_attention_scores=True),
                    [q, v], atol=1e-7)
    check_weight_gradients(lambda: layer(q, v, attention_mask=mask), layer.weights)
    check_weight_gradients(lambda: layer(q, v, attention_mask=mask,
                                         return_attention_scores=True)[0], layer.weights)


def test_dropout_on_attention_weights_only_in_training():
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=4, dropout=0.5, seed=3)
    a = layer(Q, V).numpy()
    np.testing.assert_allclose(layer(Q, V, training=False).numpy(), a)
    t1, t2 = layer(Q, V, training=True).numpy(), layer(Q, V, training=True).numpy()
    assert not np.allclose(t1, a) and not np.allclose(t1, t2)
    att = layers.Attention(dropout=0.9, seed=0)
    out, w = att([Q, Q], return_attention_scores=True, training=True)
    # Keras's Attention returns the weights after dropout (MultiHeadAttention: before it)
    np.testing.assert_allclose(out.numpy(), w.numpy() @ Q, rtol=1e-5, atol=1e-6)


def test_keras_masks_on_inputs_are_used_and_passed_on():
    ids = np.array([[4, 2, 7, 0, 0], [1, 3, 0, 0, 0]], "int32")
    x = layers.Embedding(10, 6, mask_zero=True)(ids)
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=3)
    out, scores = mha(x, x, return_attention_scores=True)
    keep = ids != 0
    assert np.all(scores.numpy()[~np.broadcast_to(keep[:, None, None, :], scores.shape)] == 0)
    np.testing.assert_array_equal(out._keras_mask.numpy(), keep)
    explicit = mha(x.numpy(), x.numpy(), attention_mask=keep[:, :, None] & keep[:, None, :])
    np.testing.assert_allclose(out.numpy(), explicit.numpy(), atol=1e-6)


def test_bad_inputs_name_the_layer_and_shapes():
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=2, name="mha")
    mha(Q, V)
    with pytest.raises(ValueError, match=r"mha: attention_mask must have shape \(batch, "
                                         r"query_len, key_len\) = \(2, 5, 4\).*\(2, 5, 3\)"):
        mha(Q, V, attention_mask=np.ones((2, 5, 3), bool))
    with pytest.raises(ValueError, match=r"mha: the layer was built for query/value/key feature "
                                         r"sizes \(6, 7, 7\).*query shape \(2, 5, 4\)"):
        mha(Q[:, :, :4], V)
    with pytest.raises(ValueError, match=r"mha: query, value and key must have the same batch"):
        mha(Q, V[:1])
    with pytest.raises(ValueError, match=r"value and key must have the same shape except"):
        mha(Q, V, key=V[:, :3])
    att = layers.Attention(name="att")
    with pytest.raises(ValueError, match=r"att: the query and key feature sizes must match.*"
                                         r"query shape \(2, 5, 6\), value shape \(2, 4, 7\)"):
        att([Q, V])
    with pytest.raises(ValueError, match=r"att: value_mask must have shape \(2, 4\)"):
        att([V, V], mask=[None, np.ones((2, 5), bool)])
    with pytest.raises(ValueError, match=r"att: the layer must be called on a list"):
        att(Q)
    with pytest.raises(ValueError, match="num_heads"):
        layers.MultiHeadAttention(num_heads=0, key_dim=2)


def test_attention_axes_and_rank4_inputs_use_keras_equations():
    x = RNG.normal(size=(2, 3, 4, 5)).astype("float32")
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=3, attention_axes=(2,))
    out, scores = layer(x, x, return_attention_scores=True)
    assert out.shape == (2, 3, 4, 5) and scores.shape == (2, 3, 2, 4, 4)
    # attention over axis 2 only: each row along axis 1 is attended independently
    row = layer(x[:, 1:2], x[:, 1:2])
    np.testing.assert_allclose(row.numpy()[:, 0], out.numpy()[:, 1], atol=1e-5)


def test_einsum_dense_equations_and_gemm_fast_path():
    x = RNG.normal(size=(2, 3, 4)).astype("float32")
    for eq, shape, bias_axes, kernel_shape, gemm in (
            ("abc,cde->abde", (None, 2, 5), "de", (4, 2, 5), True),
            ("...b,bc->...c", 6, "c", (4, 6), True),
            ("abc,cd->abd", (None, 5), None, (4, 5), True),
            ("abc,dc->abd", (None, 5), "d", (5, 4), False)):
        layer = layers.EinsumDense(eq, shape, bias_axes=bias_axes,
                                   bias_initializer="random_normal")
        y = layer(x)
        assert layer.kernel.shape == kernel_shape and layer._gemm is gemm
        want = np.einsum(eq, x, layer.kernel.numpy())
        if layer.bias is not None:
            want = want + layer.bias.numpy()
        np.testing.assert_allclose(y.numpy(), want, atol=1e-5)
        assert layer.compute_output_shape((None, 3, 4)) == (None,) + want.shape[1:]
    layer = layers.EinsumDense("abc,cde->abde", (None, 2, 5), bias_axes="de", dtype="float64")
    layer.build(x.shape)
    check_gradients(lambda a: layer(a), [x.astype("float64")])


def test_configs_round_trip():
    from kerasrs.layers import serialization

    for layer in (layers.MultiHeadAttention(4, 8, value_dim=6, dropout=0.1, output_shape=3,
                                            use_bias=False),
                  layers.Attention(use_scale=True, score_mode="concat", dropout=0.2),
                  layers.AdditiveAttention(use_scale=False),
                  layers.EinsumDense("abc,cd->abd", (None, 5), bias_axes="d",
                                     activation="relu")):
        config = serialization.serialize(layer)
        clone = serialization.deserialize(config)
        assert type(clone) is type(layer) and clone.get_config() == layer.get_config()
    assert "score_mode" not in layers.AdditiveAttention().get_config()


def test_symbolic_functional_model_with_mha_and_scores():
    inputs = layers.Input((5, 6))
    out, scores = layers.MultiHeadAttention(2, 3)(inputs, inputs, return_attention_scores=True)
    model = kerasrs.Model(inputs, [out, scores])
    a, b = model(Q)
    assert a.shape == (2, 5, 6) and b.shape == (2, 2, 5, 5)


GATED = os.path.join(os.path.dirname(__file__), "..", "fixtures", "keras_gated_attention.npz")


@pytest.mark.parametrize("case, make, causal", [
    ("mha_gate", lambda: layers.MultiHeadAttention(2, 3, use_gate=True), False),
    ("mha_window", lambda: layers.MultiHeadAttention(2, 3, sliding_window=2), True),
    ("gqa_gate_window", lambda: layers.GroupedQueryAttention(3, 4, 2, sliding_window=2,
                                                             use_gate=True), True)])
def test_gate_and_sliding_window_match_keras(case, make, causal):
    ref = np.load(GATED)
    layer = make()
    layer(ref["q"], ref["v"])
    assert len(layer.weights) == len([k for k in ref.files if k.startswith(case + "/w")])
    for i, w in enumerate(layer.weights):  # Keras's weight order, gate between key and value
        w.assign(ref[f"{case}/w{i}"])
    out, scores = layer(ref["q"], ref["v"], return_attention_scores=True,
                        use_causal_mask=causal)
    np.testing.assert_allclose(np.asarray(out), ref[f"{case}/out"], atol=2e-5)
    np.testing.assert_allclose(np.asarray(scores), ref[f"{case}/scores"], atol=2e-5)
    fused = layer(ref["q"], ref["v"], use_causal_mask=causal)  # the fused path, no scores
    np.testing.assert_allclose(np.asarray(fused), ref[f"{case}/out"], atol=2e-5)


def test_attention_override_points_and_symbolic_scores():
    class Doubled(layers.MultiHeadAttention):
        def _compute_attention(self, query, key, value, attention_mask=None, training=None,
                               return_attention_scores=False, use_causal_mask=False):
            out, scores = super()._compute_attention(query, key, value, attention_mask,
                                                     training, return_attention_scores)
            return ops.multiply(out, 2.0), scores

    plain, doubled = layers.MultiHeadAttention(2, 3, use_bias=False), Doubled(2, 3,
                                                                              use_bias=False)
    plain(Q, Q)
    doubled(Q, Q)
    doubled.set_weights(plain.get_weights())
    zero_bias_out = plain._output_dense(ops.multiply(
        plain._compute_attention(plain._query_dense(Q), plain._key_dense(Q),
                                 plain._value_dense(Q))[0], 2.0))
    np.testing.assert_allclose(np.asarray(doubled(Q, Q)), np.asarray(zero_bias_out), atol=1e-5)
    q, v = layers.Input((5, 6)), layers.Input((4, 6))
    out, scores = layers.GroupedQueryAttention(3, 4, 2)(q, v, return_attention_scores=True)
    assert tuple(out.shape) == (None, 5, 6) and tuple(scores.shape) == (None, 4, 5, 4)
    with pytest.raises(ValueError, match="sliding_window"):
        layers.MultiHeadAttention(2, 3, sliding_window=0)
    with pytest.raises(ValueError, match="Dropout is not supported when flash attention"):
        layers.GroupedQueryAttention(3, 4, 2, dropout=0.1, flash_attention=True)


def test_small_transformer_block_fit_reduces_the_loss():
    kerasrs.utils.set_random_seed(1)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4, 3)).astype("float32")
    y = (x[:, :, 0].max(1) > 0.8).astype("int32")
    inputs = layers.Input((4, 3))
    h = layers.Dense(8)(inputs)
    h = layers.LayerNormalization()(layers.Add()([h, layers.MultiHeadAttention(2, 4)(h, h)]))
    out = layers.Dense(2)(layers.GlobalAveragePooling1D()(h))
    model = kerasrs.Model(inputs, out)
    model.compile(optimizer=kerasrs.optimizers.Adam(0.02),
                  loss=kerasrs.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(x, y, batch_size=16, epochs=10, verbose=0)
    assert history.history["loss"][-1] < 0.7 * history.history["loss"][0]


def test_self_attention_packed_projection_matches_separate_projections():
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=2, dtype="float64",
                                      bias_initializer="random_normal")
    q = Q[:, :4].astype("float64")
    mask = MASK[:, :4, :4] | np.eye(4, dtype=bool)
    packed = layer(q, q, attention_mask=mask)  # the same tensor twice: one GEMM for q, k, v
    separate = layer(q, q.copy(), attention_mask=mask)
    reference, _ = layer(q, q, attention_mask=mask, return_attention_scores=True)
    np.testing.assert_allclose(packed.numpy(), separate.numpy(), atol=1e-12)
    np.testing.assert_allclose(packed.numpy(), reference.numpy(), atol=1e-12)
    check_gradients(lambda a: layer(a, a, attention_mask=mask), [q], atol=1e-7)
    xt = kerasrs.convert_to_tensor(q)
    check_weight_gradients(lambda: layer(xt, xt, attention_mask=mask), layer.weights)
    keep = (np.random.default_rng(5).random((2, 2, 4, 4)) > 0.5) * 2.0
    qkv = np.random.default_rng(6).normal(size=(2, 4, 2 * (3 + 3 + 2)))
    check_gradients(lambda a: attention_ops.packed_attention(a, 2, 3, 2, mask=mask[:, None],
                                                             dropout_keep=keep), [qkv])


def test_fused_softmax_rows_far_below_the_head_maximum_stay_exact():
    """The fused softmax shifts each head by its block maximum; a row far below it (or a fully
    masked row) must still come out right, in float32."""
    k = np.array([[[[1.0]], [[2.0]], [[3.0]]]], "float32")  # (1, 3 keys, 1 head, 1)
    q = np.array([[[[60.0]], [[-60.0]], [[0.5]]]], "float32")  # scores 60..180 vs -180..-60
    v = np.eye(3, dtype="float32")[None, :, None, :]
    want = masked_softmax(np.einsum("btnh,bsnh->bnts", q.astype("float64"), k), None)
    got = attention_ops.attention(q, k, v, scale=1.0).numpy()[0, :, 0]
    np.testing.assert_allclose(got, want[0, 0], rtol=1e-5, atol=1e-7)
    mask = np.array([[[[True, True, True], [False, False, False], [True, False, True]]]])
    got = attention_ops.attention(q, k, v, scale=1.0, mask=mask).numpy()[0, :, 0]
    want = masked_softmax(np.einsum("btnh,bsnh->bnts", q.astype("float64"), k), mask)
    np.testing.assert_allclose(got, want[0, 0], rtol=1e-5, atol=1e-7)
    assert np.all(got[1] == 0)


def test_fused_softmax_nan_stays_in_its_query_row():
    """A NaN score makes its own softmax row NaN, as NumPy's row-wise softmax does; the block
    maximum must not spread it to the other queries of the head."""
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 4, 1, 3)), rng.normal(size=(2, 5, 1, 3))
    v = rng.normal(size=(2, 5, 1, 2))
    q[0, 1, 0, 0] = np.nan
    want = np.einsum("bnts,bsnh->btnh", masked_softmax(np.einsum("btnh,bsnh->bnts", q, k) /
                                                       np.sqrt(3), None), v)
    for dtype in ("float32", "float64"):
        with np.errstate(invalid="ignore"):
            got = attention_ops.attention(*(a.astype(dtype) for a in (q, k, v))).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)  # NaN where want has NaN


def test_mha_on_an_empty_batch():
    """0 samples: an empty output and empty/zero gradients (the fused softmax's block maximum
    reshaped with -1, which NumPy cannot infer for a size-0 array)."""
    layer = layers.MultiHeadAttention(2, 3)
    x = ops.convert_to_tensor(np.zeros((0, 5, 4), "float32"))
    with kerasrs.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, x)
        loss = ops.sum(y)
    assert tuple(y.shape) == (0, 5, 4)
    gx, *gw = tape.gradient(loss, [x] + layer.trainable_weights)
    assert tuple(gx.shape) == (0, 5, 4)
    assert all(g is None or not np.any(g.numpy()) for g in gw)


def test_backward_in_two_threads_matches_one_thread():
    """Two models training in two threads: each backward's score-gradient temporary is its own
    (the GEMMs release the GIL; a shared scratch array mixed the threads' gradients)."""
    import threading

    rng = np.random.default_rng(5)
    cases = [[rng.normal(size=(64, 9, 4, 8)).astype("float32") for _ in range(3)]
             for _ in range(2)]

    def grads(q, k, v):
        q, k, v = (ops.convert_to_tensor(a) for a in (q, k, v))
        with kerasrs.GradientTape() as tape:
            tape.watch([q, k, v])
            loss = ops.sum(attention_ops.attention(q, k, v) ** 2)
        return [g.numpy() for g in tape.gradient(loss, [q, k, v])]

    want = [grads(*c) for c in cases]
    bad = []

    def worker(j):
        for _ in range(40):
            got = grads(*cases[j])
            bad.extend(j for g, w in zip(got, want[j]) if not np.array_equal(g, w))

    threads = [threading.Thread(target=worker, args=(j,)) for j in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def test_projection_op_values_gradients_and_errors():
    from kerasrs.ops import projection

    rng = np.random.default_rng(7)
    x, k2, b2 = rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 2, 5)), rng.normal(size=(2, 5))
    got = projection.projection(x, k2, b2)
    np.testing.assert_allclose(got.numpy(), np.einsum("abc,cde->abde", x, k2) + b2, atol=1e-12)
    check_gradients(lambda a, k, b: projection.projection(a, k, b), [x, k2, b2])
    k3 = rng.normal(size=(3, 4, 6))  # two contracted axes, no bias
    np.testing.assert_allclose(projection.projection(x, k3, n_in=2).numpy(),
                               np.einsum("abc,bcd->ad", x, k3), atol=1e-12)
    check_gradients(lambda a, k: projection.projection(a, k, n_in=2), [x, k3])
    with pytest.raises(ValueError, match=r"projection: the last 1 axes of x must match"):
        projection.projection(x, k3)
    with pytest.raises(ValueError, match=r"projection: the bias must have shape \(2, 5\)"):
        projection.projection(x, k2, np.zeros(5))


@pytest.mark.slow
def test_transformer_example_learns_on_a_subset_of_fashion_mnist():
    import importlib.util

    path = os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                        "transformer_classifier.py")
    spec = importlib.util.spec_from_file_location("transformer_classifier", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    try:
        accuracy = example.main(["--samples", "4096", "--epochs", "2", "--verbose", "0"])
    except (OSError, RuntimeError) as e:  # no dataset on this machine
        pytest.skip(f"Fashion-MNIST unavailable: {e}")
    assert accuracy > 0.6  # 10 classes: chance is 0.1; about 0.69 here


def test_attention_score_helpers_and_dropped_weights():
    rng = np.random.default_rng(0)
    q, k = rng.random((2, 3, 4)), rng.random((2, 4, 4))
    layer = layers.Attention(use_scale=True)
    layer.build([(2, 3, 4), (2, 4, 4)])
    np.testing.assert_allclose(layer._calculate_scores(q, k).numpy(),
                               q @ k.transpose(0, 2, 1) * layer.scale.numpy(), rtol=1e-5)
    scores = rng.random((2, 3, 4))
    assert layer._calculate_score_mask(scores, v_mask=None, use_causal_mask=False) is None
    causal = np.tril(np.ones((1, 3, 4), bool))
    np.testing.assert_array_equal(layer._calculate_score_mask(scores, None, True), causal)
    v_mask = np.array([[True, False, True, False]])
    np.testing.assert_array_equal(layer._calculate_score_mask(scores, v_mask, True),
                                  causal & v_mask[:, None, :])
    # with dropout in training, the returned weights are the ones applied to the values
    query, value = np.array([[[1.0, 0.0], [0.0, 1.0]]]), np.ones((1, 2, 2))
    out, weights = layers.Attention(dropout=0.5, seed=1)([query, value], training=True,
                                                         return_attention_scores=True)
    np.testing.assert_allclose(out.numpy(), weights.numpy() @ value, rtol=1e-6)


def test_additive_attention_on_one_tensor_asks_for_a_list():
    with pytest.raises(ValueError, match="must be called on a list"):
        layers.AdditiveAttention()(np.ones((1, 2, 2), "float32"))
