"""Optimizer bookkeeping: variables and paths, building, errors, config, behaviour cases."""

import math
import tracemalloc
import warnings

import numpy as np
import pytest

import kerasrs
from kerasrs import optimizers


def _var(value, name="w", dtype="float32"):
    v = kerasrs.Variable(np.array(value, dtype), dtype=dtype, name=name)
    v.path = f"sequential/dense/{name}"
    return v


def _mse_grad(w):
    """Gradient of (w * 1 - 0)**2 for the one-weight model of C16/C22/C27: 2w."""
    return np.array(2.0 * w.data, dtype=w.dtype)


def test_variables_have_keras_paths_in_keras_order():
    k, b = _var(np.ones((2, 3)), "kernel"), _var(np.ones(3), "bias")
    opt = optimizers.Adam()
    opt.build([k, b])
    assert [v.path for v in opt.variables] == [
        "adam/iteration", "adam/learning_rate",
        "adam/sequential_dense_kernel_momentum", "adam/sequential_dense_kernel_velocity",
        "adam/sequential_dense_bias_momentum", "adam/sequential_dense_bias_velocity"]
    assert opt.iterations.dtype == np.int64 and int(opt.iterations.data) == 0
    assert opt.variables[1].dtype == np.float32
    assert all(not v.trainable for v in opt.variables)
    assert opt.variables[2].shape == (2, 3) and opt.variables[4].shape == (3,)


@pytest.mark.parametrize("cls, name", [(optimizers.SGD, "sgd"), (optimizers.RMSprop, "rm_sprop"),
                                       (optimizers.AdamW, "adam_w"), (optimizers.Nadam, "nadam")])
def test_default_names_follow_keras(cls, name):
    assert cls().name == name


def test_schedule_learning_rate_has_no_learning_rate_variable():
    opt = optimizers.SGD(optimizers.schedules.ExponentialDecay(0.1, 1, 0.5))
    assert [v.path for v in opt.variables] == ["sgd/iteration"]


def test_apply_skips_none_gradients_with_a_warning():
    w, b = _var([1.0, 2.0]), _var([3.0], "b")
    opt = optimizers.SGD(0.5)
    with pytest.warns(UserWarning, match="sequential/dense/b"):
        opt.apply([np.array([1.0, 1.0]), None], [w, b])
    np.testing.assert_array_equal(w.numpy(), [0.5, 1.5])
    np.testing.assert_array_equal(b.numpy(), [3.0])
    assert int(opt.iterations.data) == 1


def test_apply_errors_are_explicit():
    w = _var([1.0, 2.0])
    with pytest.raises(ValueError, match="no gradients provided"):
        optimizers.SGD().apply([None], [w])
    with pytest.raises(ValueError, match=r"Received: gradient shape \(3,\)"):
        optimizers.SGD().apply([np.zeros(3)], [w])
    with pytest.raises(ValueError, match="call build"):
        optimizers.SGD().apply([np.zeros(2)])
    opt = optimizers.SGD()
    opt.build([w])
    with pytest.raises(ValueError, match="unknown variables"):
        opt.apply([np.zeros(1)], [_var([0.0], "other")])


def test_apply_accepts_tensors_lists_and_other_dtypes_and_keeps_shape_and_dtype():
    w = _var(np.ones((2, 2)))
    opt = optimizers.SGD(1.0)
    opt.apply([kerasrs.Tensor(np.full((2, 2), 0.25, "float64"))], [w])
    opt.apply_gradients([([[0.25, 0.25], [0.25, 0.25]], w)])
    assert w.shape == (2, 2) and w.dtype == np.float32
    np.testing.assert_array_equal(w.numpy(), np.full((2, 2), 0.5))
    assert int(opt.iterations.data) == 2


def test_apply_records_nothing_on_an_active_tape():
    w = _var([1.0, 2.0])
    with kerasrs.GradientTape() as tape:
        kerasrs.ops.sum(w * w)
        n_before = len(tape._records)
        optimizers.Adam().apply([np.ones(2)], [w])
        assert len(tape._records) == n_before


def test_adam_step_allocates_no_full_size_arrays_after_the_first():
    w = _var(np.zeros(250_000))
    grad = np.ones(250_000, "float32")
    opt = optimizers.Adam()
    opt.apply([grad], [w])  # builds slots and the scratch buffer
    tracemalloc.start()
    opt.apply([grad], [w])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < w.data.nbytes // 4, f"an Adam step allocated {peak} bytes"


