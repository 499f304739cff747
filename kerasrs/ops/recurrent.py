"""Fused recurrences: a whole SimpleRNN, LSTM or GRU sequence as one differentiable op.

Each public function (`simple_rnn`, `lstm`, `gru`) runs a complete sequence as one `Function`,
so a tape records one op per layer call instead of ~20 per time step. Only the recurrent GEMM
and the gate arithmetic loop over time, in place on preallocated arrays; backward is
back-propagation through time by hand.

Two layouts:

* `_LSTM` and `_GRUResetAfter` (Keras's default GRU) are *batch-major*, ``(time, batch, rows)``
  with the gates as column blocks: each step's gate arithmetic is one call of a backend kernel
  (``lstm_gates``/``gru_gates`` and their ``_grad``; compiled on the CPU, see
  `kerasrs.backend.cpu_kernels`), every step's pre-activation gradients are kept, and the
  weight and bias gradients are GEMMs over all ``time * batch`` rows at once.
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

from kerasrs.autodiff import Function, Tensor, convert_to_tensor
from kerasrs.ops import core
from kerasrs.ops.gates import FUSED_ACTIVATIONS, Gates, activate, derivative


# -- the shared driver -----------------------------------------------------------------------------
class _Recurrence(Function):
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
    batch_major = False  # per-step arrays (batch, rows) instead of (rows, batch) (`_LSTM`)

    def __init__(self, units, activations, use_bias, mask, recurrent_mask, go_backwards,
                 return_sequences, return_state, zero_output_for_mask):
        self.units, self.activations, self.use_bias = units, activations, use_bias
        self.mask, self.rmask = mask, recurrent_mask
        self.go_backwards, self.return_sequences = go_backwards, return_sequences
        self.return_state, self.zero_output = return_state, zero_output_for_mask

    def forward(self, x, kernel, recurrent_kernel, *rest):
        xp = self.xp
        x, kernel = core._promote(x, kernel)  # integer inputs take the kernel's float dtype
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


class _SimpleRNN(_Recurrence):
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


class _LSTM(_Recurrence):
    """Keras's LSTM step: gates ``i, f, c~, o``; ``c_t = f c_{t-1} + i c~``; ``h_t = o act(c_t)``.

    Unlike the other cells it works *batch-major*, ``(time, batch, units)`` arrays with the gates
    as column blocks of ``(time, batch, 4 units)``: the layout of the backend kernels
    ``lstm_gates`` (one call per step forward) and ``lstm_gates_grad`` (one per step back).
    Each step's pre-activations are one GEMM, ``[x_t, h_{t-1}, 1] @ [kernel; recurrent_kernel;
    bias]``, from a ``(time, batch, features + units + 1)`` array that also serves backward:
    the kernel, recurrent-kernel and bias gradients are then one GEMM over all steps (a GEMM
    with ``features`` rows of inner dimension, as a separate input projection needs, runs at
    half the rate of the larger ones). Per step back only ``dz_t @ recurrent_kernel.T`` remains.
    """

    n_states = 2
    n_gates = 4
    batch_major = True

    def forward(self, x, kernel, recurrent_kernel, *rest):
        xp, be = self.xp, self.backend
        x, kernel = core._promote(x, kernel)  # integer inputs take the kernel's float dtype
        bias, states = (rest[0], rest[1:]) if self.use_bias else (None, rest)
        batch, steps, features = x.shape
        u, f = self.units, features
        self.kernel, self.rk = kernel, recurrent_kernel
        # [x_t, h_{t-1} (after recurrent dropout), 1] for every step, and the stacked weights
        self.xh = be.empty((steps, batch, f + u + (bias is not None)), x.dtype)
        xs = x.transpose(1, 0, 2)
        self.xh[:, :, :f] = xs[::-1] if self.go_backwards else xs
        if bias is not None:
            self.xh[:, :, f + u] = 1
        w = xp.concatenate([kernel, recurrent_kernel] + ([bias[None]] if bias is not None else []))
        self.z = be.empty((steps, batch, 4 * u), x.dtype)  # pre-activations, then the gates
        self.states = [be.empty((steps + 1, batch, u), x.dtype) for _ in range(2)]
        for s, s0 in zip(self.states, states):
            s[0] = s0
        self.tc = be.empty((steps, batch, u), x.dtype)  # act(c_t) before any masking
        keep = self._time_major_mask(xp, steps)
        self.outs = self.states[0] if keep is None else xp.zeros_like(self.states[0])
        h, c = self.states
        for t in range(steps):
            h_in = self.xh[t, :, f:f + u]
            if self.rmask is None:
                h_in[...] = h[t]
            else:
                xp.multiply(h[t], self.rmask, out=h_in)
            xp.matmul(self.xh[t], w, out=self.z[t])
            be.lstm_gates(self.z[t], c[t], *self.activations, out=(h[t + 1], c[t + 1], self.tc[t]))
            if keep is not None:
                self._carry(xp, t, keep[t])
        return self._pack(xp, batch, steps)

    def backward(self, gy):
        xp = self.xp
        steps, batch, gu = self.z.shape
        u = self.units
        seq = steps if self.return_sequences else 1
        d_states = [xp.zeros((batch, u), gy.dtype) for _ in range(2)]
        if self.return_state:
            for j, d in enumerate(d_states):
                d += gy[:, seq + j]
        g_out = gy[:, :steps].transpose(1, 0, 2) if self.return_sequences else None
        d_out = xp.zeros_like(d_states[0]) if self.keep is not None else None
        self.dz = self.backend.empty((steps, batch, gu), gy.dtype)  # all steps' dz, for the GEMMs
        self.dc_buffers = [xp.empty((batch, u), gy.dtype) for _ in range(2)]
        self.dh_buffers = [xp.empty((batch, u), gy.dtype) for _ in range(2)]
        self.rk_t = xp.ascontiguousarray(self.rk.T)  # a C-order B runs ~15 % faster per step
        need_states = any(self.needs_grad[-2:])  # else the first step needs no dh_{t-1} GEMM
        for t in range(steps - 1, -1, -1):
            g = g_out[t] if g_out is not None else gy[:, 0] if t == steps - 1 else None
            if self.keep is None:
                if g is not None:
                    d_states[0] += g
                d_states = self._step_back(xp, t, d_states, t > 0 or need_states)
            else:
                d_states, d_out = self._masked_step_back(xp, t, d_states, d_out, g)
        return self._weight_grads(xp) + tuple(d_states)

    def _step_back(self, xp, t, d_states, need_dh=True):
        """``dz_t`` into ``self.dz[t]``; returns the gradients of ``h_{t-1}`` and ``c_{t-1}``.
        Two buffers each: a step never writes the one it reads."""
        dh, dc = d_states
        dz, dc_prev = self.dz[t], self.dc_buffers[t % 2]
        self.backend.lstm_gates_grad(self.z[t], self.states[1][t], self.tc[t], dh, dc,
                                     *self.activations, out=(dz, dc_prev))
        if not need_dh:
            return [None, None]
        dh = xp.matmul(dz, self.rk_t, out=self.dh_buffers[t % 2])
        if self.rmask is not None:
            dh *= self.rmask
        return [dh, dc_prev]

    def _weight_grads(self, xp):
        """Gradients of x (one GEMM) and of kernel, recurrent_kernel and bias (together one
        GEMM: ``[x, h_in, 1].T @ dz`` over all steps)."""
        steps, batch, gu = self.dz.shape
        need, f, u = self.needs_grad, self.kernel.shape[0], self.units
        dz = self.dz.reshape(-1, gu)
        gx = None
        if need[0]:
            gx = (dz @ self.kernel.T).reshape(steps, batch, f)
            gx = (gx[::-1] if self.go_backwards else gx).transpose(1, 0, 2)
        gw = None
        if any(need[1:3 + self.use_bias]):
            gw = self.xh.reshape(-1, self.xh.shape[2]).T @ dz
        grads = [gw[:f] if need[1] else None, gw[f:f + u] if need[2] else None]
        if self.use_bias:
            grads.append(gw[f + u] if need[3] else None)
        return (gx, *grads)


class _GRU(_Recurrence):
    """Keras's GRU step (gates ``z, r, h``), with ``reset_after`` True or False, in the
    transposed layout; `gru` uses it for ``reset_after=False`` (`_GRUResetAfter` otherwise)."""

    n_gates = 3

    def __init__(self, *args, reset_after=True, **kwargs):
        super().__init__(*args, **kwargs)
        self.reset_after = reset_after

    def _gate_names(self):
        return (self.activations[1],) * 2

    def _prepare(self, xp, batch, steps, dtype):
        # reset_after: h U_h + b_h per step (needed for d r); else r * h_{t-1} per step
        self.hu = xp.empty((steps, self.units, batch), dtype)

    def _step(self, xp, t):
        u = self.units
        z, h_prev, hu = self.z[t], self.states[0][t], self.hu[t]
        h_in = self._h_in(xp, t)
        if self.reset_after:
            xp.matmul(self.rk_f.T, h_in, out=self.buf)
            if self.rb is not None:
                self.buf += self.rb
            z[:2 * u] += self.buf[:2 * u]
        else:
            xp.matmul(self.rk_f[:, :2 * u].T, h_in, out=self.buf[:2 * u])
            z[:2 * u] += self.buf[:2 * u]
        self.gates.apply(xp, z)
        zg, r, hh = z[:u], z[u:2 * u], z[2 * u:]
        if self.reset_after:
            hu[...] = self.buf[2 * u:]
            xp.multiply(r, hu, out=self.buf1)
        else:
            xp.multiply(r, h_in, out=hu)
            xp.matmul(self.rk_f[:, 2 * u:].T, hu, out=self.buf1)
        hh += self.buf1
        activate(xp, hh, self.activations[0])
        h = self.states[0][t + 1]
        xp.subtract(h_prev, hh, out=h)  # h = hh + z (h_prev - hh)
        h *= zg
        h += hh

    def _prepare_back(self, xp, batch, steps, dtype):
        super()._prepare_back(xp, batch, steps, dtype)
        self.dhu = xp.empty_like(self.dz)  # gradient of h U + b_rec (reset_after)
        self.gbr = xp.zeros_like(self.dz) if self.gb is not None and self.reset_after else None

    def _step_back(self, xp, t, d_states):
        u = self.units
        dh = d_states[0]
        z, dz, h_prev, hu, b1 = self.z[t], self.dz, self.states[0][t], self.hu[t], self.buf1
        zg, r, hh = z[:u], z[u:2 * u], z[2 * u:]
        h_in = self._h_in(xp, t)
        d_pre_h = dz[2 * u:]
        derivative(xp, hh, self.activations[0], d_pre_h)
        xp.subtract(1.0, zg, out=b1)
        b1 *= dh
        d_pre_h *= b1  # d (x_h + r * hu): dh (1 - z) act'
        xp.subtract(h_prev, hh, out=dz[:u])
        dz[:u] *= dh  # d z (before the derivative)
        if self.reset_after:
            xp.multiply(d_pre_h, hu, out=dz[u:2 * u])  # d r
        else:
            d_rh = xp.matmul(self.rk[:, 2 * u:], d_pre_h)
            xp.multiply(d_rh, h_in, out=dz[u:2 * u])
        self.gates.derivative(xp, z, self.buf)
        dz[:2 * u] *= self.buf[:2 * u]
        if self.reset_after:
            dhu = self.dhu
            dhu[:2 * u] = dz[:2 * u]
            xp.multiply(d_pre_h, r, out=dhu[2 * u:])
            self._accumulate_recurrent(xp, h_in, dhu)
            if self.gbr is not None:
                self.gbr += dhu
            d_in = xp.matmul(self.rk, dhu)
        else:
            self._accumulate_recurrent(xp, h_in, dz[:2 * u], slice(0, 2 * u))
            self._accumulate_recurrent(xp, hu, d_pre_h, slice(2 * u, None))
            d_in = xp.matmul(self.rk[:, :2 * u], dz[:2 * u])
            d_rh *= r
            d_in += d_rh
        if self.rmask is not None:
            d_in *= self.rmask_t
        b1[...] = dh
        b1 *= zg
        d_in += b1
        return [d_in]

    def _bias_grad(self, xp):
        gb = super()._bias_grad(xp)
        if not self.reset_after:
            return gb
        return xp.stack([gb, self.gbr @ xp.ones(self.gbr.shape[1], self.gbr.dtype)])


class _GRUResetAfter(_Recurrence):
    """Keras's default GRU (``reset_after=True``), batch-major like `_LSTM`: the input
    projection ``x @ kernel + input_bias`` of all steps is one GEMM; per step
    ``[h_{t-1}, 1] @ [recurrent_kernel; recurrent_bias]`` is one GEMM and the gate arithmetic
    one call of the backend kernel ``gru_gates`` (``gru_gates_grad`` back); the weight and bias
    gradients are two GEMMs over all steps."""

    n_gates = 3
    batch_major = True

    def __init__(self, *args, reset_after=True, **kwargs):
        super().__init__(*args, **kwargs)

    def forward(self, x, kernel, recurrent_kernel, *rest):
        xp, be = self.xp, self.backend
        x, kernel = core._promote(x, kernel)  # integer inputs take the kernel's float dtype
        bias, states = (rest[0], rest[1:]) if self.use_bias else (None, rest)
        batch, steps, features = x.shape
        u, gu = self.units, 3 * self.units
        xs = x.transpose(1, 0, 2)
        self.xs = xp.ascontiguousarray(xs[::-1] if self.go_backwards else xs)
        self.kernel, self.rk = kernel, recurrent_kernel
        self.xz = be.empty((steps, batch, gu), x.dtype)  # input projections, then the gates
        xp.matmul(self.xs.reshape(-1, features), kernel, out=self.xz.reshape(-1, gu))
        # [h_{t-1} (after recurrent dropout), 1] per step, and the stacked recurrent weights
        self.h1 = be.empty((steps, batch, u + (bias is not None)), x.dtype)
        w = recurrent_kernel
        if bias is not None:
            self.xz += bias[0]
            self.h1[:, :, u] = 1
            w = xp.concatenate([recurrent_kernel, bias[1][None]])
        self.hz = be.empty((steps, batch, gu), x.dtype)  # recurrent projections
        self.states = [be.empty((steps + 1, batch, u), x.dtype)]
        h = self.states[0]
        h[0] = states[0]
        keep = self._time_major_mask(xp, steps)
        self.outs = h if keep is None else xp.zeros_like(h)
        for t in range(steps):
            h_in = self.h1[t, :, :u]
            if self.rmask is None:
                h_in[...] = h[t]
            else:
                xp.multiply(h[t], self.rmask, out=h_in)
            xp.matmul(self.h1[t], w, out=self.hz[t])
            be.gru_gates(self.xz[t], self.hz[t], h[t], *self.activations, out=h[t + 1])
            if keep is not None:
                self._carry(xp, t, keep[t])
        return self._pack(xp, batch, steps)

    def backward(self, gy):
        xp = self.xp
        steps, batch, gu = self.xz.shape
        u = self.units
        seq = steps if self.return_sequences else 1
        d_states = [xp.zeros((batch, u), gy.dtype)]
        if self.return_state:
            d_states[0] += gy[:, seq]
        g_out = gy[:, :steps].transpose(1, 0, 2) if self.return_sequences else None
        d_out = xp.zeros_like(d_states[0]) if self.keep is not None else None
        self.dxz = self.backend.empty((steps, batch, gu), gy.dtype)
        self.dhz = self.backend.empty((steps, batch, gu), gy.dtype)
        self.dh_buffers = [xp.empty((batch, u), gy.dtype) for _ in range(2)]
        self.dh_direct = xp.empty((batch, u), gy.dtype)
        self.rk_t = xp.ascontiguousarray(self.rk.T)
        need_state = self.needs_grad[-1]
        for t in range(steps - 1, -1, -1):
            g = g_out[t] if g_out is not None else gy[:, 0] if t == steps - 1 else None
            if self.keep is None:
                if g is not None:
                    d_states[0] += g
                d_states = self._step_back(xp, t, d_states, t > 0 or need_state)
            else:
                d_states, d_out = self._masked_step_back(xp, t, d_states, d_out, g)
        return self._weight_grads(xp) + tuple(d_states)

    def _step_back(self, xp, t, d_states, need_dh=True):
        """``dxz_t``, ``dhz_t`` into their arrays; returns the gradient of ``h_{t-1}``."""
        dxz, dhz = self.dxz[t], self.dhz[t]
        self.backend.gru_gates_grad(self.xz[t], self.hz[t], self.states[0][t], d_states[0],
                                    *self.activations, out=(dxz, dhz, self.dh_direct))
        if not need_dh:
            return [None]
        dh = xp.matmul(dhz, self.rk_t, out=self.dh_buffers[t % 2])
        if self.rmask is not None:
            dh *= self.rmask
        dh += self.dh_direct
        return [dh]

    def _weight_grads(self, xp):
        """Gradients of x and kernel (GEMMs on ``dxz``), recurrent_kernel and the recurrent bias
        (one GEMM ``[h_in, 1].T @ dhz``) and the input bias (a column sum)."""
        steps, batch, gu = self.dxz.shape
        need, u = self.needs_grad, self.units
        dxz, dhz = self.dxz.reshape(-1, gu), self.dhz.reshape(-1, gu)
        gx = gk = None
        if need[0]:  # (explicit sizes: the batch may be 0)
            gx = (dxz @ self.kernel.T).reshape(steps, batch, self.kernel.shape[0])
            gx = (gx[::-1] if self.go_backwards else gx).transpose(1, 0, 2)
        if need[1]:
            gk = self.xs.reshape(-1, self.xs.shape[2]).T @ dxz
        grads = (gx, gk)
        bias_grad = self.use_bias and need[3]
        if need[2] or bias_grad:
            gw = self.h1.reshape(-1, self.h1.shape[2]).T @ dhz
            grads += (gw[:u] if need[2] else None,)
        else:
            grads += (None,)
        if self.use_bias:
            ones = xp.ones(dxz.shape[0], dxz.dtype)
            grads += (xp.stack([ones @ dxz, gw[u]]) if bias_grad else None,)
        return grads


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
    return m.astype(bool)


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
    return _run(_SimpleRNN, "simple_rnn", inputs, [h0], kernel, recurrent_kernel, bias, units, 1,
                (activation,), mask, recurrent_dropout_mask, go_backwards, return_sequences,
                return_state, zero_output_for_mask)


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
    return _run(_LSTM, "lstm", inputs, states, kernel, recurrent_kernel, bias, units, 4,
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
    return _run(_GRUResetAfter if reset_after else _GRU, "gru", inputs, [h0], kernel,
                recurrent_kernel, bias, units, 3,
                (activation, recurrent_activation), mask, recurrent_dropout_mask, go_backwards,
                return_sequences, return_state, zero_output_for_mask, reset_after=reset_after)


__all__ = ["simple_rnn", "lstm", "gru"]
