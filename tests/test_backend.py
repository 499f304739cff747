"""Backend selection, dtypes, seeding, transfer, and the CuPy kernels against their NumPy twins."""

import ast
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kerasrs
from kerasrs import backend, ops
from kerasrs.backend.kernels import elementwise

ROOT = pathlib.Path(__file__).resolve().parents[1]
HAS_CUPY = importlib.util.find_spec("cupy") is not None


def _python(code, **env):
    """Run ``code`` in a fresh interpreter (the package from this checkout); return stdout."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    full_env.pop("KERASRS_BACKEND", None) if "KERASRS_BACKEND" not in env else None
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env,
                         capture_output=True, text=True, timeout=120)
    return out


# -- selection ---------------------------------------------------------------------------------
def test_default_backend_is_numpy_and_env_variable_selects():
    out = _python("import kerasrs; print(kerasrs.backend.backend())")
    assert out.returncode == 0 and out.stdout.strip() == "numpy"
    out = _python("import kerasrs; print(kerasrs.backend.backend())", KERASRS_BACKEND="NumPy")
    assert out.stdout.strip() == "numpy"
    out = _python("import kerasrs", KERASRS_BACKEND="tensorflow")
    assert out.returncode != 0
    assert "KERASRS_BACKEND must be one of ('numpy', 'cupy'). Received: 'tensorflow'" in out.stderr


def test_import_kerasrs_does_not_import_cupy():
    out = _python("""
        import sys, kerasrs, kerasrs.ops
        x = kerasrs.ops.sum(kerasrs.Tensor([1.0, 2.0]))
        print('cupy' in sys.modules, any(m.startswith('cupy') for m in sys.modules))
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False False"


def test_no_module_outside_the_cupy_backend_imports_cupy():
    allowed = {"cupy_backend.py"}
    for path in (ROOT / "kerasrs").rglob("*.py"):
        if path.name in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n.split(".")[0] in ("cupy", "cupyx") for n in names), path


@pytest.mark.skipif(HAS_CUPY, reason="CuPy is installed here")
def test_asking_for_cupy_without_cupy_raises_import_error_saying_so():
    with pytest.raises(ImportError, match="needs CuPy, which is not installed"):
        backend.get("cupy")
    with pytest.raises(ImportError, match="CuPy"):
        backend.set_backend("cupy")
    assert backend.backend() == "numpy"
    assert backend.is_available("cupy") is False


@pytest.mark.skipif(HAS_CUPY, reason="CuPy is installed here")
def test_env_cupy_without_cupy_imports_but_fails_on_first_use():
    out = _python("""
        import kerasrs
        print(kerasrs.backend.backend())
        kerasrs.Tensor([1.0])
    """, KERASRS_BACKEND="cupy")
    assert out.stdout.strip() == "cupy"
    assert "ImportError" in out.stderr and "needs CuPy, which is not installed" in out.stderr


def test_unknown_backend_name_error():
    with pytest.raises(ValueError, match=r"Unknown backend: expected one of \('numpy', 'cupy'\). "
                                         r"Received: 'jax'"):
        backend.get("jax")
    with pytest.raises(ValueError, match="Unknown backend"):
        backend.set_backend("jax")
    assert backend.is_available("jax") is False


def test_set_backend_and_using():
    assert backend.backend() == "numpy"
    backend.set_backend("numpy")
    with backend.using("numpy") as be:
        assert be is backend.get() and be.name == "numpy" and backend.backend() == "numpy"
        assert kerasrs.Tensor([1.0]).backend is be
    assert backend.get("numpy") is backend.get("numpy")  # one instance per name
    assert backend.backend_of(np.zeros(2)) is backend.get("numpy")


# -- dtypes ------------------------------------------------------------------------------------
def test_floatx_defaults_to_float32_and_can_be_set():
    assert backend.floatx() == "float32"
    assert kerasrs.Tensor([1.0, 2.0]).dtype == np.float32
    assert kerasrs.Tensor(np.array([1.0])).dtype == np.float64  # arrays keep their dtype
    assert kerasrs.Tensor([1, 2]).dtype.kind == "i"
    try:
        backend.set_floatx("float64")
        assert kerasrs.Tensor([1.0]).dtype == np.float64
    finally:
        backend.set_floatx("float32")
    with pytest.raises(ValueError, match="set_floatx: unknown float dtype. Received: dtype='int8'"):
        backend.set_floatx("int8")


