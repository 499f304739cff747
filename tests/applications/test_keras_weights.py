"""Weights: a file saved by real Keras loads into the kerasrs application and gives Keras's
predictions; ``weights="imagenet"`` downloads once, checks the published hash, caches, and says
offline which file to put where; transfer learning on the headless models trains.

The Keras side runs in a subprocess (keras_weights_check.py): /work/refvenv/bin/python when it
exists and imports Keras, else the current interpreter if it has Keras (any backend), else the
test is skipped. No weights are stored in the repository.
"""

import hashlib
import io
import os
import pathlib
import subprocess
import sys
import urllib.error

import numpy as np
import pytest

import kerasrs
from kerasrs import applications, layers
from kerasrs.applications import imagenet_utils, mobilenet_v3
from kerasrs.datasets import files

HERE = pathlib.Path(__file__).resolve().parent
REFERENCE_PYTHON = pathlib.Path("/work/refvenv/bin/python")
PARITY = ("ResNet50", "MobileNetV2", "EfficientNetB0")
SHAPE = (64, 64, 3)  # the input keras_weights_check.py uses


def _python_with_keras():
    env = {**os.environ, "KERAS_BACKEND": os.environ.get("KERAS_BACKEND", "torch")}
    if REFERENCE_PYTHON.exists():
        probe = subprocess.run([str(REFERENCE_PYTHON), "-c", "import keras"], env=env,
                               capture_output=True, timeout=300)
        if probe.returncode == 0:
            return str(REFERENCE_PYTHON), env
    pytest.importorskip("keras")
    env["KERAS_BACKEND"] = os.environ.get("KERAS_BACKEND", "jax")
    return sys.executable, env


