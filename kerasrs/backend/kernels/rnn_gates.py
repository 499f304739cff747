"""The gate arithmetic of one LSTM or GRU step, forward and backward (the matrix products stay
with the BLAS): the NumPy twin, the numba kernels and the CUDA launcher of ``rnn_gates.cu``.
Rows are batch entries, gate blocks are column blocks (Keras's gate order)."""

import numpy as np

from kerasrs.backend import cpu_threads
from kerasrs.backend.kernels import activations, cuda
from kerasrs.backend.kernels.activations import CODES, GATES, SIGMOID, TANH, act, act_grad
from kerasrs.backend.kernels.activations import activate as _gate
from kerasrs.backend.kernels.activations import derivative as _gate_derivative
from kerasrs.backend.kernels.cpu import contracting_kernel, usable, write_out
from kerasrs.backend.kernels.cuda import copy_back, float_type, fusable

CUDA = cuda.each_float("lstm_gates", "lstm_gates_grad", "gru_gates", "gru_gates_grad")


class Twin:
    """The reference versions (methods of `kerasrs.backend.base.Backend`)."""

    def lstm_gates(self, z, c_prev, activation="tanh", recurrent_activation="sigmoid",
                   out=None):
        """The gate arithmetic of one LSTM step (Hochreiter & Schmidhuber 1997; Keras's cell).

        ``i, f, c~, o`` are the four column blocks of ``z`` (Keras gate order)::

            i = ract(z_i); f = ract(z_f); c~ = act(z_c); o = ract(z_o)
            c = f * c_prev + i * c~;  h = o * act(c)

        Args:
            z: ``(n, 4 units)`` pre-activations ``x @ kernel + h_prev @ recurrent_kernel + bias``;
                overwritten in place by the activated gates ``[i, f, c~, o]`` (the backward
                pass needs them).
            c_prev: ``(n, units)`` previous cell state.
            activation, recurrent_activation: "tanh", "sigmoid", "relu", "linear" or
                "hard_sigmoid".
            out: optional ``(h, c, tc)`` arrays ``(n, units)`` to write into.

        Returns:
            ``(h, c, tc)``, each ``(n, units)``: output, new cell state and ``act(c)``.
        """
        u = c_prev.shape[1]
        for k, name in enumerate((recurrent_activation, recurrent_activation, activation,
                                  recurrent_activation)):
            z[:, k * u:(k + 1) * u] = _gate(self, z[:, k * u:(k + 1) * u], name)
        i, f, g, o = (z[:, k * u:(k + 1) * u] for k in range(4))
        c = f * c_prev + i * g
        tc = _gate(self, c, activation)
        h = o * tc
        return write_out(out, (h, c, tc))

    def lstm_gates_grad(self, gates, c_prev, tc, dh, dc, activation="tanh",
                        recurrent_activation="sigmoid", out=None):
        """Backward of `lstm_gates` for one step (derivatives from the activations' outputs).

        Args:
            gates: ``(n, 4 units)`` activated gates from `lstm_gates`.
            c_prev, tc: ``(n, units)``: the step's previous cell state and ``act(c)``.
            dh: ``(n, units)`` gradient of ``h``.
            dc: ``(n, units)`` gradient of ``c`` from later steps (not yet including ``dh``'s).
            activation, recurrent_activation: as in `lstm_gates`.
            out: optional ``(dz, dc_prev)`` arrays to write into; ``dz`` may be the array
                ``gates`` itself (dz then replaces the gates, which saves a pass over memory).

        Returns:
            ``(dz, dc_prev)``: ``dz (n, 4 units)`` gradient of the pre-activations ``z``;
            ``dc_prev (n, units)`` gradient of ``c_prev``.
        """
        u = c_prev.shape[1]
        i, f, g, o = (gates[:, k * u:(k + 1) * u] for k in range(4))
        dc_total = dc + dh * o * _gate_derivative(self, tc, activation)
        dz = self.xp.concatenate([
            dc_total * g * _gate_derivative(self, i, recurrent_activation),
            dc_total * c_prev * _gate_derivative(self, f, recurrent_activation),
            dc_total * i * _gate_derivative(self, g, activation),
            dh * tc * _gate_derivative(self, o, recurrent_activation)], axis=1)
        return write_out(out, (dz.astype(gates.dtype, copy=False), dc_total * f))

    def lstm_gates_loop(self, activation="tanh", recurrent_activation="sigmoid"):
        """`lstm_gates` and `lstm_gates_grad` for a loop over time steps whose arrays keep one
        dtype and layout: ``(forward, backward)``, called as ``forward(z, c_prev, h, c, tc)``
        and ``backward(gates, c_prev, tc, dh, dc, dz, dc_prev)`` (the last arrays are the
        ``out`` ones). The compiled versions check the arrays on the first call only."""
        acts = activation, recurrent_activation

        def forward(z, c_prev, h, c, tc):
            self.lstm_gates(z, c_prev, *acts, out=(h, c, tc))

        def backward(gates, c_prev, tc, dh, dc, dz, dc_prev):
            self.lstm_gates_grad(gates, c_prev, tc, dh, dc, *acts, out=(dz, dc_prev))

        return forward, backward

    def gru_gates(self, xz, hz, h_prev, activation="tanh", recurrent_activation="sigmoid",
                  out=None):
        """The gate arithmetic of one GRU step, ``reset_after=True`` form (Keras's default and
        CuDNN's; Cho et al. 2014 with the reset applied after the recurrent product)::

            z = ract(xz_z + hz_z); r = ract(xz_r + hz_r); hh = act(xz_h + r * hz_h)
            h = z * h_prev + (1 - z) * hh

        Args:
            xz: ``(n, 3 units)`` input projection ``x @ kernel + input_bias`` (blocks z, r, h);
                overwritten in place by the activated gates ``[z, r, hh]``.
            hz: ``(n, 3 units)`` recurrent projection ``h_prev @ recurrent_kernel +
                recurrent_bias``; not modified (the backward pass needs its h block).
            h_prev: ``(n, units)``.
            activation, recurrent_activation: "tanh", "sigmoid", "relu", "linear" or
                "hard_sigmoid".
            out: optional ``(n, units)`` array for ``h``.

        Returns:
            ``h``, ``(n, units)``.
        """
        u = h_prev.shape[1]
        z = _gate(self, xz[:, :u] + hz[:, :u], recurrent_activation)
        r = _gate(self, xz[:, u:2 * u] + hz[:, u:2 * u], recurrent_activation)
        hh = _gate(self, xz[:, 2 * u:] + r * hz[:, 2 * u:], activation)
        xz[:, :u], xz[:, u:2 * u], xz[:, 2 * u:] = z, r, hh
        return write_out(None if out is None else (out,), (z * h_prev + (1 - z) * hh,))[0]

    def gru_gates_grad(self, gates, hz, h_prev, dh, activation="tanh",
                       recurrent_activation="sigmoid", out=None):
        """Backward of `gru_gates` for one step.

        Args:
            gates: ``(n, 3 units)`` activated gates ``[z, r, hh]`` from `gru_gates`.
            hz: ``(n, 3 units)`` the step's recurrent projection.
            h_prev: ``(n, units)``; dh: ``(n, units)`` gradient of ``h``.
            activation, recurrent_activation: as in `gru_gates`.
            out: optional ``(dxz, dhz, dh_prev)`` arrays to write into.

        Returns:
            ``(dxz, dhz, dh_prev)``: gradients of ``xz`` and ``hz`` ``(n, 3 units)``, and the
            direct part ``dh * z`` of ``h_prev``'s gradient (the caller adds
            ``dhz @ recurrent_kernel.T``).
        """
        u = h_prev.shape[1]
        z, r, hh = gates[:, :u], gates[:, u:2 * u], gates[:, 2 * u:]
        dhh = dh * (1 - z) * _gate_derivative(self, hh, activation)
        dzz = dh * (h_prev - hh) * _gate_derivative(self, z, recurrent_activation)
        dr = dhh * hz[:, 2 * u:] * _gate_derivative(self, r, recurrent_activation)
        xp = self.xp
        dxz = xp.concatenate([dzz, dr, dhh], axis=1).astype(gates.dtype, copy=False)
        dhz = xp.concatenate([dzz, dr, dhh * r], axis=1).astype(gates.dtype, copy=False)
        return write_out(out, (dxz, dhz, dh * z))


