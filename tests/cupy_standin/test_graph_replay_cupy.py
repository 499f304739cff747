"""Graph replay on the CuPy backend (kerasrs.graph.cuda_launch): ``fit(jit_compile=True)`` of the
four benchmark models equals eager NumPy training, the fused groups run as their generated
RawKernels, a step reads nothing back from the device, and a CUDA-graph replay equals the
uncaptured one. On the CuPy stand-in in the CPU run; the ``cupy`` cases (``gpu``) run the same
on a real device (``pytest -m gpu --gpu``)."""

import os
import pathlib
import sys
import warnings

import numpy as np
import pytest

import kerasrs
from kerasrs import backend as backend_module
from kerasrs import graph, layers, ops, optimizers
from kerasrs.graph import cuda_launch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import models as benchmark_models  # noqa: E402
STEPS, BATCH, EPOCHS = 2, 2, 2  # steps per epoch


@pytest.fixture(params=["standin", pytest.param("cupy", marks=pytest.mark.gpu)])
def cp(request):
    """The array module of the "cupy" backend: the stand-in (with small grids, so that its
    CPU threads stay few), or the real CuPy on a GPU."""
    if request.param == "standin":
        if backend_module.is_available("cupy"):
            pytest.skip("the 'cupy' case runs this (a GPU, or the session-wide stand-in)")
        module = request.getfixturevalue("cupy_standin")
    elif backend_module.is_available("cupy"):
        module = backend_module.get("cupy").xp
    elif os.environ.get("KERASRS_CUPY_STANDIN") == "1":  # (here its conftest imported it first)
        module = request.getfixturevalue("cupy_standin")
    else:
        pytest.skip("no CuPy with a GPU")
    if hasattr(module, "launched"):  # the stand-in: few threads per launch, zeroed counts
        be = backend_module.get("cupy")
        be.kernels.max_grid, be.kernels.max_block = 2, 64
        module.reset_stats()
    return module


class _Reads(kerasrs.callbacks.Callback):
    """The device-to-host copies of each epoch (the stand-in's counts)."""

    def __init__(self, stats):
        super().__init__()
        self.stats, self.reads = stats, []

    def on_epoch_begin(self, epoch, logs=None):
        self.start = self.stats["d2h"]

    def on_epoch_end(self, epoch, logs=None):
        self.reads.append(self.stats["d2h"] - self.start)


def _fit(name, x, y, backend, jit_compile, cp=None):
    """``(losses, weights, device-to-host copies per epoch or None, fused groups)`` of two
    epochs."""
    stats = getattr(cp, "stats", None)
    with backend_module.using(backend):
        kerasrs.utils.set_random_seed(0)
        model, loss = benchmark_models.kerasrs_network(name)
        model.compile(optimizer="adam", loss=loss, jit_compile=jit_compile)
        counter = None if stats is None else _Reads(stats)
        history = model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0,
                            callbacks=[] if counter is None else [counter])
        reads = None if counter is None else counter.reads
        groups = None
        if jit_compile:
            assert not model._jit.eager, model._jit.eager
            groups = sum(len(plan.groups) for entry in model._jit.entries.values()
                         for plan in entry.program._plans.values())
        weights = [backend_module.convert_to_numpy(w) for w in model.get_weights()]
        return history.history["loss"], weights, reads, groups


def _data(name):
    rng = np.random.default_rng(0)
    x = rng.random((STEPS * BATCH, *benchmark_models.INPUT_SHAPES[name])).astype("float32")
    return x, rng.integers(0, 10, STEPS * BATCH)


def _fused_launches(cp):
    launched = getattr(cp, "launched", None)
    return None if launched is None else \
        {k: n for k, n in launched.items() if k.startswith("kerasrs_fused_")}


@pytest.mark.parametrize("name", ["mlp", "cnn", "lstm", "transformer"])
def test_replayed_fit_equals_eager_numpy(cp, name):
    x, y = _data(name)
    losses, weights, reads, groups = _fit(name, x, y, "cupy", True, cp)
    want_losses, want_weights, _, _ = _fit(name, x, y, "numpy", False)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    for got, want in zip(weights, want_weights):  # atol: see test_benchmark_models_gpu.py
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    fused = _fused_launches(cp)
    if fused is not None:
        # every model's Adam updates are flat groups (one source for equal chains): each
        # group's kernel ran once per step
        assert groups and sum(fused.values()) == groups * STEPS * EPOCHS, (groups, fused)
        # the second epoch reads only its logged loss mean: a replayed step reads nothing back
        # (the first also traces the step, which checks the labels' range on the device)
        assert reads[1] == 1, reads


