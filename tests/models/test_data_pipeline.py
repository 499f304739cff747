"""fit/evaluate/predict on PyDatasets, generators and iterables: steps, prefetch, shutdown."""

import doctest
import multiprocessing
import os
import signal
import threading
import time

import numpy as np
import pytest

import kerasrs
from kerasrs import layers
from kerasrs.datasets import py_dataset
from kerasrs.trainers import data_adapter, epoch_iterator


@pytest.fixture(autouse=True)
def fresh_session():
    kerasrs.utils.clear_session()
    kerasrs.utils.set_random_seed(0)


class Recorder(kerasrs.Model):
    """y = x (one unit, kernel 1) that records the first column of every training batch."""

    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(1, use_bias=False, kernel_initializer="ones")
        self.seen = []

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        x, _, _ = kerasrs.utils.unpack_x_y_sample_weight(data)
        self.seen.append(x.numpy()[:, 0].copy())
        return {"loss": 0.0}


class Numbers(kerasrs.utils.PyDataset):
    """Samples 0..n-1 (x = y = the sample id) in batches; optional load delay and failure."""

    def __init__(self, n=10, batch_size=3, delay=0.0, fail_at=None, **kwargs):
        super().__init__(**kwargs)
        self.n, self.batch_size, self.delay, self.fail_at = n, batch_size, delay, fail_at
        self.epochs_ended = 0

    def __len__(self):
        return -(-self.n // self.batch_size)

    def __getitem__(self, index):
        if index == self.fail_at:
            raise KeyError(f"cannot load batch {index}")
        if self.delay:
            time.sleep(self.delay * ((index * 7) % 3))  # uneven: later batches may finish first
        ids = np.arange(index * self.batch_size, min((index + 1) * self.batch_size, self.n))
        x = ids.astype("float32")[:, None]
        return x, x

    def on_epoch_end(self):
        self.epochs_ended += 1


class Endless(kerasrs.utils.PyDataset):
    @property
    def num_batches(self):
        return None

    def __getitem__(self, index):
        return np.full((2, 1), index, "float32"), np.zeros((2, 1), "float32")


class FakeTensor:
    """Stands in for a PyTorch tensor: converts through detach().cpu().numpy()."""

    def __init__(self, array):
        self.array = array

    def detach(self):
        return self

    def cpu(self):
        return self

    def numpy(self):
        return self.array


class FakeLoader:
    """Stands in for a PyTorch DataLoader: re-iterable, has __len__, yields tensor pairs."""

    def __init__(self, x, y, batch_size):
        self.x, self.y, self.batch_size = x, y, batch_size
        self.passes = 0

    def __len__(self):
        return -(-len(self.x) // self.batch_size)

    def __iter__(self):
        self.passes += 1
        for i in range(0, len(self.x), self.batch_size):
            part = slice(i, i + self.batch_size)
            yield FakeTensor(self.x[part]), FakeTensor(self.y[part])


def _identity():
    model = kerasrs.Sequential([layers.Input((1,)),
                                layers.Dense(1, use_bias=False, kernel_initializer="ones")])
    model.compile(kerasrs.optimizers.SGD(0.0), "mse")
    return model


def _no_worker_threads():
    return [t.name for t in threading.enumerate() if t.name.startswith("PyDataset")]


# -- finite sources: every sample once per epoch ----------------------------------------------
@pytest.mark.parametrize("workers,processes", [(1, False), (3, False), (2, True)])
def test_each_sample_seen_once_per_epoch_with_workers_and_a_short_last_batch(workers, processes):
    model = Recorder()
    model.compile("sgd", "mse")
    data = Numbers(n=10, batch_size=3, delay=0.01, workers=workers,
                   use_multiprocessing=processes, max_queue_size=2)
    model.fit(data, epochs=2, verbose=0)
    for epoch in (model.seen[:4], model.seen[4:]):
        assert sorted(len(b) for b in epoch) == [1, 3, 3, 3]
        assert sorted(np.concatenate(epoch).tolist()) == list(range(10))
    assert data.epochs_ended == 2
    assert not _no_worker_threads() and not multiprocessing.active_children()


def test_prefetch_keeps_order_although_later_batches_load_first():
    model = Recorder()
    model.compile("sgd", "mse")
    model.fit(Numbers(n=20, batch_size=2, delay=0.01, workers=4), shuffle=False, verbose=0)
    assert np.concatenate(model.seen).tolist() == list(range(20))


def test_shuffled_batch_order_is_deterministic_for_a_seed():
    orders = []
    for _ in range(2):
        kerasrs.utils.set_random_seed(3)
        model = Recorder()
        model.compile("sgd", "mse")
        model.fit(Numbers(n=12, batch_size=2, workers=3), verbose=0)
        orders.append([int(b[0]) for b in model.seen])
    assert orders[0] == orders[1] and orders[0] != sorted(orders[0])


class BlasThreads(kerasrs.utils.PyDataset):
    """Each batch reports the BLAS thread count of the process that loaded it."""

    def __len__(self):
        return 4

    def __getitem__(self, index):
        import threadpoolctl

        counts = [p["num_threads"] for p in threadpoolctl.threadpool_info()] or [1]
        return np.full((1, 1), max(counts), "float32"), np.zeros((1, 1), "float32")


def test_worker_processes_cap_blas_threads_and_the_parent_keeps_its_own():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = threadpoolctl.threadpool_info()
    loaded = _identity().predict(BlasThreads(workers=2, use_multiprocessing=True), verbose=0)
    assert loaded.ravel().tolist() == [1.0] * 4
    assert threadpoolctl.threadpool_info() == before


# -- errors and interruption leave nothing running --------------------------------------------
@pytest.mark.parametrize("processes", [False, True])
def test_worker_exception_reaches_the_caller_with_its_traceback(processes):
    model = _identity()
    data = Numbers(n=30, batch_size=2, fail_at=5, workers=3, use_multiprocessing=processes)
    with pytest.raises(KeyError, match="cannot load batch 5") as info:
        model.fit(data, shuffle=False, verbose=0)
    if processes:  # the worker's traceback comes back as text, chained as the cause
        assert "__getitem__" in str(info.value.__cause__)
    else:
        assert any(entry.name == "__getitem__" for entry in info.traceback)
    assert not _no_worker_threads() and not multiprocessing.active_children()


class Interrupt(kerasrs.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if batch == 2:
            raise KeyboardInterrupt


@pytest.mark.parametrize("processes", [False, True])
def test_ctrl_c_during_fit_stops_the_workers(processes):
    model = _identity()
    data = Numbers(n=200, batch_size=2, delay=0.005, workers=3, use_multiprocessing=processes)
    with pytest.raises(KeyboardInterrupt):
        model.fit(data, callbacks=[Interrupt()], verbose=0)
    assert not _no_worker_threads() and not multiprocessing.active_children()


@pytest.mark.parametrize("processes", [False, True])
def test_sigint_while_waiting_for_a_slow_worker_stops_the_workers(processes):
    model = _identity()
    data = Numbers(n=40, batch_size=2, delay=0.2, workers=2, use_multiprocessing=processes)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    # started with the training loop, not before fit: on a loaded machine fit's set-up took
    # longer than the timer and the test was flaky
    start = kerasrs.callbacks.LambdaCallback(on_train_begin=lambda logs: timer.start())
    try:
        with pytest.raises(KeyboardInterrupt):
            model.fit(data, epochs=5, verbose=0, callbacks=[start])
    finally:
        timer.join()
    assert not _no_worker_threads() and not multiprocessing.active_children()


def test_generator_exception_and_early_stop_in_predict_leave_no_threads():
    def broken():
        yield np.ones((2, 1), "float32")
        raise RuntimeError("loader broke")

    with pytest.raises(RuntimeError, match="loader broke"):
        _identity().predict(broken(), verbose=0)
    out = _identity().predict(Numbers(n=40, batch_size=4, workers=3), steps=2, verbose=0)
    assert out.ravel().tolist() == list(range(8))
    assert not _no_worker_threads()


# -- C32: generators in predict/evaluate, steps ------------------------------------------------
def test_c32_generators_in_predict_and_evaluate_with_steps():
    model = _identity()
    batches = [[1.0, 2.0], [3.0, 4.0], [5.0]]

    def finite():
        for b in batches:
            yield (np.array(b, "float32")[:, None],)

    np.testing.assert_allclose(model.predict(finite(), verbose=0).ravel(), [1, 2, 3, 4, 5])
    pulls = []

    def endless():
        i = 0
        while True:
            pulls.append(i)
            yield np.array([[i], [i + 1]], "float32")
            i += 2

    np.testing.assert_allclose(model.predict(endless(), steps=2, verbose=0).ravel(),
                               [0, 1, 2, 3])
    assert len(pulls) == 2

    def pairs():
        for b in batches:
            x = np.array(b, "float32")[:, None]
            yield x, np.zeros_like(x)

    assert model.evaluate(pairs(), verbose=0) == pytest.approx(11.0, rel=1e-6)


def test_fit_advances_a_generator_exactly_steps_per_epoch_times():
    pulls = []

    def endless():
        while True:
            pulls.append(1)
            yield np.ones((4, 1), "float32"), np.zeros((4, 1), "float32")

    model = _identity()
    history = model.fit(endless(), steps_per_epoch=3, epochs=2, verbose=0)
    assert len(pulls) == 6 and len(history.epoch) == 2
    assert int(model.optimizer.iterations.numpy()) == 6


def test_a_finite_generator_runs_out_with_a_warning_and_training_stops():
    def three():
        for _ in range(3):
            yield np.ones((2, 1), "float32"), np.zeros((2, 1), "float32")

    model = _identity()
    with pytest.warns(UserWarning, match=r"ran out after 0 batches.*training stops"):
        history = model.fit(three(), epochs=3, verbose=0)
    assert history.epoch == [0] and int(model.optimizer.iterations.numpy()) == 3


def test_an_iterable_of_tensors_is_passed_again_each_epoch_like_a_dataloader():
    x = np.arange(10, dtype="float32")[:, None]
    loader = FakeLoader(x, 2 * x, batch_size=4)
    model = kerasrs.Sequential([layers.Input((1,)), layers.Dense(1)])
    model.compile(kerasrs.optimizers.SGD(0.01), "mse")
    history = model.fit(loader, epochs=3, verbose=0)
    assert loader.passes == 3 and int(model.optimizer.iterations.numpy()) == 9
    assert history.history["loss"][-1] < history.history["loss"][0]
    np.testing.assert_allclose(model.predict(loader, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)


def test_pydataset_in_evaluate_predict_and_as_validation_data():
    model = _identity()
    data = Numbers(n=7, batch_size=3, workers=2)
    assert model.evaluate(data, verbose=0) == pytest.approx(0.0)
    np.testing.assert_allclose(model.predict(data, verbose=0).ravel(), np.arange(7))
    history = model.fit(Numbers(n=4, batch_size=2), validation_data=data, epochs=2, verbose=0)
    assert history.history["val_loss"] == [0.0, 0.0]


def test_a_spent_validation_generator_warns_and_adds_no_val_logs():
    def two():
        for _ in range(2):
            yield np.ones((2, 1), "float32"), np.zeros((2, 1), "float32")

    x = np.ones((4, 1), "float32")
    with pytest.warns(UserWarning, match=r"`validation_data` \(a generator\) ran out.*"
                                         r"validation stops"):
        history = _identity().fit(x, x, validation_data=two(), epochs=2, verbose=0)
    assert history.history["val_loss"] == [1.0]


def test_arrays_with_steps_per_epoch_still_restart_passes():
    x = np.arange(6, dtype="float32")[:, None]
    model = _identity()
    with pytest.warns(UserWarning, match=r"ran out after 2 batches of 3.*new pass"):
        model.fit(x, x, batch_size=3, steps_per_epoch=3, epochs=2, verbose=0)
    assert int(model.optimizer.iterations.numpy()) == 4


def test_endless_pydataset_needs_steps_and_runs_with_them():
    model = _identity()
    with pytest.raises(ValueError, match=r"endless PyDataset.*needs `steps`"):
        model.fit(Endless(), verbose=0)
    model.fit(Endless(workers=2), steps_per_epoch=5, epochs=2, verbose=0)
    assert int(model.optimizer.iterations.numpy()) == 10 and not _no_worker_threads()


# -- bad input ----------------------------------------------------------------------------------
class NotAPyDataset:
    """A Keras-2-style Sequence that does not subclass PyDataset."""

    def __len__(self):
        return 10 ** 9

    def __getitem__(self, index):
        return np.zeros((2, 1)), np.zeros((2, 1))


@pytest.mark.parametrize("method", ["fit", "evaluate", "predict"])
def test_unsupported_objects_get_a_type_error_not_an_endless_walk(method):
    model = _identity()
    start = time.perf_counter()
    with pytest.raises(TypeError, match=rf"Model.{method}: `x` must be .*PyDataset.*generator.*"
                                        r"Received: x of type .*NotAPyDataset"):
        getattr(model, method)(NotAPyDataset(), verbose=0)
    assert time.perf_counter() - start < 1.0


def test_y_with_a_generator_and_bad_batches_are_rejected():
    model = _identity()
    gen = (np.ones((2, 1)) for _ in range(2))
    with pytest.raises(ValueError, match=r"`y` cannot be given with a generator"):
        model.fit(gen, np.ones((2, 1)), verbose=0)
    with pytest.raises(ValueError, match=r"x, \(x,\), \(x, y\) or \(x, y, sample_weight\)"):
        model.fit(iter([(np.ones((2, 1)),) * 4]), verbose=0)
    with pytest.raises(ValueError, match=r"`validation_split` needs array data"):
        model.fit(Numbers(), validation_split=0.2, verbose=0)
    with pytest.raises(ValueError, match=r"`workers` must be a positive int"):
        model.fit(Numbers(workers=0), verbose=0)


def test_pydataset_subclass_without_super_init_warns_and_uses_defaults():
    class Lazy(kerasrs.utils.PyDataset):
        def __init__(self):
            pass

        def __len__(self):
            return 1

        def __getitem__(self, index):
            return np.ones((2, 1), "float32"), np.ones((2, 1), "float32")

    with pytest.warns(UserWarning, match=r"should call super\(\).__init__"):
        _identity().fit(Lazy(), verbose=0)


def test_class_weight_applies_to_generator_batches():
    def batches():
        yield np.ones((2, 1), "float32"), np.array([[0.0], [1.0]], "float32")

    model = _identity()  # predicts 1: squared errors 1 (class 0) and 0 (class 1)
    assert model.fit(batches(), verbose=0).history["loss"] == [pytest.approx(0.5)]
    history = model.fit(batches(), class_weight={0: 0.0, 1: 1.0}, verbose=0)
    assert history.history["loss"] == [pytest.approx(0.0)]


# -- split_dataset --------------------------------------------------------------------------
def test_split_dataset_sizes_structure_and_seed():
    x, y = np.arange(10), np.arange(10) * 2
    left, right = kerasrs.utils.split_dataset((x, y), right_size=3)
    assert isinstance(left, tuple) and left[0].tolist() == list(range(7))
    assert right[1].tolist() == [14, 16, 18]
    a = kerasrs.utils.split_dataset(x, left_size=4, shuffle=True, seed=1)
    b = kerasrs.utils.split_dataset(x, left_size=4, shuffle=True, seed=1)
    assert a[0].tolist() == b[0].tolist() and sorted(np.concatenate(a).tolist()) == list(range(10))
    with pytest.raises(ValueError, match=r"`left_size` must be a float in \(0, 1\)"):
        kerasrs.utils.split_dataset(x, left_size=1.5)
    with pytest.raises(ValueError, match=r"cannot give 6 left and 6 right"):
        kerasrs.utils.split_dataset(x, left_size=6, right_size=6)
    with pytest.raises(TypeError, match=r"`right_size` must be an int"):
        kerasrs.utils.split_dataset(x, right_size="3")


def test_sequence_alias_and_docstring_examples():
    assert kerasrs.utils.Sequence is kerasrs.utils.PyDataset
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(verbose=False)
    for obj in (py_dataset.PyDataset, data_adapter.split_dataset):
        for test in finder.find(obj, globs={"np": np, "PyDataset": py_dataset.PyDataset,
                                            "split_dataset": data_adapter.split_dataset}):
            runner.run(test)
    assert runner.failures == 0 and runner.tries >= 2


def test_array_adapter_batches_are_views_in_order():
    x = np.arange(10, dtype="float32")[:, None]
    adapter = epoch_iterator.get_adapter("fit", x, x, batch_size=4)
    batches = list(adapter.batches())
    assert [b[0].shape[0] for b in batches] == [4, 4, 2]
    assert np.shares_memory(batches[0][0], x)


# -- bad batches and empty sources (review findings) ------------------------------------------
class Batches(kerasrs.utils.PyDataset):
    """Two batches made by ``make(index)``."""

    def __init__(self, make, n=2, **kwargs):
        super().__init__(**kwargs)
        self.make, self.n = make, n

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        return self.make(index)


def test_string_batches_are_rejected_not_converted_and_trained_on():
    # NumPy turns "0.5" into 0.5 when the step casts, so without a check strings trained
    strings = Batches(lambda i: (np.full((2, 1), "0.5"), np.ones((2, 1), "float32")))
    with pytest.raises(ValueError, match=r"`x` holds non-numeric data of dtype <U3.*"
                                         r"shape \(2, 1\) \(in a batch of the Batches\)"):
        _identity().fit(strings, verbose=0)
    labels = (np.ones((2, 1), "float32"), np.array(["a", "b"]))
    with pytest.raises(ValueError, match=r"`y` holds non-numeric.*in a batch of the generator"):
        _identity().evaluate((b for b in [labels]), verbose=0)


@pytest.mark.parametrize("batch,message", [
    (None, r"a batch of the Batches has no inputs `x`.*Received: x=None"),
    ((np.zeros((0, 1), "float32"), np.zeros((0, 1), "float32")),
     r"a batch of the Batches has no samples.*Received: x with shape\(s\) \[\(0, 1\)\]"),
    (np.float32(1.0), r"holds a scalar where the inputs belong: each batch must be x, \(x,\), "
                      r"\(x, y\).*shape\(s\) \[\(\)\]"),
])
def test_batches_without_inputs_or_rows_are_rejected(batch, message):
    with pytest.raises(ValueError, match=message):
        _identity().fit(Batches(lambda i: batch), verbose=0)


def _empty_generator():
    return
    yield


@pytest.mark.parametrize("method", ["fit", "evaluate", "predict"])
@pytest.mark.parametrize("source,name", [(lambda: Batches(None, n=0, workers=2), "Batches of 0 "
                                                                                   "batches"),
                                         (_empty_generator, "generator"),
                                         (lambda: iter([]), "list_iterator")])
def test_an_empty_source_raises_instead_of_reporting_zero_loss(method, source, name):
    # before: fit logged loss 0.0 per epoch and evaluate returned 0.0
    with pytest.raises(ValueError, match=rf"Model.{method}: the data gave no batch.*"
                                         rf"Received: an empty {name}"):
        getattr(_identity(), method)(source(), verbose=0)
    assert not _no_worker_threads()


def test_a_generator_spent_after_one_epoch_still_only_warns():
    model = _identity()
    with pytest.warns(UserWarning, match="ran out after 0 batches"):
        history = model.fit(((np.ones((2, 1)), np.ones((2, 1))) for _ in range(2)), epochs=2,
                            verbose=0)
    assert len(history.history["loss"]) == 1


def test_numpy_int_steps_are_accepted():
    # before: "`steps_per_epoch` must be a positive int. Received: np.int64(2)"
    model = _identity()
    endless = ((np.ones((2, 1)), np.ones((2, 1))) for _ in iter(int, 1))
    history = model.fit(endless, steps_per_epoch=np.int64(2), epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    assert model.evaluate(endless, steps=np.int32(3), verbose=0) == pytest.approx(0.0)
    assert model.predict(Numbers(n=9), steps=np.int64(2), verbose=0).shape == (6, 1)
