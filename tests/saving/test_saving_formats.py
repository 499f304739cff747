"""kerasrs's files against the layouts Keras 3.15 writes (tests/fixtures/keras/FORMATS.md),
field by field: group and dataset paths, attribute names, HDF5 string types (vlen, ASCII or
UTF-8), dtypes, shapes, storage, dataset order, zip entries and config JSON keys."""

import json
import pathlib
import zipfile

import h5py
import numpy as np
import pytest

import kerasrs
from kerasrs import layers

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "keras"


# -- h5 description ------------------------------------------------------------------------------
def _attr_type(obj, name):
    """("vlen-ascii" | "vlen-utf8" | "float64" | ..., decoded value)."""
    htype = obj.attrs.get_id(name).get_type()
    value = obj.attrs[name]
    if isinstance(htype, h5py.h5t.TypeStringID):
        kind = ("vlen" if htype.is_variable_str() else "fixed") + \
            ("-utf8" if htype.get_cset() == h5py.h5t.CSET_UTF8 else "-ascii")
    else:
        kind = np.asarray(value).dtype.str
    if isinstance(value, np.ndarray):
        value = [v.decode() if isinstance(v, bytes) else v for v in value.tolist()]
    elif isinstance(value, bytes):
        value = value.decode()
    return kind, value


def _tree(h5file, values=True):
    """path -> description of every group, dataset and attribute (values optional)."""
    out = {"/": {k: _attr_type(h5file, k) if values else _attr_type(h5file, k)[0]
                 for k in h5file.attrs}}

    def visit(name, obj):
        attrs = {k: _attr_type(obj, k) if values else _attr_type(obj, k)[0] for k in obj.attrs}
        if isinstance(obj, h5py.Dataset):
            out[name] = ("dataset", obj.shape, obj.dtype.str, obj.chunks, obj.compression,
                         obj.id.get_create_plist().get_layout(), attrs)
        else:
            out[name] = ("group", attrs)

    h5file.visititems(visit)
    return out


def _build(name):
    kerasrs.utils.clear_session()
    if name == "m1":
        stack = [layers.Input((784,)), layers.Dense(64, activation="relu"), layers.Dropout(0.2),
                 layers.Dense(10, activation="softmax")]
    elif name == "m2":
        stack = [layers.Input((28, 28, 1)), layers.Conv2D(8, 3, activation="relu"),
                 layers.MaxPooling2D(), layers.Conv2D(16, 3, activation="relu"),
                 layers.GlobalAveragePooling2D(), layers.Dense(10)]
    else:
        stack = [layers.Input((12,), dtype="int32"), layers.Embedding(50, 8), layers.LSTM(16),
                 layers.Dense(1, activation="sigmoid")]
    return kerasrs.Sequential(stack)


def _require(name):
    needs = {"m1": ["Dense"], "m2": ["Conv2D", "MaxPooling2D", "GlobalAveragePooling2D"],
             "m4": ["Embedding", "LSTM"]}[name]
    missing = [n for n in needs if not hasattr(layers, n)]
    if missing:
        pytest.skip(f"{name} needs kerasrs.layers.{missing}, which do not exist yet")


def _same_keys(keras_value, ours, path="", allowed_missing=()):
    """Every key Keras writes is there (except the documented optional ones), and no more."""
    if isinstance(keras_value, dict):
        assert isinstance(ours, dict), path
        theirs = set(keras_value) - {"shared_object_id"}
        missing = {k for k in theirs - set(ours) if k not in allowed_missing}
        extra = set(ours) - theirs - {"build_config", "activity_regularizer"}
        assert not missing and not extra, (path, missing, extra)
        for key in theirs & set(ours) - {"build_config"}:  # its form may differ, see below
            _same_keys(keras_value[key], ours[key], f"{path}/{key}", allowed_missing)
    elif isinstance(keras_value, list) and keras_value and isinstance(keras_value[0], dict):
        assert len(keras_value) == len(ours), path
        for i, (a, b) in enumerate(zip(keras_value, ours)):
            _same_keys(a, b, f"{path}[{i}]", allowed_missing)


