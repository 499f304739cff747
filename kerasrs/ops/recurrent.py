"""Fused recurrences: a whole SimpleRNN, LSTM or GRU sequence as one differentiable op.

Each public function (`simple_rnn`, `lstm`, `gru`) checks its arguments and runs a complete
sequence as one `Function` (`kerasrs.ops.recurrence` and `kerasrs.ops.gated_recurrence`), so a
tape records one op per layer call instead of ~20 per time step. Semantics and weight layouts
are Keras 3's (``keras/src/layers/rnn``). Activations from the set `FUSED_ACTIVATIONS` are
supported; other activations need the per-step path (`kerasrs.layers.RNN` with a cell).
"""

import numpy as np

from kerasrs.autodiff import Tensor, convert_to_tensor
from kerasrs.ops import core
from kerasrs.ops.gated_recurrence import GRURecurrence, GRUResetAfterRecurrence, LSTMRecurrence
from kerasrs.ops.gates import FUSED_ACTIVATIONS
from kerasrs.ops.recurrence import SimpleRNNRecurrence


# -- public functions ------------------------------------------------------------------------------
def _run(cls, who, inputs, states, kernel, recurrent_kernel, bias, units, gates, activations,
         mask, recurrent_dropout_mask, go_backwards, return_sequences, return_state,
         zero_output_for_mask, **extra):
    """Check the arguments, apply ``cls`` and slice its packed output."""
    x = convert_to_tensor(inputs)
    if x.ndim != 3:
        raise ValueError(f"{who}: `inputs` must be 3-D (batch, time, features). "
                         f"Received: inputs.shape={x.shape}")
    batch, steps, features = x.shape
    if steps == 0:
        raise ValueError(f"{who}: the sequence must have at least one time step. "
                         f"Received: inputs.shape={x.shape}")
    _expect(who, "kernel", kernel, (features, gates * units))
    _expect(who, "recurrent_kernel", recurrent_kernel, (units, gates * units))
    for name, s in zip(("initial h", "initial c"), states):
        _expect(who, name, s, (batch, units))
    for a in activations:
        if a not in FUSED_ACTIVATIONS:
            raise ValueError(f"{who}: activation {a!r} has no fused form; use one of "
                             f"{FUSED_ACTIVATIONS} or layers.RNN with a cell. Received: {a!r}")
    be = x.backend
    mask = _mask_array(who, mask, batch, steps, be)
    rmask = None if recurrent_dropout_mask is None else \
        be.xp.asarray(core.raw(recurrent_dropout_mask), dtype=x.dtype)
    if rmask is not None and rmask.shape != (batch, units):
        raise ValueError(f"{who}: recurrent_dropout_mask must have shape {(batch, units)}. "
                         f"Received: shape {rmask.shape}")
    fn = cls(units, activations, bias is not None, mask, rmask, go_backwards, return_sequences,
             return_state, zero_output_for_mask, **extra)
    args = [x, kernel, recurrent_kernel] + ([bias] if bias is not None else []) + list(states)
    y = fn.apply(*args)
    seq = steps if return_sequences else 1
    outputs = y[:, :steps] if return_sequences else y[:, 0]
    if return_state and len(states) == 1:
        return outputs, y[:, seq]
    return (outputs,) + tuple(y[:, seq + j] for j in range(len(states))) if return_state \
        else outputs


def _expect(who, name, value, shape):
    got = tuple(np.shape(core.raw(value)))
    if got != tuple(shape):
        raise ValueError(f"{who}: `{name}` must have shape {tuple(shape)}. Received: shape {got}")


def _mask_array(who, mask, batch, steps, be):
    if mask is None:
        return None
    m = be.xp.asarray(core.raw(mask))
    if m.ndim == 3 and m.shape[-1] == 1:
        m = m[..., 0]
    if m.shape != (batch, steps):
        raise ValueError(f"{who}: the mask must have shape (batch, time) = {(batch, steps)}. "
                         f"Received: mask shape {tuple(m.shape)}")
    return m.astype(bool, copy=False)  # a view of a bool mask (a traced graph finds its op)


def _zeros_state(x, units):
    x = convert_to_tensor(x)
    return Tensor(x.backend.xp.zeros((x.shape[0], units), x.dtype), backend=x.backend)


