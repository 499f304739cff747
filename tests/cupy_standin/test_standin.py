"""The CuPy stand-in itself: what it keeps of a GPU (device arrays that do not mix with host
arrays, counted copies, garbage in new memory, kernel launches checked as a device would)."""

import sys

import numpy as np
import pytest
import standin

from kerasrs.backend.kernels import cuda


def test_device_and_host_arrays_do_not_mix(cupy_standin):
    cp = cupy_standin
    d, h = cp.arange(6, dtype=np.float32).reshape(2, 3), np.ones((2, 3), np.float32)
    assert isinstance(d, cp.ndarray) and not isinstance(d, np.ndarray)
    for mix in (lambda: d + h, lambda: h * d, lambda: np.add(d, h), lambda: cp.maximum(d, h),
                lambda: np.concatenate([d, h]), lambda: cp.stack([d, h]), lambda: np.asarray(d),
                lambda: np.array([d])):
        with pytest.raises(TypeError, match="host numpy.ndarray|Implicit conversion"):
            mix()
    assert isinstance(np.exp(d) + 1, cp.ndarray)  # NumPy functions on device arrays stay there
    assert isinstance(d.sum(), cp.ndarray) and d.sum().shape == ()  # 0-d, as CuPy's reductions
    with pytest.raises(AttributeError):
        d.__array_interface__


def test_copies_are_explicit_and_counted(cupy_standin):
    cp = cupy_standin
    host = np.arange(4.0)
    d = cp.asarray(host)
    assert standin.stats == {"d2h": 0, "h2d": 1, "launches": 0}
    assert cp.asarray(d) is d and cp.ascontiguousarray(d) is d
    back = cp.asnumpy(d)
    back[0] = 99.0  # a copy, not a view of the device memory
    assert float(d[0]) == 0.0 and d.get()[1] == 1.0 and d.sum().item() == 6.0
    assert standin.stats["d2h"] == 4
    d.set(np.full(4, 2.0))
    with pytest.raises(ValueError):
        d.set(np.zeros(3))
    assert standin.stats["h2d"] == 2 and d.get().tolist() == [2.0] * 4


def test_new_device_memory_is_garbage(cupy_standin):
    cp = cupy_standin
    assert np.isnan(cp.empty((3, 2), np.float32).get()).all()
    assert (cp.empty_like(cp.zeros(3, np.int32)).get() == -1).all()
    assert (cp.zeros(3).get() == 0).all()


def _softmax_fwd(cp):
    mod = cp.RawModule(code=cuda.source("softmax_ce"), options=cuda.OPTIONS,
                       name_expressions=cuda.each_float("softmax_ce_sparse_fwd"))
    return mod.get_function("softmax_ce_sparse_fwd<float>")


def test_kernel_launch_checks_arguments_against_the_signature(cupy_standin):
    cp = cupy_standin
    k = _softmax_fwd(cp)
    x = cp.asarray(np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32))
    labels = cp.asarray(np.array([0, 4, 2], np.int32))
    loss, probs = cp.empty(3, np.float32), cp.empty((3, 5), np.float32)
    k((3,), (32,), (x, labels, loss, probs, np.int32(3), np.int32(5)))
    assert np.isfinite(loss.get()).all() and np.allclose(probs.get().sum(1), 1, rtol=1e-6)
    assert standin.stats["launches"] == 1
    bad = {
        "parameters, 5 arguments": (x, labels, loss, probs, np.int32(3)),
        "is int64, parameter i4": (x, labels, loss, probs, np.int64(3), np.int32(5)),
        "is int; pass NumPy": (x, labels, loss, probs, 3, np.int32(5)),
        "float64 array, parameter type pf4": (x.astype(np.float64), labels, loss, probs,
                                              np.int32(3), np.int32(5)),
        "host numpy.ndarray": (x.get(), labels, loss, probs, np.int32(3), np.int32(5)),
        "not C-contiguous": (cp.asfortranarray(x), labels, loss, probs, np.int32(3),
                             np.int32(5)),
    }
    for message, args in bad.items():
        with pytest.raises((TypeError, ValueError), match=message):
            k((3,), (32,), args)
    good = (x, labels, loss, probs, np.int32(3), np.int32(5))
    for grid, block, message in (((0,), (32,), "grid"), ((3,), (2048,), "block"),
                                 ((3,), (64, 32), "threads per block"),
                                 ((3, 70000), (32,), "grid"), ([3], (32,), "grid")):
        with pytest.raises((TypeError, ValueError), match=message):
            k(grid, block, good)
    with pytest.raises(ValueError, match="shared_mem"):
        k((3,), (32,), good, shared_mem=1 << 20)
    assert standin.stats["launches"] == 1


def test_elementwise_kernel_runs_its_cpp_body(cupy_standin):
    cp = cupy_standin
    k = cp.ElementwiseKernel("T x, T y", "T z", "z = x > y ? x - y : (T)0", "kr_test_diff")
    a = cp.asarray(np.array([[1.0, 5.0], [2.0, -1.0]]))
    np.testing.assert_array_equal(k(a, cp.asarray(np.array([2.0, 1.0]))).get(),
                                  [[0.0, 4.0], [0.0, 0.0]])  # broadcast like CuPy
    with pytest.raises(TypeError, match="mismatched"):
        k(a, a.astype(np.float32))
    with pytest.raises(TypeError, match="host numpy.ndarray"):
        k(a, np.ones(2))


def test_installed_only_inside_the_block():
    before = sys.modules.get("cupy")
    with standin.installed() as cp:
        import cupy

        assert cupy is cp and sys.modules["cupyx"].scatter_add
        with pytest.raises(ImportError):
            from cupy.cuda import nccl  # noqa: F401
    assert sys.modules.get("cupy") is before