# Keras 3.15 adds these optional keys; Keras reads configs without them (defaults). A layer
# whose build takes one named shape (LSTM's ``sequences_shape``) writes ``build_config`` as
# ``{"shapes_dict": {...}}`` where Keras collapses it to ``{"input_shape": ...}``; Keras's
# ``build_from_config`` reads both forms, so only the key's presence is compared.
OPTIONAL = ("quantization_config", "input_axes", "output_axes", "activity_regularizer")


# -- legacy .h5 ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["m1", "m2", "m4"])
def test_legacy_h5_matches_keras_layout_field_by_field(name, tmp_path):
    _require(name)
    model = _build(name)
    model.save(tmp_path / "ours.h5")
    with h5py.File(FIXTURES / f"{name}.h5", "r") as f:
        theirs = _tree(f)
        keras_config = json.loads(f.attrs["model_config"])
    with h5py.File(tmp_path / "ours.h5", "r") as f:
        ours = _tree(f)
        our_config = json.loads(f.attrs["model_config"])
    root_theirs, root_ours = theirs.pop("/"), ours.pop("/")
    assert root_ours.pop("kerasrs_version")[0] == "vlen-utf8"  # our one extra, ignored by Keras
    assert set(root_ours) == set(root_theirs) == {"backend", "keras_version", "model_config"}
    assert root_ours["backend"] == ("vlen-utf8", "numpy")
    assert root_ours["keras_version"] == root_theirs["keras_version"] == ("vlen-utf8", "3.15.1")
    assert root_ours["model_config"][0] == root_theirs["model_config"][0] == "vlen-ascii"
    mw_theirs = theirs.pop("model_weights")[1]
    mw_ours = ours.pop("model_weights")[1]
    assert mw_ours["backend"] == ("vlen-ascii", "numpy")
    assert mw_ours["keras_version"] == mw_theirs["keras_version"]
    assert mw_ours["layer_names"] == mw_theirs["layer_names"]
    assert ours == theirs  # every group, dataset, weight_names (type and value), dtype, shape
    for path, entry in ours.items():
        if entry[0] == "dataset":
            assert entry[2] == "<f4" and entry[3] is None and entry[4] is None, path
            assert entry[5] == h5py.h5d.CONTIGUOUS, path
    assert set(our_config) == {"class_name", "config"}
    assert our_config["class_name"] == "Sequential"
    for entry in our_config["config"]["layers"]:
        assert set(entry) == {"class_name", "config"}  # legacy entries: no module/build_config
    _same_keys(keras_config, our_config, allowed_missing=OPTIONAL)


def test_legacy_h5_of_a_compiled_trained_model_has_training_config_and_optimizer(tmp_path):
    kerasrs.utils.clear_session()
    model = kerasrs.Sequential([layers.Input((4,)), layers.Dense(3), layers.Dense(2)])
    model.compile(kerasrs.optimizers.Adam(0.01), "mse", metrics=["mae"])
    model.fit(np.ones((8, 4), "float32"), np.ones((8, 2), "float32"), epochs=1, verbose=0)
    model.save(tmp_path / "c.h5")
    with h5py.File(tmp_path / "c.h5", "r") as f:
        kind, text = _attr_type(f, "training_config")
        assert kind == "vlen-ascii"
        training = json.loads(text)
        assert list(training) == ["loss", "loss_weights", "metrics", "weighted_metrics",
                                  "run_eagerly", "steps_per_execution", "jit_compile",
                                  "optimizer_config"]
        assert training["loss"] == "mse" and training["metrics"] == ["mae"]
        assert training["run_eagerly"] is False and training["jit_compile"] is False
        opt = training["optimizer_config"]
        assert set(opt) == {"class_name", "config"} and opt["class_name"] == "Adam"
        assert opt["config"]["learning_rate"] == 0.009999999776482582  # float32 widened
        group = f["optimizer_weights"]
        kind, names = _attr_type(group, "weight_names")
        assert kind == "vlen-ascii"
        assert names == ["adam/iteration", "adam/learning_rate",
                         "adam/sequential_dense_kernel_momentum",
                         "adam/sequential_dense_kernel_velocity",
                         "adam/sequential_dense_bias_momentum",
                         "adam/sequential_dense_bias_velocity",
                         "adam/sequential_dense_1_kernel_momentum",
                         "adam/sequential_dense_1_kernel_velocity",
                         "adam/sequential_dense_1_bias_momentum",
                         "adam/sequential_dense_1_bias_velocity"]
        assert group["adam/iteration"].shape == () and group["adam/iteration"].dtype == "int32"
        assert group["adam/iteration"][()] == 1
        assert group["adam/learning_rate"].dtype == "float32"
        assert group["adam/sequential_dense_kernel_momentum"].shape == (4, 3)


