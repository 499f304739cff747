"""`kerasrs.distribution.DataParallel` under a real ``mpiexec`` (2 and 3 processes).

Every MPI run happens in subprocesses (`dp_train.py`, or code through `mpi_launch.snippet`), so
the pytest process never starts MPI.
"""

import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from mpi_launch import ENV, MPIEXEC, REPO, needs_mpi, run, snippet

import kerasrs
from kerasrs.distribution import mpi

SCRIPT = pathlib.Path(__file__).with_name("dp_train.py")
TOLERANCE = {"float32": 1e-6, "float64": 1e-12}


def _train(out, dtype, ranks=None, *flags, env=None):
    out.mkdir(exist_ok=True)
    run([SCRIPT, out, dtype, *flags, *(["--parallel"] if ranks else [])], ranks, env)
    found = sorted(out.glob("rank*.npz"))
    assert len(found) == (ranks or 1), f"expected one result per process, got {found}"
    return [dict(np.load(out / f"rank{r}.npz")) for r in range(ranks or 1)]


@pytest.fixture(scope="module")
def single_process(tmp_path_factory):
    """``dtype -> results of dp_train.py on one process without MPI``, each run once."""
    cache = {}

    def get(dtype):
        if dtype not in cache:
            (cache[dtype],) = _train(tmp_path_factory.mktemp("single"), dtype)
        return cache[dtype]

    return get


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_rank_ends_with_single_process_weights(tmp_path, single_process, ranks, dtype):
    reference = single_process(dtype)
    results = _train(tmp_path / "parallel", dtype, ranks)
    tol = TOLERANCE[dtype]
    for rank, result in enumerate(results):
        assert int(result["size"]) == ranks, f"rank {rank} ran in a world of {result['size']}"
        for i in range(4):  # kernel and bias of both Dense layers
            np.testing.assert_array_equal(result[f"arr_{i}"], results[0][f"arr_{i}"],
                                          err_msg=f"rank {rank} differs from rank 0")
            np.testing.assert_allclose(result[f"arr_{i}"], reference[f"arr_{i}"], rtol=tol,
                                       atol=tol, err_msg=f"weight {i} vs. one process")
        for key in ("loss", "accuracy"):  # logs are summed over processes before reading
            np.testing.assert_allclose(result[key], reference[key], rtol=tol, atol=tol)


@needs_mpi
@pytest.mark.gpu
def test_nccl_on_two_gpus_matches_single_process(tmp_path):
    if not kerasrs.backend.is_available("cupy"):  # no CuPy, or no usable device
        pytest.skip("cupy backend not available")
    if pytest.importorskip("cupy").cuda.runtime.getDeviceCount() < 2:
        pytest.skip("NCCL needs one GPU per process: fewer than 2 GPUs here")
    env = {**ENV, "KERASRS_BACKEND": "cupy"}
    (reference,) = _train(tmp_path / "single", "float32", None, env=env)
    results = _train(tmp_path / "parallel", "float32", 2, env=env)
    for result in results:
        assert int(result["size"]) == 2
        for i in range(4):
            np.testing.assert_array_equal(result[f"arr_{i}"], results[0][f"arr_{i}"])
            np.testing.assert_allclose(result[f"arr_{i}"], reference[f"arr_{i}"], rtol=1e-6,
                                       atol=1e-6)


@needs_mpi
@pytest.mark.parametrize("flag", ["--pad", "--pydataset"])
def test_padded_last_batch_and_pydataset_input_match_single_process(tmp_path, flag):
    (reference,) = _train(tmp_path / "single", "float64", None, flag)
    results = _train(tmp_path / "parallel", "float64", 3, flag)
    for result in results:
        assert int(result["size"]) == 3
        for key in ("arr_0", "arr_1", "arr_2", "arr_3", "loss", "accuracy"):
            np.testing.assert_allclose(result[key], reference[key], rtol=1e-12, atol=1e-12)


@needs_mpi
def test_one_process_trains_exactly_as_without_a_distribution(tmp_path, single_process):
    out = tmp_path / "one"
    out.mkdir()
    run([SCRIPT, out, "float64", "--parallel"])  # no mpiexec: MPI's world of one
    result, reference = np.load(out / "rank0.npz"), single_process("float64")
    assert int(result["size"]) == 1
    for key in ("arr_0", "arr_1", "arr_2", "arr_3", "loss"):
        np.testing.assert_array_equal(result[key], reference[key])


