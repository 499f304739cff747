"""Behaviour of the Keras-named API added for issue 12: tree, random, config, constraints,
layers.* merge helpers, clone_model, constructor-argument configs, pad_sequences, Progbar,
plot_model, get_file and the dataset loaders."""

import collections
import io
import os

import numpy as np
import pytest

import kerasrs as k
from kerasrs import tree


def test_tree_flatten_pack_and_map():
    s = {"b": [1, (2, 3)], "a": None}
    assert tree.flatten(s) == [None, 1, 2, 3]  # sorted keys, None is a leaf
    assert tree.pack_sequence_as(s, [0, 1, 2, 3]) == {"b": [1, (2, 3)], "a": 0}
    assert tree.map_structure(lambda x, y: x + y, [1, (2,)], [10, (20,)]) == [11, (22,)]
    assert tree.flatten_with_path({"x": [5]}) == [(("x", 0), 5)]
    P = collections.namedtuple("P", "u v")
    assert tree.map_structure(lambda v: v * 2, P(1, 2)) == P(2, 4)
    assert tree.lists_to_tuples([1, [2]]) == (1, (2,))
    assert tree.traverse(lambda v: tree.MAP_TO_NONE if v == 2 else None, [1, 2]) == [1, None]
    assert tree.map_shape_structure(len, {"s": (2, 3)}) == {"s": 2}
    with pytest.raises(ValueError):
        tree.assert_same_structure([1, 2], [1])
    with pytest.raises(ValueError):
        tree.pack_sequence_as([1, 2], [1])


def test_random_seeding():
    k.utils.set_random_seed(5)
    first = k.random.normal((3,)).numpy()
    k.utils.set_random_seed(5)
    np.testing.assert_array_equal(first, k.random.normal((3,)).numpy())
    a = k.random.normal((3,), seed=7).numpy()
    np.testing.assert_array_equal(a, k.random.normal((3,), seed=7).numpy())
    g = k.random.SeedGenerator(3)
    x, y = k.random.uniform((4,), seed=g).numpy(), k.random.uniform((4,), seed=g).numpy()
    assert not np.array_equal(x, y)
    g2 = k.random.SeedGenerator(3)
    np.testing.assert_array_equal(x, k.random.uniform((4,), seed=g2).numpy())
    t = k.random.truncated_normal((1000,), seed=1).numpy()
    assert np.abs(t).max() <= 2
    r = k.random.randint((100,), 2, 5, seed=1).numpy()
    assert r.min() >= 2 and r.max() < 5 and r.dtype == np.int32
    c = k.random.categorical(np.log([[0.001, 0.999]]), 50, seed=0).numpy()
    assert (c == 1).mean() > 0.9
    d = k.random.dropout(np.ones(1000), 0.5, seed=0).numpy()
    assert set(np.unique(d)) <= {0.0, 2.0} and 0.4 < (d == 0).mean() < 0.6
    assert sorted(k.random.shuffle(np.arange(5), seed=0).numpy()) == list(range(5))
    for fn, kwargs in ((k.random.gamma, {"alpha": 2.0}), (k.random.beta, {"alpha": 2.0,
                       "beta": 3.0}), (k.random.binomial, {"counts": 5, "probabilities": 0.5})):
        assert fn((10,), seed=0, **kwargs).shape == (10,)


def test_config_round_trips_and_caps():
    k.config.set_epsilon(1e-5)
    assert k.config.epsilon() == 1e-5 and k.backend.epsilon() == 1e-5
    k.config.set_epsilon(1e-7)
    k.config.set_image_data_format("channels_first")
    assert k.config.image_data_format() == "channels_first"
    k.config.set_image_data_format("channels_last")
    with pytest.raises(ValueError):
        k.config.set_image_data_format("nhwc")
    k.config.disable_interactive_logging()
    from kerasrs.callbacks.progbar_logger import is_interactive
    assert not k.config.is_interactive_logging_enabled() and not is_interactive(None)
    k.config.enable_interactive_logging()
    model = k.Sequential([k.Input((2,)), k.layers.Dense(1)])
    model.compile("sgd", "mse")
    k.config.set_max_epochs(2)
    try:
        h = model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=5, verbose=0)
    finally:
        k.config.set_max_epochs(None)
    assert len(h.history["loss"]) == 2


