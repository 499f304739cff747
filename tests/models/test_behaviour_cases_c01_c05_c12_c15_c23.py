"""Behaviour cases C01 (partial batches), C05 (validation_split), C12 (broadcast gradients),
C15 (dropout only in training) and C23 (Embedding bounds), from ../shared/cases/behaviour.md."""

import numpy as np
import pytest

import kerasrs
from kerasrs import layers, ops


def test_c01_partial_last_batch_batch_of_one_and_single_sample_predict():
    kerasrs.utils.set_random_seed(0)
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(2),
                                layers.BatchNormalization(), layers.Dense(1)])
    x = np.arange(15).reshape(5, 3) / 10
    y = np.zeros((5, 1))
    p2, p5 = model.predict(x, batch_size=2, verbose=0), model.predict(x, batch_size=5, verbose=0)
    assert p2.shape == (5, 1)
    np.testing.assert_allclose(p2, p5, atol=1e-6)
    model.compile("sgd", "mse")
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)  # last batch: 1 sample
    assert model.evaluate(x, y, batch_size=2, verbose=0) == pytest.approx(
        model.evaluate(x, y, batch_size=5, verbose=0), rel=1e-6)
    bn = model.layers[1]
    single = bn(model.layers[0](x[:1]), training=True)  # variance 0: output is beta exactly
    np.testing.assert_allclose(single.numpy(), bn.beta.numpy()[None], atol=1e-7)
    with pytest.raises(ValueError, match=r"expected shape \(None, 3\)"):
        model.predict(x[0], verbose=0)
    assert model.predict(x[:1], verbose=0).shape == (1, 1)


class _Recorder(kerasrs.Sequential):
    """Records the sample ids (the single input feature) of every training batch."""

    def train_step(self, data):
        x, _ = data
        self.seen.append(sorted(int(v) for v in np.asarray(x.numpy()).ravel()))
        return super().train_step(data)


@pytest.mark.parametrize("shuffle", [True, False])
def test_c05_validation_split_takes_the_last_fraction_before_shuffling(shuffle):
    x = np.arange(10, dtype="float32").reshape(10, 1)
    model = _Recorder([layers.Input((1,)), layers.Dense(1)])
    model.seen = []
    model.compile(kerasrs.optimizers.SGD(0.0), "mse")
    history = model.fit(x, x, validation_split=0.2, shuffle=shuffle, batch_size=4, epochs=3,
                        verbose=0)
    assert len(history.history["val_loss"]) == 3
    for epoch in range(3):
        batches = model.seen[2 * epoch:2 * epoch + 2]
        assert [len(b) for b in batches] == [4, 4]
        assert sorted(sum(batches, [])) == list(range(8))  # 8 and 9 never train
        if not shuffle:
            assert batches == [[0, 1, 2, 3], [4, 5, 6, 7]]
    five = _Recorder([layers.Input((1,)), layers.Dense(1)])
    five.seen = []
    five.compile(kerasrs.optimizers.SGD(0.0), "mse")
    five.fit(x[:5], x[:5], validation_split=0.5, batch_size=4, epochs=1, verbose=0)
    assert five.seen == [[0, 1]]  # train = first int(5 * 0.5) = 2 samples


def test_c12_broadcast_gradients_are_summed_back_to_the_operand_shape():
    x = kerasrs.Tensor(np.ones((3, 4), "float32"))
    b = kerasrs.Variable(np.zeros(4, "float32"))
    with kerasrs.GradientTape() as tape:
        loss = ops.sum(x + b)
    np.testing.assert_array_equal(tape.gradient(loss, b).numpy(), [3, 3, 3, 3])
    a = kerasrs.Variable(np.array([[1.0], [2.0], [3.0]], "float32"))
    c = kerasrs.Variable(np.ones((1, 4), "float32"))
    with kerasrs.GradientTape() as tape:
        loss = ops.sum(a * c)
    ga, gc = tape.gradient(loss, [a, c])
    np.testing.assert_array_equal(ga.numpy(), [[4], [4], [4]])
    np.testing.assert_array_equal(gc.numpy(), [[6, 6, 6, 6]])
    dense = layers.Dense(2)
    xs = np.random.default_rng(0).normal(size=(3, 5)).astype("float32")
    with kerasrs.GradientTape() as tape:
        out = dense(xs)
        loss = ops.sum(out * np.array([1.0, -2.0], "float32"))
    gb = tape.gradient(loss, dense.bias)
    np.testing.assert_allclose(gb.numpy(), [3.0, -6.0])  # the sum over the batch of [1, -2]
    opt = kerasrs.optimizers.SGD(0.1)
    opt.apply([gb], [dense.bias])
    assert dense.bias.shape == (2,)


def test_c15_dropout_only_during_training():
    layer = layers.Dropout(0.5, seed=1)
    x = np.ones((1, 1000), "float32")
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    model = kerasrs.Sequential([layers.Input((1000,)), layers.Dropout(0.5)])
    np.testing.assert_array_equal(model.predict(x, verbose=0), x)
    np.testing.assert_array_equal(model.predict(x, verbose=0), x)
    out = layer(x, training=True).numpy()
    assert set(np.unique(out)) <= {0.0, 2.0} and 0.45 <= (out == 0).mean() <= 0.55

    def run(rate):
        net = kerasrs.Sequential([layers.Input((1000,)), layers.Dropout(rate),
                                  layers.Dense(1, use_bias=False,
                                               kernel_initializer=kerasrs.initializers.Constant(
                                                   0.001))])
        net.compile(kerasrs.optimizers.SGD(0.0), "mse")
        xs, ys = np.ones((32, 1000), "float32"), np.ones((32, 1), "float32")
        loss = net.fit(xs, ys, batch_size=32, epochs=1, verbose=0).history["loss"][0]
        return loss, net.evaluate(xs, ys, verbose=0)

    assert run(0.0)[0] <= 1e-6 and run(0.999)[0] >= 1 / 32
    assert run(0.0)[1] <= 1e-6 and run(0.999)[1] <= 1e-6


@pytest.mark.parametrize("ids, bad", [([[1, 10]], "10"), ([[-1]], "-1")])
def test_c23_embedding_out_of_range_ids_fail_loudly(ids, bad):
    emb = layers.Embedding(input_dim=10, output_dim=3)
    with pytest.raises((IndexError, ValueError), match=rf"\[0, 10\).*id {bad}"):
        emb(np.array(ids))
    out = emb(np.array([[0, 9]]))
    assert out.shape == (1, 2, 3)
    np.testing.assert_array_equal(out.numpy()[0], emb.embeddings.numpy()[[0, 9]])