# -- numba (one time step) --------------------------------------------------------------------
# A loop that branches on a runtime activation code is not vectorized, so each kernel calls its
# row function with constant codes for Keras's default activations (tanh, sigmoid), which LLVM
# inlines and vectorizes, and with the runtime codes (a scalar loop) for the others.
@contracting_kernel
def _lstm_row(z, c_prev, a, ra, h, c, tc, i):
    u = c_prev.shape[1]
    for j in range(u):
        ig, fg = act(z[i, j], ra), act(z[i, u + j], ra)
        gg, og = act(z[i, 2 * u + j], a), act(z[i, 3 * u + j], ra)
        cn = fg * c_prev[i, j] + ig * gg
        t = act(cn, a)
        z[i, j], z[i, u + j], z[i, 2 * u + j], z[i, 3 * u + j] = ig, fg, gg, og
        c[i, j] = cn
        tc[i, j] = t
        h[i, j] = og * t


@contracting_kernel
def lstm_gates_rows(z, c_prev, a, ra, h, c, tc, start, stop):
    """`Twin.lstm_gates` for rows ``start:stop``."""
    default = a == TANH and ra == SIGMOID
    for i in range(start, stop):
        if default:
            _lstm_row(z, c_prev, TANH, SIGMOID, h, c, tc, i)
        else:
            _lstm_row(z, c_prev, a, ra, h, c, tc, i)


