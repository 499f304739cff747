"""Fused recurrences: a whole SimpleRNN, LSTM or GRU sequence as one differentiable op.

Each public function (`simple_rnn`, `lstm`, `gru`) runs a complete sequence as one `Function`,
so a tape records one op per layer call instead of ~20 per time step:

* forward: the input projection ``x @ kernel + bias`` of all time steps is one GEMM on
  ``(time * batch, features)``; only the recurrent part ``h @ recurrent_kernel`` and the gate
  arithmetic loop over time, in place on preallocated time-major arrays;
* backward: back-propagation through time by hand, one small GEMM per step for the gradient of
  the previous state; the kernel, recurrent-kernel and bias gradients are each one GEMM (or one
  sum) over all steps at the end.

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

FUSED_ACTIVATIONS = ("tanh", "sigmoid", "relu", "linear", "hard_sigmoid")


# -- activations on arrays, in place, with derivatives from the outputs ----------------------------
def _activate(xp, z, name):
    """``z = name(z)`` in place (``z`` may be a strided view).

    tanh and sigmoid are computed through one ``exp`` (``tanh(x) = 2 / (1 + exp(-2x)) - 1``):
    NumPy's float32 ``exp`` is 2-4 times faster than its ``tanh`` on AVX2 machines. An
    overflowing ``exp`` gives ``inf`` and the exact limit (-1 or 0), so callers silence overflow
    warnings.
    """
    if name == "tanh":
        z *= -2.0
        xp.exp(z, out=z)
        z += 1.0
        xp.divide(2.0, z, out=z)
        z -= 1.0
    elif name == "sigmoid":
        xp.negative(z, out=z)
        xp.exp(z, out=z)
        z += 1.0
        xp.reciprocal(z, out=z)
    elif name == "relu":
        xp.maximum(z, 0, out=z)
    elif name == "hard_sigmoid":  # Keras 3: relu6(x + 3) / 6
        z += 3.0
        xp.clip(z, 0.0, 6.0, out=z)
        z *= 1.0 / 6.0
    elif name != "linear":
        raise ValueError(f"recurrent: activation {name!r} has no fused form")


def _derivative(xp, y, name, out):
    """``out = name'(x)`` computed from ``y = name(x)``."""
    if name == "tanh":
        xp.multiply(y, y, out=out)
        xp.subtract(1.0, out, out=out)
    elif name == "sigmoid":
        xp.subtract(1.0, y, out=out)
        out *= y
    elif name == "relu":
        xp.greater(y, 0, out=out)
    elif name == "hard_sigmoid":
        xp.logical_and(y > 0, y < 1, out=out)
        out *= 1.0 / 6.0
    else:
        out[...] = 1.0


class _Gates:
    """The activations of ``len(names)`` gate blocks of ``units`` columns each.

    When every gate uses tanh or sigmoid, all blocks are done at once: ``y = a * tanh(a * z) + b``
    with per-column ``a = 1/2, b = 1/2`` (sigmoid) or ``a = 1, b = 0`` (tanh), computed as
    ``2a / (1 + exp(-2a z)) + (b - a)``, and the derivative is ``a**2 - (y - b)**2``. That is
    five array calls per step whatever the number of gates.
    """

    def __init__(self, xp, names, units, dtype):
        self.names, self.units = names, units
        self.vector = all(n in ("tanh", "sigmoid") for n in names)
        if self.vector:
            a = np.repeat([0.5 if n == "sigmoid" else 1.0 for n in names], units)
            b = np.repeat([0.5 if n == "sigmoid" else 0.0 for n in names], units)
            self.c1, self.c2, self.c3, self.b, self.a2 = (
                xp.asarray(v, dtype=dtype) for v in (-2 * a, 2 * a, b - a, b, a * a))

    def apply(self, xp, z):
        if self.vector:
            z *= self.c1
            xp.exp(z, out=z)
            z += 1.0
            xp.divide(self.c2, z, out=z)
            z += self.c3
        else:
            for k, name in enumerate(self.names):
                _activate(xp, z[:, k * self.units:(k + 1) * self.units], name)

    def derivative(self, xp, y, out):
        if self.vector:
            xp.subtract(y, self.b, out=out)
            out *= out
            xp.subtract(self.a2, out, out=out)
        else:
            for k, name in enumerate(self.names):
                cols = slice(k * self.units, (k + 1) * self.units)
                _derivative(xp, y[:, cols], name, out[:, cols])