def _mlp_program(cp, cuda_graph, width=16):
    kerasrs.utils.set_random_seed(3)
    model = kerasrs.Sequential([layers.Input((6,)), layers.Dense(width, activation="relu"),
                                layers.Dense(3)])
    optimizer = optimizers.Adam(1e-2)
    loss = kerasrs.losses.SparseCategoricalCrossentropy(from_logits=True)
    rng = np.random.default_rng(1)
    batches = [(cp.asarray(rng.random((4, 6)).astype("float32")),
                cp.asarray(rng.integers(0, 3, 4))) for _ in range(5)]
    program = graph.compile(graph.trace_train_step(model, optimizer, loss, batches[0]),
                            cuda_graph=cuda_graph)
    return model, optimizer, program, batches


def _replay(cp, cuda_graph):
    """Losses and weights of five replayed steps; the program's plan."""
    with backend_module.using("cupy") as be:
        model, optimizer, program, batches = _mlp_program(cp, cuda_graph)
        losses = []
        for xb, yb in batches:
            out = program(x=xb, y=yb, **graph.hyper_feeds(optimizer, be))
            losses.append(out["loss"].data)  # kept on the device: a later launch must not
        plan = program.plan_for(x=xb, y=yb, **graph.hyper_feeds(optimizer, be))
        return [float(v) for v in losses], [w.numpy() for w in model.weights], plan


def test_cuda_graph_replay_equals_uncaptured_replay(cp):
    losses, weights, plan = _replay(cp, False)
    assert not isinstance(plan, cuda_launch.CapturedPlan)
    graph_losses, graph_weights, captured = _replay(cp, True)
    assert isinstance(captured, cuda_launch.CapturedPlan) and captured.captured
    assert captured.launches == 4  # step 1 warms up; step 2 is captured, then launched
    if hasattr(cp, "launched"):
        assert cp.capture_stats["graph_launches"] == 4
    np.testing.assert_array_equal(graph_losses, losses)
    for a, b in zip(graph_weights, weights):
        np.testing.assert_array_equal(a, b)


def test_cuda_graph_is_opt_in_through_the_environment(cp, monkeypatch):
    with backend_module.using("cupy"):
        traced = _mlp_program(cp, False)[2].graph
    monkeypatch.setenv(cuda_launch.ENV, "1")
    assert graph.compile(traced).cuda_graph and not graph.compile(traced, cuda_graph=False) \
        .cuda_graph
    monkeypatch.setenv(cuda_launch.ENV, "0")
    assert not graph.compile(traced).cuda_graph


