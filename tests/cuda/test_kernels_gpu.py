"""Every handwritten kernel on the device (CupyBackend's overrides) against its NumPy twin, and
the training loop on CuPy against NumPy. GPU only: skipped without a device, failed with
``--gpu``. The twins-vs-overrides tests of tests/backend/test_fused_kernels.py and the op,
layer and saving tests also run on CuPy through the ``backend`` fixture."""

import numpy as np
import pytest

import kerasrs
from kerasrs.backend import base
from kerasrs.backend.numpy_backend import NumpyBackend

pytestmark = pytest.mark.gpu
TWIN = base.Backend


@pytest.fixture(scope="module")
def cp_be():
    if not kerasrs.backend.is_available("cupy"):
        pytest.skip("cupy backend not available")
    return kerasrs.backend.get("cupy")


def _cases(rng, dtype):
    f = lambda *s: rng.standard_normal(s).astype(dtype)
    x4 = f(3, 11, 9, 5)
    xl = f(37, 300)
    _, mean, rstd = TWIN.layer_norm(NumpyBackend(), xl, None, None, 1e-3)
    return [
        ("softmax_cross_entropy", (f(67, 1000) * 10, rng.integers(0, 1000, 67))),
        ("softmax_cross_entropy", (f(5, 3), rng.random((5, 3)).astype(dtype))),
        ("softmax_cross_entropy_grad", (np.abs(f(67, 10)), rng.integers(0, 10, 67), f(67))),
        ("softmax_cross_entropy_grad", (np.abs(f(4, 10)), f(4, 10), f(4))),
        ("embedding_grad", (rng.integers(0, 50, (32, 20)), f(32, 20, 16), 50)),
        ("bias_act", (f(513, 129), f(129), "relu")),
        ("bias_act", (f(1, 1), None, "sigmoid")),
        ("bias_act_grad", (f(513, 129), f(513, 129), "tanh")),
        ("im2col", (x4, (3, 3), (2, 1), (1, 2), ((1, 1), (2, 2)))),
        ("col2im", (f(3 * 6 * 9, 45), x4.shape, (3, 3), (2, 1), (1, 2), ((1, 1), (2, 2)))),
        ("max_pool", (x4, (2, 3), (2, 2), ((0, 1), (1, 1)))),
        ("layer_norm", (xl, f(300), f(300), 1e-3)),
        ("layer_norm_grad", (f(37, 300), xl, f(300), mean, rstd)),
        ("lstm_gates", (f(9, 4 * 33), f(9, 33))),
        ("lstm_gates_grad", (f(9, 4 * 33), f(9, 33), f(9, 33), f(9, 33), f(9, 33))),
        ("gru_gates", (f(9, 3 * 33), f(9, 3 * 33), f(9, 33))),
        ("gru_gates_grad", (f(9, 3 * 33), f(9, 3 * 33), f(9, 33), f(9, 33))),
    ]


