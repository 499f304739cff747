"""The recurrent layers SimpleRNN, LSTM and GRU: an `RNN` around the matching built-in cell.

Each takes the cell's arguments and the `RNN` arguments in Keras's order, builds the cell with
Keras's sublayer name (``simple_rnn_cell``, ``lstm_cell``, ``gru_cell``), so weight paths are
``<layer>/lstm_cell/kernel`` as in Keras files, and its config is Keras's flat dict (the cell's
arguments and the RNN's, without a ``cell`` entry). The sequence always runs as one fused op.
"""

from kerasrs.layers.base import InputSpec
from kerasrs.layers.recurrent import cells
from kerasrs.layers.recurrent.base_rnn import RNN

_RNN_ARGS = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll")
_CELL_ATTRS = ("units", "activation", "recurrent_activation", "use_bias", "unit_forget_bias",
               "reset_after", "kernel_initializer", "recurrent_initializer", "bias_initializer",
               "kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
               "kernel_constraint", "recurrent_constraint", "bias_constraint", "dropout",
               "recurrent_dropout")


class _CellLayer(RNN):
    """Shared constructor and config of SimpleRNN, LSTM and GRU."""

    cell_class = None
    cell_name = None

    def __init__(self, units, activity_regularizer=None, return_sequences=False,
                 return_state=False, go_backwards=False, stateful=False, unroll=False,
                 use_cudnn="auto", **kwargs):
        base = {k: kwargs.pop(k) for k in ("name", "dtype", "trainable", "input_shape",
                                           "batch_input_shape", "batch_size", "input_dim",
                                           "zero_output_for_mask") if k in kwargs}
        for k in ("time_major",):
            kwargs.pop(k, None)
        cell = self.cell_class(units, dtype=base.get("dtype"),
                               trainable=base.get("trainable", True), name=self.cell_name,
                               **kwargs)
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, unroll=unroll,
                         activity_regularizer=activity_regularizer, **base)
        if self.cell_class is cells.SimpleRNNCell:  # Keras's SimpleRNN has no `use_cudnn`
            if use_cudnn != "auto":
                raise TypeError(f"{self.name}: SimpleRNN has no `use_cudnn` argument (LSTM and "
                                f"GRU do). Received: use_cudnn={use_cudnn!r}")
        elif use_cudnn not in ("auto", True, False):
            raise ValueError(f"{self.name}: `use_cudnn` must be 'auto', True or False. "
                             f"Received: use_cudnn={use_cudnn!r}")
        else:
            self.use_cudnn = use_cudnn
        self.input_spec = InputSpec(ndim=3)

    def get_config(self):
        config = super().get_config()
        cell_config = config.pop("cell")["config"]
        for key in ("name", "trainable", "dtype"):
            cell_config.pop(key, None)
        return {**config, **cell_config}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)


for _attr in _CELL_ATTRS:
    setattr(_CellLayer, _attr, property(lambda self, _a=_attr: getattr(self.cell, _a)))


class SimpleRNN(_CellLayer):
    """Fully-connected RNN whose output is fed back: ``h_t = activation(x_t W + h_{t-1} U + b)``.

    Args:
        units: int > 0, the output and state size.
        activation, use_bias, kernel_initializer, recurrent_initializer, bias_initializer,
            kernel_regularizer, recurrent_regularizer, bias_regularizer, activity_regularizer,
            kernel_constraint, recurrent_constraint, bias_constraint, dropout,
            recurrent_dropout, seed: as `SimpleRNNCell` (activation defaults to "tanh").
        return_sequences, return_state, go_backwards, stateful, unroll: as `RNN`.

    Input shape: ``(batch, time, features)``. Output: ``(batch, units)``, or ``(batch, time,
    units)`` with ``return_sequences``; with ``return_state`` a list ``[output, h]``.

    Example:
        >>> SimpleRNN(4)(np.ones((2, 3, 5), "float32")).shape
        (2, 4)
    """

    cell_class, cell_name = cells.SimpleRNNCell, "simple_rnn_cell"


class LSTM(_CellLayer):
    """Long Short-Term Memory layer (Hochreiter & Schmidhuber, 1997), Keras's gate layout.

    Args:
        units: int > 0.
        activation: default "tanh". recurrent_activation: default "sigmoid".
        unit_forget_bias: forget-gate bias initialized to 1. Defaults to True.
        Other arguments: as `SimpleRNN`.

    Input shape: ``(batch, time, features)``. Output: ``(batch, units)`` or ``(batch, time,
    units)``; with ``return_state``: ``[output, h, c]``.
    Weights: ``lstm_cell/kernel (features, 4 units)``, ``lstm_cell/recurrent_kernel (units, 4
    units)``, ``lstm_cell/bias (4 units,)``, gate blocks ``i, f, c, o``.

    Example:
        >>> out, h, c = LSTM(4, return_sequences=True, return_state=True)(np.ones((2, 3, 5)))
        >>> out.shape, h.shape, c.shape
        ((2, 3, 4), (2, 4), (2, 4))
    """

    cell_class, cell_name = cells.LSTMCell, "lstm_cell"


class GRU(_CellLayer):
    """Gated Recurrent Unit layer (Cho et al., 2014), Keras's gate layout ``z, r, h``.

    Args:
        units: int > 0.
        activation: default "tanh". recurrent_activation: default "sigmoid".
        reset_after: reset gate after the recurrent product (default True; bias ``(2, 3
            units)``); False gives the original formulation with bias ``(3 units,)``.
        Other arguments: as `SimpleRNN`.

    Input shape: ``(batch, time, features)``. Output: ``(batch, units)`` or ``(batch, time,
    units)``; with ``return_state``: ``[output, h]``.
    """

    cell_class, cell_name = cells.GRUCell, "gru_cell"


__all__ = ["SimpleRNN", "LSTM", "GRU"]
