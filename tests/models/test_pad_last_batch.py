"""fit(pad_last_batch=True): every step sees one shape, and the result equals the short batch."""

import numpy as np
import pytest

import kerasrs
from kerasrs import layers


class ShapeLog(layers.Layer):
    """Identity that records the batch size of every call."""

    supports_masking = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.sizes = []

    def call(self, inputs):
        self.sizes.append(inputs.shape[0])
        return inputs


def _model(log):
    kerasrs.utils.clear_session()
    kerasrs.utils.set_random_seed(0)
    model = kerasrs.Sequential([layers.Input((3,)), log, layers.Dense(4, activation="tanh"),
                                layers.BatchNormalization(momentum=0.5),
                                layers.Dense(2, activation="softmax")])
    model.compile(kerasrs.optimizers.Adam(0.05), "sparse_categorical_crossentropy",
                  metrics=["accuracy"],
                  weighted_metrics=[kerasrs.metrics.SparseCategoricalAccuracy(name="wacc")])
    return model


def _data():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(11, 3)).astype("float32")
    y = (x[:, 0] > 0).astype("int64")
    w = rng.uniform(0.5, 2.0, size=11).astype("float32")
    return x, y, w


def test_padded_last_batch_equals_the_short_batch():
    x, y, w = _data()
    runs = {}
    for pad in (False, True):
        log = ShapeLog()
        model = _model(log)
        history = model.fit(x, y, sample_weight=w, batch_size=4, epochs=3, shuffle=False,
                            verbose=0, pad_last_batch=pad)
        runs[pad] = (model.get_weights(), history.history, log.sizes)
    (w0, h0, sizes0), (w1, h1, sizes1) = runs[False], runs[True]
    assert sizes0[-9:] == [4, 4, 3] * 3 and sizes1[-9:] == [4, 4, 4] * 3  # after build calls
    for a, b in zip(w0, w1):  # includes BatchNormalization's moving statistics
        np.testing.assert_allclose(a, b, atol=1e-6)
    assert sorted(h0) == sorted(h1) == ["accuracy", "loss", "wacc"]
    for key in h0:
        np.testing.assert_allclose(h0[key], h1[key], atol=1e-6)


def test_padding_a_masked_sequence_and_a_dataset_batch():
    table = np.array([[100.0], [1.0], [2.0], [3.0]], "float32")
    tokens = np.array([[1, 2, 0], [3, 0, 0], [2, 2, 1]])
    y = np.zeros((3, 3, 1), "float32")

    class Batches(kerasrs.utils.PyDataset):
        def __len__(self):
            return 2

        def __getitem__(self, index):
            return tokens[2 * index:2 * index + 2], y[2 * index:2 * index + 2]

    kernels = []
    for pad in (False, True):
        embedding = layers.Embedding(4, 1, mask_zero=True)
        dense = layers.Dense(1, use_bias=False, kernel_initializer="ones")
        model = kerasrs.Sequential([layers.Input((3,), dtype="int64"), embedding, dense])
        embedding.set_weights([table])
        model.compile(kerasrs.optimizers.SGD(0.01), "mse", metrics=["mae"])
        history = model.fit(Batches(), shuffle=False, verbose=0, pad_last_batch=pad)
        kernels.append((dense.get_weights()[0], history.history))
        assert embedding.get_weights()[0][0, 0] == 100.0
    np.testing.assert_allclose(kernels[0][0], kernels[1][0], atol=1e-6)
    for key in ("loss", "mae"):
        np.testing.assert_allclose(kernels[0][1][key], kernels[1][1][key], atol=1e-6)


def test_an_overridden_train_step_gets_the_short_batch():
    class Sizes(kerasrs.Sequential):
        sizes = []

        def train_step(self, data):
            self.sizes.append(data[0].shape[0])
            return {"loss": 0.0}

    model = Sizes([layers.Input((1,)), layers.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(np.ones((5, 1)), np.ones((5, 1)), batch_size=2, shuffle=False, verbose=0,
              pad_last_batch=True)
    assert model.sizes == [2, 2, 1]


@pytest.mark.parametrize("rows,size", [(3, 4), (1, 4)])
def test_pad_batches_repeats_rows_and_reports_the_real_count(rows, size):
    from kerasrs.trainers import epoch_iterator

    x = np.arange(rows, dtype="float32")[:, None]
    (batch,) = epoch_iterator.pad_batches(iter([(x, x, None)]), size)
    assert batch[0].shape == (size, 1) and batch[3] == rows and batch[2] is None
    np.testing.assert_array_equal(batch[0][:rows], x)