@needs_mpi
def test_reduce_after_backward_gives_the_same_weights(tmp_path):
    overlapped = _train(tmp_path / "overlap", "float64", 3)
    blocking = _train(tmp_path / "blocking", "float64", 3, "--no-overlap")
    for i in range(4):
        np.testing.assert_allclose(blocking[0][f"arr_{i}"], overlapped[0][f"arr_{i}"],
                                   rtol=1e-12, atol=1e-12)


@needs_mpi
def test_empty_shards_validation_and_files_only_from_rank_0(tmp_path):
    (reference,) = _train(tmp_path / "single", "float64", None, "--tiny-batches")
    results = _train(tmp_path / "parallel", "float64", 3, "--tiny-batches")
    assert [int(r["size"]) for r in results] == [3, 3, 3]
    for result in results:
        for key in ("arr_0", "arr_3", "loss", "val_loss", "val_accuracy"):
            np.testing.assert_allclose(result[key], reference[key], rtol=1e-12, atol=1e-12)
    written = sorted(p.name for p in (tmp_path / "parallel").glob("*_rank*"))
    assert written == ["ckpt_rank0.weights.h5", "log_rank0.csv"]


@needs_mpi
def test_launcher_and_mpi_that_disagree_raise_a_clear_error():
    env = {**ENV, "OMPI_COMM_WORLD_SIZE": "2"}  # as if Open MPI's mpirun had started us
    code = ("try:\n    kerasrs.distribution.DataParallel()\n"
            "except RuntimeError as e:\n    say('ERROR', e)\n")
    (out,) = snippet(code, ranks=None, env=env)
    assert "the launcher started 2 processes (OMPI_COMM_WORLD_SIZE=2)" in out
    assert "MPI sees a world of 1" in out


@needs_mpi
@pytest.mark.parametrize("loss", ["kerasrs.losses.MeanSquaredError(reduction='sum')",
                                  "kerasrs.losses.SparseCategoricalCrossentropy(ignore_class=0)"])
def test_losses_not_divided_by_the_batch_size_are_refused(loss):
    code = f"""
kerasrs.distribution.set_distribution(kerasrs.distribution.DataParallel())
model = kerasrs.Sequential([kerasrs.Input((3,)), kerasrs.layers.Dense(2)])
model.compile("sgd", {loss})
try:
    model.fit(np.ones((4, 3), "float32"), np.ones((4,)), verbose=0)
except NotImplementedError as e:
    say("ERROR", e)
"""
    for line in snippet(code, ranks=2):
        assert "divides by something other than the batch size" in line


@needs_mpi
def test_overridden_train_step_is_refused():
    code = """
class Custom(kerasrs.Model):
    def train_step(self, data):
        return {}
inputs = kerasrs.Input((3,))
model = Custom(inputs, kerasrs.layers.Dense(2)(inputs))
model.compile("sgd", "mse")
kerasrs.distribution.set_distribution(kerasrs.distribution.DataParallel())
try:
    model.fit(np.ones((4, 3), "float32"), np.ones((4, 2)), verbose=0)
except NotImplementedError as e:
    say("ERROR", e)
"""
    for line in snippet(code, ranks=2):
        assert "overrides train_step" in line


def test_import_kerasrs_does_not_start_mpi():
    code = "import sys\nsay('mpi4py' in sys.modules, 'mpi4py.MPI' in sys.modules)"
    assert snippet(code) == ["False False"]


@pytest.mark.parametrize("environ, size", [
    ({}, None), ({"PMI_SIZE": "4"}, 4), ({"OMPI_COMM_WORLD_SIZE": "3"}, 3),
    ({"MV2_COMM_WORLD_SIZE": " 2 "}, 2), ({"PMI_SIZE": ""}, None)])
def test_launcher_size_reads_the_launchers_variables(environ, size):
    assert mpi.launcher_size(environ) == size


def test_check_launcher_accepts_matching_sizes_and_names_the_variable():
    mpi.check_launcher(1, {})
    mpi.check_launcher(4, {"PMI_SIZE": "4"})
    with pytest.raises(RuntimeError, match=r"started 4 processes \(PMI_SIZE=4\).*world of 1"):
        mpi.check_launcher(1, {"PMI_SIZE": "4"})


@needs_mpi
def test_keras_names_report_the_job():
    code = """
from kerasrs import distribution
assert distribution.distribution() is None
distribution.initialize(num_processes=2)
dist = distribution.DataParallel()
distribution.set_distribution(dist)
assert distribution.distribution() is dist
try:
    distribution.set_distribution("data")
except TypeError as e:
    say(e)
say(dist.process_id, distribution.list_devices(), dist.devices, dist.is_chief)
rows = np.arange(5)
say(dist.shard_batch({"x": (rows, None), "y": [rows * 10]}), dist.shard(np.arange(10, 15)))
"""
    error = "set_distribution: expected a DataParallel or None. Received: str"
    assert snippet(code, ranks=2) == [
        (f"{error} | 0 ['cpu:0', 'cpu:1'] ['cpu:0', 'cpu:1'] True | "
         "{'x': (array([0, 1]), None), 'y': [array([ 0, 10])]} [10 11]"),
        (f"{error} | 1 ['cpu:0', 'cpu:1'] ['cpu:0', 'cpu:1'] False | "
         "{'x': (array([2, 3, 4]), None), 'y': [array([20, 30, 40])]} [12 13 14]")]