def test_constraints_project_weights():
    w = np.array([[3.0, 0.1], [4.0, 0.1]])
    np.testing.assert_allclose(np.linalg.norm(k.constraints.MaxNorm(2)(w).numpy(), axis=0),
                               [2.0, np.sqrt(0.02)], rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(k.constraints.UnitNorm()(w).numpy(), axis=0), 1,
                               rtol=1e-6)
    assert (k.constraints.NonNeg()(-w).numpy() == 0).all()
    mm = k.constraints.MinMaxNorm(1.0, 2.0)(w).numpy()
    np.testing.assert_allclose(np.linalg.norm(mm, axis=0), [2.0, 1.0], rtol=1e-6)
    c = k.constraints.get(k.constraints.serialize(k.constraints.MaxNorm(3, axis=1)))
    assert isinstance(c, k.constraints.MaxNorm) and c.max_value == 3 and c.axis == 1
    model = k.Sequential([k.Input((3,)), k.layers.Dense(2, kernel_constraint="non_neg")])
    model.compile(k.optimizers.SGD(1.0), "mse")
    model.fit(np.ones((8, 3)), -10 * np.ones((8, 2)), epochs=1, verbose=0)
    assert (model.layers[0].kernel.numpy() >= 0).all()


def test_functional_merge_helpers():
    a, b = k.Input((3,)), k.Input((3,))
    out = k.layers.concatenate([k.layers.add([a, b]), k.layers.subtract([a, b]),
                                k.layers.multiply([a, b]), k.layers.average([a, b]),
                                k.layers.maximum([a, b]), k.layers.minimum([a, b]),
                                k.layers.dot([a, b], axes=1)])
    m = k.Model([a, b], out)
    x, y = np.arange(3.0)[None], np.full((1, 3), 2.0)
    want = np.concatenate([x + y, x - y, x * y, (x + y) / 2, np.maximum(x, y), np.minimum(x, y),
                           (x * y).sum(1, keepdims=True)], axis=1)
    np.testing.assert_allclose(m.predict([x, y], verbose=0), want)


class Scale(k.layers.Layer):  # no get_config: Keras 3 records the constructor arguments
    def __init__(self, factor, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, x):
        return x * self.factor


def test_clone_model_shares_no_weights(tmp_path):
    seq = k.Sequential([k.Input((3,)), k.layers.Dense(4), k.layers.Dense(2)])
    inp = k.Input((3,))
    fun = k.Model(inp, k.layers.Dense(2)(k.layers.Dense(4)(inp)))
    for model in (seq, fun):
        clone = k.models.clone_model(model)
        assert [w.shape for w in clone.weights] == [w.shape for w in model.weights]
        assert not any(a is b for a, b in zip(clone.weights, model.weights))
        assert not np.allclose(clone.weights[0].numpy(), model.weights[0].numpy())
    swapped = k.models.clone_model(seq, clone_function=lambda layer: k.layers.Dense(
        layer.units, activation="relu"))
    assert swapped.layers[0].activation is k.activations.relu
    inp = k.Input((2,))
    m = k.Model(inp, Scale(3.0)(inp))
    path = str(tmp_path / "m.keras")
    m.save(path)
    loaded = k.saving.load_model(path, custom_objects={"Scale": Scale})
    np.testing.assert_allclose(loaded.predict(np.ones((1, 2)), verbose=0), [[3.0, 3.0]])


def test_pad_sequences_and_progbar():
    got = k.utils.pad_sequences([[1, 2, 3], [4]], maxlen=2)
    np.testing.assert_array_equal(got, [[2, 3], [0, 4]])
    got = k.utils.pad_sequences([[1, 2, 3], [4]], padding="post", truncating="post", value=-1)
    np.testing.assert_array_equal(got, [[1, 2, 3], [4, -1, -1]])
    with pytest.raises(ValueError, match="padding"):
        k.utils.pad_sequences([[1]], padding="middle")
    out = io.StringIO()
    bar = k.utils.Progbar(4, verbose=2, stream=out)
    bar.update(2, [("loss", 1.0)])
    bar.update(4, [("loss", 3.0)])
    assert bar.value("loss") == 2.0 and "4/4" in out.getvalue() and "loss: 2.0000" in \
        out.getvalue()


