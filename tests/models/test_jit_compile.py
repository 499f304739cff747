"""compile(jit_compile=...): fit, evaluate and predict replay traced steps and give eager
training's numbers (bit for bit here: the same ops, the optimizer's eager arithmetic); callbacks,
metrics, validation, short and padded last batches, dropout, BatchNormalization, masks, mixed
precision and saving behave as eagerly; what a graph cannot capture raises under
jit_compile=True and falls back to eager steps with one warning under "auto"."""

import collections
import os
import sys
import warnings

import numpy as np
import pytest

import kerasrs
from kerasrs import graph, layers, losses, ops, optimizers
from kerasrs.trainers import jit

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "graph"))
import third_party_op  # noqa: E402

rng = np.random.default_rng(0)
X = rng.normal(size=(100, 12)).astype("float32")
Y = rng.integers(0, 3, 100)
LOGITS = losses.SparseCategoricalCrossentropy(from_logits=True)


@pytest.fixture
def auto_jit():
    kerasrs.config.enable_auto_jit_compile()
    yield
    kerasrs.config.disable_auto_jit_compile()


def _bn_dropout_mlp():
    return kerasrs.Sequential([layers.Input((12,)), layers.Dense(16), layers.BatchNormalization(),
                               layers.Activation("relu"), layers.Dropout(0.3), layers.Dense(3)])