@pytest.fixture(scope="module")
def keras_files(tmp_path_factory):
    python, env = _python_with_keras()
    out = tmp_path_factory.mktemp("keras_weights")
    result = subprocess.run([python, str(HERE / "keras_weights_check.py"), str(out), *PARITY],
                            env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out


@pytest.mark.parametrize("app", PARITY)
def test_weights_saved_by_keras_give_keras_predictions(keras_files, app):
    data = np.load(keras_files / f"{app}.npz")
    kerasrs.utils.clear_session()
    # weights=<path> of a file in the layout of Keras's published ImageNet files, read in layer
    # order; then the same file by layer name; then the Keras 3 weights file. Each load
    # replaces every weight.
    model = getattr(applications, app)(weights=str(keras_files / f"{app}.h5"),
                                       classifier_activation=None, input_shape=SHAPE)
    differences = {"weights=<.h5 path>": model.predict(data["x"], verbose=0)}
    model.load_weights(str(keras_files / f"{app}.h5"), by_name=True)
    differences[".h5 by_name"] = model.predict(data["x"], verbose=0)
    if (keras_files / f"{app}.weights.h5").exists():
        model.load_weights(str(keras_files / f"{app}.weights.h5"))
        differences[".weights.h5"] = model.predict(data["x"], verbose=0)
    differences = {k: float(np.abs(v - data["y"]).max()) for k, v in differences.items()}
    print(f"\n{app}: max |kerasrs - Keras| of the logits {differences} "
          f"(logits up to {np.abs(data['y']).max():.3g})")
    assert max(differences.values()) < 1e-4, differences


def test_the_comparison_sees_one_wrong_statistic(keras_files):
    """The parity check bites: one moving variance off by 10 % moves the logits past 1e-4."""
    kerasrs.utils.clear_session()
    model = applications.MobileNetV2(weights=str(keras_files / "MobileNetV2.h5"),
                                     classifier_activation=None, input_shape=SHAPE)
    data = np.load(keras_files / "MobileNetV2.npz")
    variance = model.get_layer("block_16_project_BN").moving_variance
    variance.assign(variance.numpy() * 1.1)
    assert np.abs(model.predict(data["x"], verbose=0) - data["y"]).max() > 1e-4


# -- weights="imagenet": download, hash, cache, offline message ------------------------------
@pytest.fixture
def home(tmp_path, monkeypatch):
    import tqdm

    monkeypatch.setenv("KERASRS_HOME", str(tmp_path / "kerasrs"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    # the download's progress bar would start tqdm's monitor thread, which outlives the test
    # (and later tests count the process's threads)
    monkeypatch.setattr(tqdm.tqdm, "monitor_interval", 0)
    return tmp_path


def _serve(monkeypatch, payload):
    urls = []

    class Response(io.BytesIO):
        headers = {"Content-Length": str(len(payload))}

    def fake_open(url, timeout=60):
        urls.append(url)
        return Response(payload)

    monkeypatch.setattr(files, "_open_url", fake_open)
    return urls


def _offline(monkeypatch):
    def no_network(url, timeout=60):
        raise urllib.error.URLError("network unreachable (test)")

    monkeypatch.setattr(files, "_open_url", no_network)


def _small_v3_weights(tmp_path):
    """MobileNetV3Small's headless weights written by kerasrs in the legacy .h5 layout."""
    kerasrs.utils.clear_session()
    model = applications.MobileNetV3Small(weights=None, include_top=False,
                                          input_shape=(32, 32, 3))
    for w in model.weights:  # recognisable values
        w.assign(np.full(w.shape, 0.5, "float32"))
    path = tmp_path / "source.h5"
    model.save(str(path))
    return path.read_bytes()


def test_imagenet_weights_download_once_checked_and_cached(home, monkeypatch):
    payload = _small_v3_weights(home)
    key = "small_224_1.0_float"
    monkeypatch.setitem(mobilenet_v3._HASHES, key,
                        ("0" * 32, hashlib.md5(payload).hexdigest()))
    urls = _serve(monkeypatch, payload)
    model = applications.MobileNetV3Small(weights="imagenet", include_top=False,
                                          input_shape=(32, 32, 3))
    name = "weights_mobilenet_v3_small_224_1.0_float_no_top_v2.h5"
    assert urls == [mobilenet_v3._BASE + name]
    assert (home / "kerasrs" / "models" / name).is_file()
    assert all(np.all(w.numpy() == 0.5) for w in model.weights)
    _offline(monkeypatch)  # the second time comes from the cache
    applications.MobileNetV3Small(weights="imagenet", include_top=False,
                                  input_shape=(32, 32, 3))


def test_imagenet_weights_with_the_wrong_hash_are_refused(home, monkeypatch):
    payload = _small_v3_weights(home)
    _serve(monkeypatch, payload)  # the real published hash does not match these bytes
    with pytest.raises(ValueError, match="checksum mismatch"):
        applications.MobileNetV3Small(weights="imagenet", include_top=False,
                                      input_shape=(32, 32, 3))
    assert not list((home / "kerasrs" / "models").glob("*.h5"))


def test_offline_error_names_the_file_and_where_to_put_it(home, monkeypatch):
    _offline(monkeypatch)
    with pytest.raises(FileNotFoundError) as info:
        applications.MobileNetV3Small(weights="imagenet", include_top=False,
                                      input_shape=(32, 32, 3))
    message = str(info.value)
    name = "weights_mobilenet_v3_small_224_1.0_float_no_top_v2.h5"
    assert name in message and mobilenet_v3._BASE + name in message
    assert str(home / "kerasrs" / "models" / name) in message


def test_a_copy_keras_downloaded_is_used(home, monkeypatch):
    payload = _small_v3_weights(home)
    key = "small_224_1.0_float"
    monkeypatch.setitem(mobilenet_v3._HASHES, key, ("0" * 32, hashlib.md5(payload).hexdigest()))
    keras_dir = home / "home" / ".keras" / "models"
    keras_dir.mkdir(parents=True)
    (keras_dir / "weights_mobilenet_v3_small_224_1.0_float_no_top_v2.h5").write_bytes(payload)
    _offline(monkeypatch)
    model = applications.MobileNetV3Small(weights="imagenet", include_top=False,
                                          input_shape=(32, 32, 3))
    assert all(np.all(w.numpy() == 0.5) for w in model.weights)


def test_bad_weights_and_classes_arguments():
    with pytest.raises(ValueError, match="weights"):
        applications.MobileNetV2(weights="no/such/file.h5")
    with pytest.raises(ValueError, match="classes"):
        applications.ResNet50(weights="imagenet", classes=10)
    with pytest.raises(ValueError, match="at least 32x32"):
        applications.ResNet50(weights=None, include_top=False, input_shape=(16, 16, 3))
    with pytest.raises(ValueError, match="static"):
        applications.Xception(weights=None, input_shape=(None, None, 3))


def test_decode_predictions(monkeypatch):
    index = {str(i): [f"n{i:08d}", f"class_{i}"] for i in range(1000)}
    monkeypatch.setattr(imagenet_utils, "_CLASS_INDEX", index)
    preds = np.zeros((2, 1000), "float32")
    preds[0, [3, 7, 5]] = [0.5, 0.3, 0.2]
    preds[1, 999] = 1.0
    top = applications.resnet50.decode_predictions(preds, top=3)
    assert [t[:2] for t in top[0]] == [("n00000003", "class_3"), ("n00000007", "class_7"),
                                       ("n00000005", "class_5")]
    assert top[0][0][2] == pytest.approx(0.5) and top[1][0][1] == "class_999"
    with pytest.raises(ValueError, match=r"\(samples, 1000\)"):
        applications.vgg16.decode_predictions(np.zeros((2, 10)))


def test_decode_predictions_offline_says_where_the_class_index_goes(home, monkeypatch):
    _offline(monkeypatch)
    monkeypatch.setattr(imagenet_utils, "_CLASS_INDEX", {})
    with pytest.raises(FileNotFoundError, match="imagenet_class_index.json"):
        applications.densenet.decode_predictions(np.zeros((1, 1000)))


# -- transfer learning ------------------------------------------------------------------------
def test_headless_backbone_fine_tunes_on_a_few_images():
    """include_top=False + pooling="avg" under a new classifier: eight full-batch steps on 24
    images of three colours fit them (training loss and accuracy; from random weights the
    BatchNormalization moving statistics, momentum 0.999, would need far more steps before
    inference mode agrees, which is why real fine-tuning starts from ImageNet weights), and the
    backbone's own weights move."""
    kerasrs.utils.set_random_seed(1)
    rng = np.random.default_rng(1)
    labels = np.repeat(np.arange(3), 8)
    images = rng.uniform(0, 80, (24, 32, 32, 3)).astype("float32")
    images[np.arange(24), :, :, labels] += 150  # class k: a tint of channel k
    backbone = applications.MobileNetV2(weights=None, include_top=False, pooling="avg",
                                        input_shape=(32, 32, 3), alpha=0.35)
    assert backbone.output_shape == (None, 1280)
    inputs = kerasrs.Input((32, 32, 3))
    x = backbone(applications.mobilenet_v2.preprocess_input(inputs))
    outputs = layers.Dense(3, activation="softmax")(x)
    model = kerasrs.Model(inputs, outputs)
    before = backbone.get_layer("Conv1").kernel.numpy().copy()
    model.compile(optimizer=kerasrs.optimizers.Adam(1e-3),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(images, labels, epochs=8, batch_size=24, verbose=0).history
    assert history["loss"][-1] < 0.1 * history["loss"][0], history
    assert history["accuracy"][-1] >= 0.9, history
    assert not np.allclose(backbone.get_layer("Conv1").kernel.numpy(), before)