def _flat(v):
    return [x for y in (v if isinstance(v, (tuple, list)) else [v]) for x in
            (y if isinstance(y, list) else [y])]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_kernel_matches_its_twin_on_device(cp_be, dtype):
    cp, np_be = cp_be.xp, NumpyBackend()
    rng = np.random.default_rng(0)
    tol = 2e-5 if dtype == np.float32 else 1e-11
    for name, args in _cases(rng, dtype):
        ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        dev = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        want = getattr(TWIN, name)(np_be, *ref)
        got = getattr(cp_be, name)(*dev)
        for g, w in zip(_flat(got) + _flat(dev), _flat(want) + _flat(ref)):
            if isinstance(w, np.ndarray):
                g = cp.asnumpy(g)
                assert g.dtype == w.dtype and g.shape == w.shape, name
                np.testing.assert_allclose(g, w, rtol=tol, atol=tol * max(1, abs(w).max()),
                                           err_msg=name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_optimizer_updates_on_device(cp_be, dtype):
    cp, np_be = cp_be.xp, NumpyBackend()
    rng = np.random.default_rng(1)
    shapes = [(1,), (300, 7), (70000,), (3, 3, 2)]  # 70000 > one chunk
    lists = [[rng.standard_normal(s).astype(dtype) for s in shapes] for _ in range(4)]
    lists[3] = [np.abs(v) for v in lists[3]]
    dev = [[cp.asarray(a) for a in lst] for lst in lists]
    for step in (1, 2):
        alpha = 1e-3 * (1 - 0.999 ** step) ** 0.5 / (1 - 0.9 ** step)
        TWIN.adam_update(np_be, lists[0], lists[1], lists[2], lists[3], alpha, 0.9, 0.999, 1e-7)
        cp_be.adam_update(dev[0], dev[1], dev[2], dev[3], alpha, 0.9, 0.999, 1e-7)
    for lst, dlst in zip(lists, dev):
        for a, d in zip(lst, dlst):
            np.testing.assert_allclose(cp.asnumpy(d), a, rtol=1e-5, atol=1e-6)
    w, g, m = ([rng.standard_normal(s).astype(dtype) for s in shapes] for _ in range(3))
    dw, dg, dm = ([cp.asarray(a) for a in lst] for lst in (w, g, m))
    TWIN.sgd_update(np_be, w, g, m, 0.1, 0.9, True)
    cp_be.sgd_update(dw, dg, dm, 0.1, 0.9, True)
    for a, d in zip(w + m, dw + dm):
        np.testing.assert_allclose(cp.asnumpy(d), a, rtol=1e-5, atol=1e-6)


def test_dropout_mask_bits_match_on_device(cp_be):
    np_be = NumpyBackend()
    for shape, rate, seed, offset in (((1,), 0.5, 0, 0), ((1001, 33), 0.1, 2 ** 63 + 9, 77)):
        got = cp_be.dropout_mask(shape, rate, seed, offset, "float32")
        np.testing.assert_array_equal(cp_be.xp.asnumpy(got),
                                      TWIN.dropout_mask(np_be, shape, rate, seed, offset))


def _mlp_and_cnn():
    layers = kerasrs.layers
    mlp = kerasrs.Sequential([layers.Input((20,)), layers.Dense(32, activation="relu"),
                              layers.Dense(5)])
    cnn = kerasrs.Sequential([layers.Input((12, 12, 1)), layers.Conv2D(4, 3, activation="relu"),
                              layers.MaxPooling2D(2), layers.Flatten(), layers.Dense(5)])
    return mlp, cnn


def test_training_on_cupy_matches_numpy(cp_be, names=("numpy", "cupy")):
    rng = np.random.default_rng(2)
    data = {"mlp": rng.standard_normal((64, 20)).astype("float32"),
            "cnn": rng.standard_normal((64, 12, 12, 1)).astype("float32")}
    y = rng.integers(0, 5, 64)
    results = {}
    for name in names:
        with kerasrs.backend.using(name):
            kerasrs.utils.set_random_seed(0)
            for key, model in zip(("mlp", "cnn"), _mlp_and_cnn()):
                model.compile(optimizer=kerasrs.optimizers.Adam(1e-2),
                              loss=kerasrs.losses.SparseCategoricalCrossentropy(from_logits=True))
                first = [kerasrs.backend.convert_to_numpy(w) for w in model.get_weights()]
                hist = model.fit(data[key], y, batch_size=16, epochs=2, verbose=0, shuffle=False)
                results[name, key] = first, hist.history["loss"], model.predict(data[key][:8],
                                                                                verbose=0)
    for key in ("mlp", "cnn"):
        (w_np, l_np, p_np), (w_cp, l_cp, p_cp) = (results[n, key] for n in names)
        for a, b in zip(w_np, w_cp):  # drawn on the host from one seed: identical
            np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(l_cp, l_np, rtol=1e-4)
        np.testing.assert_allclose(kerasrs.backend.convert_to_numpy(p_cp), p_np, rtol=1e-3,
                                   atol=1e-4)


def test_dropout_layer_masks_are_the_same_on_both_backends(cp_be):
    x = np.ones((8, 300), "float32")
    masks = {}
    for name in ("numpy", "cupy"):
        with kerasrs.backend.using(name):
            layer = kerasrs.layers.Dropout(0.4, seed=11)
            masks[name] = [kerasrs.backend.convert_to_numpy(layer(x, training=True))
                           for _ in range(2)]
    for a, b in zip(masks["numpy"], masks["cupy"]):
        np.testing.assert_array_equal(a, b)
