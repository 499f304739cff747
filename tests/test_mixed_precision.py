"""Mixed precision: dtype policies, autocast, float32 accumulation, dynamic loss scaling, and
the policies in configs and saved files (Keras reads ours, we read Keras's)."""

import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest

import kerasrs
from kerasrs import dtype_policies, layers, ops
from kerasrs.optimizers import LossScaleOptimizer

HERE = pathlib.Path(__file__).resolve().parent
REFERENCE_PYTHON = pathlib.Path("/work/refvenv/bin/python")
FIXTURES = HERE / "fixtures" / "keras_mixed"


@pytest.fixture(autouse=True)
def _reset_global_policy():
    yield
    dtype_policies.set_dtype_policy(None)


# -- policies --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, compute, variable", [
    ("mixed_float16", "float16", "float32"), ("mixed_bfloat16", "bfloat16", "float32"),
    ("float32", "float32", "float32"), ("float64", "float64", "float64"),
    ("bfloat16", "bfloat16", "bfloat16"),
])
def test_policy_dtypes(name, compute, variable):
    policy = kerasrs.mixed_precision.DTypePolicy(name)
    assert (policy.name, policy.compute_dtype, policy.variable_dtype) == (name, compute, variable)
    assert dtype_policies.get(policy.get_config()) == policy
    assert dtype_policies.get(dtype_policies.serialize(policy)) == policy


def test_unknown_policy_name_is_a_clear_error():
    with pytest.raises(ValueError, match=r"unknown policy name.*Received: name='mixed_float8'"):
        kerasrs.mixed_precision.DTypePolicy("mixed_float8")
    with pytest.raises(ValueError, match=r"Dense 'dense_x': DTypePolicy: unknown"):
        layers.Dense(2, dtype="mixed_int4", name="dense_x")


def test_global_policy_functions_and_their_aliases():
    assert kerasrs.config.dtype_policy().name == "float32"
    kerasrs.config.set_dtype_policy("mixed_bfloat16")
    assert kerasrs.mixed_precision.global_policy().name == "mixed_bfloat16"
    assert kerasrs.mixed_precision.dtype_policy().name == "mixed_bfloat16"
    dense = layers.Dense(2)  # captures the global policy when it is created
    kerasrs.mixed_precision.set_global_policy("float32")
    assert dense.dtype_policy.name == "mixed_bfloat16" and dense.compute_dtype == "bfloat16"
    assert layers.Dense(2).dtype_policy.name == "float32"
    assert kerasrs.mixed_precision.Policy is kerasrs.mixed_precision.DTypePolicy


@pytest.mark.parametrize("policy, compute", [("mixed_float16", "float16"),
                                             ("mixed_bfloat16", "bfloat16")])
