"""`CupyBackend`, unchanged, on the CuPy stand-in: its kernels against the NumPy twins, ops with
gradients and a short ``fit`` against the NumPy backend, a save on the "GPU" loaded on the CPU,
the device-to-host copies of a training step, and the launch faults the stand-in must catch (a
swapped pair of kernel arguments, a wrong grid)."""

import functools

import numpy as np
import pytest
import standin

import kerasrs
from kerasrs import backend as backend_module
from kerasrs import layers, ops
from kerasrs.backend import base

TWIN = base.Backend


def _dev(cp, args):
    return [cp.asarray(a) if isinstance(a, np.ndarray) else
            [cp.asarray(x) for x in a] if isinstance(a, list) else a for a in args]


def _host(v):
    if isinstance(v, (tuple, list)):
        return [_host(x) for x in v]
    return v.get() if isinstance(v, standin.ndarray) else v


def _copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else
            [x.copy() for x in a] if isinstance(a, list) else a for a in args]


def check_kernel(cp, name, args, rtol=2e-5):
    """The cupy backend's ``name`` on device copies of ``args`` against the twin on host
    copies: results and in-place updated arguments; at least one launch."""
    be, ref = backend_module.get("cupy"), backend_module.get("numpy")
    dev, host = _dev(cp, args), _copy(args)
    launches = standin.stats["launches"]
    got = _host(getattr(be, name)(*dev))
    want = getattr(TWIN, name)(ref, *host)
    assert standin.stats["launches"] > launches, f"{name}: no kernel launched"
    flat = lambda v: [x for y in (v if isinstance(v, (tuple, list)) else [v])
                      for x in (y if isinstance(y, list) else [y])]
    for g, w in zip(flat(got) + flat(_host(dev)), flat(want) + flat(host)):
        if isinstance(w, np.ndarray):
            assert g.dtype == w.dtype and g.shape == w.shape, name
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, err_msg=name)


def _kernel_cases(rng):
    f = lambda *s: rng.standard_normal(s).astype(np.float32)
    x = f(4, 7)
    _, mean, rstd = TWIN.layer_norm(backend_module.get("numpy"), x, None, None, 1e-3)
    return {
        "softmax_cross_entropy": (f(5, 9), rng.integers(0, 9, 5)),
        "softmax_cross_entropy_grad": (np.abs(f(5, 9)), rng.random((5, 9)).astype(np.float32),
                                       f(5)),
        "bias_act": (f(7, 5), f(5), "relu"),
        "bias_act_grad": (f(300, 5), f(300, 5), "tanh"),
        "layer_norm": (x, f(7), f(7), 1e-3),
        "layer_norm_grad": (f(4, 7), x, f(7), mean, rstd),
        "relu_grad": (f(3, 4), f(3, 4)),
        "sigmoid": (f(3, 4),),
        "erf": (rng.standard_normal(9),),
        "embedding_grad": (rng.integers(0, 4, (3, 6)), f(3, 6, 2), 4),
        "im2col": (f(2, 6, 5, 3), (3, 2), (2, 1), (1, 2), ((1, 1), (1, 0))),
        "max_pool": (f(2, 6, 5, 3), (2, 2), (2, 1), ((0, 1), (1, 1))),
        "lstm_gates": (f(3, 8), f(3, 2)),
        "gru_gates_grad": (f(3, 6), f(3, 6), f(3, 2), f(3, 2)),
        "adam_update": ([f(5), f(2, 3)], [f(5), f(2, 3)], [f(5), f(2, 3)],
                        [np.abs(f(5)), np.abs(f(2, 3))], 1e-3, 0.9, 0.999, 1e-7),
        "sgd_update": ([f(5), f(2, 3)], [f(5), f(2, 3)], [f(5), f(2, 3)], 0.1, 0.9, True),
        "dropout_mask": ((17, 5), 0.3, 2 ** 40 + 1, 12, "float32"),
    }