# -- the shared driver -------------------------------------------------------------------------------
class _Recurrence(Function):
    """One sequence through a recurrent cell; subclasses write ``_step`` and ``_step_back``.

    Inputs: ``x (batch, time, features)``, ``kernel``, ``recurrent_kernel``, then ``bias`` if
    ``use_bias``, then the initial states (``batch, units`` each). The output packs everything a
    caller may need along axis 1, ``(batch, K, units)``: the outputs of all steps (or the last
    one), then the final states when ``return_state``; the public functions slice it.
    """

    n_states = 1
    n_gates = 1

    def __init__(self, units, activations, use_bias, mask, recurrent_mask, go_backwards,
                 return_sequences, return_state, zero_output_for_mask):
        self.units, self.activations, self.use_bias = units, activations, use_bias
        self.mask, self.rmask = mask, recurrent_mask
        self.go_backwards, self.return_sequences = go_backwards, return_sequences
        self.return_state, self.zero_output = return_state, zero_output_for_mask

    def forward(self, x, kernel, recurrent_kernel, *rest):
        xp = self.xp
        bias, states = (rest[0], rest[1:]) if self.use_bias else (None, rest)
        batch, steps, _ = x.shape
        xt = x.transpose(1, 0, 2)
        if self.go_backwards:
            xt = xt[::-1]
        self.x2 = xp.ascontiguousarray(xt).reshape(steps * batch, -1)
        self.kernel, self.rk = kernel, recurrent_kernel
        self.z = (self.x2 @ kernel).reshape(steps, batch, -1)  # the input projection: one GEMM
        if bias is not None:
            self.z += bias if bias.ndim == 1 else bias[0]
        self.states = [xp.empty((steps + 1, batch, self.units), x.dtype) for _ in states]
        for s, s0 in zip(self.states, states):
            s[0] = s0
        self._prepare(xp, batch, steps, x.dtype, bias)
        keep = self._time_major_mask(xp, steps, x.dtype)
        self.outs = self.states[0]
        if keep is not None:
            self.outs = xp.zeros_like(self.states[0])
        with np.errstate(over="ignore"):  # exp overflow in tanh/sigmoid gives the exact limit
            for t in range(steps):
                self._step(xp, t)
                if keep is not None:
                    self._carry(xp, t, keep[t])
        return self._pack(xp, batch, steps)

    def _time_major_mask(self, xp, steps, dtype):
        """The mask as ``(time, batch, 1)`` booleans in processing order (None if all True)."""
        if self.mask is None or bool(self.mask.all()):
            self.keep = None
            return None
        keep = self.mask.T[::-1] if self.go_backwards else self.mask.T
        self.keep = xp.ascontiguousarray(keep)[..., None]
        self.keep_f = self.keep.astype(dtype)
        return self.keep

    def _carry(self, xp, t, keep):
        """Masked rows: the output repeats the previous output (or is 0); the states carry."""
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
        if self.return_sequences:
            y[:, :steps] = self.outs[1:].transpose(1, 0, 2)
        else:
            y[:, 0] = self.outs[steps]
        if self.return_state:
            for j, s in enumerate(self.states):
                y[:, seq + j] = s[steps]
        return y

    def _h_in(self, xp, t):
        """The previous output as the recurrent GEMM sees it (after recurrent dropout)."""
        h = self.states[0][t]
        if self.rmask is None:
            return h
        xp.multiply(h, self.rmask, out=self.h_in)
        return self.h_in

    def backward(self, gy):
        xp = self.xp
        steps, batch, _ = self.z.shape
        seq = steps if self.return_sequences else 1
        d_states = [xp.zeros((batch, self.units), gy.dtype) for _ in self.states]
        if self.return_state:
            for j, d in enumerate(d_states):
                d += gy[:, seq + j]
        g_out = gy[:, :steps].transpose(1, 0, 2) if self.return_sequences else None
        d_out = xp.zeros_like(d_states[0]) if self.keep is not None else None
        self._prepare_back(xp, batch, steps, gy.dtype)
        for t in range(steps - 1, -1, -1):
            g = g_out[t] if g_out is not None else gy[:, 0] if t == steps - 1 else None
            if self.keep is None:
                if g is not None:
                    d_states[0] += g
                d_states = self._step_back(xp, t, d_states)
            else:
                d_states, d_out = self._masked_step_back(xp, t, d_states, d_out, g)
        return self._weight_grads(xp, batch, steps) + tuple(d_states)

    def _masked_step_back(self, xp, t, d_states, d_out, g):
        keep, drop = self.keep_f[t], 1.0 - self.keep_f[t]
        if g is not None:
            d_out = d_out + g
        kept = [d * drop for d in d_states]
        d_new = [d * keep for d in d_states]
        d_new[0] += d_out * keep
        d_out = xp.zeros_like(d_out) if self.zero_output else d_out * drop
        d_prev = self._step_back(xp, t, d_new)
        return [d + k for d, k in zip(d_prev, kept)], d_out

    def _weight_grads(self, xp, batch, steps):
        """Gradients of x, kernel, recurrent_kernel (and bias): GEMMs over all steps."""
        dzx = self.dz.reshape(steps * batch, -1)
        gx = gk = grk = gb = None
        if self.needs_grad[0]:
            gx = (dzx @ self.kernel.T).reshape(steps, batch, -1)
            gx = (gx[::-1] if self.go_backwards else gx).transpose(1, 0, 2)
        if self.needs_grad[1]:
            gk = self.x2.T @ dzx
        if self.needs_grad[2]:
            grk = self._recurrent_kernel_grad(xp, batch, steps)
        if self.use_bias and self.needs_grad[3]:
            gb = self._bias_grad(xp, dzx)
        return (gx, gk, grk) + ((gb,) if self.use_bias else ())

    def _previous_outputs(self, xp, batch, steps):
        """``h_{t-1}`` of every step as ``(time * batch, units)``, after recurrent dropout."""
        h = self.states[0][:-1]
        if self.rmask is not None:
            h = h * self.rmask
        return h.reshape(steps * batch, self.units)

    def _recurrent_kernel_grad(self, xp, batch, steps):
        return self._previous_outputs(xp, batch, steps).T @ self.dz.reshape(steps * batch, -1)

    def _bias_grad(self, xp, dzx):
        return dzx.sum(axis=0)

    def _prepare(self, xp, batch, steps, dtype, bias):
        u = self.units
        self.h_in = xp.empty((batch, u), dtype) if self.rmask is not None else None
        self.gates = _Gates(xp, self._gate_names(), u, dtype)
        self.buf = xp.empty((batch, self.n_gates * u), dtype)

    def _prepare_back(self, xp, batch, steps, dtype):
        self.dz = xp.empty_like(self.z)
        self.rk_t = xp.ascontiguousarray(self.rk.T)