def test_layer_keeps_float32_variables_computes_in_half_and_gets_float32_gradients(policy,
                                                                                   compute):
    dense = layers.Dense(3, dtype=policy)
    x = np.random.default_rng(0).normal(size=(4, 5)).astype("float32")
    with kerasrs.GradientTape() as tape:
        y = dense(x)
        loss = ops.mean(ops.square(y))
    grads = tape.gradient(loss, dense.trainable_weights)
    assert dense.dtype == dense.variable_dtype == "float32" and dense.compute_dtype == compute
    assert dense.kernel.dtype == np.float32 and y.dtype.name == compute
    assert [g.dtype for g in grads] == [np.float32, np.float32]
    kernel, bias = dense.get_weights()
    want = x @ kernel + bias
    np.testing.assert_allclose(y.numpy().astype("float32"), want, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(grads[0].numpy(), x.T @ (2 * want / want.size), rtol=3e-2,
                               atol=3e-3)


def test_policy_in_get_config_round_trips():
    dense = layers.Dense(2, dtype="mixed_float16")
    config = dense.get_config()
    assert config["dtype"] == {"module": "keras", "class_name": "DTypePolicy",
                               "config": {"name": "mixed_float16"}, "registered_name": None}
    assert layers.Dense.from_config(config).dtype_policy.name == "mixed_float16"
    older = {"class_name": "FloatDTypePolicy", "config": {"name": "mixed_bfloat16"}}
    assert layers.Dense(2, dtype=older).compute_dtype == "bfloat16"


# -- float32 accumulation -------------------------------------------------------------------------
def test_mean_of_70000_float16_ones_is_one():
    result = ops.mean(np.ones(70000, "float16"))
    assert result.dtype == np.float16 and float(result) == 1.0


def test_float16_sum_and_softmax_are_accumulated_in_float32():
    x = np.full(4096, 0.1, "float16")
    want = np.float16(x.astype("float32").sum())  # float16 accumulation would stall at 256
    assert float(ops.sum(x)) == float(want)
    big = np.array([[60000.0, 60000.0, 0.0]], "float16")
    np.testing.assert_allclose(ops.softmax(big).numpy().astype("float32"), [[0.5, 0.5, 0.0]])
    logits = kerasrs.Tensor(np.array([[3.0, 1.0, 0.2]], "float16"))
    with kerasrs.GradientTape() as tape:
        tape.watch(logits)
        loss = ops.sparse_categorical_crossentropy(np.array([0]), logits, from_logits=True)
    grad = tape.gradient(loss, logits)
    assert grad.dtype == np.float16 and np.isfinite(grad.numpy()).all()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_matmul_on_the_cpu_goes_through_float32(dtype):
    rng = np.random.default_rng(1)
    a = rng.normal(size=(64, 300)).astype(dtype)
    b = rng.normal(size=(300, 32)).astype(dtype)
    got = ops.matmul(a, b)
    assert got.dtype == a.dtype
    want = (a.astype("float32") @ b.astype("float32")).astype(dtype)  # one rounding at the end
    np.testing.assert_array_equal(got.numpy(), want)


def test_losses_of_half_predictions_are_float32():
    loss = kerasrs.losses.MeanSquaredError()(np.zeros((4, 1), "float32"),
                                             np.full((4, 1), 300.0, "float16"))
    assert loss.dtype == np.float32 and float(loss) == 90000.0  # > float16's 65504


# -- LossScaleOptimizer ---------------------------------------------------------------------------
def _var(value=1.0):
    return kerasrs.Variable(np.array([value, value], "float32"), name="w")


def test_loss_scale_optimizer_defaults_and_a_finite_step():
    opt = LossScaleOptimizer(kerasrs.optimizers.SGD(0.5))
    assert (opt.initial_scale, opt.dynamic_growth_steps) == (2.0**15, 2000)
    assert float(opt.scale_loss(kerasrs.Tensor(np.float32(2.0)))) == 65536.0
    w = _var()
    opt.apply([np.array([32768.0, -65536.0], "float32")], [w])  # scaled gradients [1, -2]
    np.testing.assert_allclose(w.numpy(), [0.5, 2.0])
    assert int(opt.iterations.numpy()) == 1 and int(opt.step_counter.numpy()) == 1
    assert float(opt.dynamic_scale.numpy()) == 32768.0
    assert [v.path for v in opt.variables[:4]] == [
        "loss_scale_optimizer/iteration", "loss_scale_optimizer/learning_rate",
        "loss_scale_optimizer/step_counter", "loss_scale_optimizer/dynamic_scale"]


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_a_non_finite_step_is_skipped_and_halves_the_scale(bad):
    opt = LossScaleOptimizer(kerasrs.optimizers.Adam(0.1), initial_scale=8.0)
    w = _var()
    opt.apply([np.array([1.0, 1.0], "float32")], [w])
    before = w.numpy().copy()
    opt.apply([np.array([bad, 1.0], "float32")], [w])
    np.testing.assert_array_equal(w.numpy(), before)
    assert float(opt.dynamic_scale.numpy()) == 4.0 and int(opt.step_counter.numpy()) == 0
    assert int(opt.iterations.numpy()) == 1  # Adam's state did not advance


def test_the_scale_doubles_after_dynamic_growth_steps_finite_steps():
    opt = LossScaleOptimizer(kerasrs.optimizers.SGD(0.0), initial_scale=4.0,
                             dynamic_growth_steps=3)
    w = _var()
    scales = []
    for _ in range(7):
        opt.apply([np.ones(2, "float32")], [w])
        scales.append(float(opt.dynamic_scale.numpy()))
    assert scales == [4.0, 4.0, 8.0, 8.0, 8.0, 16.0, 16.0]


def test_loss_scale_has_a_floor():
    """150 non-finite steps in a row leave the scale at 1.0 (TensorFlow's floor; main: 0.0,
    which blocked every later step), with one warning once halving cannot help."""
    opt = LossScaleOptimizer(kerasrs.optimizers.SGD(0.5))
    w = _var()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(150):
            opt.apply([np.array([np.nan, 1.0], "float32")], [w])
    assert float(opt.dynamic_scale.numpy()) == 1.0
    assert [str(r.message)[:60] for r in record] == [
        "LossScaleOptimizer: 16 steps in a row were skipped because t"]  # 2**15 -> 1: 15 skips
    opt.apply([np.array([1.0, -2.0], "float32")], [w])  # scaled by 1: applied as it is
    np.testing.assert_allclose(w.numpy(), [0.5, 2.0])
    assert int(opt.iterations.numpy()) == 1


def test_loss_scale_has_a_floor_in_fit():
    """Under mixed_float16, 150 batches whose float16 outputs overflow (finite data, no NaN
    guard) and then clean batches: training goes on."""
    kerasrs.config.set_dtype_policy("mixed_float16")
    model = kerasrs.Sequential([layers.Input((4,)), layers.Dense(1, kernel_initializer="ones")])
    model.compile("sgd", "mse")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        model.fit(np.full((150, 4), 60000.0, "float32"), np.zeros((150, 1), "float32"),
                  batch_size=1, shuffle=False, verbose=0)
    assert float(model.optimizer.dynamic_scale.numpy()) == 1.0
    assert int(model.optimizer.iterations.numpy()) == 0
    model.fit(np.ones((8, 4), "float32"), np.zeros((8, 1), "float32"), batch_size=8,
              verbose=0)
    assert int(model.optimizer.iterations.numpy()) == 1
    assert np.isfinite(model.get_weights()[0]).all() and model.get_weights()[0][0, 0] < 1.0


def test_float16_training_warns_at_compile():
    try:
        kerasrs.config.set_floatx("float16")
        for model in (kerasrs.Sequential([layers.Input((4,)), layers.Dense(1)]),
                      kerasrs.Sequential([layers.Dense(1)])):  # built, and not yet built
            with pytest.warns(UserWarning) as record:
                model.compile("adam", "mse")
            assert len(record) == 1
            assert "are float16" in str(record[0].message)
            assert "Use the 'mixed_float16' policy instead" in str(record[0].message)
    finally:
        kerasrs.config.set_floatx("float32")
    for policy in ("mixed_float16", "float32"):
        kerasrs.config.set_dtype_policy(policy)
        model = kerasrs.Sequential([layers.Input((4,)), layers.Dense(1)])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            model.compile("adam", "mse")


def test_loss_scale_optimizer_config_round_trip():
    opt = LossScaleOptimizer(kerasrs.optimizers.Adam(0.01), initial_scale=1024.0,
                             dynamic_growth_steps=10)
    copy = kerasrs.optimizers.deserialize(kerasrs.optimizers.serialize(opt))
    assert isinstance(copy, LossScaleOptimizer) and isinstance(copy.inner_optimizer,
                                                               kerasrs.optimizers.Adam)
    assert (copy.initial_scale, copy.dynamic_growth_steps) == (1024.0, 10)
    assert float(copy.learning_rate.numpy()) == pytest.approx(0.01)


def test_loss_scale_optimizer_refuses_clipping_and_non_optimizers():
    with pytest.raises(ValueError, match="set it on the inner optimizer"):
        LossScaleOptimizer(kerasrs.optimizers.SGD(), clipnorm=1.0)
    with pytest.raises(TypeError, match="must be an Optimizer"):
        LossScaleOptimizer("adam")


@pytest.mark.parametrize("policy, auto, wrapped", [
    ("mixed_float16", True, True), ("mixed_float16", False, False),
    ("mixed_bfloat16", True, False), ("float32", True, False),
])
def test_compile_wraps_the_optimizer_only_under_mixed_float16(policy, auto, wrapped):
    kerasrs.config.set_dtype_policy(policy)
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(1)])
    model.compile("sgd", "mse", auto_scale_loss=auto)
    assert isinstance(model.optimizer, LossScaleOptimizer) is wrapped