@needs_mpi
@pytest.mark.parametrize("batch_size", [4, 19])  # 19: the last batch (1) leaves rank 0 empty
def test_batchnorm_statistics_are_averaged_and_frozen_weights_left_alone(batch_size):
    code = """
import hashlib
from kerasrs import layers
dist = kerasrs.distribution.DataParallel()
kerasrs.distribution.set_distribution(dist)
kerasrs.utils.set_random_seed(dist.process_id)
frozen = layers.Dense(4, trainable=False)
model = kerasrs.Sequential([kerasrs.Input((3,)), frozen, layers.BatchNormalization(),
                            layers.Dense(2)])
model.compile("adam", "mse")
data = np.random.default_rng(0)
scale = np.where(np.arange(20) % 4 < 2, 1.0, 5.0)[:, None]  # each process sees another spread
x = (data.normal(size=(20, 3)) * scale).astype("float32")
start = dist.comm.bcast(frozen.kernel.numpy().copy(), root=0)  # fit starts from rank 0's
model.fit(x, data.normal(size=(20, 2)), batch_size=BATCH, epochs=2, shuffle=False, verbose=0)
kerasrs.distribution.set_distribution(None)
say(np.array_equal(frozen.kernel.numpy(), start), all(np.isfinite(w.numpy()).all() for w in
    model.weights), [hashlib.sha1(w.numpy().tobytes()).hexdigest() for w in model.weights])
""".replace("BATCH", str(batch_size))
    first, second = snippet(code, ranks=2)
    assert first.startswith("True True ")  # frozen weights unchanged; no NaN statistics
    assert first == second  # every weight, BatchNorm statistics included, on every process


@needs_mpi
def test_only_rank_0_prints_and_a_batch_callback_on_one_rank_does_not_hang():
    code = """
dist = kerasrs.distribution.DataParallel()
kerasrs.distribution.set_distribution(dist)

class Losses(kerasrs.callbacks.Callback):
    seen = []
    def on_train_batch_end(self, batch, logs=None):
        self.seen.append(round(logs["loss"], 6))

model = kerasrs.Sequential([kerasrs.Input((3,)), kerasrs.layers.Dense(1)])
model.compile("sgd", "mse")
x = np.arange(30, dtype="float32").reshape(10, 3) / 30
# the callback only on rank 0: its per-batch logs need every process in step
history = model.fit(x, x[:, :1], batch_size=4, epochs=2, verbose=2, shuffle=False,
                    callbacks=[Losses()] if dist.is_chief else [])
say(len(Losses.seen), not Losses.seen or round(history.history["loss"][-1], 6) == Losses.seen[-1])
"""
    lines = snippet(code, ranks=2)
    for epoch in ("Epoch 1/2", "Epoch 2/2"):  # rank 0 prints, the other is silent
        assert sum(line.startswith(epoch) for line in lines) == 1, lines
    assert lines[-2:] == ["6 True", "0 True"]  # the last batch's logs are the epoch's


@needs_mpi
def test_backup_and_restore_resumes_every_process_from_rank_0s_backup(tmp_path):
    code = f"""
dist = kerasrs.distribution.DataParallel()
kerasrs.distribution.set_distribution(dist)
model = kerasrs.Sequential([kerasrs.Input((3,)), kerasrs.layers.Dense(1)])
model.compile("sgd", "mse")
x = np.arange(30, dtype="float32").reshape(10, 3) / 30

class Crash(kerasrs.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch == 1:
            raise RuntimeError("crash")

backup = kerasrs.callbacks.BackupAndRestore({str(tmp_path / "backup")!r})
try:
    model.fit(x, x[:, :1], batch_size=4, epochs=4, verbose=0, callbacks=[backup, Crash()])
except RuntimeError:
    pass
history = model.fit(x, x[:, :1], batch_size=4, epochs=4, verbose=0, callbacks=[backup])
import os
say(history.epoch, os.path.exists({str(tmp_path / "backup")!r}),
    model.weights[0].numpy().ravel().round(6).tolist())
"""
    first, second = snippet(code, ranks=2)
    assert first.startswith("[2, 3] False ")  # resumed after the 2 saved epochs; backup deleted
    assert first.split(" ", 3)[3] == second.split(" ", 3)[3]


