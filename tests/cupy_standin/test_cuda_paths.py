"""The paths of the CUDA half that the kernel-vs-twin cases of test_cupy_backend_standin.py do
not take: the remaining kernels, the fallbacks to the twins, non-contiguous and ``out``
arguments, the launchers' argument checks and empty inputs, and `cupy_backend`'s import
errors. Each test checks values or the error, so a broken path fails it (issue 24)."""

import pathlib
import sys
import types

import numpy as np
import pytest
import standin
from test_cupy_backend_standin import TWIN, check_kernel

from kerasrs import backend as backend_module
from kerasrs.backend.kernels import cuda, dropout


def _f(rng, *shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def _be():
    return backend_module.get("cupy")


def _launches():
    return standin.stats["launches"]


def more_cases(rng):
    """Kernel cases beyond test_cupy_backend_standin's: the remaining kernels and arguments."""
    ref = backend_module.get("numpy")
    x4 = _f(rng, 2, 5, 4, 3)
    _, argmax = TWIN.max_pool(ref, x4, (2, 2), (2, 1), ((0, 1), (1, 1)))
    cols = TWIN.im2col(ref, x4, (3, 2), (2, 1), (1, 2), ((1, 1), (1, 0)))
    onehot = np.eye(70, dtype=np.float32)[rng.integers(0, 70, 3)]
    z = _f(rng, 3, 8)
    _, _, tc = TWIN.lstm_gates(ref, z, _f(rng, 3, 2))  # z now holds the activated gates
    return {
        "lstm_gates_grad": (z, _f(rng, 3, 2), tc, _f(rng, 3, 2), _f(rng, 3, 2), "relu",
                            "hard_sigmoid"),
        "gru_gates": (_f(rng, 3, 6), _f(rng, 3, 6), _f(rng, 3, 2), "tanh", "sigmoid"),
        "max_pool_grad": (_f(rng, *argmax.shape), argmax, x4.shape),
        "col2im": (_f(rng, *cols.shape), x4.shape, (3, 2), (2, 1), (1, 2), ((1, 1), (1, 0))),
        # one-hot labels (the dense kernels), 70 classes: a block of 128 threads
        "softmax_cross_entropy": (_f(rng, 3, 70), onehot),
        "softmax_cross_entropy_grad": (np.abs(_f(rng, 3, 70)), onehot, _f(rng, 3)),
        "layer_norm": (_f(rng, 4, 7, dtype=np.float64), None, None, 1e-5),
        "bias_act": (_f(rng, 7, 5), None, "sigmoid"),
        "bias_act_grad": (_f(rng, 9, 5), _f(rng, 9, 5), "relu", False),
        "adam_update": ([_f(rng, 5), _f(rng, 2)], [_f(rng, 5), _f(rng, 2)],
                        [_f(rng, 5), _f(rng, 2)], [np.abs(_f(rng, 5)), np.abs(_f(rng, 2))], 1e-3,
                        0.9, 0.999, 1e-7, [np.abs(_f(rng, 5)), np.abs(_f(rng, 2))]),  # amsgrad
        "sgd_update": ([_f(rng, 5), _f(rng, 3)], [_f(rng, 5), _f(rng, 3)], None, 0.1,
                       0.0),  # no momentum
        "embedding_grad": (np.array(2), _f(rng, 3), 4),  # one id: a batch of one row
        "im2col": (_f(rng, 2, 6, 3, dtype=np.float64), (2,), (1,), (2,), ((0, 1),)),  # 1-D
    }


def test_remaining_kernels_match_twins(cupy_standin, rng):
    for name, args in more_cases(rng).items():
        check_kernel(cupy_standin, name, args)


def test_philox_blocks_match_the_numpy_version(cupy_standin, rng):
    counters = rng.integers(0, 2 ** 32, (37, 4), dtype=np.uint64).astype(np.uint32)
    key = (0x12345678, 0x9ABCDEF0)
    keys = np.tile(np.array(key, np.uint32), (37, 1))
    got = _be().kernels.philox4x32_10(cupy_standin.asarray(counters), cupy_standin.asarray(keys))
    want = dropout.philox4x32_10(np, list(counters.T.astype(np.uint64)), key)
    np.testing.assert_array_equal(got.get(), np.stack(want, axis=1).astype(np.uint32))
    assert got.dtype == np.uint32 and _launches() == 1


def _fallback_cases(rng):
    """Arguments the kernels do not take: each override must run the twin instead."""
    h = lambda *s: _f(rng, *s, dtype=np.float16)
    ref = backend_module.get("numpy")
    x4 = h(2, 4, 4, 3)
    _, argmax = TWIN.max_pool(ref, x4, (2, 2), (2, 2), ((0, 0), (0, 0)))
    contiguous, strided = _f(rng, 6), _f(rng, 12)[::2]
    return {
        "softmax_cross_entropy": (h(3, 5), np.array([0, 4, 1])),
        "softmax_cross_entropy_grad": (np.abs(h(3, 5)), np.array([0, 4, 1]), h(3)),
        "bias_act": (h(4, 3), h(3), "relu"),
        "bias_act_grad": (h(4, 3), h(4, 3), "tanh"),
        "layer_norm": (h(4, 6), h(6), h(6), 1e-3),
        "layer_norm_grad": (h(2, 6), h(2, 6), h(6), h(2), np.abs(h(2))),
        "embedding_grad": (np.array([[0, 2]]), h(1, 2, 3), 4),
        "im2col": (x4, (2, 2), (1, 1), (1, 1), ((0, 0), (0, 0))),
        "col2im": (h(18, 12), x4.shape, (2, 2), (1, 1), (1, 1), ((0, 0), (0, 0))),
        "max_pool": (x4, (2, 2), (2, 2), ((0, 0), (0, 0))),
        "max_pool_grad": (h(*argmax.shape), argmax, x4.shape),
        # (no sigmoid: the stand-in's ElementwiseKernel, which the twin's sigmoid is, takes no
        # float16)
        "lstm_gates": (h(2, 8), h(2, 2), "tanh", "hard_sigmoid"),
        "lstm_gates_grad": (np.abs(h(2, 8)), h(2, 2), h(2, 2), h(2, 2), h(2, 2), "tanh",
                            "hard_sigmoid"),
        "gru_gates": (h(2, 6), h(2, 6), h(2, 2), "relu", "hard_sigmoid"),
        "gru_gates_grad": (np.abs(h(2, 6)), h(2, 6), h(2, 2), h(2, 2), "relu", "hard_sigmoid"),
        # updated in place: a strided parameter, or float16 slots
        "adam_update": ([contiguous, strided], [_f(rng, 6)] * 2, [_f(rng, 6)] * 2,
                        [np.abs(_f(rng, 6))] * 2, 1e-3, 0.9, 0.999, 1e-7),
        "sgd_update": ([h(4)], [h(4)], [h(4)], 0.1, 0.9),
        "dropout_mask": ((3, 5), 0.5, 7, 0, "float16"),
    }


def test_fallbacks_run_the_twin_and_launch_nothing(cupy_standin, rng):
    be, ref = _be(), backend_module.get("numpy")
    for name, args in _fallback_cases(rng).items():
        dev = [cupy_standin.asarray(a) if isinstance(a, np.ndarray) else
               [cupy_standin.asarray(x) if x.flags.c_contiguous else
                cupy_standin.asarray(x.base)[::2] for x in a]  # the same strided view
               if isinstance(a, list) else a for a in args]
        host = [a.copy() if isinstance(a, np.ndarray) else
                [x.copy() for x in a] if isinstance(a, list) else a for a in args]
        before = _launches()
        got = getattr(be, name)(*dev)
        want = getattr(TWIN, name)(ref, *host)
        assert _launches() == before, f"{name}: launched a kernel for what it does not take"
        if name == "dropout_mask":  # CuPy's and NumPy's streams differ: the kept fraction
            assert got.dtype == np.float16 and set(np.unique(got.get())) <= {0.0, 2.0}
            continue
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        for g, w in zip(got, want):
            if w is not None:
                np.testing.assert_allclose(g.get(), w, rtol=1e-3, atol=1e-3, err_msg=name)
        for d, hst in zip(dev, host):  # in-place updates (the optimizers, the gates)
            for dd, hh in zip(*((d, hst) if isinstance(hst, list) else ([d], [hst]))):
                if isinstance(hh, np.ndarray):
                    np.testing.assert_allclose(dd.get(), hh, rtol=1e-3, atol=1e-3,
                                               err_msg=name)


def test_erf_of_half_and_int_inputs(cupy_standin):
    be = _be()
    half = np.array([-1.5, 0.0, 0.25, 2.0], np.float16)
    got = be.erf(cupy_standin.asarray(half))
    assert got.dtype == np.float16
    want = TWIN.erf(backend_module.get("numpy"), half.astype(np.float32))
    np.testing.assert_allclose(got.get(), want.astype(np.float16), rtol=1e-3)
    ints = np.array([-1, 0, 2])
    got = be.erf(cupy_standin.asarray(ints))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.get(), TWIN.erf(backend_module.get("numpy"),
                                                   ints.astype(np.float32)), rtol=1e-6)


