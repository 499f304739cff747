"""`DropoutRNNCell`: the dropout masks of a recurrent cell, one per sequence (Keras's mixin).

A cell mixes it in next to `Layer` (``class MyCell(Layer, DropoutRNNCell)``) and sets
``dropout`` and ``recurrent_dropout`` (rates in [0, 1]) and ``seed_generator`` (a
`kerasrs.random.SeedGenerator`). In ``call(inputs, states, training=False)`` it multiplies, in
training, the step's input by ``self.get_dropout_mask(inputs)`` and the previous output by
``self.get_recurrent_dropout_mask(h)``. Each mask is drawn on first use and then reused for
every step of the sequence: `kerasrs.layers.RNN` resets both before and after running a
sequence (``reset_dropout_mask``, ``reset_recurrent_dropout_mask``), so the next sequence
draws new ones.
"""

from kerasrs.layers import core
from kerasrs.ops.core import constant


class DropoutRNNCell:
    """Per-sequence dropout masks for a recurrent cell (see the module docstring)."""

    _dropout_mask = None
    _recurrent_dropout_mask = None

    def get_dropout_mask(self, step_input):
        """The input mask of this sequence (shape and dtype of ``step_input``: 0 with
        probability ``dropout``, else ``1 / (1 - dropout)``), or None when ``dropout`` is 0."""
        if self._dropout_mask is None and self.dropout > 0:
            self._dropout_mask = _mask(self, step_input, self.dropout)
        return self._dropout_mask

    def get_recurrent_dropout_mask(self, step_input):
        """The mask of the previous output, after ``recurrent_dropout``; see
        `get_dropout_mask`."""
        if self._recurrent_dropout_mask is None and self.recurrent_dropout > 0:
            self._recurrent_dropout_mask = _mask(self, step_input, self.recurrent_dropout)
        return self._recurrent_dropout_mask

    def reset_dropout_mask(self):
        """Forget the input mask (the next sequence draws a new one)."""
        self._dropout_mask = None

    def reset_recurrent_dropout_mask(self):
        """Forget the recurrent mask."""
        self._recurrent_dropout_mask = None


def dropout_mask(cell, like_shape, rate, dtype, be):
    """A ``like_shape`` array of 0 and ``1 / (1 - rate)`` (keep probability ``1 - rate``), from
    the cell's seed generator and Philox stream (`kerasrs.layers.core.dropout_mask`)."""
    return core.dropout_mask(cell.seed_generator, like_shape, rate, dtype, be)


def _mask(cell, like, rate):
    return constant(dropout_mask(cell, like.shape, rate, like.dtype, like.backend), like.backend)