def test_learning_rate_property_reads_and_sets():
    opt = optimizers.Adam(0.01)
    assert opt.learning_rate == pytest.approx(0.01)
    opt.learning_rate = 0.5
    assert opt.learning_rate == 0.5 and float(opt.variables[1].data) == 0.5
    scheduled = optimizers.SGD(optimizers.schedules.InverseTimeDecay(0.1, 1, 1.0))
    with pytest.raises(TypeError, match="not settable"):
        scheduled.learning_rate = 0.1
    with pytest.raises(ValueError, match="learning_rate"):
        optimizers.SGD("fast")


def test_constructor_argument_checks():
    with pytest.raises(ValueError, match="only one of"):
        optimizers.SGD(clipnorm=1.0, clipvalue=1.0)
    with pytest.raises(ValueError, match="momentum"):
        optimizers.SGD(momentum=1.5)
    with pytest.raises(ValueError, match="weight_decay"):
        optimizers.AdamW(weight_decay=None)
    with pytest.raises(ValueError, match="beta_1"):
        optimizers.Lion(beta_1=0.0)
    with pytest.raises(ValueError, match="unknown argument"):
        optimizers.Adam(beta3=0.1)


def test_weight_decay_skips_excluded_variables():
    w, b = _var([1.0, 1.0]), _var([1.0], "bias")
    opt = optimizers.SGD(0.1, weight_decay=0.5)
    opt.exclude_from_weight_decay(var_names=["bias"])
    opt.apply([np.zeros(2), np.zeros(1)], [w, b])
    np.testing.assert_allclose(w.numpy(), [0.95, 0.95])
    np.testing.assert_array_equal(b.numpy(), [1.0])
    with pytest.raises(ValueError, match="before the optimizer is built"):
        opt.exclude_from_weight_decay(var_names=["w"])


def test_c12_optimizer_step_keeps_parameter_shapes():
    kernel, bias = _var(np.zeros((4, 2)), "kernel"), _var(np.zeros(2), "bias")
    with kerasrs.GradientTape() as tape:
        y = kerasrs.ops.matmul(np.ones((3, 4), "float32"), kernel) + bias
        loss = kerasrs.ops.sum(y)
    grads = tape.gradient(loss, [kernel, bias])
    np.testing.assert_array_equal(grads[1].numpy(), [3.0, 3.0])
    optimizers.Adam().apply(grads, [kernel, bias])
    assert kernel.shape == (4, 2) and bias.shape == (2,)


def test_c22_a_new_optimizer_starts_from_iteration_zero():
    def three_adam_steps():
        w, opt = _var([[1.0]], "kernel"), optimizers.Adam(0.1)
        for _ in range(3):
            opt.apply([_mse_grad(w)], [w])
        return w, opt

    w, old = three_adam_steps()
    assert w.data.item() == pytest.approx(0.701587, abs=1e-5)
    fresh = optimizers.Adam(0.1)  # what compile(Adam(0.1)) makes again
    assert int(fresh.iterations.data) == 0
    fresh.apply([_mse_grad(w)], [w])
    assert w.data.item() == pytest.approx(0.601587, abs=1e-5)
    w_old, old = three_adam_steps()  # the wrong outcome: continuing the old optimizer
    old.apply([_mse_grad(w_old)], [w_old])
    assert w_old.data.item() == pytest.approx(0.603940, abs=1e-5)


@pytest.mark.parametrize("schedule, kernels", [
    (optimizers.schedules.ExponentialDecay(0.1, decay_steps=1, decay_rate=0.5),
     [0.8, 0.72, 0.684]),
    (optimizers.schedules.InverseTimeDecay(0.1, decay_steps=1, decay_rate=1.0),
     [0.8, 0.72, 0.672]),
])
def test_c27_first_update_uses_step_zero(schedule, kernels):
    w = _var([[1.0]], "kernel")
    opt = optimizers.SGD(schedule)
    seen, got = [], []
    for _ in range(3):
        seen.append(opt.learning_rate)
        opt.apply([_mse_grad(w)], [w])
        got.append(w.data.item())
    assert seen[0] == pytest.approx(0.1) and seen[1] == pytest.approx(schedule(1))
    np.testing.assert_allclose(got, kernels, rtol=1e-6)