def test_non_contiguous_in_place_and_out_arguments(cupy_standin, rng):
    be, ref, cp = _be(), backend_module.get("numpy"), cupy_standin
    # gates updated in place through a contiguous copy (copy_back)
    wide, c_prev = _f(rng, 3, 16), _f(rng, 3, 2)
    z_host = wide[:, ::2].copy()
    z_dev = cp.asarray(wide)[:, ::2]
    assert not z_dev.flags.c_contiguous
    got = be.lstm_gates(z_dev, cp.asarray(c_prev))
    want = TWIN.lstm_gates(ref, z_host, c_prev)
    np.testing.assert_allclose(z_dev.get(), z_host, rtol=1e-6)  # the activated gates
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.get(), w, rtol=1e-5, atol=1e-6)
    xz_host, hz, h_prev = _f(rng, 3, 12)[:, ::2], _f(rng, 3, 6), _f(rng, 3, 2)
    xz_dev = cp.asarray(np.ascontiguousarray(xz_host.T)).T  # Fortran order
    out = cp.empty((3, 2), np.float32)
    h = be.gru_gates(xz_dev, cp.asarray(hz), cp.asarray(h_prev), out=out)
    assert h is out
    xz_host = xz_host.copy()
    np.testing.assert_allclose(out.get(), TWIN.gru_gates(ref, xz_host, hz, h_prev),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xz_dev.get(), xz_host, rtol=1e-6)  # the activated gates
    # an ``out`` that is C-contiguous is written directly, another through a copy
    x, bias = _f(rng, 6, 4), _f(rng, 4)
    want = TWIN.bias_act(ref, x, bias, "tanh")
    for out in (cp.empty((6, 4), np.float32), cp.asfortranarray(cp.empty((6, 4), np.float32))):
        assert be.bias_act(cp.asarray(x), cp.asarray(bias), "tanh", out=out) is out
        np.testing.assert_allclose(out.get(), want, rtol=1e-5, atol=1e-6)
        gx, gbias = be.bias_act_grad(cp.asarray(want), cp.asarray(x), "tanh", out=out)
        wgx, wgbias = TWIN.bias_act_grad(ref, want, x, "tanh")
        assert gx is out
        np.testing.assert_allclose(gx.get(), wgx, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gbias.get(), wgbias, rtol=1e-5, atol=1e-5)
    x4 = _f(rng, 1, 3, 3, 2)
    cols = cp.empty((4, 8), np.float32)
    assert be.im2col(cp.asarray(x4), (2, 2), (1, 1), (1, 1), ((0, 0), (0, 0)), out=cols) is cols
    np.testing.assert_array_equal(cols.get(), TWIN.im2col(ref, x4, (2, 2), (1, 1), (1, 1),
                                                          ((0, 0), (0, 0))))
    # a transposed (non-contiguous) input is copied once, then launched
    xt = _f(rng, 7, 4)
    before = _launches()
    y, mean, rstd = be.layer_norm(cp.asarray(xt).T, None, None, 1e-3)
    assert _launches() == before + 1
    np.testing.assert_allclose(y.get(), TWIN.layer_norm(ref, xt.T, None, None, 1e-3)[0],
                               rtol=1e-4, atol=1e-5)


