"""Recurrent cells as Keras has them: stacked cells return their states grouped per cell, the
`DropoutRNNCell` mixin of custom cells, and `Bidirectional` keeping ``use_cudnn``."""

import numpy as np
import pytest

from kerasrs import layers, ops
from kerasrs.layers.recurrent.dropout_cell import DropoutRNNCell


def test_stacked_cells_return_their_states_grouped_per_cell():
    rnn = layers.RNN([layers.LSTMCell(4), layers.SimpleRNNCell(3)], return_state=True)
    out, lstm_states, simple_state = rnn(np.ones((2, 5, 6), "float32"))
    assert out.shape == (2, 3)
    assert [s.shape for s in lstm_states] == [(2, 4), (2, 4)]  # [h, c]
    assert simple_state.shape == (2, 3)  # a one-state cell: the state itself
    np.testing.assert_allclose(simple_state, out)
    assert rnn.compute_output_shape((2, 5, 6)) == ((2, 3), [(2, 4), (2, 4)], (2, 3))
    # the grouped states go back in as the initial state
    again = rnn(np.ones((2, 5, 6), "float32"), initial_state=[lstm_states, simple_state])
    assert again[0].shape == (2, 3)


def test_a_single_lstm_keeps_its_flat_states():
    out, h, c = layers.LSTM(3, return_state=True)(np.ones((2, 4, 5), "float32"))
    assert h.shape == c.shape == (2, 3)


class CountingCell(layers.Layer, DropoutRNNCell):
    """A custom cell with the mixin: the input mask multiplies each step's input."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = self.state_size = units
        self.dropout, self.recurrent_dropout = 0.5, 0.0
        from kerasrs import random
        self.seed_generator = random.SeedGenerator(3)
        self.masks = []

    def call(self, inputs, states, training=False):
        if training:
            mask = self.get_dropout_mask(inputs)
            self.masks.append(mask)
            inputs = inputs * mask
        assert self.get_recurrent_dropout_mask(states[0]) is None  # rate 0: no mask
        h = states[0] + ops.sum(inputs, axis=-1, keepdims=True)
        return h, [h]


def test_the_dropout_mixin_draws_one_mask_per_sequence():
    cell = CountingCell(1)
    rnn = layers.RNN(cell)
    x = np.ones((4, 3, 8), "float32")
    rnn(x, training=True)
    first = cell.masks
    assert len(first) == 3 and all(m is first[0] for m in first)  # reused for every step
    assert set(np.unique(first[0].numpy())) <= {0.0, 2.0}
    cell.masks = []
    rnn(x, training=True)
    assert cell.masks[0] is not first[0]  # reset between sequences
    assert cell._dropout_mask is None


@pytest.mark.parametrize("rnn_class", [layers.LSTM, layers.GRU])
@pytest.mark.parametrize("use_cudnn", [True, False, "auto"])
def test_bidirectional_keeps_use_cudnn(rnn_class, use_cudnn):
    bidi = layers.Bidirectional(rnn_class(2, use_cudnn=use_cudnn))
    assert bidi.forward_layer.use_cudnn == use_cudnn
    assert bidi.backward_layer.use_cudnn == use_cudnn


def test_simple_rnn_has_no_use_cudnn():
    assert not hasattr(layers.SimpleRNN(2), "use_cudnn")
    assert not hasattr(layers.Bidirectional(layers.SimpleRNN(2)).forward_layer, "use_cudnn")
    with pytest.raises(TypeError, match="use_cudnn"):
        layers.SimpleRNN(2, use_cudnn=True)
