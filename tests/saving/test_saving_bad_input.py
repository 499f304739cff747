"""Bad input gives a clear error and damages nothing; an interrupted save keeps the old file."""

import io
import json
import os
import zipfile

import h5py
import numpy as np
import pytest

import kerasrs
from kerasrs import layers
from kerasrs.saving import legacy_h5, weights_h5


def _model(units=(3, 2), seed=0):
    kerasrs.utils.clear_session()
    kerasrs.utils.set_random_seed(seed)
    stack = [layers.Input((4,))] + [layers.Dense(u, name=f"d{i + 1}") for i, u in
                                     enumerate(units)]
    return kerasrs.Sequential(stack)


def _values(model):
    return [w.numpy().copy() for w in model.weights]


def _unchanged(model, before):
    return all(np.array_equal(w.numpy(), b) for w, b in zip(model.weights, before))


ALL_EXTS = [".keras", ".h5", ".weights.h5"]


def _save(model, path):
    if str(path).endswith(".weights.h5"):
        model.save_weights(path)
    else:
        model.save(path)


# -- missing layers and wrong shapes -------------------------------------------------------------
@pytest.mark.parametrize("ext", ALL_EXTS)
def test_file_missing_a_layer_raises_and_loads_nothing(ext, tmp_path):
    _save(_model(), tmp_path / f"a{ext}")
    bigger = _model((3, 2, 2), seed=1)
    before = _values(bigger)
    match = "layer count mismatch.*3 layers" if ext == ".h5" else r"'d3'.*expects 2 weights.*0"
    with pytest.raises(ValueError, match=match):
        bigger.load_weights(tmp_path / f"a{ext}")
    assert _unchanged(bigger, before)


def test_keras_archive_whose_weights_lack_a_layer_fails_to_load(tmp_path):
    model = _model()
    model.save(tmp_path / "a.keras")
    with zipfile.ZipFile(tmp_path / "a.keras") as z:
        entries = {name: z.read(name) for name in z.namelist()}
    buffer = io.BytesIO(entries["model.weights.h5"])
    with h5py.File(buffer, "a") as f:
        del f["layers/dense_1"]
    entries["model.weights.h5"] = buffer.getvalue()
    with zipfile.ZipFile(tmp_path / "b.keras", "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
    with pytest.raises(ValueError, match=r"'d2'.*layers/dense_1/vars.*expects 2 weights"):
        kerasrs.models.load_model(tmp_path / "b.keras")


@pytest.mark.parametrize("ext", ALL_EXTS)
def test_wrong_shape_names_layer_weight_and_both_shapes(ext, tmp_path):
    _save(_model(), tmp_path / f"a{ext}")
    other = _model((3, 5), seed=1)
    before = _values(other)
    with pytest.raises(ValueError) as info:
        other.load_weights(tmp_path / f"a{ext}")
    message = str(info.value)
    assert "'d2'" in message and "d2/kernel" in message
    assert "(3, 5)" in message and "(3, 2)" in message
    assert "Nothing was loaded" in message
    assert _unchanged(other, before)


@pytest.mark.parametrize("ext", ALL_EXTS)
def test_skip_mismatch_loads_the_rest_and_warns(ext, tmp_path):
    source = _model()
    _save(source, tmp_path / f"a{ext}")
    other = _model((3, 5), seed=1)
    d2_before = [w.numpy().copy() for w in other.layers[1].weights]
    with pytest.warns(UserWarning, match=r"d2.*\(3, 5\).*\(3, 2\)"):
        other.load_weights(tmp_path / f"a{ext}", skip_mismatch=True)
    for a, b in zip(source.layers[0].weights, other.layers[0].weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    for w, b in zip(other.layers[1].weights, d2_before):
        np.testing.assert_array_equal(w.numpy(), b)


# -- files that are not what they claim ------------------------------------------------------------
@pytest.mark.parametrize("ext", ALL_EXTS)
def test_truncated_file_gives_a_clear_error(ext, tmp_path):
    path = tmp_path / f"t{ext}"
    _save(_model(), path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    model = _model()
    before = _values(model)
    with pytest.raises(ValueError, match="truncated or corrupt"):
        if ext == ".weights.h5":
            model.load_weights(path)
        else:
            kerasrs.models.load_model(path)
    assert _unchanged(model, before)


def test_corrupt_hdf5_header_gives_a_clear_error(tmp_path):
    path = tmp_path / "c.h5"
    _model().save(path)
    data = bytearray(path.read_bytes())
    data[8:200] = bytes(192)  # keep the signature, wipe the superblock and root header
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="corrupt"):
        kerasrs.models.load_model(path)


def test_corrupt_zip_entry_is_detected_by_its_checksum(tmp_path):
    path = tmp_path / "c.keras"
    _model().save(path)
    data = bytearray(path.read_bytes())
    start = data.find(b"\x89HDF") + 4000  # inside model.weights.h5, in the weight data
    data[start:start + 16] = bytes(b ^ 0xFF for b in data[start:start + 16])
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="corrupt"):
        kerasrs.models.load_model(path)


@pytest.mark.parametrize("name", ["text.h5", "text.keras", "text.weights.h5", "empty.h5"])
def test_a_file_that_is_not_hdf5_or_zip_is_refused(name, tmp_path):
    path = tmp_path / name
    path.write_bytes(b"" if name.startswith("empty") else b"just some text, not a model\n")
    with pytest.raises(ValueError, match="not a Keras model or weights file"):
        kerasrs.models.load_model(path)
    with pytest.raises(ValueError, match="not a Keras model or weights file"):
        _model().load_weights(path)


def test_weights_only_file_given_to_load_model_says_so(tmp_path):
    _model().save_weights(tmp_path / "w.weights.h5")
    with pytest.raises(ValueError, match="No model config|no model config.*weights-only"):
        kerasrs.models.load_model(tmp_path / "w.weights.h5")


def test_h5_with_config_but_no_weights_group(tmp_path):
    path = tmp_path / "n.h5"
    _model().save(path)
    with h5py.File(path, "a") as f:
        del f["model_weights"]
    with pytest.raises(ValueError, match="no 'model_weights' group"):
        kerasrs.models.load_model(path)


def test_unknown_class_in_a_legacy_file_names_it_and_says_how_to_register(tmp_path):
    path = tmp_path / "u.h5"
    _model().save(path)
    with h5py.File(path, "a") as f:
        config = json.loads(f.attrs["model_config"])
        config["config"]["layers"][1]["class_name"] = "MyFancyBlock"
        f.attrs["model_config"] = json.dumps(config).encode()
    with pytest.raises(ValueError, match=r"'MyFancyBlock'.*'d1'.*register_keras_serializable"
                                         r".*custom_objects"):
        kerasrs.models.load_model(path)


def test_by_name_with_a_keras3_file_is_refused(tmp_path):
    _model().save_weights(tmp_path / "w.weights.h5")
    with pytest.raises(ValueError, match="by_name"):
        _model().load_weights(tmp_path / "w.weights.h5", by_name=True)


# -- paths -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("ext", ALL_EXTS)
def test_saving_into_a_missing_folder_names_the_folder(ext, tmp_path):
    target = tmp_path / "no" / "such" / f"m{ext}"
    with pytest.raises(FileNotFoundError, match="does not exist"):
        _save(_model(), target)
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("ext", ALL_EXTS)
def test_saving_under_a_file_says_it_is_a_file(ext, tmp_path):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(NotADirectoryError, match="afile' is a file, not a folder"):
        _save(_model(), tmp_path / "afile" / "sub" / f"m{ext}")
    assert (tmp_path / "afile").read_text() == "x"


def test_loading_from_a_missing_folder_or_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        kerasrs.models.load_model(tmp_path / "nowhere" / "m.keras")
    with pytest.raises(FileNotFoundError, match="no file"):
        _model().load_weights(tmp_path / "m.weights.h5")


def test_bad_extensions_and_overwrite_false(tmp_path):
    model = _model()
    with pytest.raises(ValueError, match="extension"):
        model.save(tmp_path / "m.bin")
    with pytest.raises(ValueError, match=r"\.weights\.h5"):
        model.save_weights(tmp_path / "m.h5")
    model.save(tmp_path / "m.keras")
    with pytest.raises(FileExistsError, match="overwrite"):
        model.save(tmp_path / "m.keras", overwrite=False)
    (tmp_path / "folder.keras").mkdir()
    with pytest.raises(IsADirectoryError):
        model.save(tmp_path / "folder.keras")


def test_unbuilt_model_cannot_be_saved(tmp_path):
    model = kerasrs.Sequential([layers.Dense(2)])
    with pytest.raises(ValueError, match="not been built"):
        model.save_weights(tmp_path / "m.weights.h5")


# -- interrupted saves ---------------------------------------------------------------------------
def _crash_after(monkeypatch, module, name, calls=1, exc=OSError(28, "No space left on device")):
    real = getattr(module, name)
    count = [0]

    def failing(*args, **kwargs):
        count[0] += 1
        if count[0] > calls:
            raise exc
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, failing)