@contracting_kernel
def _lstm_grad_row(gates, c_prev, tc, dh, dc, a, ra, dz, dc_prev, i, k):
    """Row ``i``, its ``dz`` into row ``k`` of ``dz``."""
    u = c_prev.shape[1]
    for j in range(u):
        ig, fg, gg, og = gates[i, j], gates[i, u + j], gates[i, 2 * u + j], gates[i, 3 * u + j]
        t, d_h = tc[i, j], dh[i, j]
        d_c = dc[i, j] + d_h * og * act_grad(t, a)
        dz[k, j] = d_c * gg * act_grad(ig, ra)
        dz[k, u + j] = d_c * c_prev[i, j] * act_grad(fg, ra)
        dz[k, 2 * u + j] = d_c * ig * act_grad(gg, a)
        dz[k, 3 * u + j] = d_h * t * act_grad(og, ra)
        dc_prev[i, j] = d_c * fg


@contracting_kernel
def lstm_gates_grad_rows(gates, c_prev, tc, dh, dc, a, ra, dz, dc_prev, start, stop):
    """`Twin.lstm_gates_grad` for rows ``start:stop``."""
    default = a == TANH and ra == SIGMOID
    for i in range(start, stop):
        if default:
            _lstm_grad_row(gates, c_prev, tc, dh, dc, TANH, SIGMOID, dz, dc_prev, i, i)
        else:
            _lstm_grad_row(gates, c_prev, tc, dh, dc, a, ra, dz, dc_prev, i, i)


@contracting_kernel
def lstm_gates_grad_rows_in_place(gz, c_prev, tc, dh, dc, a, ra, dc_prev, start, stop):
    """`lstm_gates_grad_rows` writing ``dz`` over the gates ``gz``. Each row's ``dz`` goes to a
    scratch row first, then over the row's gates: a loop that reads and writes one array's
    gate blocks runs scalar (LLVM cannot prove the blocks apart), 2-3 times slower."""
    row = np.empty((1, gz.shape[1]), gz.dtype)
    default = a == TANH and ra == SIGMOID
    for i in range(start, stop):
        if default:
            _lstm_grad_row(gz, c_prev, tc, dh, dc, TANH, SIGMOID, row, dc_prev, i, 0)
        else:
            _lstm_grad_row(gz, c_prev, tc, dh, dc, a, ra, row, dc_prev, i, 0)
        for j in range(gz.shape[1]):  # (a loop: numba's gz[i] = row[0] took 0.3 us a row)
            gz[i, j] = row[0, j]


