"""Fashion-MNIST (Xiao, Rasul & Vollgraf 2017): 70,000 28x28 grayscale images of 10 kinds of
clothing, a drop-in replacement for MNIST. Labels: 0 T-shirt/top, 1 Trouser, 2 Pullover,
3 Dress, 4 Coat, 5 Sandal, 6 Shirt, 7 Sneaker, 8 Bag, 9 Ankle boot. MIT license, Zalando SE."""

from kerasrs.datasets import files, idx

SYSTEM_DIRS = ["/usr/share/datasets/fashion-mnist"]  # Debian's dataset-fashion-mnist package
BASE_URLS = ("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
             "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/",
             "https://storage.googleapis.com/tensorflow/tf-keras-datasets/")
INSTALL_HINT = "Install Debian's copy with `apt-get install dataset-fashion-mnist`."


def _file(name, md5, sha256, debian_sha256, payload_sha256):
    """Upstream's MD5 (Zalando's README), SHA-256 of the upstream archive (as Keras checks
    it), SHA-256 of Debian's recompressed archive, and SHA-256 of the decompressed data."""
    return files.DatasetFile(name, tuple(url + name for url in BASE_URLS),
                             frozenset({sha256, debian_sha256}), frozenset({md5}),
                             payload_sha256)


FILES = {
    "x_train": _file("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
                     "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
                     "b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7",
                     "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888"),
    "y_train": _file("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe",
                     "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
                     "0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056",
                     "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9"),
    "x_test": _file("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79",
                    "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
                    "cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa",
                    "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b"),
    "y_test": _file("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310",
                    "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
                    "8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05",
                    "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34"),
}


def load_idx_set(file_specs, dataset, system_dirs, install_hint):
    """``((x_train, y_train), (x_test, y_test))`` from four verified IDX files."""
    arrays = {key: idx.read_idx(files.fetch(spec, dataset, system_dirs, install_hint))
              for key, spec in file_specs.items()}
    for split in ("train", "test"):
        x, y = arrays[f"x_{split}"], arrays[f"y_{split}"]
        if x.ndim != 3 or y.shape != x.shape[:1]:
            raise ValueError(f"{dataset}: the {split} images and labels do not fit together. "
                             f"Received: images {x.shape}, labels {y.shape}")
    return (arrays["x_train"], arrays["y_train"]), (arrays["x_test"], arrays["y_test"])


def load_data():
    """Load Fashion-MNIST as NumPy arrays, from a local copy when there is one.

    Looks in ``SYSTEM_DIRS`` (Debian's ``/usr/share/datasets/fashion-mnist``), then in
    ``~/.kerasrs/datasets/fashion-mnist/`` (or ``$KERASRS_HOME/datasets/...``), then downloads
    the four gzipped IDX files from Zalando's servers (with mirrors) into that cache. Each file
    is checked against its published checksum.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: uint8 arrays of shapes ``(60000, 28, 28)``,
        ``(60000,)``, ``(10000, 28, 28)``, ``(10000,)``; pixels 0-255, labels 0-9.

    Raises:
        FileNotFoundError: offline with no local copy; the message lists where it looked and
            how to install the data.
        ValueError: if a cached or downloaded file fails its checksum.
    """
    return load_idx_set(FILES, "fashion-mnist", SYSTEM_DIRS, INSTALL_HINT)