def test_plot_model_needs_pydot_or_works(tmp_path):
    model = k.Sequential([k.Input((3,)), k.layers.Dense(2)])
    try:
        import pydot  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pydot"):
            k.utils.plot_model(model, str(tmp_path / "m.png"))
        return
    dot = k.utils.model_to_dot(model, show_shapes=True)
    assert "Dense" in dot.to_string()
    inp = k.Input((3,))
    branch = k.Model(inp, k.layers.add([k.layers.Dense(3)(inp), inp]))
    assert len(k.utils.model_to_dot(branch).get_edges()) == 3  # input->dense, both->add
    import shutil

    target = str(tmp_path / "m.png")
    if shutil.which("dot") is None:
        with pytest.raises(ImportError, match="Graphviz"):
            k.utils.plot_model(model, target)
    else:
        assert os.path.getsize(k.utils.plot_model(model, target)) > 0


def test_get_file_and_dataset_loaders(tmp_path, monkeypatch):
    src = tmp_path / "boston_housing.npz"
    rng = np.random.default_rng(0)
    np.savez(src, x=rng.normal(size=(10, 13)), y=np.arange(10.0))
    path = k.utils.get_file("b.npz", "file://" + str(src), cache_dir=str(tmp_path / "cache"))
    assert os.path.isfile(path)
    with pytest.raises(ValueError):
        k.utils.get_file("c.npz", "file://" + str(src), file_hash="0" * 64,
                         cache_dir=str(tmp_path / "cache"))
    from kerasrs.datasets import boston_housing, files, imdb, keras_files
    monkeypatch.setattr(keras_files, "local_path", lambda spec, dataset: str(src))
    (x_train, y_train), (x_test, y_test) = boston_housing.load_data(test_split=0.2)
    assert x_train.shape == (8, 13) and x_test.shape == (2, 13)
    assert sorted(np.concatenate([y_train, y_test])) == list(range(10))
    seqs = np.empty(2, dtype=object)
    seqs[:] = [[1, 5, 9], [2, 3]]
    np.savez(src, x_train=seqs, y_train=np.array([0, 1]), x_test=seqs, y_test=np.array([1, 0]))
    (xt, yt), _ = imdb.load_data(num_words=8)
    assert all(s[0] == 1 and max(s) < 8 for s in xt)  # start_char, ids >= num_words -> oov 2
    assert files.matches(path, files.DatasetFile("x", unchecked=True))


def test_top_level_names():
    assert k.Layer is k.layers.Layer and k.Loss is k.losses.Loss and k.Metric is k.metrics.Metric

    class Double(k.Operation):
        def call(self, x):
            return x * 2

    inp = k.Input((2,))
    m = k.Model(inp, Double()(inp))
    np.testing.assert_allclose(m.predict(np.ones((1, 2)), verbose=0), [[2.0, 2.0]])
    f = k.Function(inp, k.layers.Dense(1, kernel_initializer="ones")(inp))
    np.testing.assert_allclose(f(np.ones((1, 2))).numpy(), [[2.0]])
    with k.device("cpu"):
        assert k.ops.ones(1).backend.name == "numpy"
    with k.name_scope("block"):
        v = k.layers.Dense(1)
    assert v is not None
    assert k.utils.get_source_inputs(m.outputs[0])[0] is inp
    cfg = k.utils.Config(lr=0.1)
    cfg.freeze()
    with pytest.raises(ValueError):
        cfg.lr = 1
    np.testing.assert_allclose(k.utils.normalize(np.array([[3.0, 4.0]])), [[0.6, 0.8]])