def test_a_failed_capture_warns_once_and_replays_uncaptured(cp, monkeypatch):
    losses, weights, _ = _replay(cp, False)

    def refuse(self, mode=None):
        raise RuntimeError("capture refused (test)")

    monkeypatch.setattr(cp.cuda.Stream, "begin_capture", refuse)
    monkeypatch.setattr(cuda_launch.CapturedPlan, "warned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got_losses, got_weights, plan = _replay(cp, True)
    messages = [str(w.message) for w in caught if "CUDA graph" in str(w.message)]
    assert len(messages) == 1 and "capture refused (test)" in messages[0]
    assert plan.failed and not plan.captured and plan.launches == 0
    np.testing.assert_array_equal(got_losses, losses)
    for a, b in zip(got_weights, weights):
        np.testing.assert_array_equal(a, b)


def test_replaced_variable_memory_is_captured_again(cp):
    with backend_module.using("cupy") as be:
        model, optimizer, program, batches = _mlp_program(cp, True)
        feeds = lambda xb, yb: dict(x=xb, y=yb, **graph.hyper_feeds(optimizer, be))
        for xb, yb in batches[:3]:
            program(**feeds(xb, yb))
        plan = program.plan_for(**feeds(*batches[0]))
        assert plan.captured and plan.launches == 2
        kernel = model.weights[0]
        kernel.data = kernel.data.copy()  # new memory: the graph would write the old one
        program(**feeds(*batches[3]))
        assert not plan.captured  # that step ran uncaptured
        program(**feeds(*batches[4]))
        assert plan.captured and plan.launches == 3


def test_groups_with_a_broadcast_input_run_unfused_on_cupy(cp):
    """A bias added to a matrix has no flat form: on CuPy that chain is not a group (on NumPy
    it is one nd-form numba kernel)."""
    text = """graph {
      %0 = input {name='x'} : float32[4,3]
      %1 = input {name='b'} : float32[3]
      %2 = add(%0, %1) : float32[4,3]
      %3 = sqrt(%2) : float32[4,3]
      %4 = input {name='w'} : float32[4,3]
      %5 = multiply(%4, %4) : float32[4,3]
      %6 = add(%5, %4) : float32[4,3]
      output 'y' = %3
      output 'z' = %6
    }"""
    g = graph.parse(text)
    rng = np.random.default_rng(0)
    host = {k: rng.random(s).astype("float32") for k, s in
            (("x", (4, 3)), ("b", (3,)), ("w", (4, 3)))}
    with backend_module.using("numpy"):
        assert len(graph.compile(g).plan_for(**host).groups) == 2
    with backend_module.using("cupy"):
        program = graph.compile(g)
        out = program(**{k: cp.asarray(v) for k, v in host.items()})
        assert len(program.plan_for(**{k: cp.asarray(v) for k, v in host.items()}).groups) == 1
        np.testing.assert_allclose(out["y"].numpy(), np.sqrt(host["x"] + host["b"]),
                                   rtol=1e-6)
        np.testing.assert_allclose(out["z"].numpy(), host["w"] * host["w"] + host["w"],
                                   rtol=1e-6)
    assert sys.modules["cupy"] is cp or not hasattr(cp, "launched")


def test_a_step_reading_a_per_step_host_value_is_not_captured(cp, monkeypatch):
    """Dropout's key is drawn on the host and passed to the kernel: a graph would repeat the
    first mask, so the capture is refused (one warning naming the op) and the replay equals
    the uncaptured one."""
    monkeypatch.setattr(cuda_launch.CapturedPlan, "warned", False)
    results = []
    for cuda_graph in (False, True):
        with backend_module.using("cupy") as be, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kerasrs.utils.set_random_seed(5)
            model = kerasrs.Sequential([layers.Input((6,)), layers.Dense(8),
                                        layers.Dropout(0.5), layers.Dense(3)])
            optimizer = optimizers.SGD(0.1)
            loss = kerasrs.losses.SparseCategoricalCrossentropy(from_logits=True)
            rng = np.random.default_rng(2)
            xb = cp.asarray(rng.random((4, 6)).astype("float32"))
            yb = cp.asarray(rng.integers(0, 3, 4))
            program = graph.compile(graph.trace_train_step(model, optimizer, loss, (xb, yb)),
                                    cuda_graph=cuda_graph)
            losses = [float(program(x=xb, y=yb, **graph.hyper_feeds(optimizer, be))["loss"]
                            .data) for _ in range(4)]
            plan = program.plan_for(x=xb, y=yb, **graph.hyper_feeds(optimizer, be))
        results.append((losses, [w.numpy() for w in model.weights]))
    messages = [str(w.message) for w in caught if "CUDA graph" in str(w.message)]
    assert len(messages) == 1 and "dropout_mask draws random numbers" in messages[0], messages
    assert plan.failed and not plan.captured
    np.testing.assert_array_equal(results[1][0], results[0][0])
    assert len(set(results[0][0])) == 4  # new masks each step
    for a, b in zip(results[1][1], results[0][1]):
        np.testing.assert_array_equal(a, b)


def test_another_batch_size_is_planned_with_device_constants(cp):
    """A batch of another size is planned after one untyped run: that run too holds the
    graph's array constants on the device."""
    scale = np.array([1.0, 2.0, 3.0], "float32")

    def step(x):
        return ops.sqrt(x * graph.constant(scale) + 1.0)

    with backend_module.using("cupy"):
        g = graph.trace(step, x=cp.asarray(np.ones((4, 3), "float32")))
        program = graph.compile(g)
        x = np.arange(6, dtype="float32").reshape(2, 3)
        out = program(x=cp.asarray(x))["output"]
    np.testing.assert_allclose(out.numpy(), np.sqrt(x * scale + 1), rtol=1e-6)


def test_a_guarded_update_runs_unfused_on_cupy(cp):
    """Its boolean condition has no C type in the generated kernel: on CuPy the group is not
    kept (on NumPy it is one numba kernel), and the result is still right."""
    text = """graph {
      %0 = input {name='p'} : float32[4,3]
      %1 = input {name='g'} : float32[4,3]
      %2 = input {name='ok'} : bool[]
      %3 = subtract(%0, %1) : float32[4,3]
      %4 = where(%2, %3, %0) : float32[4,3]
      output 'y' = %4
    }"""
    g = graph.parse(text)
    rng = np.random.default_rng(0)
    host = {"p": rng.random((4, 3)).astype("float32"), "g": rng.random((4, 3)).astype("float32"),
            "ok": np.asarray(False)}
    with backend_module.using("numpy"):
        assert len(graph.compile(g).plan_for(**host).groups) == 1
    with backend_module.using("cupy"):
        program = graph.compile(g)
        feeds = {k: cp.asarray(v) for k, v in host.items()}
        assert program.plan_for(**feeds).groups == []
        np.testing.assert_array_equal(program(**feeds)["y"].numpy(), host["p"])
