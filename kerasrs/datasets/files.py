"""Finding, downloading and verifying dataset files.

`fetch` looks for a file in the system directories given (for example Debian's
``/usr/share/datasets/fashion-mnist``), then in the kerasrs cache
(``$KERASRS_HOME/datasets/<dataset>/``, by default ``~/.kerasrs/datasets/<dataset>/``), and
only then downloads it, trying each URL in turn with a tqdm progress bar. Every file is checked
against its published checksum before use; a download is written to a temporary file in the
cache directory and renamed into place only after it passed, so an interrupted or corrupted
transfer never leaves a bad cache entry. The one function that touches the network is
`_open_url`, which tests replace.
"""

import dataclasses
import gzip
import hashlib
import os
import shutil
import tempfile
import urllib.request
import warnings

from tqdm import tqdm

CHUNK = 1 << 20


@dataclasses.dataclass(frozen=True)
class DatasetFile:
    """One file of a dataset and how to check it.

    Attributes:
        name: the file name (``"train-images-idx3-ubyte.gz"``).
        urls: download URLs, tried in order.
        sha256: accepted SHA-256 digests of the file (for example upstream's and a repackaged
            copy's).
        md5: accepted MD5 digests, where that is what upstream publishes.
        payload_sha256: optional SHA-256 of the decompressed content of a ``.gz`` file, which
            identifies the data whatever the compression (used for system copies).
    """

    name: str
    urls: tuple = ()
    sha256: frozenset = frozenset()
    md5: frozenset = frozenset()
    payload_sha256: str = None
    unchecked: bool = False  # no published checksum (get_file without a hash): any content


def cache_dir(dataset):
    """``$KERASRS_HOME/datasets/<dataset>`` (default ``~/.kerasrs/datasets/<dataset>``)."""
    root = os.environ.get("KERASRS_HOME") or os.path.join(os.path.expanduser("~"), ".kerasrs")
    return os.path.join(root, "datasets", dataset)