@contracting_kernel
def _gru_row(xz, hz, h_prev, a, ra, h, i):
    u, one = h_prev.shape[1], h.dtype.type(1)  # (1 - z would widen float32 to float64)
    for j in range(u):
        zg = act(xz[i, j] + hz[i, j], ra)
        r = act(xz[i, u + j] + hz[i, u + j], ra)
        hh = act(xz[i, 2 * u + j] + r * hz[i, 2 * u + j], a)
        xz[i, j], xz[i, u + j], xz[i, 2 * u + j] = zg, r, hh
        h[i, j] = zg * h_prev[i, j] + (one - zg) * hh


@contracting_kernel
def gru_gates_rows(xz, hz, h_prev, a, ra, h, start, stop):
    """`Twin.gru_gates` for rows ``start:stop``."""
    default = a == TANH and ra == SIGMOID
    for i in range(start, stop):
        if default:
            _gru_row(xz, hz, h_prev, TANH, SIGMOID, h, i)
        else:
            _gru_row(xz, hz, h_prev, a, ra, h, i)


@contracting_kernel
def _gru_grad_row(gates, hz, h_prev, dh, a, ra, dxz, dhz, dh_prev, i):
    u, one = h_prev.shape[1], dh_prev.dtype.type(1)
    for j in range(u):
        zg, r, hh, d = gates[i, j], gates[i, u + j], gates[i, 2 * u + j], dh[i, j]
        dhh = d * (one - zg) * act_grad(hh, a)
        dzz = d * (h_prev[i, j] - hh) * act_grad(zg, ra)
        dr = dhh * hz[i, 2 * u + j] * act_grad(r, ra)
        dxz[i, j], dxz[i, u + j], dxz[i, 2 * u + j] = dzz, dr, dhh
        dhz[i, j], dhz[i, u + j], dhz[i, 2 * u + j] = dzz, dr, dhh * r
        dh_prev[i, j] = d * zg


@contracting_kernel
def gru_gates_grad_rows(gates, hz, h_prev, dh, a, ra, dxz, dhz, dh_prev, start, stop):
    """`Twin.gru_gates_grad` for rows ``start:stop``."""
    default = a == TANH and ra == SIGMOID
    for i in range(start, stop):
        if default:
            _gru_grad_row(gates, hz, h_prev, dh, TANH, SIGMOID, dxz, dhz, dh_prev, i)
        else:
            _gru_grad_row(gates, hz, h_prev, dh, a, ra, dxz, dhz, dh_prev, i)


# Work per LSTM cell in element copies (measured: forward 77 us, backward ~45 us for 128 x 128
# cells): a 128 x 128 step stays on one thread (splitting it measured 10 % slower per training
# step); larger batches or units are split.
_LSTM_COST, _LSTM_GRAD_COST = 10, 6
_GRU_COST, _GRU_GRAD_COST = 7, 6  # three gates, no cell state


def _kernel_ok(z, arrays, *names):
    """True when a gate kernel applies: 2-D arrays of ``z``'s dtype, known activations."""
    return (z.ndim == 2 and all(a.ndim == 2 and a.dtype == z.dtype for a in arrays)
            and all(a in GATES for a in names) and usable(z))


def _direct_lstm(arrays, a, ra):
    """``forward(z, c_prev, h, c, tc)`` calling the compiled kernel, or None when the arrays
    need the checked path (`_single_part`)."""
    if not _single_part(arrays, _LSTM_COST):
        return None
    kernel = lstm_gates_rows.compiled()
    return lambda z, c_prev, h, c, tc: kernel(z, c_prev, a, ra, h, c, tc, 0, z.shape[0])


