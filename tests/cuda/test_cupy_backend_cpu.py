"""`CupyBackend`'s overrides of the named kernels, run without a GPU: the backend object gets
NumPy as its array module and the CPU-built kernel modules in place of ``cupy.RawModule``, so
its glue (contiguity copies, ``out=`` handling, in-place updates, fallbacks to the twin for what
the kernels do not take) is checked against the twins here; on a GPU the same methods launch the
same kernels."""

import cpu_cuda
import numpy as np
import pytest

from kerasrs.backend import base, kernels
from kerasrs.backend.cupy_backend import CupyBackend

pytestmark = pytest.mark.skipif(not cpu_cuda.have_compiler(), reason="needs g++ (C++20)")
TWIN = base.Backend


class Recorder(kernels.Launcher):
    def launch(self, file, expr, grid, block, args):
        self.launched.append(expr)
        super().launch(file, expr, grid, block, args)


@pytest.fixture(scope="module")
def emu():
    be = CupyBackend.__new__(CupyBackend)  # no CuPy import, no device query
    be.xp, be.array_type = np, np.ndarray
    be._kernels = Recorder(np, cpu_cuda.module, max_block=64, max_grid=3)
    be._kernels.launched = []
    base.Backend.__init__(be)
    be.scatter_add = lambda a, key, values: np.add.at(a, key, values)  # cupyx's needs CuPy
    be.sigmoid = lambda x: TWIN.sigmoid(be, x)  # its ElementwiseKernel too
    return be


def strided(a):
    big = np.zeros(tuple(2 * n for n in a.shape), a.dtype)
    big[tuple(slice(None, None, 2) for _ in a.shape)] = a
    return big[tuple(slice(None, None, 2) for _ in a.shape)]


def check(emu, name, args, kwargs=None, launched=True, rtol=2e-5):
    """emu.<name> against the twin on copies of args; in-place arguments compared too."""
    kwargs = kwargs or {}
    mine = [a.copy() if isinstance(a, np.ndarray) else
            [x.copy() for x in a] if isinstance(a, list) else a for a in args]
    ref = [a.copy() if isinstance(a, np.ndarray) else
           [x.copy() for x in a] if isinstance(a, list) else a for a in args]
    emu._kernels.launched.clear()
    got = getattr(emu, name)(*mine, **kwargs)
    want = getattr(TWIN, name)(emu, *ref, **kwargs)
    assert bool(emu._kernels.launched) == launched, (name, emu._kernels.launched)
    flat = lambda v: [x for y in (v if isinstance(v, (tuple, list)) else [v])
                      for x in (y if isinstance(y, list) else [y])]
    for g, w in zip(flat(got) + flat(mine), flat(want) + flat(ref)):
        if isinstance(w, np.ndarray):
            assert g.dtype == w.dtype and g.shape == w.shape, name
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, err_msg=name)
        else:
            assert g is None and w is None or g == w


def test_overrides_take_non_contiguous_inputs(emu, rng):
    r = lambda *s: strided(rng.standard_normal(s).astype(np.float32))
    check(emu, "softmax_cross_entropy", (r(5, 9), rng.integers(0, 9, 10)[::2]))
    check(emu, "softmax_cross_entropy_grad", (r(5, 9), r(5, 9), r(5)))
    check(emu, "embedding_grad", (rng.integers(0, 4, (3, 6))[:, ::2], r(3, 3, 2), 4))
    check(emu, "bias_act", (r(7, 5), r(5), "tanh"))
    check(emu, "bias_act_grad", (r(7, 5), r(7, 5), "sigmoid"))
    check(emu, "im2col", (r(2, 6, 5, 3), (3, 2), (2, 1), (1, 2), ((1, 1), (1, 0))))
    check(emu, "col2im", (r(6, 3), (2, 6, 1), (3,), (2,), (1,), ((1, 1),)))
    check(emu, "max_pool", (r(2, 6, 5, 3), (2, 2), (2, 1), ((0, 1), (1, 1))))
    check(emu, "layer_norm", (r(4, 7), r(7), r(7), 1e-3))
    x = rng.standard_normal((4, 7)).astype(np.float32)
    _, mean, rstd = TWIN.layer_norm(emu, x, None, None, 1e-3)
    check(emu, "layer_norm_grad", (r(4, 7), strided(x), r(7), mean, rstd), rtol=1e-4)
    check(emu, "lstm_gates_grad", (r(3, 8), r(3, 2), r(3, 2), r(3, 2), r(3, 2)))
    check(emu, "gru_gates_grad", (r(3, 6), r(3, 6), r(3, 2), r(3, 2)))