class _Logs(kerasrs.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.seen = []

    def on_train_batch_end(self, batch, logs=None):
        self.seen.append((batch, dict(logs)))

    def on_epoch_end(self, epoch, logs=None):
        self.seen.append(("epoch", dict(logs)))


def _run(make, jit_compile, compile_kw, fit_kw, x=X, y=Y):
    kerasrs.utils.set_random_seed(3)
    model = make()
    model.compile(jit_compile=jit_compile, **compile_kw)
    logs = _Logs()
    history = model.fit(x, y, verbose=0, callbacks=[logs], **fit_kw)
    return model, {"history": history.history, "batches": logs.seen,
                   "evaluate": model.evaluate(x, y, verbose=0, return_dict=True),
                   "predict": model.predict(x, verbose=0)}


def _assert_same(make, compile_kw, fit_kw, x=X, y=Y, entries=None):
    eager, want = _run(make, False, compile_kw, fit_kw, x, y)
    replayed, got = _run(make, True, compile_kw, fit_kw, x, y)
    assert replayed._jit is not None and not replayed._jit.eager
    if entries is not None:  # one program per kind and shape signature (and padded rows)
        assert dict(collections.Counter(k[0] for k in replayed._jit.entries)) == entries
    for a, b in zip(eager.weights + eager.optimizer.variables,
                    replayed.weights + replayed.optimizer.variables):
        np.testing.assert_array_equal(b.numpy(), a.numpy(), err_msg=a.path)
    for a, b in zip(kerasrs.tree.flatten(want["predict"]), kerasrs.tree.flatten(got["predict"])):
        np.testing.assert_array_equal(b, a)
    assert got["history"] == want["history"] and got["evaluate"] == want["evaluate"]
    assert got["batches"] == want["batches"]
    return replayed


# -- the switch -----------------------------------------------------------------------------------
def test_auto_runs_eagerly_unless_enabled_and_true_or_the_switch_traces():
    assert jit.resolve("auto") is None and jit.resolve(False) is None
    assert jit.resolve(True) == "strict" and jit.resolve(True, run_eagerly=True) is None
    # truthy spellings of True replay as well (they ran eagerly, silently)
    assert jit.resolve(1) == jit.resolve(np.True_) == "strict"
    assert jit.resolve(0) is None and jit.resolve(np.False_) is None
    with pytest.raises(ValueError, match="must be True, False or 'auto'"):
        jit.resolve(2)
    model = _bn_dropout_mlp()
    model.compile("adam", LOGITS)
    assert model._jit is None
    kerasrs.config.enable_auto_jit_compile()
    try:
        assert kerasrs.config.is_auto_jit_compile_enabled() and jit.resolve("auto") == "auto"
        model.compile("adam", LOGITS)
        assert model._jit is not None and not model._jit.strict
    finally:
        kerasrs.config.disable_auto_jit_compile()
    with pytest.raises(ValueError, match="jit_compile"):
        model.compile("adam", LOGITS, jit_compile="xla")


# -- the same numbers ---------------------------------------------------------------------------
def test_fit_evaluate_predict_callbacks_and_metrics_match_eager_with_a_short_last_batch():
    _assert_same(_bn_dropout_mlp, {"optimizer": "adam", "loss": LOGITS, "metrics": ["accuracy"]},
                 {"batch_size": 16, "epochs": 2, "validation_split": 0.25, "shuffle": False},
                 # fit: 16 & 11 rows; validation: 16 & 9; evaluate, predict (32 a batch): 32 & 4
                 entries={"train": 2, "test": 4, "predict": 2})


def test_padded_last_batch_class_weights_and_shuffling_match_eager():
    model = _assert_same(_bn_dropout_mlp, {"optimizer": "rmsprop", "loss": LOGITS,
                                           "metrics": ["accuracy"]},
                         {"batch_size": 16, "epochs": 2, "shuffle": True, "pad_last_batch": True,
                          "class_weight": {0: 1.0, 1: 2.0, 2: 0.5}},
                         entries={"train": 2, "test": 2, "predict": 2})
    assert sorted(k[1] or 0 for k in model._jit.entries if k[0] == "train") == [0, 4]


def test_masks_multi_output_and_mixed_precision_match_eager():
    ids = rng.integers(1, 20, (100, 7))
    ids[:50, 5:] = 0

    def masked():
        return kerasrs.Sequential([layers.Input((7,), dtype="int32"),
                                   layers.Embedding(20, 8, mask_zero=True), layers.LSTM(6),
                                   layers.Dense(3)])

    _assert_same(masked, {"optimizer": "adam", "loss": LOGITS},
                 {"batch_size": 16, "epochs": 1, "shuffle": False}, x=ids)

    def two_heads():
        i = layers.Input((12,))
        h = layers.Dense(8, activation="relu")(i)
        return kerasrs.Model(i, [layers.Dense(3, name="a")(h), layers.Dense(1, name="b")(h)])

    _assert_same(two_heads, {"optimizer": "adam", "loss": [LOGITS, "mse"],
                             "metrics": [["accuracy"], ["mae"]]},
                 {"batch_size": 16, "epochs": 1, "shuffle": False}, y=[Y, X[:, :1]])
    kerasrs.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        _assert_same(_bn_dropout_mlp, {"optimizer": "adam", "loss": LOGITS},
                     {"batch_size": 16, "epochs": 1, "shuffle": False})
    finally:
        kerasrs.dtype_policies.set_dtype_policy(None)  # back to the default: follow floatx()


def test_a_trained_model_saves_and_reloads_as_an_eager_one(tmp_path):
    model = _assert_same(_bn_dropout_mlp, {"optimizer": "adam", "loss": LOGITS},
                         {"batch_size": 32, "epochs": 1, "shuffle": False})
    path = str(tmp_path / "model.h5")
    model.save(path)
    again = kerasrs.models.load_model(path)
    np.testing.assert_array_equal(again.predict(X, verbose=0), model.predict(X, verbose=0))


def test_a_registered_third_party_op_trains_in_a_replayed_step_and_serializes(tmp_path):
    class Softclip(layers.Layer):
        def call(self, x):
            return third_party_op.softclip(x, 1.5)

    def make():
        return kerasrs.Sequential([layers.Input((12,)), layers.Dense(8), Softclip(),
                                   layers.Dense(3)])

    model = _assert_same(make, {"optimizer": "sgd", "loss": LOGITS},
                         {"batch_size": 20, "epochs": 1, "shuffle": False})
    entry = next(e for k, e in model._jit.entries.items() if k[0] == "train")
    assert "third_party.softclip" in {n.op for n in entry.traced.nodes}
    entry.traced.save(str(tmp_path / "step"))
    loaded = graph.load(str(tmp_path / "step"))
    assert loaded == entry.traced


# -- what a graph cannot capture ---------------------------------------------------------------
class _HostBranch(layers.Layer):
    """Python control flow on a tensor's value."""

    def call(self, x):
        return x * 2.0 if float(ops.mean(x)) > 0 else x


class _HostBranchNumpy(layers.Layer):
    """The same branch through ops.convert_to_numpy (was frozen silently into the graph)."""

    def call(self, x):
        return x * 2.0 if float(ops.convert_to_numpy(ops.max(x))) > 10.0 else x


class _RawMask(layers.Layer):
    """A mask computed on the raw array and wrapped as a constant: invisible to the tracer."""

    def call(self, x):
        return ops.multiply(x, ops.core.constant((x.data > 0).astype(x.dtype), x.backend))


class _Unregistered(kerasrs.autodiff.Function):
    def forward(self, x):
        return x * 1.0

    def backward(self, gy):
        return (gy,)


class _UnregisteredLayer(layers.Layer):
    def call(self, x):
        return _Unregistered().apply(x)


class _HostNoise(layers.Layer):
    """Random numbers drawn on the host (kerasrs.random makes constants)."""

    def call(self, x, training=False):
        return x + kerasrs.random.normal(x.shape) if training else x


@pytest.mark.parametrize("layer,named", [
    (_HostBranch, r"float\(\) of %\d+ \(mean\).*"),
    (_HostBranchNumpy, r"ops.convert_to_numpy\(\) of %\d+ \(max\).*"),
    (_UnregisteredLayer, "op '_unregistered'.*is not registered.*"),
    (_RawMask, "differs between two batches at node %\\d+ \\(a constant made at .*"),
    (_HostNoise, "kerasrs.random.normal at .*"),  # then: draws random numbers on the host
])
def test_untraceable_code_raises_under_true_naming_it_and_its_layer(layer, named):
    kerasrs.utils.set_random_seed(0)  # seeded host draws repeat in both traces: still refused
    model = kerasrs.Sequential([layers.Input((12,)), layers.Dense(4), layer(name="culprit"),
                                layers.Dense(3)])
    model.compile("adam", LOGITS, jit_compile=True)
    named += f"in layer 'culprit' \\({layer.__name__}\\)"
    with pytest.raises(graph.TraceError, match=named):
        model.fit(X, Y, batch_size=16, epochs=1, verbose=0)


def test_a_host_array_augmentation_is_refused_naming_the_layer_and_predict_still_traces():
    images = rng.uniform(0, 255, size=(len(Y), 6, 5, 2)).astype("float32")
    model = kerasrs.Sequential([layers.Input((6, 5, 2)), layers.RandomGaussianBlur(),
                                layers.Flatten(), layers.Dense(3)])
    model.compile("adam", LOGITS, jit_compile=True)
    with pytest.raises(graph.TraceError, match="RandomGaussianBlur's transform of the raw "
                       r"images of %0 \(input\).*in layer 'random_gaussian_blur' "
                       r"\(RandomGaussianBlur\)"):
        model.fit(images, Y, batch_size=16, epochs=1, verbose=0)
    model.predict(images, verbose=0)
    assert [k[0] for k in model._jit.entries] == ["predict"] * 2  # 100 = 6 * 16 + 4 rows


@pytest.mark.parametrize("layer", [_HostBranch, _UnregisteredLayer, _RawMask])
def test_untraceable_code_falls_back_to_eager_with_one_warning_under_auto(layer, auto_jit):
    def make():
        return kerasrs.Sequential([layers.Input((12,)), layers.Dense(4), layer(name="culprit"),
                                   layers.Dense(3)])

    _, want = _run(make, False, {"optimizer": "adam", "loss": LOGITS},
                   {"batch_size": 16, "epochs": 2, "shuffle": False})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model, got = _run(make, "auto", {"optimizer": "adam", "loss": LOGITS},
                          {"batch_size": 16, "epochs": 2, "shuffle": False})
    messages = [str(w.message) for w in caught if "jit_compile='auto'" in str(w.message)]
    assert set(model._jit.eager) == {"train", "test", "predict"}
    train = [m for m in messages if "the train step runs eagerly" in m]
    assert len(train) == 1 and f"in layer 'culprit' ({layer.__name__})" in train[0]
    assert got["history"] == want["history"] and got["evaluate"] == want["evaluate"]
    np.testing.assert_array_equal(got["predict"], want["predict"])


def test_an_optimizer_without_a_graph_rule_is_named():
    model = _bn_dropout_mlp()
    model.compile(optimizers.Ftrl(0.01), LOGITS, jit_compile=True)
    with pytest.raises(graph.TraceError, match="no graph update rule for optimizer Ftrl"):
        model.fit(X, Y, batch_size=16, epochs=1, verbose=0)


def test_an_overridden_train_step_runs_eagerly_with_a_warning():
    class Custom(kerasrs.Sequential):
        def train_step(self, data):
            return super().train_step(data)

    model = Custom([layers.Input((12,)), layers.Dense(3)])
    model.compile("adam", LOGITS, jit_compile=True)
    with pytest.warns(UserWarning, match="the overridden train_step runs eagerly"):
        model.fit(X, Y, batch_size=50, epochs=1, verbose=0)


def test_nan_in_the_data_stops_a_jit_fit_where_eager_fit_stops():
    """NaN in the data: the steps run eagerly (the loss is checked before the update), so fit
    stops at the same batch with the same weights as without jit_compile."""
    x = X[:64].copy()
    x[37, 0] = np.nan  # batch 5 of 8 rows
    weights = {}
    for mode in (False, True):
        kerasrs.utils.set_random_seed(0)
        model = kerasrs.Sequential([layers.Input((12,)), layers.Dense(3)])
        model.compile("sgd", LOGITS, jit_compile=mode)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            history = model.fit(x, Y[:64], batch_size=8, epochs=2, shuffle=False, verbose=0)
        assert len(history.history["loss"]) == 1 and np.isnan(history.history["loss"][0])
        assert int(model.optimizer.iterations.numpy()) == 4
        weights[mode] = model.get_weights()
    for got, want in zip(weights[True], weights[False]):
        np.testing.assert_array_equal(got, want)


def test_padding_and_upsampling_match_eager():
    """ZeroPadding (ops.pad) and UpSampling (ops.repeat) are graph ops: MobileNetV2 pads."""
    images = rng.normal(size=(len(Y), 6, 6, 2)).astype("float32")

    def padded():
        return kerasrs.Sequential([layers.Input((6, 6, 2)), layers.ZeroPadding2D(1),
                                   layers.Conv2D(3, 3), layers.UpSampling2D(2),
                                   layers.Flatten(), layers.Dense(3)])

    _assert_same(padded, {"optimizer": "adam", "loss": LOGITS},
                 {"batch_size": 16, "epochs": 1, "shuffle": False}, x=images)


# -- random layers: graph ops that draw anew on every replay ---------------------------------------
@pytest.mark.parametrize("seed", [None, 4])
def test_noise_layers_draw_new_numbers_on_every_replayed_step_as_eagerly(seed):
    def noisy():
        return kerasrs.Sequential([
            layers.Input((12,)), layers.Dense(16), layers.GaussianNoise(0.3, seed=seed),
            layers.GaussianDropout(0.2, seed=seed), layers.Dense(16, activation="tanh"),
            layers.AlphaDropout(0.2, seed=seed), layers.Dense(3)])

    model = _assert_same(noisy, {"optimizer": "adam", "loss": LOGITS},
                         {"batch_size": 16, "epochs": 2, "shuffle": False})
    entry = next(e for k, e in model._jit.entries.items() if k[0] == "train")
    assert sum(n.op == "random_draw" for n in entry.traced.nodes) == 3


def test_traced_augmentation_layers_match_eager():
    images = rng.uniform(0, 255, size=(len(Y), 6, 5, 2)).astype("float32")

    def augmenting():
        return kerasrs.Sequential([
            layers.Input((6, 5, 2)), layers.RandomFlip(), layers.RandomContrast(0.4, seed=1),
            layers.RandomBrightness(0.2), layers.Rescaling(1 / 255), layers.Flatten(),
            layers.Dense(3)])

    _assert_same(augmenting, {"optimizer": "adam", "loss": LOGITS},
                 {"batch_size": 16, "epochs": 2, "shuffle": False}, x=images)


@pytest.mark.parametrize("seed", [None, 5])
def test_geometric_augmentation_draws_anew_on_every_replayed_step_as_eagerly(seed):
    """Rotation, translation, zoom, shear (affine resampling in ops) and a random crop draw
    with a graph op: the replayed fit gives the eager weights (each step augments anew);
    CenterCrop and Resizing trace too (predict and evaluate replay)."""
    images = rng.uniform(0, 255, size=(len(Y), 2, 9, 8)).astype("float32")  # channels_first

    def augmenting():
        first = {"data_format": "channels_first", "seed": seed}
        return kerasrs.Sequential([
            layers.Input((2, 9, 8)), layers.RandomRotation(0.2, **first),
            layers.RandomTranslation(0.2, (-0.1, 0.3), fill_mode="constant", **first),
            layers.RandomZoom(0.3, 0.2, interpolation="nearest", fill_mode="wrap", **first),
            layers.RandomShear(0.3, 0.2, fill_mode="nearest", **first),
            layers.RandomCrop(7, 6, **first), layers.CenterCrop(6, 6, "channels_first"),
            layers.Resizing(5, 4, data_format="channels_first"), layers.Rescaling(1 / 255),
            layers.Flatten(), layers.Dense(3)])

    model = _assert_same(augmenting, {"optimizer": "adam", "loss": LOGITS},
                         {"batch_size": 16, "epochs": 2, "shuffle": False}, x=images)
    entry = next(e for k, e in model._jit.entries.items() if k[0] == "train")
    assert sum(n.op == "random_draw" for n in entry.traced.nodes) == 5


@pytest.mark.parametrize("seed", [None, 2])
def test_colour_augmentation_draws_anew_on_every_replayed_step_as_eagerly(seed):
    """Colour layers whose draw and transform run on ops (TRACED) train in the graph."""
    images = rng.uniform(0, 255, size=(len(Y), 5, 4, 3)).astype("float32")

    def colouring():
        return kerasrs.Sequential([
            layers.Input((5, 4, 3)), layers.RandomGrayscale(0.5, seed=seed),
            layers.RandomInvert(0.3, seed=seed), layers.Solarization(0.2, 0.5, seed=seed),
            layers.RandomSaturation(0.4, seed=seed), layers.RandomHue(0.3, seed=seed),
            layers.RandomColorDegeneration(0.3, seed=seed),
            layers.RandomPosterization((2, 6), seed=seed), layers.RandomSharpness(0.4, seed=seed),
            layers.Rescaling(1 / 255), layers.Flatten(), layers.Dense(3)])

    model = _assert_same(colouring, {"optimizer": "adam", "loss": LOGITS},
                         {"batch_size": 16, "epochs": 2, "shuffle": False}, x=images)
    entry = next(e for k, e in model._jit.entries.items() if k[0] == "train")
    assert sum(n.op == "random_draw" for n in entry.traced.nodes) == 11


# -- steps_per_execution ------------------------------------------------------
def test_steps_per_execution_runs_batch_callbacks_per_execution_as_eagerly():
    compile_kw = {"optimizer": "adam", "loss": LOGITS, "steps_per_execution": 3}
    fit_kw = {"batch_size": 16, "epochs": 2, "shuffle": False}
    _assert_same(_bn_dropout_mlp, compile_kw, fit_kw)
    _, seen = _run(_bn_dropout_mlp, True, compile_kw, fit_kw)
    # 7 batches of 16 rows: executions of batches 0-2, 3-5 and the short 6 (Keras's indices)
    assert [b for b, _ in seen["batches"]] == [2, 5, 6, "epoch"] * 2


def test_evaluate_runs_batch_callbacks_per_execution():
    class Tests(kerasrs.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.seen = []

        def on_test_batch_begin(self, batch, logs=None):
            self.seen.append(("begin", batch))

        def on_test_batch_end(self, batch, logs=None):
            self.seen.append(("end", batch))

    model = _bn_dropout_mlp()
    model.compile("adam", LOGITS, steps_per_execution=4, jit_compile=True)
    tests = Tests()
    model.evaluate(X, Y, batch_size=10, verbose=0, callbacks=[tests])
    assert tests.seen == [("begin", 0), ("end", 3), ("begin", 4), ("end", 7), ("begin", 8),
                          ("end", 9)]