def _raises(exc, match, fn, *args, **kwargs):
    before = _launches()
    with pytest.raises(exc, match=match):
        fn(*args, **kwargs)
    assert _launches() == before


def test_launchers_refuse_bad_arguments(cupy_standin):
    k, cp = _be().kernels, cupy_standin
    f32 = lambda *s: cp.zeros(s, np.float32)
    x = f32(3, 5)
    _raises(ValueError, "softmax_cross_entropy: `logits` must have rank 2", k.softmax_cross_entropy,
            f32(15), cp.zeros(3, np.int32))
    _raises(TypeError, "`labels` has dtype float32; expected kind 'iu'",
            k.softmax_cross_entropy, x, f32(3))
    _raises(ValueError, r"`labels` must have shape \(3, 5\)", k.softmax_cross_entropy, x,
            f32(3, 4))
    _raises(TypeError, r"`labels` has dtype float64; expected float32\.", k.softmax_cross_entropy,
            x, cp.zeros((3, 5)))
    _raises(ValueError, "`logits` must be C-contiguous", k.softmax_cross_entropy,
            cp.asfortranarray(x), cp.zeros(3, np.int32))
    _raises(TypeError, "must be float32 or float64 for the CUDA kernel", k.layer_norm,
            cp.zeros((2, 3), np.float16), None, None, 1e-3)
    _raises(ValueError, "needs at least one class", k.softmax_cross_entropy, f32(3, 0),
            cp.zeros(3, np.int32))
    _raises(ValueError, r"`gy` must have shape indices.shape \+ \(dim,\)", k.embedding_grad,
            cp.zeros((2, 3), np.int32), f32(3, 2, 4), 5)
    _raises(ValueError, "does not match gy", k.max_pool_grad, f32(2, 2, 2, 1),
            cp.zeros((2, 2, 2, 1), np.int32), (3, 4, 4, 1))
    _raises(ValueError, "gates width 7 is not 4 \\* units", k.lstm_gates, f32(2, 7), f32(2, 2))
    _raises(ValueError, r"1 grads for 2 params", k.sgd_update, [f32(2), f32(3)], [f32(2)],
            None, 0.1)
    _raises(ValueError, r"`rate` must be in \[0, 1\)", k.dropout_mask, (2, 2), 1.0, 0)
    _raises(ValueError, "must be in \\[0, 2\\*\\*64\\)", k.dropout_mask, (2, 2), 0.5, 2 ** 64)
    with pytest.raises(ValueError, match="max_block must be a power of two"):
        cuda.LauncherBase(cp, None, max_block=100)