# -- .weights.h5 ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["m1", "m2", "m4"])
def test_weights_h5_matches_keras_layout_field_by_field(name, tmp_path):
    _require(name)
    model = _build(name)
    model.save_weights(tmp_path / "ours.weights.h5")
    with h5py.File(FIXTURES / f"{name}.weights.h5", "r") as f:
        theirs = _tree(f)
    with h5py.File(tmp_path / "ours.weights.h5", "r") as f:
        ours = _tree(f)
        assert list(f.attrs) == []
    assert ours == theirs  # includes @name values (UTF-8 str) and the datasets 0, 1, 2, ...


def test_weights_h5_of_compiled_model_stores_optimizer_vars_in_keras_order(tmp_path):
    kerasrs.utils.clear_session()
    model = kerasrs.Sequential([layers.Input((4,)), layers.Dense(3), layers.Dense(2)])
    model.compile(kerasrs.optimizers.Adam(0.01), "mse")
    model.fit(np.ones((8, 4), "float32"), np.ones((8, 2), "float32"), epochs=1, verbose=0)
    model.save_weights(tmp_path / "c.weights.h5")
    with h5py.File(tmp_path / "c.weights.h5", "r") as f:
        group = f["optimizer/vars"]
        assert _attr_type(group, "name") == ("vlen-utf8", "adam")
        shapes = [group[str(i)].shape for i in range(len(group))]
        assert shapes == [(), (), (4, 3), (4, 3), (3,), (3,), (3, 2), (3, 2), (2,), (2,)]
        assert group["0"].dtype == "int32" and group["1"].dtype == "float32"
        assert sorted(f.keys()) == ["layers", "optimizer", "vars"]


def test_weights_h5_keys_follow_class_names_not_layer_names(tmp_path):
    kerasrs.utils.clear_session()
    model = kerasrs.Sequential([layers.Input((3,)), layers.Dense(2, name="hidden"),
                                layers.Dense(1, name="out")])
    model.save_weights(tmp_path / "n.weights.h5")
    with h5py.File(tmp_path / "n.weights.h5", "r") as f:
        assert sorted(f["layers"].keys()) == ["dense", "dense_1"]
        assert f["layers/dense/vars"].attrs["name"] == "hidden"
        assert f["layers/dense_1/vars"].attrs["name"] == "out"


# -- .keras --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["m1", "m2", "m4"])
def test_keras_archive_matches_keras_layout_field_by_field(name, tmp_path):
    _require(name)
    model = _build(name)
    model.save(tmp_path / "ours.keras")
    with zipfile.ZipFile(FIXTURES / f"{name}.keras") as z:
        keras_config = json.loads(z.read("config.json"))
        with h5py.File(z.open("model.weights.h5"), "r") as f:
            theirs = _tree(f)
    with zipfile.ZipFile(tmp_path / "ours.keras") as z:
        infos = z.infolist()
        assert [i.filename for i in infos] == ["metadata.json", "config.json", "model.weights.h5"]
        assert all(i.compress_type == zipfile.ZIP_STORED for i in infos)
        metadata = json.loads(z.read("metadata.json"))
        assert metadata["keras_version"] == "3.15.1"
        assert len(metadata["date_saved"]) == 19 and metadata["date_saved"][10] == "@"
        raw = z.read("config.json").decode()
        assert "\n" not in raw
        config = json.loads(raw)
        with h5py.File(z.open("model.weights.h5"), "r") as f:
            ours = _tree(f)
    assert ours == theirs
    assert config["compile_config"] == {} == keras_config["compile_config"]
    assert config["module"] == "keras" and config["class_name"] == "Sequential"
    assert config["registered_name"] is None
    for entry in config["config"]["layers"]:
        assert {"module", "class_name", "config", "registered_name"} <= set(entry)
        assert entry["module"] == "keras.layers"
    _same_keys(keras_config, config, allowed_missing=OPTIONAL)