def test_masks_visible_on_symbolic_tensors():
    x = k.Input((5,))
    e = k.layers.Embedding(10, 3, mask_zero=True)(x)
    seq = k.layers.LSTM(4, return_sequences=True)(e)
    dense = k.layers.Dense(2)(seq)
    for t in (e, seq, dense):  # as Keras: (None, 5) bool masks travel with the tensors
        assert t._keras_mask.shape == (None, 5) and t._keras_mask.dtype == "bool"
    assert getattr(k.layers.LSTM(4)(e), "_keras_mask", None) is None
    assert getattr(k.layers.GlobalAveragePooling1D()(seq), "_keras_mask", None) is None
    assert getattr(k.layers.Dense(2)(k.Input((3,))), "_keras_mask", None) is None
    assert k.layers.Masking()(k.Input((5, 3)))._keras_mask.shape == (None, 5)
    model = k.Model(x, dense)
    assert model.predict(np.array([[1, 2, 0, 0, 0]]), verbose=0).shape == (1, 5, 2)


def test_noise_and_regularization_layers():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4000, 8)).astype("float32")
    for layer in (k.layers.GaussianNoise(0.3, seed=1), k.layers.GaussianDropout(0.3, seed=1),
                  k.layers.AlphaDropout(0.3, seed=1), k.layers.ActivityRegularization(0.1)):
        np.testing.assert_array_equal(layer(x).numpy(), x)  # inference: identity
        assert type(layer).from_config(layer.get_config()).get_config() == layer.get_config()
    noisy = k.layers.GaussianNoise(0.3, seed=1)(x, training=True).numpy()
    assert abs((noisy - x).std() - 0.3) < 0.01
    scaled = k.layers.GaussianDropout(0.2, seed=1)(np.ones_like(x), training=True).numpy()
    assert abs(scaled.mean() - 1) < 0.01 and abs(scaled.std() - 0.5) < 0.01
    alpha = k.layers.AlphaDropout(0.3, seed=1)(x, training=True).numpy()
    assert abs(alpha.mean()) < 0.03 and abs(alpha.std() - 1) < 0.03  # self-normalizing
    maps = k.layers.SpatialDropout2D(0.5, seed=0)(np.ones((2, 3, 3, 16)), training=True).numpy()
    assert all(len(np.unique(maps[b, :, :, c])) == 1 for b in range(2) for c in range(16))
    seq = k.layers.SpatialDropout1D(0.5, seed=0)(np.ones((2, 5, 16)), training=True).numpy()
    assert all(len(np.unique(seq[b, :, c])) == 1 for b in range(2) for c in range(16))
    reg = k.layers.ActivityRegularization(l1=0.5)
    reg(np.array([[1.0, -2.0]]))
    assert float(reg.losses[0].numpy()) == pytest.approx(1.5)
    with pytest.raises(ValueError, match="rate"):
        k.layers.GaussianDropout(1.5)


def test_new_layers_in_functional_models_and_configs():
    inp = k.Input((6, 4, 3))
    out = k.layers.AdaptiveMaxPooling2D((2, 2))(k.layers.SpatialDropout2D(0.1)(inp))
    assert tuple(out.shape) == (None, 2, 2, 3)
    seq = k.Input((5, 8))
    att = k.layers.GroupQueryAttention(4, 4, 2)(seq, seq)
    model = k.Model([inp, seq], [out, k.layers.RMSNormalization()(att)])
    got = model.predict([np.ones((1, 6, 4, 3)), np.ones((1, 5, 8))], verbose=0)
    assert got[0].shape == (1, 2, 2, 3) and got[1].shape == (1, 5, 8)
    for layer in (k.layers.GroupQueryAttention(4, 4, 2, sliding_window=3),
                  k.layers.RMSNormalization(axis=-1, epsilon=1e-5),
                  k.layers.ReversibleEmbedding(10, 4, tie_weights=False),
                  k.layers.AdaptiveAveragePooling3D(2),
                  k.layers.SpectralNormalization(k.layers.Dense(3), power_iterations=2)):
        again = type(layer).from_config(layer.get_config())
        assert again.get_config() == layer.get_config()
    with pytest.raises(ValueError, match="multiple"):
        k.layers.GroupQueryAttention(4, 3, 2)


