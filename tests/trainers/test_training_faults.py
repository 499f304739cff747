"""Issue 23's training items: NaN in the data, big inputs, generators and PyDatasets, threads.

Behaviour chosen (Keras does none of it): NaN or inf in fit's data warn and then arm Keras's
``TerminateOnNaN``: fit stops at the first batch whose loss is not finite, before its update.
Arrays larger than `input_checks.UP_FRONT_BYTES` are checked batch by batch as they are read.
Generators and PyDatasets get the checks that arrays get, batch by batch. A second thread's
``evaluate`` on a model that is being fitted or evaluated raises instead of mixing metrics.
"""

import json
import pathlib
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import kerasrs
from kerasrs import layers
from kerasrs.trainers import input_checks

ROOT = pathlib.Path(__file__).resolve().parents[2]
X = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
LABELS = np.arange(64) % 3


def _classifier():
    model = kerasrs.Sequential([layers.Input((4,)), layers.Dense(3, activation="softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def _messages(record):
    return [str(w.message) for w in record]


# -- NaN in data ----------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["x", "y", "sample_weight"])
def test_nan_in_data_stops_fit_at_the_first_nan_loss_keeping_the_last_finite_weights(where):
    model = kerasrs.Sequential([layers.Input((4,)), layers.Dense(1)])
    model.compile("sgd", "mse")
    x, y, sw = X.copy(), X[:, :1].copy(), np.ones(64, "float32")
    {"x": x, "y": y, "sample_weight": sw}[where].reshape(64, -1)[37, 0] = np.nan  # batch 4
    expected = kerasrs.models.clone_model(model)
    expected.set_weights(model.get_weights())
    expected.compile("sgd", "mse")
    expected.fit(x[:32], y[:32], sample_weight=sw[:32], batch_size=8, shuffle=False, verbose=0)
    with pytest.warns(RuntimeWarning) as record:
        history = model.fit(x, y, sample_weight=sw, batch_size=8, epochs=3, shuffle=False,
                            verbose=0)
    messages = _messages(record)
    assert any(f"`{where}` holds 1 non-finite value(s) (1 NaN, 0 inf)" in m and
               "fit stops at the first batch whose loss is NaN" in m for m in messages), messages
    assert any("the loss of batch 5 in epoch 1/3 is nan" in m and "training stops here" in m
               for m in messages), messages
    assert len(history.history["loss"]) == 1 and np.isnan(history.history["loss"][0])
    assert int(model.optimizer.iterations.numpy()) == 4  # batches 1-4, not the NaN one
    for got, want in zip(model.get_weights(), expected.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_nan_loss_with_clean_data_still_trains_on():
    """Without NaN in the data fit does not stop by itself (Keras's default)."""
    model = kerasrs.Sequential([layers.Input((4,)), layers.Dense(1)])
    model.compile("sgd", lambda y, p: kerasrs.ops.log(p - p - 1.0))  # NaN loss, clean data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        history = model.fit(X, X[:, :1], batch_size=16, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2


# -- big inputs stay streamed -------------------------------------------------------------------
_MEMMAP_RUN = """
import json, resource, sys, time
import numpy as np

def peak_mb():  # this process's own peak: getrusage's ru_maxrss also counts the parent's peak
    try:        # (inherited through fork and exec), so read the new address space's VmHWM
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("VmHWM")) / 1024
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

import kerasrs
from kerasrs import layers
path, rows, features = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
x = np.memmap(path, dtype="float32", mode="r", shape=(rows, features))
y = np.zeros((rows, 1), "float32")
model = kerasrs.Sequential([layers.Input((features,)), layers.Dense(1)])
model.compile("sgd", "mse")
start, first = time.perf_counter(), []
begin = kerasrs.callbacks.LambdaCallback(
    on_train_batch_begin=lambda batch, logs: first.append(time.perf_counter() - start))
model.fit(x, y, batch_size=32, steps_per_epoch=5, shuffle=False, callbacks=[begin], verbose=0)
seconds = time.perf_counter() - start
model.evaluate(x, y, batch_size=32, steps=5, verbose=0)
model.predict(x, batch_size=32, steps=5, verbose=0)
print(json.dumps({"peak_mb": peak_mb(),
                  "first_step_s": first[0], "fit_s": seconds,
                  "steps": int(model.optimizer.iterations.numpy())}))
"""


def test_big_inputs_stay_streamed(tmp_path):
    """fit/evaluate/predict 5 steps each on a 2 GiB memmap (a sparse file where the filesystem
    allows): peak RSS under 300 MB, and the first step starts at once (main: 2.7 GB, 10 s)."""
    rows, features = (2 << 30) // (4 * 1024), 1024
    path = tmp_path / "x.f32"
    with open(path, "wb") as f:
        f.truncate(rows * features * 4)  # no data written: a hole, zeros when read
    result = subprocess.run([sys.executable, "-c", _MEMMAP_RUN, str(path), str(rows),
                             str(features)], capture_output=True, text=True, timeout=300,
                            cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr[-3000:]
    run = json.loads(result.stdout.strip().splitlines()[-1])
    assert run["steps"] == 5
    assert run["peak_mb"] < 300, run
    assert run["first_step_s"] < 5, run


def test_nan_in_a_big_array_is_found_in_its_batch(monkeypatch):
    monkeypatch.setattr(input_checks, "UP_FRONT_BYTES", 256)  # X (1 KiB) counts as big
    x = X.copy()
    x[21, 2] = np.inf  # batch 2 (0-based) of 8 rows
    model = kerasrs.Sequential([layers.Input((4,)), layers.Dense(1)])
    model.compile("sgd", "mse")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        history = model.fit(x, X[:, :1], batch_size=8, epochs=2, shuffle=False, verbose=0)
    messages = _messages(record)
    assert [w.filename for w in record] == [__file__] * 2, messages  # attributed to the fit call
    assert "`x` holds 1 non-finite value(s) (0 NaN, 1 inf) out of 32 in batch 2 of the data" \
        in messages[0]
    assert "the loss of batch 3 in epoch 1/2 is inf" in messages[1]
    assert len(history.history["loss"]) == 1 and int(model.optimizer.iterations.numpy()) == 2
    assert all(np.isfinite(w).all() for w in model.get_weights())


# -- generators and PyDatasets ------------------------------------------------------------------
class Batches(kerasrs.utils.PyDataset):
    def __init__(self, batches, length="auto", **kwargs):
        super().__init__(**kwargs)
        self.batches, self.length = batches, length

    def __len__(self):
        return len(self.batches) if self.length == "auto" else self.length

    def __getitem__(self, index):
        return self.batches[index]


def _float_label_batches():
    labels = LABELS.astype("float64")
    labels[13] = 1.5
    return [(X[i:i + 8], labels[i:i + 8]) for i in range(0, 64, 8)]


@pytest.mark.parametrize("kind", ["generator", "PyDataset"])
def test_generators_and_pydatasets_refuse_float_labels_for_a_sparse_loss(kind):
    batches = _float_label_batches()
    data = (b for b in batches) if kind == "generator" else Batches(batches)
    where = "generator" if kind == "generator" else "PyDataset Batches"
    with pytest.raises(ValueError, match=r"a sparse loss needs integer class ids in `y`, but it "
                                         r"holds 1 non-integral value\(s\), e\.g\. 1\.5.*"
                                         rf"\(in batch 1 of the {where}\)"):
        _classifier().fit(data, verbose=0)


def test_generators_and_pydatasets_name_a_dict_fed_to_a_one_input_model():
    def dicts():
        yield {"pixels": X[:8], "extra": X[:8]}, LABELS[:8]

    for data in (dicts(), Batches([({"pixels": X[:8], "extra": X[:8]}, LABELS[:8])])):
        with pytest.raises(ValueError, match=r"missing data for input 'input_layer\w*'. You passed "
                                             r"a data dictionary with keys \['extra', 'pixels'\]"
                                             r".*\(in batch 0 of the"):
            _classifier().fit(data, verbose=0)


@pytest.mark.parametrize("length, error, received", [
    (2.5, TypeError, "2.5 of type float"), ("3", TypeError, "'3' of type str"),
    (None, TypeError, "None of type NoneType"), (-1, ValueError, "-1"),
])
def test_generators_and_pydatasets_report_a_bad_len_naming_it(length, error, received):
    data = Batches([(X[:8], LABELS[:8])] * 3, length=length)
    with pytest.raises(error, match=rf"Batches.__len__ must return the number of batches, an "
                                    rf"int >= 0. Received: {received}"):
        _classifier().fit(data, verbose=0)


def test_generators_and_pydatasets_a_spent_validation_generator_stops_validation_once():
    def two_batches():
        yield X[:8], LABELS[:8]
        yield X[8:16], LABELS[8:16]

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        history = _classifier().fit(X, LABELS, epochs=4, validation_data=two_batches(),
                                    verbose=0)
    messages = _messages(record)
    assert len(messages) == 1, messages  # in the epoch where it runs dry, not in every later one
    assert "`validation_data` (a generator) ran out of batches during the validation of " \
        "epoch 2, and it cannot restart: validation stops here" in messages[0]
    logs = history.history
    assert len(logs["loss"]) == len(logs["accuracy"]) == 4
    assert len(logs["val_loss"]) == len(logs["val_accuracy"]) == 1  # epoch 1, nothing partial


# -- concurrency ----------------------------------------------------------------------------------
def test_concurrent_evaluate_on_one_model_is_refused_not_wrong():
    model = _classifier()
    x = np.random.default_rng(1).normal(size=(256, 4)).astype("float32")
    labels = np.random.default_rng(2).integers(0, 3, 256)
    want = model.evaluate(x, labels, verbose=0)
    started, release, results, errors = threading.Event(), threading.Event(), [], []

    class Hold(kerasrs.callbacks.Callback):
        def on_test_batch_end(self, batch, logs=None):
            if batch == 0:
                started.set()
                release.wait(30)

    def first():
        results.append(model.evaluate(x, labels, batch_size=32, callbacks=[Hold()], verbose=0))

    thread = threading.Thread(target=first)
    thread.start()
    started.wait(30)
    try:
        for call in (lambda: model.evaluate(x * 3, labels, verbose=0),
                     lambda: model.fit(x, labels, verbose=0)):
            try:
                call()
            except RuntimeError as e:
                errors.append(str(e))
    finally:
        release.set()
        thread.join()
    assert len(errors) == 2 and "is running evaluate() in another thread" in errors[0], errors
    np.testing.assert_allclose(results[0], want, rtol=1e-6)  # the first run's numbers are right
    np.testing.assert_allclose(model.evaluate(x, labels, verbose=0), want, rtol=1e-6)


def test_evaluate_inside_fit_in_the_same_thread_still_works():
    model = _classifier()
    seen = []

    class EvaluateEachEpoch(kerasrs.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen.append(self.model.evaluate(X, LABELS, verbose=0))

    model.fit(X, LABELS, epochs=2, callbacks=[EvaluateEachEpoch()], verbose=0)
    assert len(seen) == 2