def test_bfloat16_through_ml_dtypes():
    import ml_dtypes

    dt = backend.standardize_dtype("bfloat16")
    assert dt == np.dtype(ml_dtypes.bfloat16) and backend.is_float_dtype(dt)
    x = kerasrs.Tensor([1.5, 2.25, 3.0], dtype="bfloat16")
    assert x.dtype.name == "bfloat16"
    y = ops.add(ops.multiply(x, x), 1.0)
    assert y.dtype.name == "bfloat16"
    np.testing.assert_allclose(y.numpy().astype("float32"), [3.25, 6.0625, 10.0], rtol=1e-2)
    v = kerasrs.Variable([1.0, 2.0], dtype="bfloat16")
    with kerasrs.GradientTape() as tape:
        loss = ops.sum(v * v)
    g = tape.gradient(loss, v)
    assert g.dtype.name == "bfloat16"
    np.testing.assert_allclose(g.numpy().astype("float32"), [2.0, 4.0])
    try:
        backend.set_floatx("bfloat16")
        assert kerasrs.Tensor([1.0]).dtype.name == "bfloat16"
    finally:
        backend.set_floatx("float32")


# -- seeding and transfer ----------------------------------------------------------------------
def test_set_seed_makes_the_runtime_generator_reproducible():
    backend.set_seed(123)
    a = backend.get().rng.random(5)
    backend.set_seed(123)
    b = backend.get().rng.random(5)
    backend.set_seed(124)
    c = backend.get().rng.random(5)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_utils_set_random_seed_seeds_everything():
    import random

    def draw():
        return random.random(), np.random.rand(), backend.get().rng.random()

    kerasrs.utils.set_random_seed(7)
    first = draw()
    kerasrs.utils.set_random_seed(7)
    assert draw() == first


def test_convert_to_numpy():
    x = kerasrs.Tensor(np.arange(3.0))
    for value in (x, x.data, [0.0, 1.0, 2.0], (0.0, 1.0, 2.0)):
        out = backend.convert_to_numpy(value)
        assert isinstance(out, np.ndarray)
        np.testing.assert_array_equal(out, [0.0, 1.0, 2.0])
    assert backend.convert_to_numpy(2.5) == 2.5
    np.testing.assert_array_equal(ops.convert_to_numpy(x), [0.0, 1.0, 2.0])
    assert isinstance(np.asarray(x), np.ndarray)


