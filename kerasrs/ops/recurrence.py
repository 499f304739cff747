"""The driver of the fused recurrences (`Recurrence`) and the SimpleRNN on it.

`kerasrs.ops.recurrent`'s `simple_rnn`, `lstm` and `gru` each run a complete sequence as one
`Function`, so a tape records one op per layer call instead of ~20 per time step. Only the
recurrent GEMM and the gate arithmetic loop over time, in place on preallocated arrays; backward
is back-propagation through time by hand.

Two layouts:

* `LSTMRecurrence` and `GRUResetAfterRecurrence` (Keras's default GRU) are *batch-major*,
  ``(time, batch, rows)`` with the gates as column blocks: each step's gate arithmetic is one
  call of a backend kernel (``lstm_gates``/``gru_gates`` and their ``_grad``; compiled on the
  CPU, see `kerasrs.backend.cpu_kernels`), every step's pre-activation gradients are kept, and
  the weight and bias gradients are GEMMs over all ``time * batch`` rows at once.
* SimpleRNN and the ``reset_after=False`` GRU work *transposed*, ``(rows, batch)`` per step
  with gate blocks as rows, so each gate block is one contiguous array for NumPy's elementwise
  loops (2-3 times faster than on column slices). Their tanh and sigmoid gates share one
  ``exp``: the weights are pre-scaled per gate (``-1`` for a sigmoid, ``-2`` for a tanh gate), so
  ``r = 1 / (1 + exp(z'))`` is the sigmoid, and ``2 r - 1`` the tanh, of the unscaled
  pre-activation. Backward keeps one step's gate gradients in a reused buffer and accumulates
  the weight gradients with small GEMMs per step.

Semantics and weight layouts are Keras 3's (``keras/src/layers/rnn``): LSTM gates ``i, f, c, o``
in ``kernel (features, 4 units)``, GRU gates ``z, r, h`` with ``reset_after`` and a ``(2, 3
units)`` bias, masked steps carrying the previous state and output forward (or outputting zeros,
``zero_output_for_mask``), ``go_backwards`` returning outputs in processing (reversed) order. The
output before the first unmasked step is zeros, as in Keras's ``backend.rnn``.

Activations from the set `FUSED_ACTIVATIONS` are supported; their derivatives are computed from
their outputs. Other activations need the per-step path (`kerasrs.layers.RNN` with a cell).
"""

import numpy as np

from kerasrs.autodiff import Function
from kerasrs.ops import core
from kerasrs.ops.gates import Gates