def _direct_lstm_grad(arrays, a, ra):
    """``backward(gates, c_prev, tc, dh, dc, dz, dc_prev)`` calling the compiled kernel (the
    in-place one when ``dz`` is ``gates``), or None."""
    if not _single_part(arrays, _LSTM_GRAD_COST):
        return None
    plain, in_place = lstm_gates_grad_rows.compiled(), lstm_gates_grad_rows_in_place.compiled()

    def backward(g, c_prev, tc, dh, dc, dz, dc_prev):
        if dz is g:
            in_place(g, c_prev, tc, dh, dc, a, ra, dc_prev, 0, g.shape[0])
        else:
            plain(g, c_prev, tc, dh, dc, a, ra, dz, dc_prev, 0, g.shape[0])
    return backward


def _single_part(arrays, cost):
    """True when the compiled kernel takes these arrays in one part (no split over threads)."""
    z, c_prev = arrays[0], arrays[1]
    return _kernel_ok(z, arrays) and len(cpu_threads.bounds(
        z.shape[0], work_per_item=c_prev.shape[1] * cost)) == 1


class Cpu:
    """`NumpyBackend`'s compiled versions, falling back to `Twin` for what they do not take."""

    def lstm_gates(self, z, c_prev, activation="tanh", recurrent_activation="sigmoid",
                   out=None):
        arrays = (z, c_prev) + (() if out is None else out)
        if not _kernel_ok(z, arrays, activation, recurrent_activation):
            return super().lstm_gates(z, c_prev, activation, recurrent_activation, out)
        h, c, tc = out if out is not None else (np.empty(c_prev.shape, z.dtype) for _ in range(3))
        cpu_threads.split(lstm_gates_rows.compiled(), z.shape[0], z, c_prev,
                          CODES[activation], CODES[recurrent_activation], h, c, tc,
                          work_per_item=c_prev.shape[1] * _LSTM_COST)
        return h, c, tc

    def lstm_gates_grad(self, gates, c_prev, tc, dh, dc, activation="tanh",
                        recurrent_activation="sigmoid", out=None):
        arrays = (gates, c_prev, tc, dh, dc) + (() if out is None else out)
        if not _kernel_ok(gates, arrays, activation, recurrent_activation):
            return super().lstm_gates_grad(gates, c_prev, tc, dh, dc, activation,
                                           recurrent_activation, out)
        dz, dc_prev = out if out is not None else (np.empty(gates.shape, gates.dtype),
                                                    np.empty(c_prev.shape, gates.dtype))
        codes = CODES[activation], CODES[recurrent_activation]
        if dz is gates:
            cpu_threads.split(lstm_gates_grad_rows_in_place.compiled(), gates.shape[0], gates,
                              c_prev, tc, dh, dc, *codes, dc_prev,
                              work_per_item=c_prev.shape[1] * _LSTM_GRAD_COST)
        else:
            cpu_threads.split(lstm_gates_grad_rows.compiled(), gates.shape[0], gates, c_prev, tc,
                              dh, dc, *codes, dz, dc_prev,
                              work_per_item=c_prev.shape[1] * _LSTM_GRAD_COST)
        return dz, dc_prev

    def lstm_gates_loop(self, activation="tanh", recurrent_activation="sigmoid"):
        """`Twin.lstm_gates_loop` calling the kernels directly from the second call on, when
        the first call's arrays suited them and need no split over threads (a 128 x 128 step:
        the checks and the split cost ~6 us a call, 5-10 % of the kernel)."""
        generic = super().lstm_gates_loop(activation, recurrent_activation)
        if {activation, recurrent_activation} - set(GATES):
            return generic
        a, ra = CODES[activation], CODES[recurrent_activation]

        def bind(checked, direct):
            chosen = []  # after the first call: the direct function, or the checked one

            def call(*arrays):
                if chosen:
                    return chosen[0](*arrays)
                chosen.append(direct(arrays, a, ra) or checked)
                checked(*arrays)
            return call

        return bind(generic[0], _direct_lstm), bind(generic[1], _direct_lstm_grad)

    def gru_gates(self, xz, hz, h_prev, activation="tanh", recurrent_activation="sigmoid",
                  out=None):
        arrays = (xz, hz, h_prev) + (() if out is None else (out,))
        if not _kernel_ok(xz, arrays, activation, recurrent_activation):
            return super().gru_gates(xz, hz, h_prev, activation, recurrent_activation, out)
        h = out if out is not None else np.empty(h_prev.shape, xz.dtype)
        cpu_threads.split(gru_gates_rows.compiled(), xz.shape[0], xz, hz, h_prev,
                          CODES[activation], CODES[recurrent_activation], h,
                          work_per_item=h_prev.shape[1] * _GRU_COST)
        return h

    def gru_gates_grad(self, gates, hz, h_prev, dh, activation="tanh",
                       recurrent_activation="sigmoid", out=None):
        arrays = (gates, hz, h_prev, dh) + (() if out is None else out)
        if not _kernel_ok(gates, arrays, activation, recurrent_activation):
            return super().gru_gates_grad(gates, hz, h_prev, dh, activation,
                                          recurrent_activation, out)
        dxz, dhz, dh_prev = out if out is not None else (
            np.empty(gates.shape, gates.dtype), np.empty(gates.shape, gates.dtype),
            np.empty(h_prev.shape, gates.dtype))
        cpu_threads.split(gru_gates_grad_rows.compiled(), gates.shape[0], gates, hz, h_prev, dh,
                          CODES[activation], CODES[recurrent_activation], dxz, dhz, dh_prev,
                          work_per_item=h_prev.shape[1] * _GRU_GRAD_COST)
        return dxz, dhz, dh_prev