def test_backend_kernels_match_twins(cupy_standin, rng):
    for name, args in _kernel_cases(rng).items():
        check_kernel(cupy_standin, name, args)


def test_ops_and_gradients_match_numpy(cupy_standin):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((5, 3))

    def run():
        ta, tb = ops.convert_to_tensor(a), ops.convert_to_tensor(b)  # on the current backend
        with kerasrs.GradientTape() as tape:
            tape.watch([ta, tb])
            h = ops.erf(ops.matmul(ta, tb)) * ops.take(ta, [0, 0, 3], axis=0)[:, :3].T[0]
            y = ops.sum(ops.softmax(h) + ops.sigmoid(h) + ops.relu(h) + ops.tanh(h))
        grads = tape.gradient(y, [ta, tb])
        return [type(v.data) for v in (y, *grads)], [v.numpy() for v in (y, *grads)]

    with backend_module.using("cupy"):
        types_, got = run()
    assert types_ == [cupy_standin.ndarray] * 3
    for g, w in zip(got, run()[1]):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def _mlp_fit(x, y, epochs=2):
    kerasrs.utils.set_random_seed(0)
    model = kerasrs.Sequential([layers.Input((12,)), layers.Dense(16, activation="relu"),
                                layers.Dense(16, activation="sigmoid"), layers.Dense(5)])
    model.compile(optimizer="adam",
                  loss=kerasrs.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(x, y, batch_size=8, epochs=epochs, shuffle=False, verbose=0)
    return model, history.history["loss"]


def _data(n=40):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, 12)).astype("float32"), rng.integers(0, 5, n)


def test_fit_mlp_matches_numpy(cupy_standin, tmp_path):
    x, y = _data()
    with backend_module.using("cupy"):
        model, losses = _mlp_fit(x, y)
        assert all(isinstance(w.data, cupy_standin.ndarray) for w in model.weights)
        assert standin.stats["launches"] > 0
        model.save(tmp_path / "gpu.keras")
    ref, ref_losses = _mlp_fit(x, y)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    for w, r in zip(model.get_weights(), ref.get_weights()):
        np.testing.assert_allclose(backend_module.convert_to_numpy(w), r, rtol=1e-5, atol=1e-6)
    loaded = kerasrs.models.load_model(tmp_path / "gpu.keras")  # on the CPU
    assert all(isinstance(w.data, np.ndarray) for w in loaded.weights)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), ref.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)


# -- copies between host and device per training step ---------------------------------------
class _BatchLogs(kerasrs.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):  # fit builds the logs of every batch
        pass


@functools.cache
def _copies_per_step(metrics=(), batch_logs=False, device_labels=False,
                     loss=kerasrs.losses.SparseCategoricalCrossentropy(from_logits=True)):
    """Copies per training step of a fit on the stand-in (``batch_logs``: a callback reads the
    logs after every batch; ``device_labels``: ``y`` is already on the device)."""
    x, y = _data(80)
    with backend_module.using("cupy"):
        y = backend_module.get("cupy").asarray(y) if device_labels else y
        model = kerasrs.Sequential([layers.Input((12,)), layers.Dense(16, activation="relu"),
                                    layers.Dense(5)])
        model.compile(optimizer="adam", metrics=list(metrics), loss=loss)
        counts = []
        for n in (40, 80):  # 5 and 10 steps: the difference is the per-step cost
            fit = functools.partial(model.fit, x[:n], y[:n], batch_size=8, epochs=1, verbose=0,
                                    callbacks=[_BatchLogs()] if batch_logs else [])
            fit()  # warm: build, compile
            standin.reset_stats()
            fit()
            counts.append(dict(standin.stats))
    return {k: (counts[1][k] - counts[0][k]) / 5 for k in counts[0]}


