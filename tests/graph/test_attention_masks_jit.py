"""MultiHeadAttention's masks in traced training steps: the causal mask (made from shapes) is a
constant of the graph, and a mask fed as data stays in the graph even when the batch it was
traced on masked nothing."""

import numpy as np

import kerasrs
from kerasrs import layers

rng = np.random.default_rng(0)
X = rng.normal(size=(32, 6, 8)).astype("float32")
Y = X[:, 0, :4]


def _fit_both(make, inputs, batch_size=8):
    weights = {}
    for jit in (False, True):
        kerasrs.utils.set_random_seed(3)
        model = make()
        model.compile("sgd", "mse", jit_compile=jit)
        model.fit(inputs, Y, batch_size=batch_size, epochs=2, shuffle=False, verbose=0)
        assert (model._jit is not None) == jit and (not jit or not model._jit.eager)
        weights[jit] = model.get_weights()
    for got, want in zip(weights[True], weights[False]):
        np.testing.assert_array_equal(got, want)


def test_causal_self_attention_trains_under_jit_as_eagerly():
    def make():
        x = layers.Input((6, 8))
        y = layers.MultiHeadAttention(2, 4)(x, x, use_causal_mask=True)
        return kerasrs.Model(x, layers.Dense(4)(layers.GlobalAveragePooling1D()(y)))

    _fit_both(make, X)


def test_a_data_mask_all_true_in_the_first_batch_is_kept_for_the_next():
    mask = np.ones((32, 6, 6), bool)
    mask[8:, :, 3:] = False  # the first batch (traced) masks nothing, the others do

    def make():
        x, m = layers.Input((6, 8)), layers.Input((6, 6), dtype="bool")
        y = layers.MultiHeadAttention(2, 4)(x, x, attention_mask=m)
        return kerasrs.Model([x, m], layers.Dense(4)(layers.GlobalAveragePooling1D()(y)))

    _fit_both(make, [X, mask])