# -- the shared driver -----------------------------------------------------------------------------
class Recurrence(Function):
    """One sequence through a recurrent cell; subclasses write ``_step`` and ``_step_back``.

    Inputs: ``x (batch, time, features)``, ``kernel``, ``recurrent_kernel``, then ``bias`` if
    ``use_bias``, then the initial states (``batch, units`` each). The output packs everything a
    caller may need along axis 1, ``(batch, K, units)``: the outputs of all steps (or the last
    one), then the final states when ``return_state``; the public functions slice it.
    Internally arrays are ``(time, rows, batch)``, see the module docstring.
    """
    half_in_float32 = "cpu"

    n_states = 1
    n_gates = 1
    batch_major = False  # per-step arrays (batch, rows) instead of (rows, batch) (`LSTMRecurrence`)

    def __init__(self, units, activations, use_bias, mask, recurrent_mask, go_backwards,
                 return_sequences, return_state, zero_output_for_mask):
        self.units, self.activations, self.use_bias = units, activations, use_bias
        self.mask, self.rmask = mask, recurrent_mask
        self.go_backwards, self.return_sequences = go_backwards, return_sequences
        self.return_state, self.zero_output = return_state, zero_output_for_mask

    def forward(self, x, kernel, recurrent_kernel, *rest):
        xp = self.xp
        x, kernel = core.promote(x, kernel)  # integer inputs take the kernel's float dtype
        bias, states = (rest[0], rest[1:]) if self.use_bias else (None, rest)
        batch, steps, _ = x.shape
        xt = x.transpose(1, 2, 0)  # (time, features, batch)
        self.xt = xp.ascontiguousarray(xt[::-1] if self.go_backwards else xt)
        self.kernel, self.rk = kernel, recurrent_kernel
        self.gates = Gates(xp, self._gate_names(), self.units, self.n_gates, x.dtype)
        scale = self.gates.prescale
        kernel_f = kernel if scale is None else kernel * scale
        self.rk_f = recurrent_kernel if scale is None else recurrent_kernel * scale
        self.z = xp.matmul(kernel_f.T, self.xt)  # (time, G units, batch): one batched GEMM
        self.rb = None
        if bias is not None:
            b_in = bias if bias.ndim == 1 else bias[0]
            self.z += (b_in if scale is None else b_in * scale)[:, None]
            if bias.ndim == 2:
                self.rb = (bias[1] if scale is None else bias[1] * scale)[:, None]
        self.states = [xp.empty((steps + 1, self.units, batch), x.dtype) for _ in states]
        for s, s0 in zip(self.states, states):
            s[0] = s0.T
        self.rmask_t = None if self.rmask is None else xp.ascontiguousarray(self.rmask.T)
        self.h_in = xp.empty((self.units, batch), x.dtype) if self.rmask is not None else None
        self.buf = xp.empty((self.n_gates * self.units, batch), x.dtype)
        self.buf1 = xp.empty((self.units, batch), x.dtype)
        self._prepare(xp, batch, steps, x.dtype)
        keep = self._time_major_mask(xp, steps)
        self.outs = self.states[0] if keep is None else xp.zeros_like(self.states[0])
        with np.errstate(over="ignore"):  # exp overflow in tanh/sigmoid gives the exact limit
            for t in range(steps):
                self._step(xp, t)
                if keep is not None:
                    self._carry(xp, t, keep[t])
        return self._pack(xp, batch, steps)

    def _prepare(self, xp, batch, steps, dtype):
        """Per-cell arrays kept for the backward pass."""

    def _time_major_mask(self, xp, steps):
        """The mask as ``(time, 1, batch)`` booleans in processing order (None if all True)."""
        if self.mask is None or bool(self.mask.all()):
            self.keep = None
            return None
        keep = self.mask.T[::-1] if self.go_backwards else self.mask.T
        keep = xp.ascontiguousarray(keep)
        self.keep = keep[:, :, None] if self.batch_major else keep[:, None, :]
        return self.keep

    def _carry(self, xp, t, keep):
        """Masked columns: the output repeats the previous output (or is 0); the states carry."""
        drop = ~keep
        out = self.outs[t + 1]
        out[...] = self.states[0][t + 1]
        if self.zero_output:
            out *= keep
        else:
            xp.copyto(out, self.outs[t], where=drop)
        for s in self.states:
            xp.copyto(s[t + 1], s[t], where=drop)

    def _pack(self, xp, batch, steps):
        seq = steps if self.return_sequences else 1
        k = seq + (self.n_states if self.return_state else 0)
        y = xp.empty((batch, k, self.units), self.outs.dtype)
        step = (lambda a: a) if self.batch_major else (lambda a: a.T)  # as (batch, units)
        if self.return_sequences:
            y[:, :steps] = self.outs[1:].transpose((1, 0, 2) if self.batch_major else (2, 0, 1))
        else:
            y[:, 0] = step(self.outs[steps])
        if self.return_state:
            for j, s in enumerate(self.states):
                y[:, seq + j] = step(s[steps])
        return y

    def _h_in(self, xp, t):
        """The previous output as the recurrent GEMM sees it (after recurrent dropout)."""
        h = self.states[0][t]
        if self.rmask is None:
            return h
        xp.multiply(h, self.rmask_t, out=self.h_in)
        return self.h_in

    # -- backward --------------------------------------------------------------------------------
    def backward(self, gy):
        xp = self.xp
        steps, _, batch = self.z.shape
        seq = steps if self.return_sequences else 1
        d_states = [xp.zeros((self.units, batch), gy.dtype) for _ in self.states]
        if self.return_state:
            for j, d in enumerate(d_states):
                d += gy[:, seq + j].T
        g_out = xp.ascontiguousarray(gy[:, :steps].transpose(1, 2, 0)) \
            if self.return_sequences else None
        d_out = xp.zeros_like(d_states[0]) if self.keep is not None else None
        self._prepare_back(xp, batch, steps, gy.dtype)
        for t in range(steps - 1, -1, -1):
            g = g_out[t] if g_out is not None else gy[:, 0].T if t == steps - 1 else None
            if self.keep is None:
                if g is not None:
                    d_states[0] += g
                d_states = self._step_back(xp, t, d_states)
            else:
                d_states, d_out = self._masked_step_back(xp, t, d_states, d_out, g)
            self._accumulate(xp, t)
        return self._grads(xp) + tuple(d.T for d in d_states)

    def _masked_step_back(self, xp, t, d_states, d_out, g):
        keep = self.keep[t]
        if g is not None:
            d_out = d_out + g
        kept = [xp.where(keep, 0.0, d) for d in d_states]
        d_new = [d * keep for d in d_states]
        d_new[0] += d_out * keep
        d_out = xp.zeros_like(d_out) if self.zero_output else xp.where(keep, 0.0, d_out)
        d_prev = self._step_back(xp, t, d_new)
        return [d + k for d, k in zip(d_prev, kept)], d_out

    def _prepare_back(self, xp, batch, steps, dtype):
        need = self.needs_grad
        gu = self.n_gates * self.units
        self.dz = xp.empty((gu, batch), dtype)  # this step's pre-activation gradients
        self.gx = xp.empty((steps,) + self.xt.shape[1:], dtype) if need[0] else None
        self.gk = xp.zeros(self.kernel.shape, dtype) if need[1] else None
        self.grk = xp.zeros(self.rk.shape, dtype) if need[2] else None
        self.tmp_k = xp.empty(self.kernel.shape, dtype)
        self.tmp_rk = xp.empty(self.rk.shape, dtype)
        self.gb = xp.zeros((gu, batch), dtype) if self.use_bias and need[3] else None

    def _accumulate(self, xp, t):
        """Add this step's contributions to the kernel, bias and input gradients."""
        dz = self.dz
        if self.gk is not None:
            xp.matmul(self.xt[t], dz.T, out=self.tmp_k)
            self.gk += self.tmp_k
        if self.gx is not None:
            xp.matmul(self.kernel, dz, out=self.gx[t])
        if self.gb is not None:
            self.gb += dz

    def _accumulate_recurrent(self, xp, h_in, dz, cols=slice(None)):
        """``grad(recurrent_kernel)[:, cols] += h_in @ dz.T``."""
        if self.grk is not None:
            tmp = self.tmp_rk[:, cols]
            xp.matmul(h_in, dz.T, out=tmp)
            self.grk[:, cols] += tmp

    def _grads(self, xp):
        """Gradients of x, kernel, recurrent_kernel (and bias)."""
        gx = None
        if self.gx is not None:
            gx = (self.gx[::-1] if self.go_backwards else self.gx).transpose(2, 0, 1)
        out = (gx, self.gk, self.grk)
        if self.use_bias:
            out += (None if self.gb is None else self._bias_grad(xp),)
        return out

    def _bias_grad(self, xp):
        return self.gb @ xp.ones(self.gb.shape[1], self.gb.dtype)


class SimpleRNNRecurrence(Recurrence):
    """``h_t = activation(x_t @ kernel + h_{t-1} @ recurrent_kernel + bias)``."""

    def _gate_names(self):
        return (self.activations[0],)

    def _step(self, xp, t):
        z = self.z[t]
        xp.matmul(self.rk_f.T, self._h_in(xp, t), out=self.buf)
        z += self.buf
        self.gates.apply(xp, z)
        self.states[0][t + 1] = z

    def _step_back(self, xp, t, d_states):
        dz = self.dz
        self.gates.derivative(xp, self.z[t], dz)
        dz *= d_states[0]
        self._accumulate_recurrent(xp, self._h_in(xp, t), dz)
        dh = xp.matmul(self.rk, dz)
        if self.rmask is not None:
            dh *= self.rmask_t
        return [dh]
