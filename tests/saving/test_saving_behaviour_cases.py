"""Behaviour cases C20 (loading weights into mismatched models) and C22's saving side
(a loaded model continues with its saved optimizer; re-compiling starts a new one), from
/work/shared/cases/behaviour.md."""

import numpy as np
import pytest

import kerasrs
from kerasrs import layers

X = np.random.default_rng(0).normal(size=(5, 4)).astype("float32")


def _stack(*dense, seed=0):
    kerasrs.utils.clear_session()
    kerasrs.utils.set_random_seed(seed)
    return kerasrs.Sequential([layers.Input((4,))] + [layers.Dense(u, name=n) for n, u in dense])


def _a(seed=0):
    return _stack(("d1", 3), ("d2", 2), seed=seed)


@pytest.fixture(params=["weights.h5", "h5"])
def saved(request, tmp_path):
    """(kind, path, model A) for (i) the Keras 3 weights file and (ii) the legacy layout."""
    model = _a()
    if request.param == "weights.h5":
        path = tmp_path / "a.weights.h5"
        model.save_weights(path)
    else:
        path = tmp_path / "a.h5"
        model.save(path)
    return request.param, path, model


def _snapshot(model):
    return [w.numpy().copy() for w in model.weights]


def test_c20_step2_wrong_shape_raises_naming_d2_and_both_shapes(saved):
    _, path, _ = saved
    b = _stack(("d1", 3), ("d2", 5), seed=1)
    before = _snapshot(b)
    with pytest.raises(ValueError) as info:
        b.load_weights(path)
    message = str(info.value)
    assert "'d2'" in message and "(3, 5)" in message and "(3, 2)" in message
    assert "Nothing was loaded" in message  # and indeed nothing changed:
    for w, v in zip(b.weights, before):
        np.testing.assert_array_equal(w.numpy(), v)


def test_c20_step3_skip_mismatch_loads_d1_leaves_d2_and_warns(saved):
    kind, path, a = saved
    variants = [{"skip_mismatch": True}]
    if kind == "h5":
        variants.append({"skip_mismatch": True, "by_name": True})
    for kwargs in variants:
        b = _stack(("d1", 3), ("d2", 5), seed=1)
        d2_before = [w.numpy().copy() for w in b.get_layer("d2").weights]
        with pytest.warns(UserWarning, match="d2"):
            b.load_weights(path, **kwargs)
        for wa, wb in zip(a.get_layer("d1").weights, b.get_layer("d1").weights):
            np.testing.assert_array_equal(wa.numpy(), wb.numpy())
        for w, v in zip(b.get_layer("d2").weights, d2_before):
            np.testing.assert_array_equal(w.numpy(), v)


def test_c20_step3_by_name(saved):
    kind, path, _ = saved
    b = _stack(("d1", 3), ("d2", 5), seed=1)
    before = _snapshot(b)
    if kind == "weights.h5":  # class-keyed format: by_name is refused, as in Keras
        with pytest.raises(ValueError, match="by_name"):
            b.load_weights(path, by_name=True)
    else:  # by_name without skip_mismatch raises as step 2
        with pytest.raises(ValueError, match=r"'d2'.*\(3, 5\).*\(3, 2\)"):
            b.load_weights(path, by_name=True)
    for w, v in zip(b.weights, before):
        np.testing.assert_array_equal(w.numpy(), v)


def test_c20_step4_extra_layer(saved):
    kind, path, _ = saved
    c = _stack(("d1", 3), ("d2", 2), ("d3", 2), seed=1)
    before = _snapshot(c)
    match = r"3 layers.*the file has 2" if kind == "h5" else r"'d3'.*expects 2 weights.*stores 0"
    with pytest.raises(ValueError, match=match):
        c.load_weights(path)
    for w, v in zip(c.weights, before):
        np.testing.assert_array_equal(w.numpy(), v)


def test_c20_step5_round_trip_is_bit_identical(saved):
    _, path, a = saved
    a2 = _a(seed=2)
    assert not np.array_equal(a2.predict(X, verbose=0), a.predict(X, verbose=0))
    a2.load_weights(path)
    np.testing.assert_array_equal(a2.predict(X, verbose=0), a.predict(X, verbose=0))


# -- C22 ------------------------------------------------------------------------------------------
def _c22_trained():
    kerasrs.utils.clear_session()
    m = kerasrs.Sequential([layers.Input((1,)), layers.Dense(1, use_bias=False)])
    m.layers[0].kernel.assign(np.ones((1, 1), "float32"))
    m.compile(kerasrs.optimizers.Adam(0.1), "mse")
    m.fit(np.array([[1.0]], "float32"), np.array([[0.0]], "float32"), epochs=3, batch_size=1,
          verbose=0)
    return m


def _kernel(m):
    return float(m.layers[0].kernel.numpy()[0, 0])


def _one_step(m):
    m.fit(np.array([[1.0]], "float32"), np.array([[0.0]], "float32"), epochs=1, batch_size=1,
          verbose=0)


@pytest.mark.parametrize("ext", [".keras", ".h5"])
def test_c22_loaded_model_continues_with_its_saved_optimizer(ext, tmp_path):
    m = _c22_trained()
    assert _kernel(m) == pytest.approx(0.701587, abs=1e-5)
    m.save(tmp_path / f"c22{ext}")
    loaded = kerasrs.models.load_model(tmp_path / f"c22{ext}")
    assert _kernel(loaded) == _kernel(m)
    assert int(loaded.optimizer.iterations.numpy()) == 3
    _one_step(loaded)
    assert _kernel(loaded) == pytest.approx(0.603940, abs=1e-5)  # the old Adam continues
    _one_step(m)
    assert _kernel(loaded) == _kernel(m)


@pytest.mark.parametrize("ext", [".keras", ".h5"])
def test_c22_recompiling_a_loaded_model_keeps_weights_and_starts_a_new_optimizer(ext, tmp_path):
    m = _c22_trained()
    m.save(tmp_path / f"c22{ext}")
    loaded = kerasrs.models.load_model(tmp_path / f"c22{ext}")
    loaded.compile(kerasrs.optimizers.Adam(0.1), "mse")
    assert _kernel(loaded) == pytest.approx(0.701587, abs=1e-5)
    assert int(loaded.optimizer.iterations.numpy()) == 0
    _one_step(loaded)
    assert _kernel(loaded) == pytest.approx(0.601587, abs=1e-5)  # a first Adam step again
    assert abs(_kernel(loaded) - 0.603940) > 2e-3


def test_c22_weights_checkpoint_restores_the_optimizer_of_a_compiled_model(tmp_path):
    m = _c22_trained()
    m.save_weights(tmp_path / "c22.weights.h5")
    kerasrs.utils.clear_session()
    fresh = kerasrs.Sequential([layers.Input((1,)), layers.Dense(1, use_bias=False)])
    fresh.compile(kerasrs.optimizers.Adam(0.1), "mse")
    fresh.load_weights(tmp_path / "c22.weights.h5")
    assert int(fresh.optimizer.iterations.numpy()) == 3
    _one_step(fresh)
    assert _kernel(fresh) == pytest.approx(0.603940, abs=1e-5)