def test_stft_initializer_is_a_windowed_dft():
    frame = np.random.default_rng(0).normal(size=8)
    for periodic, scaling in ((False, "density"), (True, "spectrum"), (False, None)):
        real = k.initializers.STFT("real", periodic=periodic, scaling=scaling)((8, 1, 5))
        imag = k.initializers.STFTInitializer("imag", periodic=periodic,
                                              scaling=scaling)((8, 1, 5))
        win = np.hanning(9)[:-1] if periodic else np.hanning(8)
        scale = {"density": np.sqrt((win ** 2).sum()), "spectrum": win.sum(), None: 1}[scaling]
        want = np.fft.rfft(frame * win) / scale
        np.testing.assert_allclose(frame @ real[:, 0, :] + 1j * (frame @ imag[:, 0, :]), want,
                                   rtol=1e-5, atol=1e-6)
    cfg = k.initializers.serialize(k.initializers.get("stft"))
    assert k.initializers.deserialize(cfg).get_config() == k.initializers.STFT().get_config()
    with pytest.raises(ValueError, match="side"):
        k.initializers.STFT(side="both")


def test_schedule_free_adamw_follows_the_paper():
    """Defazio et al. 2024, Algorithm 1 (AdamW form) written out in NumPy."""
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=(3, 2))
    grads = [rng.normal(size=(3, 2)) for _ in range(5)]
    lr, b1, b2, eps, warm = 0.05, 0.9, 0.999, 1e-8, 3
    opt = k.optimizers.ScheduleFreeAdamW(lr, warmup_steps=warm)
    w = k.Variable(w0.copy(), dtype="float64")
    y, z, v = w0.copy(), w0.copy(), np.zeros_like(w0)
    for t, g in enumerate(grads, start=1):
        opt.apply([g], [w])
        step_lr = lr * min(t / warm, 1.0)
        x = (y - (1 - b1) * z) / b1
        v = b2 * v + (1 - b2) * g * g
        z = z - step_lr * g / (np.sqrt(v / (1 - b2 ** t)) + eps)
        x = (1 - 1 / t) * x + z / t
        y = (1 - b1) * z + b1 * x
    np.testing.assert_allclose(w.numpy(), y, rtol=1e-6)  # lr is held in float32


def test_multi_optimizer_routes_variables():
    model = k.Sequential([k.Input((3,)), k.layers.Dense(4, name="enc"),
                          k.layers.Dense(1, name="dec")])
    adam, sgd = k.optimizers.Adam(0.01), k.optimizers.SGD(0.1)
    mapping = k.optimizers.OptimizerMap(sgd, {".*/enc/.*": adam})
    assert mapping["sequential/enc/kernel"] is adam and mapping["sequential/dec/bias"] is sgd
    multi = k.optimizers.MultiOptimizer(mapping)
    model.compile(multi, "mse")
    before = [w.numpy().copy() for w in model.weights]
    model.fit(np.ones((8, 3)), np.ones((8, 1)), epochs=2, batch_size=8, verbose=0)
    assert int(adam.iterations.numpy()) == 2 and int(sgd.iterations.numpy()) == 2
    assert all(not np.allclose(a, w.numpy()) for a, w in zip(before, model.weights))
    again = k.optimizers.deserialize(k.optimizers.serialize(multi))
    assert isinstance(again._optimizer_map["sequential/enc/bias"], k.optimizers.Adam)
    with pytest.raises(ValueError, match="already"):
        mapping[".*/enc/.*"] = sgd