class _SimpleRNN(_Recurrence):
    """``h_t = activation(x_t @ kernel + h_{t-1} @ recurrent_kernel + bias)``."""

    def _gate_names(self):
        return (self.activations[0],)

    def _step(self, xp, t):
        z = self.z[t]
        xp.matmul(self._h_in(xp, t), self.rk, out=self.buf)
        z += self.buf
        self.gates.apply(xp, z)
        self.states[0][t + 1] = z

    def _step_back(self, xp, t, d_states):
        dz = self.dz[t]
        self.gates.derivative(xp, self.z[t], dz)
        dz *= d_states[0]
        dh = xp.matmul(dz, self.rk_t)
        if self.rmask is not None:
            dh *= self.rmask
        return [dh]


class _LSTM(_Recurrence):
    """Keras's LSTM step: ``i, f, c~, o`` gates, ``c_t = f c_{t-1} + i c~``, ``h_t = o act(c_t)``."""

    n_states = 2
    n_gates = 4

    def _gate_names(self):
        act, rec = self.activations
        return (rec, rec, act, rec)

    def _prepare(self, xp, batch, steps, dtype, bias):
        super()._prepare(xp, batch, steps, dtype, bias)
        self.tc = xp.empty((steps, batch, self.units), dtype)  # act(c_t) before any masking
        self.buf1 = xp.empty((batch, self.units), dtype)

    def _step(self, xp, t):
        u = self.units
        z = self.z[t]
        xp.matmul(self._h_in(xp, t), self.rk, out=self.buf)
        z += self.buf
        self.gates.apply(xp, z)
        c = self.states[1][t + 1]
        xp.multiply(z[:, u:2 * u], self.states[1][t], out=c)
        xp.multiply(z[:, :u], z[:, 2 * u:3 * u], out=self.buf1)
        c += self.buf1
        tc = self.tc[t]
        tc[...] = c
        _activate(xp, tc, self.activations[0])
        xp.multiply(z[:, 3 * u:], tc, out=self.states[0][t + 1])

    def _step_back(self, xp, t, d_states):
        u = self.units
        dh, dc = d_states
        z, dz, tc, b1 = self.z[t], self.dz[t], self.tc[t], self.buf1
        xp.multiply(dh, tc, out=dz[:, 3 * u:])  # d o
        _derivative(xp, tc, self.activations[0], b1)
        b1 *= z[:, 3 * u:]
        b1 *= dh
        dc = dc + b1  # d c_t (a new array: d_states may be the caller's buffers)
        xp.multiply(dc, z[:, 2 * u:3 * u], out=dz[:, :u])  # d i
        xp.multiply(dc, self.states[1][t], out=dz[:, u:2 * u])  # d f
        xp.multiply(dc, z[:, :u], out=dz[:, 2 * u:3 * u])  # d c~
        dc *= z[:, u:2 * u]
        self.gates.derivative(xp, z, self.buf)
        dz *= self.buf
        dh = xp.matmul(dz, self.rk_t)
        if self.rmask is not None:
            dh *= self.rmask
        return [dh, dc]