def test_overrides_write_into_out_arrays(emu, rng):
    x = rng.standard_normal((6, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    out = np.empty((6, 4), np.float32)
    assert emu.bias_act(x, b, "relu", out=out) is out
    np.testing.assert_allclose(out, TWIN.bias_act(emu, x, b, "relu"), rtol=1e-6)
    holder = np.zeros((6, 8), np.float32)
    view = holder[:, ::2]  # a non-contiguous out: filled by a copy
    assert emu.bias_act(x, b, "relu", out=view) is view
    np.testing.assert_allclose(view, out, rtol=1e-6)
    z = rng.standard_normal((3, 8)).astype(np.float32)
    c_prev = rng.standard_normal((3, 2)).astype(np.float32)
    outs = tuple(np.empty((3, 2), np.float32) for _ in range(3))
    want = TWIN.lstm_gates(emu, z.copy(), c_prev)
    got = emu.lstm_gates(z, c_prev, out=outs)
    assert all(g is o for g, o in zip(got, outs))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_in_place_kernels(emu, rng):
    f = lambda *s: rng.standard_normal(s).astype(np.float32)
    for z in (f(3, 8), np.asfortranarray(f(3, 8))):  # a transposed z is updated in place too
        c_prev, z_ref = f(3, 2), z.copy()
        want = TWIN.lstm_gates(emu, z_ref, c_prev)
        emu._kernels.launched.clear()
        got = emu.lstm_gates(z, c_prev)
        assert emu._kernels.launched
        np.testing.assert_allclose(z, z_ref, rtol=1e-5, atol=1e-6)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    check(emu, "lstm_gates", (f(3, 8), f(3, 2)))
    check(emu, "gru_gates", (f(3, 6), f(3, 6), f(3, 2)))
    check(emu, "lstm_gates", (f(3, 8), f(3, 2), "tanh", "hard_sigmoid"))  # Keras 2's default
    check(emu, "gru_gates_grad", (f(3, 6), f(3, 6), f(3, 2), f(3, 2), "hard_sigmoid", "relu"))
    ps = [f(5), f(2, 3)]
    for v_hats in (None, [np.abs(f(5)), np.abs(f(2, 3))]):  # Adam, AMSGrad
        check(emu, "adam_update", (ps, [f(5), strided(f(2, 3))], [f(5), f(2, 3)],
                                   [np.abs(f(5)), np.abs(f(2, 3))], 1e-3, 0.9, 0.999, 1e-7,
                                   v_hats))
    check(emu, "sgd_update", ([f(5), f(2, 3)], [f(5), f(2, 3)], [f(5), f(2, 3)], 0.1, 0.9, True))


def test_fallbacks_to_the_twin(emu, rng):
    """What the kernels do not take goes to the reference composition, with no launch."""
    h = lambda *s: rng.standard_normal(s).astype(np.float16)
    check(emu, "softmax_cross_entropy", (h(3, 4), np.array([0, 1, 3])), launched=False,
          rtol=1e-2)
    check(emu, "bias_act", (h(3, 4), h(4), "relu"), launched=False)
    x32 = rng.standard_normal((3, 4)).astype(np.float32)
    check(emu, "layer_norm", (x32, np.ones(4), None, 1e-3), launched=False)  # mixed dtypes
    w = strided(x32)  # a non-contiguous parameter cannot be updated in place by the kernel
    emu._kernels.launched.clear()
    emu.sgd_update([w], [x32], None, 0.1)
    assert not emu._kernels.launched
    np.testing.assert_allclose(w, (1 - 0.1) * x32, rtol=1e-6)
    check(emu, "dropout_mask", ((5, 3), 0.5, 7, 0, "float16"), launched=False)


def test_dropout_mask_same_bits_as_twin(emu):
    check(emu, "dropout_mask", ((17, 5), 0.3, 2 ** 40 + 1, 12, "float32"), rtol=0)