def digest(path, algorithm, decompress=False):
    """Hex digest of a file (of its gzip-decompressed content with ``decompress``)."""
    h = hashlib.new(algorithm)
    opener = gzip.open if decompress else open
    with opener(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def matches(path, spec):
    """True if the file at ``path`` has one of ``spec``'s checksums."""
    if spec.unchecked:
        return True
    if spec.sha256 and digest(path, "sha256") in spec.sha256:
        return True
    if spec.md5 and digest(path, "md5") in spec.md5:
        return True
    if spec.payload_sha256:
        try:
            return digest(path, "sha256", decompress=True) == spec.payload_sha256
        except (OSError, EOFError):
            return False
    return False


def _expected(spec):
    sums = [f"sha256 {s}" for s in sorted(spec.sha256)] + [f"md5 {s}" for s in sorted(spec.md5)]
    if spec.payload_sha256:
        sums.append(f"sha256 of the decompressed data {spec.payload_sha256}")
    return " or ".join(sums)


def verify(path, spec):
    """Raise ``ValueError`` naming the file and both checksums unless ``path`` matches ``spec``."""
    if not matches(path, spec):
        raise ValueError(f"{path}: checksum mismatch for {spec.name}; expected {_expected(spec)}."
                         f" Received: sha256 {digest(path, 'sha256')}. Delete the file to "
                         "download it again.")


def _open_url(url, timeout=60):
    """Open ``url`` for reading (the only network access in kerasrs.datasets)."""
    return urllib.request.urlopen(url, timeout=timeout)  # noqa: S310 (fixed https/http URLs)


def download(url, dest, spec):
    """Download ``url`` to ``dest`` atomically (temp file + rename), checking ``spec`` first.

    Raises:
        OSError: for network or file errors (``urllib.error.URLError`` is one).
        ValueError: if the downloaded bytes fail the checksum (nothing is left behind).
    """
    directory = os.path.dirname(dest)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{spec.name}.", suffix=".part", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out, _open_url(url) as response:
            total = int(response.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, desc=spec.name) as bar:
                for chunk in iter(lambda: response.read(CHUNK), b""):
                    out.write(chunk)
                    bar.update(len(chunk))
        if not matches(tmp, spec):
            raise ValueError(f"checksum mismatch for {spec.name} downloaded from {url}; "
                             f"expected {_expected(spec)}. Received: sha256 "
                             f"{digest(tmp, 'sha256')}")
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return dest


def fetch(spec, dataset, system_dirs=(), install_hint=""):
    """The path of a verified local copy of ``spec``, downloading it if there is none.

    Args:
        spec: the `DatasetFile`.
        dataset: the cache sub-directory name (``"fashion-mnist"``).
        system_dirs: directories searched before the cache (read-only copies).
        install_hint: a sentence for the error message saying how to get the data offline.

    Returns:
        str, the path of the file.

    Raises:
        ValueError: if the file in the cache fails its checksum.
        FileNotFoundError: if no local copy exists and every download failed (network error or
            checksum mismatch); the message lists the directories searched, the URLs tried with
            their errors, and ``install_hint``.
    """
    looked = []
    for directory in system_dirs:
        path = os.path.join(directory, spec.name)
        looked.append(path)
        if os.path.isfile(path):
            if matches(path, spec):
                return path
            warnings.warn(f"{path}: checksum mismatch for {spec.name} ({_expected(spec)} "
                          "expected); ignoring this copy.", stacklevel=3)
    cached = os.path.join(cache_dir(dataset), spec.name)
    looked.append(cached)
    if os.path.isfile(cached):
        verify(cached, spec)
        return cached
    errors = []
    for url in spec.urls:
        try:
            return download(url, cached, spec)
        except (OSError, ValueError) as e:  # network error or corrupt transfer: next URL
            errors.append(f"{url} ({e})")
    tried = "; ".join(errors) if errors else "no URL known"
    raise FileNotFoundError(
        f"{dataset}: {spec.name} was not found and could not be downloaded. Looked in: "
        f"{', '.join(looked)}. Tried: {tried}. {install_hint} Or download {spec.name} by hand "
        f"(from {spec.urls[0] if spec.urls else 'the dataset site'}) into {cache_dir(dataset)}/.")


def get_file(fname=None, origin=None, untar=False, md5_hash=None, file_hash=None,
             cache_subdir="datasets", hash_algorithm="auto", extract=False, archive_format="auto",
             cache_dir=None, force_download=False):
    """Download ``origin`` into the cache (unless a copy with the right hash is there) and return
    its path (Keras's ``keras.utils.get_file``). The download is atomic and checked.

    Args:
        fname: file name in the cache (default: the last part of ``origin``).
        origin: URL (``file://`` works too).
        file_hash / md5_hash: expected sha256 or md5 hex digest (the length tells which).
        cache_subdir: sub-directory of ``cache_dir`` (default ``~/.kerasrs``).
        extract / untar: also unpack the archive next to it; the extracted directory is
            returned.
        force_download: download even when a copy exists.

    Raises:
        ValueError: without ``origin``, or when the file fails its hash.
        OSError: for network errors.
    """
    if origin is None:
        raise ValueError("get_file: `origin` (a URL) is required.")
    fname = fname or origin.rstrip("/").rsplit("/", 1)[-1]
    root = cache_dir or os.environ.get("KERASRS_HOME") or os.path.join(
        os.path.expanduser("~"), ".kerasrs")
    directory = os.path.join(root, cache_subdir)
    expected = file_hash or md5_hash
    kind = "md5" if (hash_algorithm == "md5" or (hash_algorithm == "auto" and expected
                                                and len(expected) == 32)) else "sha256"
    spec = DatasetFile(fname, (origin,), sha256=frozenset({expected} if expected and
                                                          kind == "sha256" else ()),
                       md5=frozenset({expected} if expected and kind == "md5" else ()))
    path = os.path.join(directory, fname)
    if force_download or not os.path.isfile(path) or (expected and not matches(path, spec)):
        if expected:
            download(origin, path, spec)
        else:
            download(origin, path, DatasetFile(fname, unchecked=True))
    if extract or untar:
        target = os.path.join(directory, fname.split(".")[0] + "_extracted") if extract else \
            os.path.join(directory, fname.split(".")[0])
        if not os.path.isdir(target):
            fmt = None if archive_format == "auto" else archive_format
            shutil.unpack_archive(path, target, fmt)
        return target
    return path