def test_attention_reads_nothing_from_the_device(cupy_standin):
    """The fused attention's softmax takes row maxima on a GPU: its block-max shortcut, for
    the CPU, checks for underflow on the host (a device read per call)."""
    from kerasrs.ops import attention

    q = np.random.default_rng(0).standard_normal((2, 5, 3, 4)).astype("float32")  # (B, T, N, H)
    want = attention.attention(q, q * 2, q).numpy()
    with backend_module.using("cupy"):
        d = ops.convert_to_tensor(q)
        standin.reset_stats()
        got = attention.attention(d, d * 2, d)
        assert standin.stats["d2h"] == 0
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


def test_no_device_read_per_training_step(cupy_standin):
    """Host labels are range-checked on the host before the copy, the loss mean and the mean
    metrics accumulate on the device: a step does not read the device until the logs are
    built (issue 24; before, 2 reads per step, 3 with a metric)."""
    per_step = _copies_per_step()
    assert per_step["d2h"] == 0, per_step
    assert per_step["h2d"] <= 4, per_step  # x and y, the optimizer's address table
    assert _copies_per_step(("accuracy",))["d2h"] == 0
    assert _copies_per_step(loss="sparse_categorical_crossentropy")["d2h"] == 0  # by name


def test_at_most_one_device_read_per_logged_step(cupy_standin):
    """Logs after every batch read the loss mean once; labels already on the device cost their
    one range check (both bounds in one read) and nothing more."""
    assert _copies_per_step(batch_logs=True)["d2h"] == 1
    assert _copies_per_step(device_labels=True)["d2h"] == 1
    assert _copies_per_step(("accuracy",), batch_logs=True)["d2h"] == 2  # one per mean


def test_loss_mean_on_the_device(cupy_standin):
    """The loss tracker keeps a device total (read by `result`), which a data-parallel fit
    still sums over the processes as a metric state."""
    from kerasrs.distribution import data_parallel
    from kerasrs.trainers import compile_utils

    tracker = compile_utils.RunningMean("loss")
    tracker.add(compile_utils.loss_mean(cupy_standin.asarray(np.array([1.0, 3.0], "f4")), "l"), 4)
    tracker.add(compile_utils.loss_mean(cupy_standin.asarray(np.array(5.0, "f4")), "l"), 2)
    assert isinstance(tracker.total, cupy_standin.ndarray) and tracker.total.dtype == np.float64
    assert [name for _, name in data_parallel._metric_states(tracker)] == ["total", "count"]
    standin.reset_stats()
    assert tracker.result() == 3.0 and standin.stats["d2h"] == 1


def test_raw_device_arrays_are_values_not_pointers(cupy_standin):
    """A CuPy array's ``.data`` is its memory pointer: places that took ``getattr(x, "data",
    x)`` for a Tensor's array read the pointer of a raw device array (`autodiff.raw`)."""
    step = cupy_standin.asarray(np.array(10.0))
    schedule = kerasrs.optimizers.schedules.ExponentialDecay(0.1, decay_steps=10,
                                                              decay_rate=0.5)
    assert float(schedule(step)) == pytest.approx(0.05)
    with backend_module.using("cupy"):
        filled = ops.full((2,), cupy_standin.asarray(np.array(3.0, "f4")))
        np.testing.assert_array_equal(filled.numpy(), [3.0, 3.0])


@pytest.mark.parametrize("where", ["host", "device"])
@pytest.mark.parametrize("bad,match", [(5, r"labels must be in \[0, 5\)"),
                                       (-1, r"labels must be in \[0, 5\)"),
                                       (np.nan, "labels contain NaN")])
def test_bad_labels_still_raise_in_fit(cupy_standin, where, bad, match):
    x, y = _data(16)
    y = y.astype("float64")
    y[11] = bad
    with backend_module.using("cupy") as be:
        model = kerasrs.Sequential([layers.Input((12,)), layers.Dense(5)])
        model.compile(optimizer="sgd",
                      loss=kerasrs.losses.SparseCategoricalCrossentropy(from_logits=True))
        with pytest.raises(ValueError, match=match):
            model.fit(x, be.asarray(y) if where == "device" else y, batch_size=8, verbose=0)


