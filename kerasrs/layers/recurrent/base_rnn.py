"""`RNN`: runs a recurrent cell over the time axis (Keras's ``keras.layers.RNN``).

Two paths compute the same numbers:

* **fused**: for the built-in cells (`SimpleRNNCell`, `LSTMCell`, `GRUCell`) whose activations
  have a fused form, the whole sequence is one op of `kerasrs.ops.recurrent` (one input GEMM over
  all steps, a loop over time inside the op, hand-written back-propagation through time);
* **per step**: any other cell is called once per time step with ops, so a user's cell needs only
  a ``call(inputs, states)``.

Masking (from `Masking`, ``Embedding(mask_zero=True)`` or ``mask=``): a step whose mask is False
leaves the states unchanged and repeats the previous output (zeros before the first unmasked
step, as Keras), or outputs zeros when ``zero_output_for_mask`` (set by `Bidirectional` for
sequences).
"""

from kerasrs import activations, autodiff, ops
from kerasrs.layers import serialization
from kerasrs.layers.base import InputSpec, Layer
from kerasrs.layers.recurrent import cells as cells_module
from kerasrs.ops import recurrent as fused
from kerasrs.ops.core import constant

_FUSED_CELLS = {cells_module.SimpleRNNCell: fused.simple_rnn, cells_module.LSTMCell: fused.lstm,
                cells_module.GRUCell: fused.gru}


