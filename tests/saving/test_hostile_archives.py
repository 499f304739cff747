"""Hostile and damaged files (issue 23, files): a `.keras` archive is bounded before it is read,
runs no code and writes nothing; a save that runs out of room names the target, keeps the old
file."""

import base64
import errno
import json
import marshal
import os
import tracemalloc
import zipfile

import numpy as np
import pytest

import kerasrs
from kerasrs.saving import keras_zip, legacy_h5, weights_h5


def _model():
    kerasrs.utils.clear_session()
    kerasrs.utils.set_random_seed(0)
    return kerasrs.Sequential([kerasrs.Input((3,)), kerasrs.layers.Dense(2, name="d")])


def _entries(path):
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _write(path, entries, compression=zipfile.ZIP_STORED):
    """The archive of ``entries``, compressed with ``compression`` but for stored weights."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data, compression if name != keras_zip.WEIGHTS_NAME else
                             zipfile.ZIP_STORED)
    return path


def _opened_members(monkeypatch):
    """Record the name of every member the zip reader opens."""
    opened, real_open = [], zipfile.ZipFile.open

    def spy(self, name, *args, **kwargs):
        opened.append(getattr(name, "filename", name))
        return real_open(self, name, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", spy)
    return opened


def test_files_keras_member_inflating_beyond_the_bound_is_refused_unread(tmp_path, monkeypatch):
    _model().save(tmp_path / "good.keras")
    entries = _entries(tmp_path / "good.keras")
    inflated = 65 * 2**20 + len(entries["config.json"])
    # a 65 MiB config.json of blanks: valid JSON, ~65 KiB deflated (the default bound is 64 MiB)
    entries["config.json"] = entries["config.json"] + b" " * (65 * 2**20)
    bomb = _write(tmp_path / "bomb.keras", entries, zipfile.ZIP_DEFLATED)
    del entries
    assert os.path.getsize(bomb) < 2**20
    opened = _opened_members(monkeypatch)
    with pytest.raises(ValueError) as info:
        kerasrs.models.load_model(bomb)
    message = str(info.value)
    assert "'config.json'" in message and str(keras_zip.MAX_MEMBER_BYTES) in message
    assert str(inflated) in message
    assert "MAX_MEMBER_BYTES" in message and str(bomb) in message
    with pytest.raises(ValueError, match="'config.json'.*inflates"):
        kerasrs.saving.KerasFileEditor(bomb)
    assert opened == []  # refused from the directory alone: no member was opened


def test_files_the_bound_is_a_module_constant_and_any_member_counts(tmp_path, monkeypatch):
    _model().save(tmp_path / "good.keras")
    entries = _entries(tmp_path / "good.keras")
    entries["notes.txt"] = b"x" * 5000
    path = _write(tmp_path / "extra.keras", entries, zipfile.ZIP_DEFLATED)
    monkeypatch.setattr(keras_zip, "MAX_MEMBER_BYTES", 4096)
    with pytest.raises(ValueError, match=r"'notes.txt'.*inflates to 5000 bytes from \d+ "
                                         r"compressed bytes.*bound of 4096"):
        _model().load_weights(path)
    # a stored weights member is as big as the file itself, so a large model is not refused
    stored = _entries(tmp_path / "good.keras")
    stored["model.weights.h5"] += b"\0" * 5000  # trailing bytes after the HDF5 data
    monkeypatch.setattr(keras_zip, "MAX_MEMBER_BYTES", 4096)
    loaded = kerasrs.models.load_model(_write(tmp_path / "big.keras", stored))
    assert loaded.get_layer("d").kernel.shape == (3, 2)


def _crafted(tmp_path, layer_patch, name="crafted.keras", extra=None):
    _model().save(tmp_path / "good.keras")
    entries = _entries(tmp_path / "good.keras")
    config = json.loads(entries["config.json"])
    layer_patch(config["config"]["layers"])
    entries["config.json"] = json.dumps(config).encode()
    entries.update(extra or {})
    return _write(tmp_path / name, entries)


def test_files_a_crafted_keras_never_runs_code_writes_outside_or_reads_past_the_bound(
        tmp_path, monkeypatch):
    target = tmp_path / "target"
    target.mkdir()
    sentinel = tmp_path / "ran.txt"
    code = compile(f"open({str(sentinel)!r}, 'w').write('pwned')", "<payload>", "exec")
    payload = base64.b64encode(marshal.dumps(code)).decode()

    def add_lambda(layers):
        layers.append({"module": "keras.layers", "class_name": "Lambda", "config": {
            "name": "evil", "function": {"class_name": "__lambda__", "config": {
                "code": payload, "defaults": None, "closure": None}}}})

    def os_system_activation(layers):
        layers[-1]["config"]["activation"] = {"module": "os", "class_name": "function",
                                              "config": "system", "registered_name": "function"}

    escape = {"../escape.txt": b"out", str(tmp_path / "absolute.txt"): b"abs",
              "sub/../../escape2.txt": b"out"}
    cwd = os.getcwd()
    os.chdir(target)
    try:
        for patch, name in ((add_lambda, "lambda.keras"), (os_system_activation, "os.keras")):
            path = _crafted(target, patch, name, escape)
            with pytest.raises(ValueError, match="safe_mode|not allowed|refus|bytecode"):
                kerasrs.models.load_model(path)
        kerasrs.models.load_model(_crafted(target, lambda layers: None, "paths.keras", escape))
    finally:
        os.chdir(cwd)
    assert not sentinel.exists()
    assert sorted(os.listdir(tmp_path)) == ["target"]  # nothing written outside the target
    assert sorted(os.listdir(target)) == ["good.keras", "lambda.keras", "os.keras",
                                          "paths.keras"]  # nor extracted inside it

    # a member whose directory entry lies (says 100 bytes, inflates to 32 MiB) is read only up
    # to the 100 bytes it claims, so memory stays far below the bound
    entries = _entries(target / "good.keras")
    entries["config.json"] = b" " * (32 * 2**20)
    liar = _write(tmp_path / "liar.keras", entries, zipfile.ZIP_DEFLATED)
    del entries
    raw = bytearray(liar.read_bytes())
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        start = 0
        while (start := raw.find(signature, start)) >= 0:
            name_offset = start + (30 if signature == b"PK\x03\x04" else 46)
            if raw[name_offset:name_offset + 11] == b"config.json":
                raw[start + offset:start + offset + 4] = (100).to_bytes(4, "little")
            start += 4
    liar.write_bytes(bytes(raw))
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="config.json"):
            kerasrs.models.load_model(liar)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20


@pytest.mark.parametrize("ext", [".keras", ".h5", ".weights.h5"])
@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EFBIG])
def test_files_disk_full_or_file_too_large_during_save_names_the_target(ext, code, tmp_path,
                                                                        monkeypatch):
    path = tmp_path / f"ckpt{ext}"
    model = _model()
    save = model.save_weights if ext == ".weights.h5" else model.save
    save(path)
    good = path.read_bytes()

    def no_room(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    # the writes of each format: the zip member write, the HDF5 dataset writes
    monkeypatch.setattr(zipfile.ZipFile, "writestr", no_room)
    monkeypatch.setattr(weights_h5, "write", no_room)
    monkeypatch.setattr(legacy_h5, "write_model", no_room)
    model.get_layer("d").kernel.assign(np.ones((3, 2), "float32"))
    with pytest.raises(OSError) as info:
        save(path)
    assert info.value.errno == code
    assert repr(str(path)) in str(info.value) and os.strerror(code) in str(info.value)
    assert path.read_bytes() == good  # the old file survives
    assert os.listdir(tmp_path) == [path.name]  # and the temporary one is gone