def test_timeseries_and_directory_datasets(tmp_path):
    ds = k.utils.timeseries_dataset_from_array(np.arange(10), np.arange(10) * 10, 3,
                                               batch_size=4)
    assert len(ds) == 2
    x, y = ds[0]
    np.testing.assert_array_equal(x, [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5]])
    np.testing.assert_array_equal(y, [0, 10, 20, 30])
    windows = np.concatenate(list(k.preprocessing.timeseries_dataset_from_array(
        np.arange(20), None, 4, sequence_stride=3, sampling_rate=2, batch_size=2,
        start_index=2, end_index=17)))
    np.testing.assert_array_equal(windows[:2], [[2, 4, 6, 8], [5, 7, 9, 11]])
    assert windows[-1, -1] < 17
    for cls, texts in (("neg", ["bad", "awful"]), ("pos", ["good"])):
        (tmp_path / cls).mkdir()
        for i, t in enumerate(texts):
            (tmp_path / cls / f"{i}.txt").write_text(t)
    ds = k.utils.text_dataset_from_directory(str(tmp_path), batch_size=2, shuffle=False,
                                             label_mode="categorical", verbose=False)
    assert ds.class_names == ["neg", "pos"] and len(ds) == 2
    texts, labels = ds[0]
    assert list(texts) == ["bad", "awful"] and labels.tolist() == [[1, 0], [1, 0]]
    train = k.utils.text_dataset_from_directory(str(tmp_path), validation_split=0.34,
                                                subset="training", seed=1, verbose=False)
    assert sum(len(b[0]) for b in train) == 2
    pil = pytest.importorskip("PIL.Image")
    img_dir = tmp_path / "imgs" / "red"
    img_dir.mkdir(parents=True)
    pil.fromarray(np.full((5, 7, 3), 200, dtype="uint8")).save(img_dir / "a.png")
    images, ids = k.utils.image_dataset_from_directory(str(tmp_path / "imgs"), image_size=(4, 3),
                                                       verbose=False)[0]
    assert images.shape == (1, 4, 3, 3) and ids.tolist() == [0]


def test_conv_lstm_trains_and_round_trips():
    k.utils.set_random_seed(0)  # weights and dropout masks: the loss curve is the same every run
    model = k.Sequential([k.Input((3, 6, 5, 2)),
                          k.layers.ConvLSTM2D(4, 3, padding="same", dropout=0.1,
                                              recurrent_dropout=0.1),
                          k.layers.GlobalAveragePooling2D(), k.layers.Dense(1)])
    model.compile(k.optimizers.Adam(0.01), "mse")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 3, 6, 5, 2))
    y = x.mean(axis=(1, 2, 3, 4))[:, None] * 10  # learnable from the inputs
    losses = model.fit(x, y, epochs=5, verbose=0).history["loss"]
    assert losses[-1] < losses[0]
    layer = k.layers.ConvLSTM1D(2, 3, strides=2, data_format="channels_first",
                                return_sequences=True)
    assert layer(np.ones((1, 4, 2, 9))).shape == (1, 4, 2, 4)
    again = type(layer).from_config(layer.get_config())
    assert again.get_config() == layer.get_config()


def test_keras_file_editor(tmp_path, capsys):
    model = k.Sequential([k.Input((3,)), k.layers.Dense(2), k.layers.Dense(1)])
    path = str(tmp_path / "m.keras")
    model.save(path)
    editor = k.saving.KerasFileEditor(path)
    editor.summary()
    assert "layers/dense_1" in capsys.readouterr().out
    assert editor.compare(model) == {"status": "success", "error_count": 0, "match_count": 3}
    editor.weights_dict["layers/dense"]["0"] = np.zeros((3, 2), "float32")
    editor.save(str(tmp_path / "edited.keras"))
    loaded = k.saving.load_model(str(tmp_path / "edited.keras"))
    assert not loaded.layers[0].kernel.numpy().any()
    np.testing.assert_array_equal(loaded.layers[1].kernel.numpy(), model.layers[1].kernel.numpy())
    editor.rename_object("dense_1", "renamed")
    assert "layers/renamed" in editor.weights_dict
    editor.delete_object("renamed")
    assert editor.compare(model)["error_count"] == 1
    editor.add_object("layers/dense_1", [np.ones((2, 1)), np.ones(1)])
    editor.delete_weight("dense_1", "1")
    editor.add_weights("dense_1", {"1": np.zeros(1)})
    editor.resave_weights(str(tmp_path / "w.weights.h5"))
    model.load_weights(str(tmp_path / "w.weights.h5"))
    np.testing.assert_array_equal(model.layers[1].kernel.numpy(), np.ones((2, 1)))
    with pytest.raises(ValueError, match="already exists"):
        editor.add_object("layers/dense", [])
