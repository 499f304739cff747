"""The four benchmark models (`benchmarks/models.py`) trained for a few steps on the 'cupy'
backend equal the same steps on NumPy (issue 24). Without a GPU they run on the CuPy stand-in:
``KERASRS_CUPY_STANDIN=1 python -m pytest -m gpu tests/test_benchmark_models_gpu.py``; there
they also show that a training step reads nothing back from the device."""

import importlib.util
import pathlib
import sys

import numpy as np
import pytest

import kerasrs
from kerasrs import backend as backend_module

pytestmark = pytest.mark.gpu
ROOT = pathlib.Path(__file__).resolve().parents[1]


def _benchmark_models():
    spec = importlib.util.spec_from_file_location("benchmark_models",
                                                  ROOT / "benchmarks" / "models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fit(models, name, x, y, backend):
    """``(losses, weights, model, device-to-host copies during fit or None)`` of one epoch of
    2 steps on ``backend``."""
    cp = sys.modules.get("cupy")
    stats = getattr(cp, "stats", None) if backend == "cupy" else None  # the stand-in's counts
    with backend_module.using(backend):
        kerasrs.utils.set_random_seed(0)
        model, loss = models.kerasrs_network(name)
        model.compile(optimizer="adam", loss=loss)
        reads = None if stats is None else stats["d2h"]
        history = model.fit(x, y, batch_size=2, epochs=1, shuffle=False, verbose=0)
        reads = None if stats is None else stats["d2h"] - reads
        weights = [backend_module.convert_to_numpy(w) for w in model.get_weights()]
        return history.history["loss"], weights, model, reads


@pytest.mark.parametrize("name", ["mlp", "cnn", "lstm", "transformer"])
def test_benchmark_model_fit_matches_numpy(name):
    if not backend_module.is_available("cupy"):
        pytest.skip("cupy backend not available")
    models = _benchmark_models()
    rng = np.random.default_rng(0)
    x = rng.random((4, *models.INPUT_SHAPES[name])).astype("float32")
    y = rng.integers(0, 10, 4)
    losses, weights, model, reads = _fit(models, name, x, y, "cupy")
    assert all(isinstance(w.data, sys.modules["cupy"].ndarray) for w in model.weights)
    if reads is not None:  # the epoch's log reads the loss mean; the steps read nothing
        assert reads == 1
    want_losses, want_weights, _, _ = _fit(models, name, x, y, "numpy")
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    # Adam's step is lr * m / (sqrt(v) + eps): for a gradient near 0 float32 rounding noise
    # changes its sign, so an update may differ by up to a step (lr = 1e-3) there; 1e-5 is
    # 1 % of one step
    for got, want in zip(weights, want_weights):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