class _GRU(_Recurrence):
    """Keras's GRU step (gates ``z, r, h``), with ``reset_after`` True (default) or False."""

    n_gates = 3

    def __init__(self, *args, reset_after=True, **kwargs):
        super().__init__(*args, **kwargs)
        self.reset_after = reset_after

    def _gate_names(self):
        return (self.activations[1],) * 2

    def _prepare(self, xp, batch, steps, dtype, bias):
        super()._prepare(xp, batch, steps, dtype, bias)
        u = self.units
        self.rb = bias[1] if bias is not None and bias.ndim == 2 else None
        # reset_after: h @ U_h + b_h per step (needed for d r); else r * h_{t-1} per step
        self.hu = xp.empty((steps, batch, u), dtype)
        self.buf1 = xp.empty((batch, u), dtype)

    def _step(self, xp, t):
        u = self.units
        z, h_prev, hu = self.z[t], self.states[0][t], self.hu[t]
        h_in = self._h_in(xp, t)
        if self.reset_after:
            xp.matmul(h_in, self.rk, out=self.buf)
            if self.rb is not None:
                self.buf += self.rb
            z[:, :2 * u] += self.buf[:, :2 * u]
        else:
            z[:, :2 * u] += h_in @ self.rk[:, :2 * u]
        self.gates.apply(xp, z[:, :2 * u])
        zg, r, hh = z[:, :u], z[:, u:2 * u], z[:, 2 * u:]
        if self.reset_after:
            hu[...] = self.buf[:, 2 * u:]
            xp.multiply(r, hu, out=self.buf1)
        else:
            xp.multiply(r, h_in, out=hu)
            xp.matmul(hu, self.rk[:, 2 * u:], out=self.buf1)
        hh += self.buf1
        _activate(xp, hh, self.activations[0])
        h = self.states[0][t + 1]
        xp.subtract(h_prev, hh, out=h)  # h = hh + z (h_prev - hh)
        h *= zg
        h += hh

    def _prepare_back(self, xp, batch, steps, dtype):
        super()._prepare_back(xp, batch, steps, dtype)
        if self.reset_after:
            self.dhu = xp.empty_like(self.z)  # gradient of h @ U + b_rec

    def _step_back(self, xp, t, d_states):
        u = self.units
        dh = d_states[0]
        z, dz, h_prev, hu, b1 = self.z[t], self.dz[t], self.states[0][t], self.hu[t], self.buf1
        zg, r, hh = z[:, :u], z[:, u:2 * u], z[:, 2 * u:]
        d_pre_h = dz[:, 2 * u:]
        _derivative(xp, hh, self.activations[0], d_pre_h)
        xp.subtract(1.0, zg, out=b1)
        b1 *= dh
        d_pre_h *= b1  # d (x_h + r * hu): dh (1 - z) act'
        xp.subtract(h_prev, hh, out=dz[:, :u])
        dz[:, :u] *= dh  # d z (before the derivative)
        if self.reset_after:
            xp.multiply(d_pre_h, hu, out=dz[:, u:2 * u])  # d r
        else:
            d_rh = d_pre_h @ self.rk_t[2 * u:]
            xp.multiply(d_rh, self._h_in(xp, t), out=dz[:, u:2 * u])
        self.gates.derivative(xp, z[:, :2 * u], self.buf[:, :2 * u])
        dz[:, :2 * u] *= self.buf[:, :2 * u]
        if self.reset_after:
            dhu = self.dhu[t]
            dhu[:, :2 * u] = dz[:, :2 * u]
            xp.multiply(d_pre_h, r, out=dhu[:, 2 * u:])
            d_in = xp.matmul(dhu, self.rk_t)
        else:
            d_in = dz[:, :2 * u] @ self.rk_t[:2 * u] + d_rh * r
        if self.rmask is not None:
            d_in *= self.rmask
        d_in += dh * zg
        return [d_in]

    def _recurrent_kernel_grad(self, xp, batch, steps):
        h = self._previous_outputs(xp, batch, steps)
        if self.reset_after:
            return h.T @ self.dhu.reshape(steps * batch, -1)
        u, dz = self.units, self.dz.reshape(steps * batch, -1)
        return xp.concatenate([h.T @ dz[:, :2 * u],
                               self.hu.reshape(steps * batch, u).T @ dz[:, 2 * u:]], axis=1)

    def _bias_grad(self, xp, dzx):
        if not self.reset_after:
            return dzx.sum(axis=0)
        return xp.stack([dzx.sum(axis=0), self.dhu.reshape(dzx.shape).sum(axis=0)])


# -- public functions --------------------------------------------------------------------------------
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
    return _run(_GRU, "gru", inputs, [h0], kernel, recurrent_kernel, bias, units, 3,
                (activation, recurrent_activation), mask, recurrent_dropout_mask, go_backwards,
                return_sequences, return_state, zero_output_for_mask, reset_after=reset_after)


__all__ = ["simple_rnn", "lstm", "gru"]
