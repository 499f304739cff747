"""Issue 14's bad-input and fault probes: each is a clear error, a warning, or the right answer.

Behaviour chosen where Keras is silent: NaN/inf in the data warns once per fit/evaluate naming
the array and the count; class_weight keys must be class ids of the output; non-integral labels
with a sparse loss raise; gradients with respect to integer sources are None (as TF); an int
Variable refuses non-integral floats and a float one refuses values it cannot hold; int with
float promotes to the float (Keras), not NumPy's float64.
"""

import errno
import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import kerasrs
from kerasrs import layers, ops
from kerasrs.saving import atomic


def _classifier(classes=3):
    model = kerasrs.Sequential([layers.Input((4,)), layers.Dense(classes, activation="softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy")
    return model


X = np.random.default_rng(0).normal(size=(8, 4)).astype("float32")
LABELS = np.array([0, 1, 2, 0, 1, 2, 0, 1])


# -- NaN / inf in the data ----------------------------------------------------------------------
@pytest.mark.parametrize("where", ["x", "sample_weight"])
def test_non_finite_data_warns_once_per_fit_naming_the_array_and_count(where):
    model = _classifier()
    x, sw = X.copy(), np.ones(8, "float32")
    target = x if where == "x" else sw
    target.flat[1], target.flat[3], target.flat[5] = np.nan, np.inf, -np.inf
    with pytest.warns(RuntimeWarning) as record:
        model.fit(x, LABELS, sample_weight=sw, epochs=2, batch_size=2, verbose=0)
    ours = [str(w.message) for w in record if "non-finite" in str(w.message)]
    assert len(ours) == 1, ours  # once per fit, not per epoch or batch
    assert f"`{where}` holds 3 non-finite value(s) (1 NaN, 2 inf)" in ours[0]


def test_non_finite_targets_warn_in_evaluate_for_a_regression_loss():
    model = kerasrs.Sequential([layers.Input((4,)), layers.Dense(1)])
    model.compile("sgd", "mse")
    y = np.zeros((8, 1), "float32")
    y[2] = np.nan
    with pytest.warns(RuntimeWarning, match=r"Model.evaluate: `y` holds 1 non-finite"):
        model.evaluate(X, y, verbose=0)


def test_clean_data_gives_no_warning():
    model = _classifier()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.fit(X, LABELS, verbose=0)
        model.evaluate(X, LABELS, verbose=0)


# -- class_weight and sparse labels -------------------------------------------------------------
@pytest.mark.parametrize("class_weight, match", [
    ({42: 1.0}, r"key\(s\) \[42\] that are not class ids of this model's output \(\[0, 3\)\)"),
    ({-1: 2.0}, r"key\(s\) \[-1\]"),
    ({"a": 1.0}, r"keys must be integer class ids. Received: keys \['a'\]"),
    ({1.5: 1.0}, r"keys must be integer class ids"),
    ({0: "heavy"}, r"values must be finite numbers"),
])
def test_bad_class_weight_is_a_clear_error(class_weight, match):
    with pytest.raises(ValueError, match=match):
        _classifier().fit(X, LABELS, class_weight=class_weight, verbose=0)


def test_class_weight_keys_follow_one_hot_targets_and_binary_outputs():
    one_hot = np.eye(3, dtype="float32")[LABELS]
    model = kerasrs.Sequential([layers.Input((4,)), layers.Dense(3, activation="softmax")])
    model.compile("sgd", "categorical_crossentropy")
    model.fit(X, one_hot, class_weight={0: 1.0, 2: 3.0}, verbose=0)
    with pytest.raises(ValueError, match=r"\[3\]"):
        model.fit(X, one_hot, class_weight={3: 1.0}, verbose=0)
    binary = kerasrs.Sequential([layers.Input((4,)), layers.Dense(1, activation="sigmoid")])
    binary.compile("sgd", "binary_crossentropy")
    binary.fit(X, (LABELS > 0).astype("float32"), class_weight={0: 1.0, 1: 2.0}, verbose=0)
    with pytest.raises(ValueError, match=r"\(\[0, 2\)\)"):
        binary.fit(X, (LABELS > 0).astype("float32"), class_weight={2: 1.0}, verbose=0)


def test_non_integral_sparse_labels_are_refused():
    labels = LABELS.astype("float64")
    labels[3] = 2.7
    with pytest.raises(ValueError, match=r"holds 1 non-integral value\(s\), e.g. 2.7"):
        _classifier().fit(X, labels, verbose=0)
    with pytest.raises(ValueError, match="class_weight needs integer class ids"):
        model = kerasrs.Sequential([layers.Input((4,)), layers.Dense(1)])
        model.compile("sgd", "mse")
        model.fit(X, labels, class_weight={0: 1.0}, verbose=0)
    _classifier().fit(X, LABELS.astype("float32"), verbose=0)  # integral floats are fine


# -- other unclear errors --------------------------------------------------------------------------
def test_ragged_list_to_predict_names_the_argument():
    with pytest.raises(ValueError, match=r"Model.predict: `x`: a ragged nested list .* "
                                         r"different lengths \[3, 4\]"):
        _classifier().predict([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0]], verbose=0)


@pytest.mark.parametrize("shape", [(8, 2), (8, 3, 1), (4, 2)])
def test_sample_weight_of_the_wrong_shape_is_blamed_on_sample_weight(shape):
    with pytest.raises(ValueError, match=r"sample_weight"):
        _classifier().fit(X, LABELS, sample_weight=np.ones(shape), verbose=0)


def test_sample_weight_of_shape_n_1_and_per_timestep_are_accepted():
    _classifier().fit(X, LABELS, sample_weight=np.ones((8, 1)), verbose=0)
    seq = kerasrs.Sequential([layers.Input((3, 4)), layers.Dense(1)])
    seq.compile("sgd", "mse")
    seq.fit(np.ones((8, 3, 4)), np.zeros((8, 3, 1)), sample_weight=np.ones((8, 3)), verbose=0)


@pytest.mark.parametrize("method", ["fit", "evaluate", "predict"])
def test_complex_input_is_a_type_error(method):
    model = _classifier()
    x = X.astype(np.complex64) + 1j
    with pytest.raises(TypeError, match=r"`x` holds complex numbers \(complex64\)"):
        if method == "predict":
            model.predict(x, verbose=0)
        else:
            getattr(model, method)(x, LABELS, verbose=0)


# -- autodiff --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_gradient_with_respect_to_an_integer_source_is_none(dtype):
    x = kerasrs.Tensor(np.array([1, 0, 3]).astype(dtype))
    w = kerasrs.Variable([1.0, 2.0, 3.0])
    with kerasrs.GradientTape() as tape:
        with pytest.warns(UserWarning, match=f"has dtype {dtype}"):
            tape.watch(x)
        y = ops.sum(x * 0.3 * w)
    gx, gw = tape.gradient(y, [x, w])
    assert gx is None
    np.testing.assert_allclose(gw.numpy(), 0.3 * np.array([1, 0, 3]).astype(dtype), rtol=1e-6)


def test_a_string_among_gradient_sources_is_a_type_error():
    v = kerasrs.Variable([1.0])
    with kerasrs.GradientTape() as tape:
        y = v * 2.0
    with pytest.raises(TypeError, match=r"source 1 is a str. Received: 'kernel'"):
        tape.gradient(y, [v, "kernel"])


def test_int_variable_refuses_non_integral_floats_but_takes_integral_ones():
    v = kerasrs.Variable(np.array([1, 2], "int32"))
    with pytest.raises(TypeError, match="non-integral float values into a int32 variable"):
        v.assign([1.5, 2.0])
    np.testing.assert_array_equal(v.numpy(), [1, 2])  # unchanged
    v.assign(np.array([3.0, 4.0]))
    np.testing.assert_array_equal(v.numpy(), [3, 4])


def test_float32_variable_refuses_values_that_overflow():
    v = kerasrs.Variable([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NumPy "overflow encountered in cast" either
        with pytest.raises(ValueError, match=r"values up to 1e\+300 overflows float32"):
            v.assign([1e300, 0.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    v.assign([np.inf, np.nan])  # non-finite values are stored as they are
    assert np.isinf(v.numpy()[0]) and np.isnan(v.numpy()[1])


@pytest.mark.parametrize("value", ["abc", None, {"a": 1}, object(), [1 + 2j, 0], b"\x00\x01"])
def test_non_numeric_assign_is_a_type_error_naming_the_variable(value):
    v = kerasrs.Variable([1.0, 2.0], name="w")
    with pytest.raises(TypeError, match=r"Variable 'w': assign needs a numeric value"):
        v.assign(value)


@pytest.mark.parametrize("other, want", [
    (np.array([0.5], "float32"), "float32"), (np.array([0.5], "float16"), "float16"),
    (0.5, "float32"), (2, "int32"), (np.array([2], "int64"), "int64"),
])
def test_integer_with_float_promotes_as_keras(other, want):
    x = kerasrs.Tensor(np.array([1], "int32"))
    for result in (x + other, other + x, x * other, x - other, x / other if want != "int32"
                   and want != "int64" else x + other):
        assert result.dtype == np.dtype(want), (type(other), result.dtype)


# -- threads ---------------------------------------------------------------------------------------
def test_fit_in_one_thread_while_another_predicts():
    model = _classifier()
    x = np.random.default_rng(1).normal(size=(256, 4)).astype("float32")
    labels = np.random.default_rng(2).integers(0, 3, 256)
    errors, done = [], threading.Event()

    def predict_loop():
        try:
            while not done.is_set():
                assert model.predict(x[:16], verbose=0).shape == (16, 3)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    thread = threading.Thread(target=predict_loop)
    thread.start()
    try:
        history = model.fit(x, labels, epochs=3, batch_size=8, verbose=0)
    finally:
        done.set()
        thread.join()
    assert not errors, errors
    assert len(history.history["loss"]) == 3


def test_concurrent_predicts_agree_with_a_serial_predict():
    model = kerasrs.Sequential([layers.Input((4,)), layers.Dense(8, activation="relu"),
                                layers.Dropout(0.5), layers.Dense(2)])
    x = np.random.default_rng(3).normal(size=(64, 4)).astype("float32")
    want = model.predict(x, verbose=0)
    results = [None] * 4

    def run(i):
        results[i] = [model.predict(x, batch_size=8, verbose=0) for _ in range(5)]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for per_thread in results:
        for got in per_thread:
            np.testing.assert_array_equal(got, want)


def test_tapes_are_per_thread():
    v = kerasrs.Variable([2.0])
    inside = threading.Event()
    release = threading.Event()
    seen = []

    def other():
        inside.wait()
        seen.append(list(kerasrs.context.tapes.get()))
        _ = v * 3.0  # not recorded on the main thread's tape
        release.set()

    thread = threading.Thread(target=other)
    thread.start()
    with kerasrs.GradientTape() as tape:
        y = v * v
        inside.set()
        release.wait()
    thread.join()
    assert seen == [[]]
    assert len(tape._records) == 1
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [4.0])


def test_two_concurrent_fits_on_one_model_raise_a_clear_error():
    model = _classifier()
    started, release = threading.Event(), threading.Event()

    class Hold(kerasrs.callbacks.Callback):
        def on_train_begin(self, logs=None):
            started.set()
            release.wait(30)

    thread = threading.Thread(target=lambda: model.fit(X, LABELS, verbose=0, callbacks=[Hold()]))
    thread.start()
    started.wait(30)
    try:
        with pytest.raises(RuntimeError, match="already being trained by a fit"):
            model.fit(X, LABELS, verbose=0)
    finally:
        release.set()
        thread.join()
    model.fit(X, LABELS, verbose=0)  # and it works again once the first fit is over


# -- seeding ---------------------------------------------------------------------------------------
def test_backend_set_seed_makes_shuffled_fits_reproducible():
    x = np.random.default_rng(4).normal(size=(64, 4)).astype("float32")
    labels = np.random.default_rng(5).integers(0, 3, 64)
    start = _classifier().get_weights()

    def run(seed):
        model = _classifier()
        model.set_weights(start)
        np.random.seed(None)  # the global NumPy generator must not matter
        kerasrs.backend.set_seed(seed)
        model.fit(x, labels, batch_size=8, epochs=2, shuffle=True, verbose=0)
        return model.get_weights()

    a, b, c = run(0), run(0), run(1)
    for wa, wb in zip(a, b):
        np.testing.assert_array_equal(wa, wb)
    assert any(not np.array_equal(wa, wc) for wa, wc in zip(a, c))


# -- saving ----------------------------------------------------------------------------------------
def test_stale_temporaries_of_killed_saves_are_removed_by_the_next_save(tmp_path):
    model = _classifier()
    path = tmp_path / "model.keras"
    code = ("import os, kerasrs\n"
            "from kerasrs.saving import atomic\n"
            "def killed(*a, **k):\n    os._exit(9)\n"
            "atomic._fsync = killed\n"
            "m = kerasrs.Sequential([kerasrs.layers.Input((4,)), kerasrs.layers.Dense(3)])\n"
            f"m.save({str(path)!r})\n")
    for _ in range(2):  # two saves killed before the rename; the second removes the first's
        subprocess.run([sys.executable, "-c", code], check=False, timeout=120)
    killed = [p.name for p in tmp_path.iterdir()]
    assert len(killed) == 1 and killed[0].startswith(".model.keras."), killed
    legacy = tmp_path / ".model.keras.abc123xy.tmp"  # the form before pids were recorded
    legacy.write_bytes(b"half")
    mine = tmp_path / f".model.keras.{os.getpid()}.inprogress.tmp"  # a live process's: kept
    mine.write_bytes(b"")
    other = tmp_path / ".other.keras.1.x.tmp"
    other.write_bytes(b"")
    stale = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".model.keras."))
    assert len(stale) == 3, stale
    model.save(path)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([mine.name, other.name, "model.keras"])


def test_a_full_disk_save_names_the_path(tmp_path, monkeypatch):
    from kerasrs.saving import weights_h5

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    path = tmp_path / "ckpt.weights.h5"
    model = _classifier()
    model(X[:1])
    monkeypatch.setattr(weights_h5, "write", full)
    with pytest.raises(OSError, match=r"cannot write '.*ckpt\.weights\.h5'.*No space left") as e:
        model.save_weights(path)
    assert e.value.errno == errno.ENOSPC
    assert sorted(os.listdir(tmp_path)) == []
    assert atomic.remove_stale_temporaries(str(tmp_path), "ckpt.weights.h5") is None


@pytest.mark.parametrize("make, shape", [
    (lambda: kerasrs.layers.Dense(2), (2, 5, 3)),
    (lambda: kerasrs.layers.LSTM(2), (2, 5, 3)),
    (lambda: kerasrs.layers.GRU(2), (2, 5, 3)),
    (lambda: kerasrs.layers.GRU(2, reset_after=False), (2, 5, 3)),
    (lambda: kerasrs.layers.SimpleRNN(2), (2, 5, 3)),
    (lambda: kerasrs.layers.Conv1D(2, 3), (1, 5, 3)),
    (lambda: kerasrs.layers.Conv2D(2, 3), (1, 5, 5, 3)),
])
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "bool"])
def test_integer_inputs_compute_in_the_kernel_dtype(make, shape, dtype):
    """Keras's promotion: integer (or bool) inputs meet float32 weights as float32 (NumPy alone
    gives float64 for int32/int64, and the recurrent ops failed to cast into an int array)."""
    x = np.ones(shape, dtype)
    layer = make()
    y = layer(x)
    assert y.dtype == "float32"
    np.testing.assert_allclose(y.numpy(), layer(x.astype("float32")).numpy(), rtol=1e-6)


def test_max_pooling_booleans_is_their_or():
    x = np.zeros((1, 4, 4, 1), bool)
    x[0, 1, 1, 0] = True
    y = kerasrs.layers.MaxPooling2D(2)(x).numpy()
    assert y.dtype == bool
    np.testing.assert_array_equal(y[0, :, :, 0], [[True, False], [False, False]])
    y = kerasrs.layers.MaxPooling2D(3, strides=1, padding="same")(x).numpy()[0, :, :, 0]
    np.testing.assert_array_equal(y, np.pad(np.ones((3, 3), bool), ((0, 1), (0, 1))))
