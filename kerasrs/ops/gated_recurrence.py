"""The gated fused recurrences: `LSTMRecurrence`, and the GRU in both of Keras's forms
(`GRUResetAfterRecurrence`, Keras's default, and `GRURecurrence` for ``reset_after=False``), on
the shared driver `kerasrs.ops.recurrence.Recurrence` (whose docstring explains the layouts)."""

from kerasrs.ops import core
from kerasrs.ops.gates import activate, derivative
from kerasrs.ops.recurrence import Recurrence


class LSTMRecurrence(Recurrence):
    """Keras's LSTM step: gates ``i, f, c~, o``; ``c_t = f c_{t-1} + i c~``; ``h_t = o act(c_t)``.

    Unlike the other cells it works *batch-major*, ``(time, batch, units)`` arrays with the gates
    as column blocks of ``(time, batch, 4 units)``: the layout of the backend kernels
    ``lstm_gates`` (one call per step forward) and ``lstm_gates_grad`` (one per step back).
    Each step's pre-activations are one GEMM, ``[x_t, h_{t-1}, 1] @ [kernel; recurrent_kernel;
    bias]``, from a ``(time, batch, features + units + 1)`` array that also serves backward:
    the kernel, recurrent-kernel and bias gradients are then one GEMM over all steps (a GEMM
    with ``features`` rows of inner dimension, as a separate input projection needs, runs at
    half the rate of the larger ones). Per step back only ``dz_t @ recurrent_kernel.T`` remains.
    Backward writes ``dz_t`` over the gates of step ``t`` (their last reader): the gates were
    written a whole sequence earlier and are out of cache, and a separate ``dz`` array doubled
    the gate kernel's memory traffic. A second backward (a persistent tape) recomputes them.
    """

    n_states = 2
    n_gates = 4
    batch_major = True

    def forward(self, x, kernel, recurrent_kernel, *rest):
        xp, be = self.xp, self.backend
        x, kernel = core.promote(x, kernel)  # integer inputs take the kernel's float dtype
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
        self.w, self.spent = w, False  # (for `_gates_again`)
        self.z = be.empty((steps, batch, 4 * u), x.dtype)  # pre-activations, then the gates
        self.states = [be.empty((steps + 1, batch, u), x.dtype) for _ in range(2)]
        for s, s0 in zip(self.states, states):
            s[0] = s0
        self.tc = be.empty((steps, batch, u), x.dtype)  # act(c_t) before any masking
        keep = self._time_major_mask(xp, steps)
        self.outs = self.states[0] if keep is None else xp.zeros_like(self.states[0])
        h, c = self.states
        gates_step = be.lstm_gates_loop(*self.activations)[0]
        for t in range(steps):
            h_in = self.xh[t, :, f:f + u]
            if self.rmask is None:
                h_in[...] = h[t]
            else:
                xp.multiply(h[t], self.rmask, out=h_in)
            xp.matmul(self.xh[t], w, out=self.z[t])
            gates_step(self.z[t], c[t], h[t + 1], c[t + 1], self.tc[t])
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
        if self.spent:
            self._gates_again(xp)
        self.dz, self.spent = self.z, True  # every step's dz replaces its gates (for the GEMMs)
        self.grad_step = self.backend.lstm_gates_loop(*self.activations)[1]
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
        self.grad_step(dz, self.states[1][t], self.tc[t], dh, dc, dz, dc_prev)
        if not need_dh:
            return [None, None]
        dh = xp.matmul(dz, self.rk_t, out=self.dh_buffers[t % 2])
        if self.rmask is not None:
            dh *= self.rmask
        return [dh, dc_prev]

    def _gates_again(self, xp):
        """The gates of every step again, as forward computed them (``dz`` replaced them)."""
        h, c, tc = (xp.empty_like(self.tc[0]) for _ in range(3))
        gates_step = self.backend.lstm_gates_loop(*self.activations)[0]
        for t in range(self.z.shape[0]):
            xp.matmul(self.xh[t], self.w, out=self.z[t])
            gates_step(self.z[t], self.states[1][t], h, c, tc)

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


class GRURecurrence(Recurrence):
    """Keras's GRU step (gates ``z, r, h``), with ``reset_after`` True or False, in the
    transposed layout; `gru` uses it for ``reset_after=False`` (`GRUResetAfterRecurrence`
    otherwise)."""

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


class GRUResetAfterRecurrence(Recurrence):
    """Keras's default GRU (``reset_after=True``), batch-major like `LSTMRecurrence`: the input
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
        x, kernel = core.promote(x, kernel)  # integer inputs take the kernel's float dtype
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