# -- CUDA ---------------------------------------------------------------------------------------
class Launch:
    """The launchers of ``rnn_gates.cu`` (methods of `kerasrs.backend.kernels.Launcher`)."""

    def _gates(self, op, n_gates, gates, *others):
        cuda.check(op, "gates", gates, ndim=2)
        t = float_type(op, "gates", gates)
        n, width = gates.shape
        if width % n_gates:
            raise ValueError(f"{op}: gates width {width} is not {n_gates} * units.")
        u = width // n_gates
        for name, a, k in others:
            cuda.check(op, name, a, dtype=gates.dtype, shape=(n, k * u))
        return t, n, u

    def lstm_gates(self, z, c_prev, activation="tanh", recurrent_activation="sigmoid"):
        op = "lstm_gates"
        t, n, u = self._gates(op, 4, z, ("c_prev", c_prev, 1))
        codes = _codes(op, activation, recurrent_activation)
        h, c, tc = (self.xp.empty_like(c_prev) for _ in range(3))
        if h.size:
            grid, block = self._grid(h.size)
            self.launch("rnn_gates", f"lstm_gates<{t}>", grid, block,
                        (z, c_prev, h, c, tc, np.int32(n), np.int32(u), *codes))
        return h, c, tc

    def lstm_gates_grad(self, gates, c_prev, tc, dh, dc, activation="tanh",
                        recurrent_activation="sigmoid"):
        op = "lstm_gates_grad"
        t, n, u = self._gates(op, 4, gates, ("c_prev", c_prev, 1), ("tc", tc, 1), ("dh", dh, 1),
                              ("dc", dc, 1))
        codes = _codes(op, activation, recurrent_activation)
        dz, dc_prev = self.xp.empty_like(gates), self.xp.empty_like(c_prev)
        if dc_prev.size:
            grid, block = self._grid(dc_prev.size)
            self.launch("rnn_gates", f"lstm_gates_grad<{t}>", grid, block,
                        (gates, c_prev, tc, dh, dc, dz, dc_prev, np.int32(n), np.int32(u),
                         *codes))
        return dz, dc_prev

    def gru_gates(self, xz, hz, h_prev, activation="tanh", recurrent_activation="sigmoid"):
        op = "gru_gates"
        t, n, u = self._gates(op, 3, xz, ("hz", hz, 3), ("h_prev", h_prev, 1))
        codes = _codes(op, activation, recurrent_activation)
        h = self.xp.empty_like(h_prev)
        if h.size:
            grid, block = self._grid(h.size)
            self.launch("rnn_gates", f"gru_gates<{t}>", grid, block,
                        (xz, hz, h_prev, h, np.int32(n), np.int32(u), *codes))
        return h

    def gru_gates_grad(self, gates, hz, h_prev, dh, activation="tanh",
                       recurrent_activation="sigmoid"):
        op = "gru_gates_grad"
        t, n, u = self._gates(op, 3, gates, ("hz", hz, 3), ("h_prev", h_prev, 1), ("dh", dh, 1))
        codes = _codes(op, activation, recurrent_activation)
        dxz, dhz, dh_prev = (self.xp.empty_like(gates), self.xp.empty_like(gates),
                             self.xp.empty_like(h_prev))
        if dh_prev.size:
            grid, block = self._grid(dh_prev.size)
            self.launch("rnn_gates", f"gru_gates_grad<{t}>", grid, block,
                        (gates, hz, h_prev, dh, dxz, dhz, dh_prev, np.int32(n), np.int32(u),
                         *codes))
        return dxz, dhz, dh_prev