def _underflow_run(policy, auto_scale_loss=True):
    """One weight, gradients ~8e-9 whose float16 per-sample factors (5e-10) underflow."""
    kerasrs.config.set_dtype_policy(policy)
    model = kerasrs.Sequential([layers.Input((4,)),
                                layers.Dense(1, use_bias=False, kernel_initializer="ones")])
    kerasrs.config.set_dtype_policy(None)
    model.compile(kerasrs.optimizers.SGD(1e7),
                  lambda y, p: 1e-9 * ops.mean(ops.square(p - y), axis=-1),
                  auto_scale_loss=auto_scale_loss)
    model.fit(np.ones((16, 4), "float32"), np.zeros((16, 1), "float32"), batch_size=16,
              epochs=5, verbose=0)
    return model.layers[0].kernel.numpy().ravel()


def test_float16_gradients_that_underflow_train_with_loss_scaling():
    want = _underflow_run("float32")
    assert want[0] < 0.9  # float32 trains: 1 -> 0.92 -> ... (each step w -= 0.08 w)
    np.testing.assert_array_equal(_underflow_run("mixed_float16", False), np.ones(4))
    np.testing.assert_allclose(_underflow_run("mixed_float16"), want, rtol=1e-2)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_a_small_mixed_precision_classifier_trains_like_float32(policy):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(512, 10)).astype("float32")
    labels = (x[:, 0] + x[:, 1] > 0).astype("int64") + (x[:, 2] > 1)

    def run(name):
        kerasrs.utils.set_random_seed(0)
        kerasrs.config.set_dtype_policy(name)
        model = kerasrs.Sequential([layers.Input((10,)), layers.Dense(32, activation="relu"),
                                    layers.Dense(3, activation="softmax")])
        kerasrs.config.set_dtype_policy(None)
        model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
        model.fit(x, labels, epochs=8, batch_size=32, verbose=0)
        return model.evaluate(x, labels, verbose=0)[1]

    assert abs(run(policy) - run("float32")) <= 0.02