def test_keras_archive_compile_config_of_compiled_model(tmp_path):
    kerasrs.utils.clear_session()
    model = kerasrs.Sequential([layers.Input((4,)), layers.Dense(2)])
    model.compile(kerasrs.optimizers.SGD(0.05, momentum=0.9), "mse", metrics=["mae"])
    model.save(tmp_path / "c.keras")
    with zipfile.ZipFile(tmp_path / "c.keras") as z:
        config = json.loads(z.read("config.json"))
    compile_config = config["compile_config"]
    assert list(compile_config) == ["optimizer", "loss", "loss_weights", "metrics",
                                    "weighted_metrics", "run_eagerly", "steps_per_execution",
                                    "jit_compile"]
    optimizer = compile_config["optimizer"]
    assert set(optimizer) == {"module", "class_name", "config", "registered_name"}
    assert optimizer["class_name"] == "SGD" and optimizer["config"]["momentum"] == 0.9
    assert compile_config["loss"] == "mse" and compile_config["metrics"] == ["mae"]


def test_functional_config_layout(tmp_path):
    """Two inputs, Concatenate, Dense: FORMATS.md 2.2 (input layers listed and stored)."""
    kerasrs.utils.clear_session()
    a, b = layers.Input((6,)), layers.Input((4,))
    out = layers.Dense(3)(layers.Concatenate()([a, b]))
    model = kerasrs.Model([a, b], out)
    model.save(tmp_path / "f.h5")
    model.save_weights(tmp_path / "f.weights.h5")
    with h5py.File(tmp_path / "f.h5", "r") as f:
        config = json.loads(f.attrs["model_config"])
        assert _attr_type(f["model_weights"], "layer_names") == ("vlen-ascii", [
            "input_layer", "input_layer_1", "concatenate", "dense"])
        assert f["model_weights/input_layer"].attrs["weight_names"].dtype == np.float64
        assert _attr_type(f["model_weights/dense"], "weight_names")[1] == ["dense/kernel",
                                                                           "dense/bias"]
    assert config["class_name"] == "Functional"
    inner = config["config"]
    assert "dtype" not in inner
    assert inner["input_layers"] == [["input_layer", 0, 0], ["input_layer_1", 0, 0]]
    assert inner["output_layers"] == ["dense", 0, 0]  # a single output: one flat triple
    for entry in inner["layers"]:
        assert set(entry) == {"class_name", "config", "name", "inbound_nodes"}
    concat = inner["layers"][2]["inbound_nodes"][0]
    assert [t["config"]["keras_history"] for t in concat["args"][0]] == [
        ["input_layer", 0, 0], ["input_layer_1", 0, 0]]
    with h5py.File(tmp_path / "f.weights.h5", "r") as f:
        assert sorted(f["layers"].keys()) == ["concatenate", "dense", "input_layer",
                                              "input_layer_1"]


def test_long_name_lists_are_split_into_numbered_attributes(tmp_path):
    from kerasrs.saving import legacy_h5

    names = [f"layer_with_a_rather_long_name_{i:05d}" for i in range(3000)]
    with h5py.File(tmp_path / "a.h5", "w") as f:
        legacy_h5.write_string_list(f, "layer_names", names)
        assert "layer_names" not in f.attrs and "layer_names0" in f.attrs
        assert legacy_h5.read_string_list(f, "layer_names") == names
