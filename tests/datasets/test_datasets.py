"""IDX parsing, checksums, atomic downloads and offline errors, all on synthetic files."""

import gzip
import hashlib
import io
import os

import numpy as np
import pytest

from kerasrs.datasets import fashion_mnist, files, idx, mnist


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "float32", "float64"])
def test_idx_round_trip(tmp_path, dtype):
    array = (np.arange(2 * 3 * 4) - 5).reshape(2, 3, 4).astype(dtype)
    path = tmp_path / "a-idx3-ubyte.gz"
    idx.write_idx(path, array)
    got = idx.read_idx(path)
    assert got.dtype == np.dtype(dtype) and got.flags.writeable
    np.testing.assert_array_equal(got, array)


def test_idx_parses_the_mnist_header_layout(tmp_path):
    labels = np.array([3, 1, 4], "uint8")
    raw = bytes([0, 0, 8, 1]) + (3).to_bytes(4, "big") + labels.tobytes()
    (tmp_path / "labels").write_bytes(raw)
    np.testing.assert_array_equal(idx.read_idx(tmp_path / "labels"), labels)


@pytest.mark.parametrize("data, message", [
    (b"\x00\x01\x08\x01", "not an IDX file"),
    (b"\x00\x00\x08\x02\x00\x00", "truncated"),
    (bytes([0, 0, 8, 1]) + (5).to_bytes(4, "big") + b"abc", "should hold 13 bytes"),
])
def test_idx_rejects_bad_files(data, message):
    with pytest.raises(ValueError, match=message):
        idx.parse_idx(data)


def test_read_idx_reports_a_corrupt_gzip(tmp_path):
    (tmp_path / "x.gz").write_bytes(b"not gzip at all")
    with pytest.raises(ValueError, match="not a valid gzip file"):
        idx.read_idx(tmp_path / "x.gz")


def _spec(tmp_path, name, array, urls=("https://example.invalid/" + "data",)):
    """A DatasetFile for a synthetic IDX file written under tmp_path/source."""
    source = tmp_path / "source"
    source.mkdir(exist_ok=True)
    idx.write_idx(source / name, array)
    data = (source / name).read_bytes()
    spec = files.DatasetFile(name, tuple(u + "/" + name for u in urls),
                             sha256=frozenset({hashlib.sha256(data).hexdigest()}))
    return spec, data


def test_fetch_prefers_a_verified_system_copy(tmp_path):
    spec, _ = _spec(tmp_path, "labels-idx1-ubyte.gz", np.arange(5, dtype="uint8"))
    assert files.fetch(spec, "toy", [str(tmp_path / "source")]) == \
        str(tmp_path / "source" / spec.name)


def test_fetch_rejects_a_cached_file_with_a_wrong_checksum(tmp_path):
    spec, data = _spec(tmp_path, "labels-idx1-ubyte.gz", np.arange(5, dtype="uint8"))
    cached = os.path.join(files.cache_dir("toy"), spec.name)
    os.makedirs(os.path.dirname(cached))
    with open(cached, "wb") as f:
        f.write(data[:-1] + bytes([data[-1] ^ 0xFF]))
    with pytest.raises(ValueError, match="checksum mismatch for labels-idx1-ubyte.gz"):
        files.fetch(spec, "toy")


def test_system_copy_with_a_wrong_checksum_is_ignored_with_a_warning(tmp_path):
    spec, _ = _spec(tmp_path, "labels-idx1-ubyte.gz", np.arange(5, dtype="uint8"))
    bad = tmp_path / "system"
    bad.mkdir()
    (bad / spec.name).write_bytes(b"corrupt")
    with pytest.warns(UserWarning, match="ignoring this copy"), \
            pytest.raises(FileNotFoundError):
        files.fetch(spec, "toy", [str(bad)])


class FakeResponse(io.BytesIO):
    def __init__(self, data):
        super().__init__(data)
        self.headers = {"Content-Length": str(len(data))}


def test_download_is_verified_cached_atomically_and_reused(tmp_path, monkeypatch):
    spec, data = _spec(tmp_path, "labels-idx1-ubyte.gz", np.arange(7, dtype="uint8"))
    calls = []
    monkeypatch.setattr(files, "_open_url", lambda url, timeout=60: calls.append(url)
                        or FakeResponse(data))
    path = files.fetch(spec, "toy")
    assert path == os.path.join(files.cache_dir("toy"), spec.name)
    assert os.listdir(files.cache_dir("toy")) == [spec.name]  # no temporary file left
    np.testing.assert_array_equal(idx.read_idx(path), np.arange(7))
    assert files.fetch(spec, "toy") == path and len(calls) == 1  # second call: from the cache