@needs_mpi
def test_weights_and_optimizer_state_loaded_on_rank_0_reach_every_process(tmp_path):
    path = tmp_path / "start.keras"
    code = f"""
x = np.arange(30, dtype="float32").reshape(10, 3) / 30
model = kerasrs.Sequential([kerasrs.Input((3,)), kerasrs.layers.Dense(1)])
model.compile(kerasrs.optimizers.Adam(0.1), "mse")
model.fit(x, x[:, :1], epochs=2, verbose=0)
model.save({str(path)!r})
"""
    snippet(code)
    code = f"""
x = np.arange(30, dtype="float32").reshape(10, 3) / 30
dist = kerasrs.distribution.DataParallel()
kerasrs.distribution.set_distribution(dist)
kerasrs.utils.set_random_seed(dist.process_id)
model = kerasrs.Sequential([kerasrs.Input((3,)), kerasrs.layers.Dense(1)])
model.compile(kerasrs.optimizers.Adam(0.1), "mse")
if dist.is_chief:  # only rank 0 reads the file: weights and Adam's moments
    model = kerasrs.saving.load_model({str(path)!r})
model.fit(x, x[:, :1], epochs=1, verbose=0)
say(model.weights[0].numpy().ravel().tolist(), int(model.optimizer.iterations.numpy()))
"""
    first, second = snippet(code, ranks=2)
    assert first == second and first.endswith(" 3")  # 1 step after the 2 restored ones


class _FakeComm:
    def __init__(self):
        self.aborted = []

    def Abort(self, code):  # noqa: N802 (mpi4py's name)
        self.aborted.append(code)


@pytest.fixture
def abort_hooks(monkeypatch):
    """Hooks installed on a fake communicator, with recording previous hooks (restored after)."""
    printed = []
    monkeypatch.setattr(sys, "excepthook", lambda *a: printed.append(("main", a[0])))
    monkeypatch.setattr(threading, "excepthook", lambda args: printed.append(("thread",
                                                                              args.exc_type)))
    monkeypatch.setattr(mpi.time, "sleep", lambda seconds: None)
    comm = _FakeComm()
    mpi.abort_on_uncaught_exception(comm)
    mpi.abort_on_uncaught_exception(comm)  # a second DataParallel installs nothing more
    return comm, printed


def _die_in_a_thread(error):
    def target():
        raise error

    thread = threading.Thread(target=target, name="kerasrs-mpi-progress")
    thread.start()
    thread.join()


def test_an_exception_in_another_thread_aborts_the_job(abort_hooks):
    # before: only sys.excepthook was hooked; a dead progress thread left the other ranks waiting
    comm, printed = abort_hooks
    _die_in_a_thread(RuntimeError("boom in the progress thread"))
    assert printed == [("thread", RuntimeError)] and comm.aborted == [1]  # printed, then aborted


def test_an_exception_in_the_main_thread_aborts_the_job_once_hooked(abort_hooks):
    comm, printed = abort_hooks
    sys.excepthook(ValueError, ValueError("boom"), None)
    assert printed == [("main", ValueError)] and comm.aborted == [1]


def test_a_thread_ended_by_system_exit_aborts_nothing(abort_hooks):
    comm, printed = abort_hooks
    _die_in_a_thread(SystemExit(0))
    assert printed == [("thread", SystemExit)] and comm.aborted == []


@needs_mpi
def test_data_parallel_exception_on_one_rank_aborts_the_job_without_dash_m_mpi4py():
    # before: rank 1 died and rank 0 waited in its next collective forever
    code = """
import kerasrs
dist = kerasrs.distribution.DataParallel()
if dist.process_id == 1:
    raise RuntimeError("boom on rank 1")
dist.comm.Barrier()  # rank 0 waits here for rank 1
print("rank 0 passed the barrier")
"""
    env = {**ENV, "PYTHONPATH": os.pathsep.join(p for p in (REPO, ENV.get("PYTHONPATH")) if p)}
    start = time.monotonic()
    job = subprocess.Popen([MPIEXEC, "-n", "2", sys.executable, "-c", code], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    try:
        out, err = job.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)  # mpiexec and both ranks
        job.communicate()
        pytest.fail(f"the job hung for {time.monotonic() - start:.0f} s after rank 1 raised")
    assert job.returncode != 0
    # The traceback is printed (and flushed) before the abort, but the launcher may still drop
    # output it had not forwarded when Abort killed the job: only the ending is asserted.
    assert "passed the barrier" not in out