def test_c27_schedule_counts_updates_not_epochs():
    w = _var([[1.0]], "kernel")
    opt = optimizers.SGD(optimizers.schedules.ExponentialDecay(0.1, 1, 0.5))
    for _ in range(2):  # one "epoch" of two batches
        opt.apply([_mse_grad(w)], [w])
    assert opt.learning_rate == pytest.approx(0.025)


@pytest.mark.parametrize("name", ["sgd", "RMSprop", "adam", "AdamW", "adagrad", "adadelta",
                                  "adamax", "nadam", "lion"])
def test_get_serialize_deserialize_round_trip(name):
    opt = optimizers.get(name)
    config = optimizers.serialize(opt)
    assert config["class_name"].lower() == name.lower()
    again = optimizers.deserialize(config)
    assert type(again) is type(opt) and again.get_config() == opt.get_config()
    assert optimizers.get(opt) is opt


def test_config_matches_the_keys_keras_writes():
    keras_sgd = {"name": "sgd", "learning_rate": 0.009999999776482582, "weight_decay": None,
                 "clipnorm": None, "global_clipnorm": None, "clipvalue": None, "use_ema": False,
                 "ema_momentum": 0.99, "ema_overwrite_frequency": None,
                 "loss_scale_factor": None, "gradient_accumulation_steps": None,
                 "momentum": 0.0, "nesterov": False}  # from m1_fit_after.h5's training_config
    assert optimizers.SGD().get_config() == keras_sgd
    opt = optimizers.deserialize({"class_name": "SGD", "config": keras_sgd})
    assert opt.learning_rate == pytest.approx(0.01)


def test_schedule_survives_optimizer_config_round_trip():
    opt = optimizers.Adam(optimizers.schedules.CosineDecay(0.1, 10, warmup_target=0.2,
                                                            warmup_steps=3))
    again = optimizers.deserialize(optimizers.serialize(opt))
    assert isinstance(again._learning_rate, optimizers.schedules.CosineDecay)
    assert again._learning_rate.get_config() == opt._learning_rate.get_config()


def test_get_rejects_unknown_identifiers():
    with pytest.raises(ValueError, match="Received: 'adamm'"):
        optimizers.get("adamm")
    with pytest.raises(ValueError, match="unknown optimizer"):
        optimizers.deserialize({"class_name": "Foo", "config": {}})


def test_loss_scale_factor_divides_gradients():
    w = _var([1.0])
    opt = optimizers.SGD(1.0, loss_scale_factor=4.0)
    assert float(opt.scale_loss(2.0)) == 8.0
    opt.apply([np.array([4.0])], [w])
    np.testing.assert_array_equal(w.numpy(), [0.0])


def test_warning_free_on_normal_use():
    w = _var([1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        optimizers.Nadam().apply([np.array([1.0])], [w])


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["sgd", "adam", "rmsprop", "nadam", "lion"])
def test_update_on_cupy_matches_numpy(name, rng):
    if not kerasrs.backend.is_available("cupy"):
        pytest.skip("cupy backend not available")
    w0, g = rng.normal(size=(5, 3)).astype("float32"), rng.normal(size=(5, 3)).astype("float32")
    results = []
    for be in ("numpy", "cupy"):
        with kerasrs.backend.using(be) as backend:
            w = kerasrs.Variable(backend.asarray(w0.copy()), dtype="float32")  # (NumPy: no copy)
            opt = optimizers.get(name)
            for _ in range(3):
                opt.apply([backend.asarray(g)], [w])
            results.append(w.numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-6)


def test_adam_step_is_one_multi_tensor_backend_call(monkeypatch):
    calls = []
    be = kerasrs.backend.get("numpy")
    monkeypatch.setattr(be, "adam_update", lambda *args, **kw: calls.append(args), raising=False)
    w1, w2 = _var([1.0]), _var([2.0, 3.0])
    optimizers.Adam().apply([np.array([1.0], "float32"), np.ones(2, "float32")], [w1, w2])
    assert len(calls) == 1
    assert calls[0][0][0] is w1.data and calls[0][0][1] is w2.data
    lr = float(np.float32(1e-3))  # the learning-rate variable is float32
    assert calls[0][4:8] == (lr * math.sqrt(1 - 0.999) / (1 - 0.9), 0.9, 0.999, 1e-7)  # step 1