class _Huge:
    """Looks like a C-contiguous float32 array too large to allocate."""
    dtype, flags = np.dtype(np.float32), types.SimpleNamespace(c_contiguous=True)

    def __init__(self, shape):
        self.shape, self.ndim = shape, len(shape)


def test_max_pool_refuses_samples_beyond_int32_indices(cupy_standin):
    # one window over a sample of 2**31 elements: argmax (int32) could not address it
    x = _Huge((1, 2 ** 16, 2 ** 15, 1))
    _raises(ValueError, "too many elements for int32 argmax", _be().kernels.max_pool, x,
            (2 ** 16, 2 ** 15), (1, 1), ((0, 0), (0, 0)))


def test_empty_inputs_return_without_a_launch(cupy_standin):
    k, cp = _be().kernels, cupy_standin
    f32 = lambda *s: cp.zeros(s, np.float32)
    before = _launches()
    loss, probs = k.softmax_cross_entropy(f32(0, 4), cp.zeros(0, np.int32))
    assert loss.shape == (0,) and probs.shape == (0, 4)
    assert k.softmax_cross_entropy_grad(f32(0, 4), cp.zeros(0, np.int32), f32(0)).shape == (0, 4)
    grad = k.embedding_grad(cp.zeros((0,), np.int32), f32(0, 3), 4)
    assert grad.shape == (4, 3) and not grad.get().any()  # zeros, not garbage
    assert k.dropout_mask((0, 5), 0.5, 1).shape == (0, 5)
    assert k.philox4x32_10(cp.zeros((0, 4), np.uint32), cp.zeros((0, 2), np.uint32)).shape == \
        (0, 4)
    assert k.adam_update([], [], [], [], 1e-3, 0.9, 0.999, 1e-7) is None
    params = [f32(0)]
    k.adam_update(params, [f32(0)], [f32(0)], [f32(0)], 1e-3, 0.9, 0.999, 1e-7)
    k.sgd_update(params, [f32(0)], [f32(0)], 0.1, 0.9)
    assert _launches() == before


def test_upload_of_the_launcher_base_and_block_sizes(cupy_standin):
    base = cuda.LauncherBase(cupy_standin, None)
    host = np.arange(5, dtype=np.uint64)
    dev = base.upload(host)
    assert isinstance(dev, cupy_standin.ndarray) and dev.get().tolist() == host.tolist()
    assert [cuda.pow2_block(n, 256) for n in (1, 32, 33, 100, 1000)] == [32, 32, 64, 128, 256]
    assert cuda.pow2_block(1000, 64) == 64


def test_import_errors_name_what_is_missing(cupy_standin, monkeypatch):
    from kerasrs.backend import cupy_backend

    monkeypatch.setitem(sys.modules, "cupy", None)  # not installed
    with pytest.raises(ImportError, match="needs CuPy, which is not installed"):
        cupy_backend.import_cupy()
    monkeypatch.setitem(sys.modules, "cupy", cupy_standin)
    nccl = types.ModuleType("cupy.cuda.nccl")
    monkeypatch.setattr(cupy_standin.cuda, "nccl", nccl, raising=False)
    assert cupy_backend.import_nccl() is nccl
    nccl.available = False  # a CuPy built with NCCL whose library is missing
    with pytest.raises(ImportError, match="cannot load.*available is False"):
        cupy_backend.import_nccl()


def test_source_is_the_packaged_file_after_named_line_markers():
    """What RawModule compiles: each part after a ``#line 1`` naming it, the kernel file last
    (``read`` uncached, so the measured run sees it whatever ran before)."""
    text = cuda.read.__wrapped__("softmax_ce.cu")
    assert text == (pathlib.Path(cuda.__file__).parent / "softmax_ce.cu").read_text()
    src = cuda.source("softmax_ce")
    assert src.index('#line 1 "common.cuh"') < src.index('#line 1 "softmax_ce.cu"')
    assert src.endswith('#line 1 "softmax_ce.cu"\n' + text)