def _codes(op, activation, recurrent_activation):
    """The kernels' (act, ract) arguments, as int32."""
    return tuple(np.int32(activations.code(op, a, GATES))
                 for a in (activation, recurrent_activation))


class Cuda:
    """`CupyBackend`'s versions, falling back to `Twin` for what the kernels do not take; an
    in-place ``z``/``xz`` that is not C-contiguous goes through a contiguous copy."""

    def lstm_gates(self, z, c_prev, activation="tanh", recurrent_activation="sigmoid",
                   out=None):
        if not fusable(z, c_prev) or {activation, recurrent_activation} - set(GATES):
            return super().lstm_gates(z, c_prev, activation, recurrent_activation, out)
        zc = self._c(z)
        res = self.kernels.lstm_gates(zc, self._c(c_prev), activation, recurrent_activation)
        copy_back(z, zc)
        return write_out(out, res)

    def lstm_gates_grad(self, gates, c_prev, tc, dh, dc, activation="tanh",
                        recurrent_activation="sigmoid", out=None):
        if (not fusable(gates, c_prev, tc, dh, dc)
                or {activation, recurrent_activation} - set(GATES)):
            return super().lstm_gates_grad(gates, c_prev, tc, dh, dc, activation,
                                           recurrent_activation, out)
        res = self.kernels.lstm_gates_grad(*map(self._c, (gates, c_prev, tc, dh, dc)),
                                           activation, recurrent_activation)
        return write_out(out, res)

    def gru_gates(self, xz, hz, h_prev, activation="tanh", recurrent_activation="sigmoid",
                  out=None):
        if (not fusable(xz, hz, h_prev)
                or {activation, recurrent_activation} - set(GATES)):
            return super().gru_gates(xz, hz, h_prev, activation, recurrent_activation, out)
        xc = self._c(xz)
        h = self.kernels.gru_gates(xc, self._c(hz), self._c(h_prev), activation,
                                   recurrent_activation)
        copy_back(xz, xc)
        return write_out(None if out is None else (out,), (h,))[0]

    def gru_gates_grad(self, gates, hz, h_prev, dh, activation="tanh",
                       recurrent_activation="sigmoid", out=None):
        if (not fusable(gates, hz, h_prev, dh)
                or {activation, recurrent_activation} - set(GATES)):
            return super().gru_gates_grad(gates, hz, h_prev, dh, activation,
                                          recurrent_activation, out)
        res = self.kernels.gru_gates_grad(*map(self._c, (gates, hz, h_prev, dh)), activation,
                                          recurrent_activation)
        return write_out(out, res)