@pytest.mark.parametrize("ext, module, name", [
    (".h5", legacy_h5, "_write_weights"),
    (".keras", weights_h5, "own_variables"),
    (".weights.h5", weights_h5, "own_variables"),
])
def test_a_save_that_fails_midway_leaves_the_previous_file_intact(ext, module, name, tmp_path,
                                                                  monkeypatch):
    path = tmp_path / f"ckpt{ext}"
    _save(_model(), path)
    good = path.read_bytes()
    changed = _model(seed=5)
    _crash_after(monkeypatch, module, name, calls=2)
    with pytest.raises(OSError, match="No space left"):
        _save(changed, path)
    assert path.read_bytes() == good
    assert sorted(os.listdir(tmp_path)) == [f"ckpt{ext}"]  # the temporary file is gone
    monkeypatch.undo()
    loaded = _model(seed=7)
    loaded.load_weights(path)


def test_an_interrupt_during_save_also_cleans_up(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.keras"
    _model().save(path)
    good = path.read_bytes()
    _crash_after(monkeypatch, weights_h5, "own_variables", calls=1, exc=KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        _model(seed=3).save(path)
    assert path.read_bytes() == good
    assert os.listdir(tmp_path) == ["ckpt.keras"]


def test_saved_file_gets_normal_permissions(tmp_path):
    path = tmp_path / "p.keras"
    _model().save(path)
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask


def test_loading_weights_into_an_unbuilt_model_says_build_first(tmp_path):
    _model().save_weights(tmp_path / "w.weights.h5")
    kerasrs.utils.clear_session()
    unbuilt = kerasrs.Sequential([layers.Dense(3, name="d1"), layers.Dense(2, name="d2")])
    with pytest.raises(ValueError, match="not been built"):
        unbuilt.load_weights(tmp_path / "w.weights.h5")