def test_a_corrupted_download_leaves_nothing_behind(tmp_path, monkeypatch):
    spec, data = _spec(tmp_path, "labels-idx1-ubyte.gz", np.arange(7, dtype="uint8"))
    monkeypatch.setattr(files, "_open_url", lambda url, timeout=60: FakeResponse(data[:-3]))
    with pytest.raises(FileNotFoundError, match="checksum mismatch"):
        files.fetch(spec, "toy")
    assert os.listdir(files.cache_dir("toy")) == []


def test_md5_and_payload_checksums_are_accepted(tmp_path):
    path = tmp_path / "x.gz"
    idx.write_idx(path, np.arange(3, dtype="uint8"))
    md5 = hashlib.md5(path.read_bytes()).hexdigest()
    payload = hashlib.sha256(gzip.decompress(path.read_bytes())).hexdigest()
    assert files.matches(path, files.DatasetFile("x.gz", md5=frozenset({md5})))
    assert files.matches(path, files.DatasetFile("x.gz", payload_sha256=payload))
    assert not files.matches(path, files.DatasetFile("x.gz", md5=frozenset({"0" * 32})))


def test_offline_without_a_copy_says_where_it_looked_and_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(fashion_mnist, "SYSTEM_DIRS", [str(tmp_path / "nowhere")])
    with pytest.raises(FileNotFoundError) as info:
        fashion_mnist.load_data()
    message = str(info.value)
    assert str(tmp_path / "nowhere" / "train-images-idx3-ubyte.gz") in message
    assert os.path.join(files.cache_dir("fashion-mnist"), "train-images-idx3-ubyte.gz") in message
    assert "apt-get install dataset-fashion-mnist" in message
    assert "fashion-mnist.s3-website" in message and "network disabled" in message


def test_mnist_offline_error_names_the_npz(monkeypatch, tmp_path):
    monkeypatch.setattr(mnist, "SYSTEM_DIRS", [str(tmp_path / "nowhere")])
    with pytest.raises(FileNotFoundError, match="mnist.npz"):
        mnist.load_data()


def test_load_idx_set_on_a_synthetic_dataset(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {"x_train": rng.integers(0, 256, (6, 28, 28), dtype="uint8"),
              "y_train": rng.integers(0, 10, 6, dtype="uint8"),
              "x_test": rng.integers(0, 256, (2, 28, 28), dtype="uint8"),
              "y_test": rng.integers(0, 10, 2, dtype="uint8")}
    specs = {k: _spec(tmp_path, f"{k}-idx.gz", v)[0] for k, v in arrays.items()}
    (x, y), (xt, yt) = fashion_mnist.load_idx_set(specs, "toy", [str(tmp_path / "source")], "")
    for got, key in ((x, "x_train"), (y, "y_train"), (xt, "x_test"), (yt, "y_test")):
        np.testing.assert_array_equal(got, arrays[key])
    specs["y_test"] = _spec(tmp_path, "y_test-idx.gz", np.zeros(3, "uint8"))[0]
    with pytest.raises(ValueError, match="do not fit together"):
        fashion_mnist.load_idx_set(specs, "toy", [str(tmp_path / "source")], "")


def test_mnist_reads_a_cached_npz(tmp_path, monkeypatch):
    npz = os.path.join(files.cache_dir("mnist"), "mnist.npz")
    os.makedirs(os.path.dirname(npz))
    x = np.zeros((2, 28, 28), "uint8")
    np.savez(npz, x_train=x, y_train=np.array([1, 2], "uint8"), x_test=x[:1],
             y_test=np.array([3], "uint8"))
    with open(npz, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    monkeypatch.setattr(mnist, "SYSTEM_DIRS", [])
    monkeypatch.setattr(mnist, "NPZ", files.DatasetFile("mnist.npz", (),
                                                        sha256=frozenset({digest})))
    (x_train, _), (_, y_test) = mnist.load_data()
    assert x_train.shape == (2, 28, 28) and list(y_test) == [3]


@pytest.mark.slow
def test_real_fashion_mnist_from_the_debian_package():
    if not all(os.path.isfile(os.path.join(fashion_mnist.SYSTEM_DIRS[0], s.name))
               for s in fashion_mnist.FILES.values()):
        pytest.skip("Debian's dataset-fashion-mnist is not installed")
    (x, y), (xt, yt) = fashion_mnist.load_data()
    assert x.shape == (60000, 28, 28) and y.shape == (60000,)
    assert xt.shape == (10000, 28, 28) and yt.shape == (10000,)
    assert x.dtype == y.dtype == np.uint8
    assert list(y[:10]) == [9, 0, 0, 3, 0, 2, 7, 2, 5, 5]
    np.testing.assert_array_equal(np.bincount(y), [6000] * 10)
    np.testing.assert_array_equal(np.bincount(yt), [1000] * 10)