def simple_rnn(inputs, kernel, recurrent_kernel, bias=None, initial_state=None, mask=None,
               activation="tanh", go_backwards=False, return_sequences=False,
               return_state=False, recurrent_dropout_mask=None, zero_output_for_mask=False):
    """A whole fully-connected RNN sequence, ``h_t = act(x_t W + h_{t-1} U + b)``, as one op.

    Args:
        inputs: float Tensor ``(batch, time, features)``.
        kernel: ``(features, units)``. recurrent_kernel: ``(units, units)``.
        bias: ``(units,)`` or None.
        initial_state: ``(batch, units)`` or None (zeros).
        mask: bool ``(batch, time)`` or None: False steps carry the state and output forward.
        activation: a name in `FUSED_ACTIVATIONS`.
        go_backwards: process the sequence from the last step; outputs are in that order.
        return_sequences: outputs of every step ``(batch, time, units)``, else the last
            ``(batch, units)``.
        return_state: also return the final state.
        recurrent_dropout_mask: ``(batch, units)`` multiplier of ``h_{t-1}`` before the
            recurrent GEMM (already scaled by ``1 / (1 - rate)``), or None.
        zero_output_for_mask: masked steps output zeros instead of the previous output.

    Returns:
        ``outputs``, or ``(outputs, final_h)`` with ``return_state``.

    Raises:
        ValueError: for inputs that are not 3-D, weights or states of the wrong shape, a mask
            not shaped ``(batch, time)``, or an activation without a fused form.
    """
    h0 = _zeros_state(inputs, np.shape(core.raw(recurrent_kernel))[0]) \
        if initial_state is None else initial_state
    units = np.shape(core.raw(recurrent_kernel))[0]
    return _run(SimpleRNNRecurrence, "simple_rnn", inputs, [h0], kernel, recurrent_kernel, bias,
                units, 1, (activation,), mask, recurrent_dropout_mask, go_backwards,
                return_sequences, return_state, zero_output_for_mask)


def lstm(inputs, kernel, recurrent_kernel, bias=None, initial_state=None, mask=None,
         activation="tanh", recurrent_activation="sigmoid", go_backwards=False,
         return_sequences=False, return_state=False, recurrent_dropout_mask=None,
         zero_output_for_mask=False):
    """A whole LSTM sequence (Hochreiter & Schmidhuber, 1997; Keras's gate layout) as one op.

    ``[i, f, c~, o] = x_t W + h_{t-1} U + b`` through ``recurrent_activation`` (i, f, o) and
    ``activation`` (c~); ``c_t = f c_{t-1} + i c~``; ``h_t = o * activation(c_t)``.

    Args:
        inputs: float Tensor ``(batch, time, features)``.
        kernel: ``(features, 4 units)``, gate blocks ``i, f, c, o``.
        recurrent_kernel: ``(units, 4 units)``. bias: ``(4 units,)`` or None.
        initial_state: ``[h0, c0]``, each ``(batch, units)``, or None (zeros).
        mask, go_backwards, return_sequences, recurrent_dropout_mask, zero_output_for_mask:
            as in `simple_rnn`.
        activation, recurrent_activation: names in `FUSED_ACTIVATIONS`.
        return_state: also return the final ``h`` and ``c``.

    Returns:
        ``outputs``, or ``(outputs, final_h, final_c)`` with ``return_state``.

    Raises:
        ValueError: as `simple_rnn`.
    """
    units = np.shape(core.raw(recurrent_kernel))[0]
    states = [_zeros_state(inputs, units)] * 2 if initial_state is None else list(initial_state)
    if len(states) != 2:
        raise ValueError(f"lstm: initial_state must be [h, c]. Received: {len(states)} tensors")
    return _run(LSTMRecurrence, "lstm", inputs, states, kernel, recurrent_kernel, bias, units, 4,
                (activation, recurrent_activation), mask, recurrent_dropout_mask, go_backwards,
                return_sequences, return_state, zero_output_for_mask)


def gru(inputs, kernel, recurrent_kernel, bias=None, initial_state=None, mask=None,
        activation="tanh", recurrent_activation="sigmoid", reset_after=True, go_backwards=False,
        return_sequences=False, return_state=False, recurrent_dropout_mask=None,
        zero_output_for_mask=False):
    """A whole GRU sequence (Cho et al., 2014; Keras's gate layout ``z, r, h``) as one op.

    ``z, r = recurrent_activation(x W + h_{t-1} U + b)`` on their blocks;
    ``h~ = activation(x W_h + r * (h_{t-1} U_h + b_rec_h))`` with ``reset_after`` (Keras's
    default, bias ``(2, 3 units)``: input and recurrent rows), else
    ``activation(x W_h + (r * h_{t-1}) U_h)`` with bias ``(3 units,)``;
    ``h_t = z h_{t-1} + (1 - z) h~``.

    Args:
        inputs: float Tensor ``(batch, time, features)``.
        kernel: ``(features, 3 units)``. recurrent_kernel: ``(units, 3 units)``.
        bias: ``(2, 3 units)`` with ``reset_after``, else ``(3 units,)``; or None.
        initial_state: ``(batch, units)`` or None (zeros).
        Other arguments: as `lstm`.

    Returns:
        ``outputs``, or ``(outputs, final_h)`` with ``return_state``.

    Raises:
        ValueError: as `simple_rnn`, and for a bias of the wrong shape.
    """
    units = np.shape(core.raw(recurrent_kernel))[0]
    if bias is not None:
        _expect("gru", "bias", bias, (2, 3 * units) if reset_after else (3 * units,))
    h0 = _zeros_state(inputs, units) if initial_state is None else initial_state
    return _run(GRUResetAfterRecurrence if reset_after else GRURecurrence, "gru", inputs, [h0],
                kernel, recurrent_kernel, bias, units, 3,
                (activation, recurrent_activation), mask, recurrent_dropout_mask, go_backwards,
                return_sequences, return_state, zero_output_for_mask, reset_after=reset_after)