class RNN(Layer):
    """Applies a recurrent ``cell`` to every time step of a sequence.

    Args:
        cell: a cell (``call(inputs, states) -> (output, new_states)`` and a ``state_size``), or
            a list of cells (run as `StackedRNNCells`).
        return_sequences: return the output of every step ``(batch, time, units)`` rather than
            the last ``(batch, units)``. Defaults to False.
        return_state: also return the final states. Defaults to False.
        go_backwards: process the sequence from its end; sequence outputs are then in processing
            (reversed) order, as in Keras.
        stateful: carry the final states of a batch over as the initial states of the next
            (needs a fixed batch size); `reset_state` zeroes them.
        unroll: accepted for Keras compatibility; the computation is the same.
        zero_output_for_mask: masked steps output zeros instead of the previous output.
        **kwargs: base `Layer` arguments.

    Call arguments: ``sequences (batch, time, features)``, ``initial_state`` (a list of
    ``(batch, state_size)`` tensors), ``mask (batch, time)`` booleans, ``training``.

    Raises:
        ValueError: for a cell without ``state_size``, an input that is not 3-D, an initial state
            or mask of the wrong shape, or a stateful layer without a fixed batch size; each names
            the layer and the shapes.
    """

    supports_masking = True
    _from_config_takes_custom_objects = True

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, zero_output_for_mask=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(cell, (list, tuple)):
            cell = cells_module.StackedRNNCells(cell)
        if getattr(cell, "state_size", None) is None or not callable(cell):
            raise ValueError(f"{self.name}: `cell` must be callable and have a `state_size`. "
                             f"Received: cell={cell!r}")
        self.cell = cell
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.stateful = bool(go_backwards), bool(stateful)
        self.unroll, self.zero_output_for_mask = bool(unroll), bool(zero_output_for_mask)
        self.states = None
        self.input_spec = InputSpec(min_ndim=3)

    @property
    def state_size(self):
        size = self.cell.state_size
        return list(size) if isinstance(size, (list, tuple)) else [size]

    def build(self, sequences_shape, initial_state_shape=None):
        sequences_shape = tuple(sequences_shape)
        if len(sequences_shape) < 3:
            raise ValueError(f"{self.name}: expected a 3-D input (batch, time, features). "
                             f"Received: input shape {sequences_shape}")
        if isinstance(self.cell, Layer) and not self.cell.built:
            self.cell.build((sequences_shape[0],) + sequences_shape[2:])
            self.cell.built = True
        if sequences_shape[-1] is not None:  # later calls must bring the same feature count
            spec = self.input_spec
            self.input_spec = InputSpec(ndim=getattr(spec, "ndim", None), min_ndim=3,
                                        axes={-1: sequences_shape[-1]})
        if self.stateful:
            if sequences_shape[0] is None:
                raise ValueError(f"{self.name}: a stateful RNN needs a fixed batch size (give "
                                 f"Input(batch_size=...)). Received: input shape {sequences_shape}")
            self.states = self.get_initial_state(sequences_shape[0])

    def get_initial_state(self, batch_size):
        """Zero states for ``batch_size`` sequences (or the cell's own initial states)."""
        make = getattr(self.cell, "get_initial_state", None)
        if make is not None:
            states = make(batch_size=batch_size)
            return list(states) if isinstance(states, (list, tuple)) else [states]
        return [ops.zeros((batch_size, n), dtype=self.compute_dtype) for n in self.state_size]

    def reset_state(self):
        """Zero the carried states of a stateful layer."""
        if self.states is not None:
            self.states = [ops.zeros_like(s) for s in self.states]

    reset_states = reset_state

    def call(self, sequences, initial_state=None, mask=None, training=False):
        if sequences.ndim != 3:
            raise ValueError(f"{self.name}: expected a 3-D input (batch, time, features). "
                             f"Received: input shape {sequences.shape}")
        batch, steps = sequences.shape[:2]
        states = self._initial_states(initial_state, batch)
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        if mask is not None:
            mask = self._check_mask(mask, batch, steps, sequences.backend)
        run = self._fused_call if self._can_fuse() else self._step_call
        output, final = run(sequences, states, mask, training)
        if self.stateful:
            self.states = [autodiff.Tensor(s.data.copy(), backend=s.backend) for s in final]
        return (output,) + tuple(self._nested(final)) if self.return_state else output

    def _nested(self, flat):
        """Returned states (or their shapes): grouped per cell for stacked cells."""
        nest = getattr(self.cell, "nest_states", None)
        return nest(flat) if nest is not None else flat

    def _initial_states(self, initial_state, batch):
        if initial_state is None:
            carried = self.stateful and self.states is not None
            if carried and self.states[0].shape[0] != batch:
                raise ValueError(f"{self.name}: a stateful RNN carries its states from batch to "
                                 "batch, so every batch must have the same batch size. The "
                                 f"carried states have batch size {self.states[0].shape[0]}. "
                                 f"Received: inputs with batch size {batch}")
            states = self.states if carried else self.get_initial_state(batch)
        else:
            states = autodiff._flatten(list(initial_state)) if isinstance(
                initial_state, (list, tuple)) else [initial_state]  # also grouped per cell
        if len(states) != len(self.state_size):
            raise ValueError(f"{self.name}: expected {len(self.state_size)} initial state(s) of "
                             f"sizes {self.state_size}. Received: {len(states)} state(s)")
        out = []
        for s, n in zip(states, self.state_size):
            s = autodiff.convert_to_tensor(s)
            if s.dtype != self.compute_dtype:
                s = ops.cast(s, self.compute_dtype)
            if tuple(s.shape) != (batch, n):
                raise ValueError(f"{self.name}: each initial state must have shape (batch, "
                                 f"units) = {(batch, n)}. Received: state shape {s.shape}")
            out.append(s)
        return out

    def _check_mask(self, mask, batch, steps, be):
        m = mask.data if isinstance(mask, autodiff.Tensor) else be.xp.asarray(mask)
        if m.ndim == 3 and m.shape[-1] == 1:
            m = m[..., 0]
        if tuple(m.shape) != (batch, steps):
            raise ValueError(f"{self.name}: the mask must have shape (batch, time) = "
                             f"{(batch, steps)}. Received: mask shape {tuple(m.shape)}")
        return m.astype(bool, copy=False)  # a view: a traced graph finds the mask op

    def _can_fuse(self):
        fn = _FUSED_CELLS.get(type(self.cell))
        if fn is None:
            return False
        names = [activations.serialize(self.cell.activation)]
        if hasattr(self.cell, "recurrent_activation"):
            names.append(activations.serialize(self.cell.recurrent_activation))
        return all(n in fused.FUSED_ACTIVATIONS for n in names)

    def _fused_call(self, x, states, mask, training):
        """The whole sequence as one op of `kerasrs.ops.recurrent`."""
        cell, be = self.cell, x.backend
        batch = x.shape[0]
        if training and 0 < cell.dropout < 1:
            keep = cells_module.dropout_mask(cell, (batch, 1, x.shape[2]), cell.dropout,
                                             x.dtype, be)
            x = ops.multiply(x, constant(keep, be))
        rmask = None
        if training and 0 < cell.recurrent_dropout < 1:
            rmask = cells_module.dropout_mask(cell, (batch, cell.units), cell.recurrent_dropout,
                                              x.dtype, be)
        want_states = self.return_state or self.stateful
        kwargs = dict(mask=mask, go_backwards=self.go_backwards,
                      return_sequences=self.return_sequences, return_state=want_states,
                      recurrent_dropout_mask=rmask, zero_output_for_mask=self.zero_output_for_mask,
                      activation=activations.serialize(cell.activation))
        if not isinstance(cell, cells_module.SimpleRNNCell):
            kwargs["recurrent_activation"] = activations.serialize(cell.recurrent_activation)
        if isinstance(cell, cells_module.GRUCell):
            kwargs["reset_after"] = cell.reset_after
        init = states if isinstance(cell, cells_module.LSTMCell) else states[0]
        result = _FUSED_CELLS[type(cell)](x, cell.kernel, cell.recurrent_kernel, cell.bias,
                                          initial_state=init, **kwargs)
        return (result[0], list(result[1:])) if want_states else (result, [])

    def _step_call(self, x, states, mask, training):
        """Any cell, called once per step; masked steps carry states and outputs with `where`."""
        steps = x.shape[1]
        order = range(steps - 1, -1, -1) if self.go_backwards else range(steps)
        kwargs = {"training": training} if getattr(self.cell, "_call_has_training", False) else {}
        if hasattr(self.cell, "reset_dropout_mask"):
            self.cell.reset_dropout_mask()
            self.cell.reset_recurrent_dropout_mask()
        outputs, prev = [], None
        for t in order:
            out, new = self.cell(x[:, t], list(states), **kwargs)  # a list, also of one state
            new = list(new) if isinstance(new, (list, tuple)) else [new]
            if mask is not None:
                keep = constant(mask[:, t:t + 1], x.backend)
                if prev is None:
                    prev = ops.zeros_like(out)
                out = ops.where(keep, out, ops.zeros_like(out) if self.zero_output_for_mask
                                else prev)
                new = [ops.where(keep, n, s) for n, s in zip(new, states)]
            prev, states = out, new
            outputs.append(out)
        if hasattr(self.cell, "reset_dropout_mask"):
            self.cell.reset_dropout_mask()
            self.cell.reset_recurrent_dropout_mask()
        output = ops.stack(outputs, axis=1) if self.return_sequences else outputs[-1]
        return output, states

    def compute_output_shape(self, sequences_shape, initial_state_shape=None):
        batch, steps = sequences_shape[0], sequences_shape[1]
        size = getattr(self.cell, "output_size", None) or self.state_size[0]
        out = (batch, steps, size) if self.return_sequences else (batch, size)
        if self.return_state:
            return (out,) + tuple(self._nested([(batch, n) for n in self.state_size]))
        return out

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        out = mask if self.return_sequences else None
        return [out] + [None] * len(self.state_size) if self.return_state else out

    def get_config(self):
        return {**super().get_config(), "return_sequences": self.return_sequences,
                "return_state": self.return_state, "go_backwards": self.go_backwards,
                "stateful": self.stateful, "unroll": self.unroll,
                "zero_output_for_mask": self.zero_output_for_mask,
                "cell": serialization.serialize(self.cell)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        cell = serialization.deserialize(config.pop("cell"), custom_objects)
        return cls(cell, **config)


__all__ = ["RNN"]