# -- faults the stand-in must catch -----------------------------------------------------------
@pytest.fixture
def tamper(monkeypatch):
    """``tamper(kernel_name, change)``: launches of ``kernel_name`` get ``change(grid, args)``
    -> (grid, args) applied first."""
    def install(name, change):
        call = standin.RawKernel.__call__

        def tampered(self, grid, block, args, **kw):
            if self.name == name:
                grid, args = change(grid, args)
            return call(self, grid, block, args, **kw)
        monkeypatch.setattr(standin.RawKernel, "__call__", tampered)
    return install


def _swap(args, i, j):
    args = list(args)
    args[i], args[j] = args[j], args[i]
    return tuple(args)


def test_swapped_kernel_arguments_fail(cupy_standin, tamper, rng):
    case = _kernel_cases(rng)["layer_norm"]
    check_kernel(cupy_standin, "layer_norm", case)
    # mean and rstd: the same type and shape, so only the values can tell
    tamper("layer_norm_fwd<float>", lambda grid, args: (grid, _swap(args, 4, 5)))
    with pytest.raises(AssertionError, match="layer_norm"):
        check_kernel(cupy_standin, "layer_norm", case)
    # a pointer for an int: the signature check refuses the launch
    tamper("bias_act<float>", lambda grid, args: (grid, _swap(args, 2, 3)))
    with pytest.raises(TypeError, match="bias_act<float>: argument 2"):
        check_kernel(cupy_standin, "bias_act", _kernel_cases(rng)["bias_act"])


def test_wrong_grid_size_fails(cupy_standin, tamper, rng):
    case = _kernel_cases(rng)["softmax_cross_entropy"]
    check_kernel(cupy_standin, "softmax_cross_entropy", case)
    # one block per row: a block short leaves the last row's memory as it was (NaN here)
    tamper("softmax_ce_sparse_fwd<float>", lambda grid, args: ((grid[0] - 1,), args))
    with pytest.raises(AssertionError, match="softmax_cross_entropy"):
        check_kernel(cupy_standin, "softmax_cross_entropy", case)
    tamper("softmax_ce_sparse_fwd<float>", lambda grid, args: ((0,), args))
    with pytest.raises(ValueError, match="invalid configuration"):
        check_kernel(cupy_standin, "softmax_cross_entropy", case)


# -- the backend's own paths: scatter_add, the device and NCCL checks --------------------------
def test_scatter_add_sums_repeated_indices(cupy_standin):
    be, cp = backend_module.get("cupy"), cupy_standin
    a = cp.zeros(3, np.float32)
    be.scatter_add(a, cp.asarray(np.array([0, 0, 2])), cp.asarray(np.array([1, 2, 3], "f4")))
    np.testing.assert_array_equal(a.get(), [3.0, 0.0, 3.0])


def test_import_cupy_says_what_is_missing(cupy_standin, monkeypatch):
    from kerasrs.backend import cupy_backend

    def broken():
        raise RuntimeError("cudaErrorInsufficientDriver")
    monkeypatch.setattr(cupy_standin.cuda.runtime, "getDeviceCount", broken)
    with pytest.raises(RuntimeError, match="no usable NVIDIA GPU: cudaErrorInsufficientDriver"):
        cupy_backend.import_cupy()
    monkeypatch.setattr(cupy_standin.cuda.runtime, "getDeviceCount", lambda: 0)
    with pytest.raises(RuntimeError, match="found CuPy but no NVIDIA GPU"):
        cupy_backend.import_cupy()
    monkeypatch.undo()
    with pytest.raises(ImportError, match="needs NCCL"):  # the stand-in has no cupy.cuda.nccl
        cupy_backend.import_nccl()