# -- saved files -----------------------------------------------------------------------------------
def test_our_mixed_precision_keras_file_round_trips(tmp_path):
    kerasrs.config.set_dtype_policy("mixed_float16")
    model = kerasrs.Sequential([layers.Input((6,)), layers.Dense(8, activation="relu"),
                                layers.Dense(3, activation="softmax", dtype="float32")])
    kerasrs.config.set_dtype_policy(None)
    model.compile("adam", "sparse_categorical_crossentropy")
    x = np.random.default_rng(0).normal(size=(12, 6)).astype("float32")
    model.fit(x, np.arange(12) % 3, batch_size=4, verbose=0)
    model.save(tmp_path / "m.keras")
    loaded = kerasrs.saving.load_model(tmp_path / "m.keras")
    assert loaded.dtype_policy.name == "mixed_float16"
    assert [lay.dtype_policy.name for lay in loaded.layers] == ["mixed_float16", "float32"]
    assert isinstance(loaded.optimizer, LossScaleOptimizer)
    for a, b in zip(loaded.optimizer.variables, model.optimizer.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_we_read_keras_mixed_precision_file():
    io = np.load(FIXTURES / "mixed_io.npz")
    model = kerasrs.saving.load_model(FIXTURES / "mixed.keras")
    assert model.dtype_policy.name == "mixed_float16"
    assert [lay.dtype_policy.name for lay in model.layers] == [
        "mixed_float16", "mixed_float16", "mixed_bfloat16", "float32"]
    assert [w.dtype for w in model.weights] == [np.float32] * len(model.weights)
    opt = model.optimizer
    assert isinstance(opt, LossScaleOptimizer)
    assert float(opt.dynamic_scale.numpy()) == float(io["dynamic_scale"])
    assert int(opt.step_counter.numpy()) == int(io["step_counter"])
    assert int(opt.iterations.numpy()) == int(io["iterations"])
    np.testing.assert_allclose(model.predict(io["x"], verbose=0), io["y"], atol=2e-3)


@pytest.mark.slow
def test_keras_reads_our_mixed_precision_file():
    python = REFERENCE_PYTHON
    env = {**os.environ, "KERAS_BACKEND": "torch",
           "PYTHONPATH": str(HERE.parent) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    if not python.exists():  # Keras installed here (CI's conformance step), on its backend
        pytest.importorskip("keras")
        python = pathlib.Path(sys.executable)
        env["KERAS_BACKEND"] = os.environ.get("KERAS_BACKEND", "torch")
    result = subprocess.run([str(python), str(HERE / "saving" / "keras_mixed_precision_check.py")],
                            env=env, capture_output=True, text=True, timeout=600)
    if "No module named 'keras'" in result.stderr:
        pytest.skip("Keras is not installed")
    lines = [line for line in result.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert result.returncode == 0 and lines, result.stdout[-3000:] + result.stderr[-3000:]
    assert all(line.startswith("PASS") for line in lines), "\n".join(lines)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_a_small_cnn_trains_a_step_under_mixed_policies(policy):
    """Conv, max pooling, dropout, flatten and dense in half precision (bfloat16 max pooling
    needs float32: NumPy has no bfloat16 maximum)."""
    kerasrs.utils.set_random_seed(0)
    kerasrs.config.set_dtype_policy(policy)
    model = kerasrs.Sequential([
        layers.Input((8, 8, 1)), layers.Conv2D(4, 3, activation="relu"), layers.MaxPooling2D(2),
        layers.Dropout(0.1), layers.Flatten(), layers.Dense(3, activation="softmax")])
    kerasrs.config.set_dtype_policy(None)
    model.compile("adam", "sparse_categorical_crossentropy")
    x = np.random.default_rng(0).random((16, 8, 8, 1)).astype("float32")
    before = [w.copy() for w in model.get_weights()]
    model.fit(x, np.arange(16) % 3, batch_size=8, epochs=1, verbose=0)
    assert all(np.isfinite(w).all() for w in model.get_weights())
    assert all(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    compute = kerasrs.backend.standardize_dtype(policy.split("_")[1])
    assert model.predict(x, verbose=0).dtype == compute