# -- named kernels: NumPy references -----------------------------------------------------------
def test_numpy_reference_kernels():
    be = backend.get("numpy")
    y = np.array([-1.0, 0.0, 2.0])
    np.testing.assert_array_equal(be.relu_grad(y, np.array([5.0, 5.0, 5.0])), [0.0, 0.0, 5.0])
    x = np.array([-1000.0, -1.0, 0.0, 1.0, 1000.0], dtype="float32")
    with np.errstate(over="raise", invalid="raise", divide="raise"):  # no overflow for |x| big
        s = be.sigmoid(x)
    assert s.dtype == np.float32
    np.testing.assert_allclose(s, [0.0, 0.2689414, 0.5, 0.7310586, 1.0], rtol=1e-6)
    a = np.zeros(3)
    be.scatter_add(a, np.array([0, 0, 2]), np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(a, [3.0, 0.0, 3.0])


# -- CUDA kernel sources: checkable without a GPU ----------------------------------------------
def test_kernel_sources_are_well_formed():
    assert elementwise.ELEMENTWISE
    for name, spec in elementwise.ELEMENTWISE.items():
        assert name.startswith("kerasrs_") and len(spec) == 3, name
        in_params, out_params, body = spec
        params = [p.split() for p in (in_params + ", " + out_params).split(",")]
        assert all(len(p) == 2 and p[1].isidentifier() for p in params), name
        outs = [p.split()[1] for p in out_params.split(",")]
        assert all(f"{o} =" in body for o in outs), f"{name} never assigns its outputs"
        assert body.count("(") == body.count(")"), name
        assert hasattr(backend.base.Backend, name[len("kerasrs_"):]), f"{name}: no NumPy twin"


@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler to syntax-check with")
@pytest.mark.parametrize("name", sorted(elementwise.ELEMENTWISE))
def test_kernel_sources_compile_as_cpp(tmp_path, name):
    """Each ElementwiseKernel body, wrapped as CuPy wraps it, compiles for float and double."""
    in_params, out_params, body = elementwise.ELEMENTWISE[name]
    args = ", ".join(f"{t} {n}" for t, n in (p.split() for p in in_params.split(",")))
    outs = ", ".join(f"{t}& {n}" for t, n in (p.split() for p in out_params.split(",")))
    src = (f"#include <cmath>\nusing namespace std;\n"
           f"template <typename T> void {name}({args}, {outs}) {{ {body}; }}\n"
           f"template void {name}<float>({args.replace('T ', 'float ')}, "
           f"{outs.replace('T& ', 'float& ')});\n"
           f"template void {name}<double>({args.replace('T ', 'double ')}, "
           f"{outs.replace('T& ', 'double& ')});\n")
    path = tmp_path / "k.cpp"
    path.write_text(src)
    out = subprocess.run(["g++", "-std=c++14", "-fsyntax-only", "-Wall", "-Werror", str(path)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr + src


# -- the CuPy kernels against their NumPy twins (GPU only) -------------------------------------
@pytest.fixture
def cupy_backend():
    if not backend.is_available("cupy"):
        pytest.skip("cupy backend not available")
    return backend.get("cupy")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cuda_kernels_match_numpy_twins(cupy_backend, dtype):
    cp, ref = cupy_backend.xp, backend.get("numpy")
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(10_000) * 4).astype(dtype)
    gy = rng.standard_normal(10_000).astype(dtype)
    x[:4] = [0.0, -0.0, 1000.0, -1000.0]
    rtol = 1e-6 if dtype == "float32" else 1e-13
    for name, args in (("relu_grad", (x, gy)), ("sigmoid", (x,)), ("erf", (x,))):
        got = getattr(cupy_backend, name)(*(cp.asarray(a) for a in args))
        want = getattr(ref, name)(*args)
        assert got.dtype == want.dtype, name
        np.testing.assert_allclose(cp.asnumpy(got), want, rtol=rtol, atol=1e-7, err_msg=name)
    a = cp.zeros(3, dtype)
    cupy_backend.scatter_add(a, cp.asarray([0, 0, 2]), cp.asarray([1.0, 2.0, 3.0], dtype))
    np.testing.assert_array_equal(cp.asnumpy(a), [3.0, 0.0, 3.0])


@pytest.mark.gpu
def test_ops_on_cupy_match_numpy(cupy_backend):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((5, 3))
    with backend.using("cupy"):  # (a Tensor of a NumPy array stays on NumPy)
        ta, tb = kerasrs.Tensor(cupy_backend.asarray(a)), kerasrs.Tensor(cupy_backend.asarray(b))
        with kerasrs.GradientTape() as tape:
            tape.watch([ta, tb])
            y = ops.sum(ops.erf(ops.matmul(ta, tb)) * ops.take(ta, [0, 0, 3], axis=0)[:, :3].T[0])
        ga, gb = tape.gradient(y, [ta, tb])
    assert ta.backend is cupy_backend
    with kerasrs.GradientTape() as tape:
        na, nb = kerasrs.Tensor(a), kerasrs.Tensor(b)
        tape.watch([na, nb])
        z = ops.sum(ops.erf(ops.matmul(na, nb)) * ops.take(na, [0, 0, 3], axis=0)[:, :3].T[0])
    wa, wb = tape.gradient(z, [na, nb])
    np.testing.assert_allclose(y.numpy(), z.numpy(), rtol=1e-10)
    np.testing.assert_allclose(ga.numpy(), wa.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gb.numpy(), wb.numpy(), rtol=1e-10, atol=1e-12)


def test_numpy_empty_is_never_shared_by_live_arrays_across_threads():
    """Two threads training at once (two models) must not get the same reused memory for
    arrays that are alive at the same time; a freed block is reused."""
    import threading

    be = kerasrs.backend.get("numpy")
    n = (1 << 20) // 4 + 7  # above memory.MIN_BYTES: pooled
    here = be.empty((n,), "float32")
    other = []
    t = threading.Thread(target=lambda: other.append(be.empty((n,), "float32")))
    t.start()
    t.join()
    assert not np.shares_memory(here, other[0])
    address = other[0].ctypes.data
    del other[:]
    assert be.empty((n,), "float32").ctypes.data == address  # the freed block comes back
