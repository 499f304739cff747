"""Preprocessing and augmentation layers: Keras 3 parity (tests/fixtures/keras_preprocessing.npz,
written by make_keras_preprocessing.py), Keras's documented examples for the lookup and text
layers and Hashing (Keras needs TensorFlow for those), training-only augmentation, seeds, config and
.keras round trips with adapted state."""

import doctest
import pathlib

import numpy as np
import pytest

import kerasrs
from kerasrs import layers
from kerasrs.layers.preprocessing import (augmentation, categorical, hashing, image,
                                          numerical, text_vectorization)

REF = np.load(pathlib.Path(__file__).parents[1] / "fixtures" / "keras_preprocessing.npz")
IMAGES = REF["images"]
TABLE = REF["table"]


@pytest.fixture(autouse=True)
def fresh_session():
    kerasrs.utils.clear_session()


def close(got, key, atol=1e-4):
    np.testing.assert_allclose(np.asarray(getattr(got, "numpy", lambda: got)()), REF[key],
                               rtol=1e-5, atol=atol)


# -- parity with Keras 3 ------------------------------------------------------------------------
def test_normalization_matches_keras():
    layer = layers.Normalization()
    layer.adapt(TABLE)
    close(layer(TABLE[:5]), "norm/out")
    np.testing.assert_allclose(layer.adapt_mean.numpy(), REF["norm/mean"], rtol=1e-5)
    np.testing.assert_allclose(layer.adapt_variance.numpy(), REF["norm/variance"], rtol=1e-5)
    assert [w.name for w in layer.weights] == ["mean", "variance", "count"]
    inverted = layers.Normalization(invert=True)
    inverted.adapt(TABLE)
    close(inverted(TABLE[:5]), "norm_invert/out")
    scalar = layers.Normalization(axis=None)
    scalar.adapt(TABLE)
    close(scalar(TABLE[:5]), "norm_axis_none/out")
    fixed = layers.Normalization(mean=[1.0, 2.0, 3.0], variance=[4.0, 1.0, 0.25])
    close(fixed(TABLE[:5]), "norm_fixed/out")


def test_normalization_adapts_batches_from_lists_generators_and_pydatasets():
    whole = layers.Normalization()
    whole.adapt(TABLE)

    class Batches(kerasrs.utils.PyDataset):
        def __len__(self):
            return 3

        def __getitem__(self, index):
            part = TABLE[[0, 13, 29, 40][index]:[0, 13, 29, 40][index + 1]]
            return part, np.zeros(len(part))

    for data in ([TABLE[:13], TABLE[13:29], TABLE[29:]], (b for b in np.split(TABLE, 4)),
                 Batches()):
        layer = layers.Normalization()
        layer.adapt(data)
        np.testing.assert_allclose(layer(TABLE[:5]).numpy(), whole(TABLE[:5]).numpy(),
                                   rtol=1e-5, atol=1e-5)
    assert int(layer.count.numpy()) == 40


def test_discretization_and_category_encoding_match_keras():
    x = REF["discretization/x"]
    close(layers.Discretization(bin_boundaries=[0.0, 1.0, 2.5])(x), "discretization/int")
    close(layers.Discretization(bin_boundaries=[0.0, 1.0, 2.5], output_mode="one_hot")(x[0]),
          "discretization/one_hot")
    close(layers.Discretization(bin_boundaries=[0.0, 1.0, 2.5], output_mode="count")(x),
          "discretization/count")
    ids = REF["category/ids"]
    for mode in ("multi_hot", "count", "one_hot"):
        close(layers.CategoryEncoding(4, output_mode=mode)(ids), f"category/{mode}")
    close(layers.CategoryEncoding(4, output_mode="one_hot")(ids[:, :1]),
          "category/one_hot_column")


@pytest.mark.parametrize("name,kwargs", [
    ("down", {"height": 4, "width": 5}), ("up", {"height": 11, "width": 13}),
    ("nearest", {"height": 4, "width": 13, "interpolation": "nearest"}),
    ("crop_aspect", {"height": 4, "width": 4, "crop_to_aspect_ratio": True}),
    ("pad_aspect", {"height": 6, "width": 4, "pad_to_aspect_ratio": True})])
def test_resizing_matches_keras(name, kwargs):
    close(layers.Resizing(**kwargs)(IMAGES), f"resizing/{name}", atol=1e-3)


def test_rescaling_center_crop_and_random_crop_inference_match_keras():
    close(layers.Rescaling(1 / 127.5, offset=-1)(IMAGES), "rescaling/out")
    close(layers.CenterCrop(4, 5)(IMAGES), "center_crop/smaller")
    close(layers.CenterCrop(8, 8)(IMAGES), "center_crop/larger", atol=1e-3)
    close(layers.CenterCrop(3, 3)(IMAGES[0]), "center_crop/single")


def test_random_crop_inference_crops_the_centre_as_keras_documents():
    # Keras 3.15 returns the images uncropped in inference, against its documentation, which
    # breaks a model's shapes between fit and predict; kerasrs does what the docs say.
    np.testing.assert_allclose(layers.RandomCrop(5, 4)(IMAGES, training=False).numpy(),
                               layers.Resizing(5, 4, crop_to_aspect_ratio=True)(IMAGES).numpy())


@pytest.mark.parametrize("mode", ["horizontal", "vertical", "horizontal_and_vertical"])
def test_random_flip_transform_matches_keras(mode):
    out = layers.RandomFlip(mode).transform(np, IMAGES, {"flips": REF["flip/params"]})
    close(out, f"flip/{mode}")


@pytest.mark.parametrize("fill", ["reflect", "constant", "wrap", "nearest"])
@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_random_rotation_transform_matches_keras(fill, interpolation):
    layer = layers.RandomRotation(0.5, fill_mode=fill, interpolation=interpolation,
                                  fill_value=7.0)
    matrix = augmentation.rotation_matrix(REF["rotation/angles"], 7, 9)
    np.testing.assert_allclose(matrix, REF["rotation/matrix"], rtol=1e-6, atol=1e-6)
    # Keras's float32 matrix: nearest sampling at exact half-pixel ties then rounds alike
    close(layer.transform(np, IMAGES, {"matrix": REF["rotation/matrix"]}),
          f"rotation/{fill}/{interpolation}", atol=2e-3)


def test_random_zoom_translation_contrast_brightness_transforms_match_keras():
    zoom = REF["zoom/params"]
    layer = layers.RandomZoom(0.5, 0.5, fill_mode="constant")
    close(layer.transform(np, IMAGES, {"matrix": augmentation.zoom_matrix(
        zoom[:, 0], zoom[:, 1], 7, 9)}), "zoom/out", atol=2e-3)
    shifts = REF["translation/params"]
    close(layers.RandomTranslation(0.5, 0.5).transform(np, IMAGES, {
        "matrix": augmentation.translation_matrix(shifts[:, 0], shifts[:, 1])}),
        "translation/out", atol=2e-3)
    close(layers.RandomContrast(0.5).transform(np, IMAGES, {"contrast": REF["contrast/params"]}),
          "contrast/out", atol=2e-3)
    close(layers.RandomBrightness(0.5).transform(np, IMAGES, {"delta": REF["brightness/params"]}),
          "brightness/out")


# -- lookups and text: Keras's documented examples ---------------------------------------------
def test_string_lookup_documented_examples():
    vocab = ["a", "b", "c", "d"]
    data = np.array([["a", "c", "d"], ["d", "z", "b"]])
    np.testing.assert_array_equal(layers.StringLookup(vocabulary=vocab)(data).numpy(),
                                  [[1, 3, 4], [4, 0, 2]])
    adapted = layers.StringLookup()
    adapted.adapt(data)
    assert adapted.get_vocabulary() == ["[UNK]", "d", "z", "c", "b", "a"]
    multi = np.array([["a", "c", "d", "d"], ["d", "z", "b", "z"]])
    np.testing.assert_array_equal(
        layers.StringLookup(vocabulary=vocab, output_mode="multi_hot")(multi).numpy(),
        [[0, 1, 0, 1, 1], [1, 0, 1, 0, 1]])
    np.testing.assert_array_equal(
        layers.StringLookup(vocabulary=vocab, output_mode="count")(multi).numpy(),
        [[0, 1, 0, 1, 2], [2, 0, 1, 0, 1]])
    np.testing.assert_array_equal(
        layers.StringLookup(vocabulary=vocab, output_mode="one_hot")(
            np.array(["a", "b", "c", "d", "z"])).numpy(), np.eye(5)[[1, 2, 3, 4, 0]])
    masked = layers.StringLookup(vocabulary=vocab, mask_token="")
    np.testing.assert_array_equal(masked(np.array([["a", "c", "d"], ["d", "", "b"]])).numpy(),
                                  [[2, 4, 5], [5, 0, 3]])
    inverse = layers.StringLookup(vocabulary=vocab, invert=True)
    assert inverse(np.array([[1, 3, 4], [4, 0, 2]])).numpy().tolist() == [
        ["a", "c", "d"], ["d", "[UNK]", "b"]]


def test_integer_lookup_documented_examples():
    vocab = [12, 36, 1138, 42]
    data = np.array([[12, 1138, 42], [42, 1000, 36]])
    np.testing.assert_array_equal(layers.IntegerLookup(vocabulary=vocab)(data).numpy(),
                                  [[1, 3, 4], [4, 0, 2]])
    adapted = layers.IntegerLookup()
    adapted.adapt(data)
    assert adapted.get_vocabulary() == [-1, 42, 1138, 1000, 36, 12]
    inverse = layers.IntegerLookup(vocabulary=vocab, invert=True)
    np.testing.assert_array_equal(inverse(np.array([[1, 3, 4], [4, 0, 2]])).numpy(),
                                  [[12, 1138, 42], [42, -1, 36]])
    with pytest.raises(ValueError, match=r"distinct tokens"):
        layers.IntegerLookup(vocabulary=[1, 1])


def test_discretization_adapt_documented_example():
    # Keras's adapt needs TensorFlow (an approximate quantile summary); its documented result:
    data = np.array([[-1.5, 1.0, 3.4, 0.5], [0.0, 3.0, 1.3, 0.0]])
    layer = layers.Discretization(num_bins=4, epsilon=0.01)
    layer.adapt(data)
    np.testing.assert_array_equal(layer(data).numpy(), [[0, 2, 3, 1], [1, 3, 2, 1]])


def test_hashing_documented_examples():
    pytest.importorskip("farmhash")  # the test extra installs it where a wheel exists (>= 3.11)
    letters = np.array([["A"], ["B"], ["C"], ["D"], ["E"]])
    np.testing.assert_array_equal(layers.Hashing(num_bins=3)(letters).numpy().ravel(),
                                  [1, 0, 1, 1, 2])
    masked = layers.Hashing(num_bins=3, mask_value="")
    np.testing.assert_array_equal(
        masked(np.array([["A"], ["B"], [""], ["C"], ["D"]])).numpy().ravel(), [1, 1, 0, 2, 2])
    np.testing.assert_array_equal(
        layers.Hashing(num_bins=3, output_mode="one_hot")(letters[:, 0]).numpy(),
        np.eye(3)[[1, 0, 1, 1, 2]])
    with pytest.raises(NotImplementedError, match=r"salted hashing"):
        layers.Hashing(num_bins=3, salt=1)


def test_text_vectorization_int_and_multi_hot():
    layer = layers.TextVectorization(output_sequence_length=4)
    layer.adapt(["The cat sat.", "the dog, the cat"])
    assert layer.get_vocabulary() == ["", "[UNK]", "the", "cat", "sat", "dog"]
    np.testing.assert_array_equal(layer(np.array(["the cat ran", "dog"])).numpy(),
                                  [[2, 3, 1, 0], [5, 0, 0, 0]])
    hot = layers.TextVectorization(output_mode="multi_hot", vocabulary=["the", "cat"])
    np.testing.assert_array_equal(hot(np.array([["the cat the"], ["a dog"]])).numpy(),
                                  [[0, 0, 1, 1], [0, 1, 0, 0]])
    grams = layers.TextVectorization(ngrams=2, vocabulary=["a", "b", "a b"])
    np.testing.assert_array_equal(grams(np.array(["a b"])).numpy(), [[2, 3, 4]])


# -- training-only augmentation, seeds, models --------------------------------------------------
AUGMENTERS = [lambda s: layers.RandomFlip(seed=s), lambda s: layers.RandomRotation(0.2, seed=s),
              lambda s: layers.RandomTranslation(0.2, 0.2, seed=s),
              lambda s: layers.RandomZoom(0.3, seed=s),
              lambda s: layers.RandomContrast(0.5, seed=s),
              lambda s: layers.RandomBrightness(0.3, seed=s)]


@pytest.mark.parametrize("make", AUGMENTERS)
def test_augmentation_only_when_training_and_seeded(make):
    a, b = make(3), make(3)
    x = IMAGES.copy()
    np.testing.assert_array_equal(a(x, training=False).numpy(), x)
    first, second = a(x).numpy(), a(x).numpy()
    np.testing.assert_array_equal(first, b(x).numpy())  # same seed, same draws
    np.testing.assert_array_equal(second, b(x).numpy())
    assert not np.array_equal(first, second) or not np.array_equal(first, x)


def test_augmenting_model_trains_and_predicts_without_augmenting():
    kerasrs.utils.set_random_seed(0)
    model = kerasrs.Sequential([layers.Input((7, 9, 3)), layers.Rescaling(1 / 255),
                                layers.RandomFlip(seed=1), layers.RandomCrop(5, 5, seed=2),
                                layers.Flatten(), layers.Dense(1)])
    model.compile("adam", "mse")
    y = np.ones((2, 1), "float32")
    model.fit(IMAGES, y, epochs=2, verbose=0)
    p1, p2 = model.predict(IMAGES, verbose=0), model.predict(IMAGES, verbose=0)
    np.testing.assert_array_equal(p1, p2)
    assert model.output_shape == (None, 1)


def test_random_crop_training_window():
    layer = layers.RandomCrop(3, 4, seed=0)
    out = layer(IMAGES).numpy()
    assert out.shape == (2, 3, 4, 3)
    rows = [i for i in range(7 - 2) for j in range(9 - 3)
            if np.array_equal(IMAGES[:, i:i + 3, j:j + 4], out)]
    assert rows  # a window of the input


# -- config and saving --------------------------------------------------------------------------
CONFIGURED = [
    lambda: layers.Normalization(axis=-1, invert=True),
    lambda: layers.Normalization(mean=[1.0, 2.0, 3.0], variance=[1.0, 4.0, 9.0]),
    lambda: layers.Discretization(bin_boundaries=[0.0, 1.0], output_mode="count"),
    lambda: layers.CategoryEncoding(5, output_mode="count"),
    lambda: layers.Hashing(7, mask_value="", output_mode="multi_hot"),  # config: no farmhash
    lambda: layers.StringLookup(vocabulary=["x", "y"], mask_token="", output_mode="one_hot"),
    lambda: layers.IntegerLookup(vocabulary=[4, 5], num_oov_indices=2),
    lambda: layers.TextVectorization(max_tokens=10, ngrams=2, output_sequence_length=3),
    lambda: layers.Resizing(4, 5, interpolation="nearest", crop_to_aspect_ratio=True),
    lambda: layers.CenterCrop(3, 3), lambda: layers.RandomCrop(3, 3, seed=1),
    lambda: layers.RandomFlip("vertical", seed=2),
    lambda: layers.RandomRotation((-0.1, 0.2), fill_mode="constant", fill_value=1.0),
    lambda: layers.RandomTranslation(0.1, (0.0, 0.3), interpolation="nearest"),
    lambda: layers.RandomZoom(0.2, 0.3), lambda: layers.RandomContrast(0.4, (0, 1)),
    lambda: layers.RandomBrightness((-0.2, 0.1), (0, 1))]


@pytest.mark.parametrize("make", CONFIGURED)
def test_config_round_trip(make, config_round_trip):
    config_round_trip(make())


def test_keras_file_keeps_adapted_state(tmp_path):
    norm = layers.Normalization()
    norm.adapt(TABLE)
    lookup = layers.StringLookup()
    lookup.adapt(np.array(["b", "a", "b", "c"]))
    bins = layers.Discretization(num_bins=3)
    bins.adapt(TABLE[:, 0])
    text = layers.TextVectorization(output_sequence_length=3)
    text.adapt(["red fish", "blue fish"])
    numbers = kerasrs.Input((3,))
    model = kerasrs.Model(numbers, layers.Dense(2)(norm(numbers)))
    path = tmp_path / "norm.keras"
    model.save(path)
    loaded = kerasrs.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(TABLE, verbose=0), model.predict(TABLE, verbose=0),
                               rtol=1e-6)
    ids = kerasrs.Input((3,), dtype="int64")
    integer = layers.IntegerLookup(output_mode="multi_hot")
    integer.adapt(np.array([[7, 7, 9], [3, 9, 7]]))
    bins_in = kerasrs.Input((3,))
    scores = layers.Dense(1)(layers.Concatenate()([
        integer(ids), layers.Flatten()(layers.Discretization(
            bin_boundaries=bins.bin_boundaries, output_mode="one_hot")(bins_in))]))
    mixed = kerasrs.Model([ids, bins_in], scores)
    mixed.save(tmp_path / "mixed.keras")
    again = kerasrs.models.load_model(tmp_path / "mixed.keras")
    inputs = [np.array([[7, 3, 5], [9, 9, 9]]), TABLE[:2]]
    np.testing.assert_allclose(again.predict(inputs, verbose=0), mixed.predict(inputs, verbose=0),
                               rtol=1e-6)
    for layer, x in ((lookup, np.array(["a", "c", "z"])), (bins, TABLE[:5, 0]),
                     (text, np.array(["red fish swim"]))):
        clone = kerasrs.layers.deserialize(kerasrs.layers.serialize(layer))
        np.testing.assert_array_equal(clone(x).numpy(), layer(x).numpy())


# -- bad input and docstrings -------------------------------------------------------------------
def test_bad_arguments_name_the_layer():
    with pytest.raises(ValueError, match=r"give both `mean` and `variance`"):
        layers.Normalization(mean=[0.0])
    with pytest.raises(ValueError, match=r"unknown `interpolation`.*Received: interpolation="):
        layers.Resizing(2, 2, interpolation="lanczos5")
    with pytest.raises(ValueError, match=r"rank 3 .* or 4"):
        layers.CenterCrop(2, 2)(np.zeros((4, 4)))
    with pytest.raises(ValueError, match=r"ids must be in \[0, 3\)"):
        layers.CategoryEncoding(3)(np.array([[0, 3]]))
    for bad in (np.array([12.5]), np.array(["12"])):  # before: both looked up as 12
        with pytest.raises(ValueError, match=r"integer_lookup.*: IntegerLookup takes integers"):
            layers.IntegerLookup(vocabulary=[12, 36])(bad)
    assert layers.IntegerLookup(vocabulary=[12, 36])(np.array([36.0])).numpy().tolist() == [2]
    with pytest.raises(ValueError, match=r"`bin_boundaries` must be sorted.*\[1.0, 0.0\]"):
        layers.Discretization(bin_boundaries=[1.0, 0.0])  # before: silently wrong buckets
    with pytest.raises(ValueError, match=r"no bin boundaries"):
        layers.Discretization(num_bins=3)(np.zeros(2))
    with pytest.raises(TypeError, match=r"adapt: `data` must be an array"):
        layers.Normalization().adapt(object())
    with pytest.raises(ValueError, match=r"`height_factor` must lie in \[-1.0, 1.0\]"):
        layers.RandomTranslation(1.5, 0.1)



@pytest.mark.parametrize("make", [
    lambda: layers.CategoryEncoding(3, sparse=True), lambda: layers.StringLookup(sparse=True),
    lambda: layers.IntegerLookup(sparse=True), lambda: layers.Hashing(3, sparse=True),
    lambda: layers.HashedCrossing(3, sparse=True),
    lambda: layers.Discretization([0.5], sparse=True)])
def test_sparse_outputs_are_refused_naming_the_layer(make):
    with pytest.raises(ValueError, match=r"^\w+: sparse outputs are not supported\. "
                                         r"Received: sparse=True$"):
        make()

def test_normalization_exposes_mean_and_variance_as_keras_3_does():
    # Keras tutorials print `normalizer.mean`; before, AttributeError
    layer = layers.Normalization()
    assert layer.mean is None and layer.variance is None
    layer.adapt(TABLE)
    assert layer.mean.shape == (1, TABLE.shape[1])
    np.testing.assert_allclose(layer.mean.numpy()[0], REF["norm/mean"], rtol=1e-5)
    np.testing.assert_allclose(layer.variance.numpy()[0], REF["norm/variance"], rtol=1e-5)
    fixed = layers.Normalization(mean=[1.0, 2.0, 3.0], variance=[4.0, 1.0, 0.25])
    fixed.build((None, 3))
    np.testing.assert_allclose(fixed.variance.numpy(), [[4.0, 1.0, 0.25]])


def test_normalization_refuses_empty_data_and_inputs_of_another_width():
    # before: NaN statistics with NumPy's RuntimeWarnings; the subtract op's broadcast error
    with pytest.raises(ValueError, match=r"normalization.adapt: the data have no samples.*"
                                         r"\(0, 3\)"):
        layers.Normalization().adapt(np.zeros((0, 3), "float32"))
    layer = layers.Normalization()
    layer.adapt(TABLE)
    with pytest.raises(ValueError, match=r"normalization_1: expected inputs of rank 2 with the "
                                         r"sizes \{1: 3\}.*Received: input shape \(2, 4\)"):
        layer(np.zeros((2, 4), "float32"))


def test_sizes_and_rotation_factor_are_checked_when_the_layer_is_made():
    # before: Resizing(0, 8) raised ZeroDivisionError at the call; Keras 3 refuses |factor| > 1
    for make in (layers.Resizing, layers.CenterCrop, layers.RandomCrop):
        with pytest.raises(ValueError, match=r"`height` must be a positive int.*height=0"):
            make(0, 8)
        with pytest.raises(ValueError, match=r"`width` must be a positive int.*width=2.5"):
            make(8, 2.5)
    with pytest.raises(ValueError, match=r"random_rotation: `factor` must lie in \[-1.0, 1.0\]"):
        layers.RandomRotation(2.5)
    assert layers.Resizing(np.int64(4), 4).height == 4


def test_string_layers_take_python_lists_as_keras_documents():
    # before: "convert_to_tensor: a str is not a tensor" for each documented list example
    lookup = layers.StringLookup(vocabulary=["a", "b", "c", "d"])
    assert lookup([["a", "c", "d"], ["d", "z", "b"]]).numpy().tolist() == [[1, 3, 4], [4, 0, 2]]
    vectorize = layers.TextVectorization(max_tokens=5000, output_sequence_length=4)
    vectorize.adapt(["foo bar", "bar baz", "baz bada boom"])
    assert vectorize([["foo qux bar"], ["qux baz"]]).numpy().tolist() == [[4, 1, 3, 0],
                                                                          [1, 2, 0, 0]]
    assert vectorize(("foo qux bar", "qux baz")).numpy().tolist() == [[4, 1, 3, 0], [1, 2, 0, 0]]
    pytest.importorskip("farmhash")  # the test extra installs it where a wheel exists
    assert layers.Hashing(num_bins=3)([["A"], ["B"], ["C"], ["D"], ["E"]]).numpy() \
        .tolist() == [[1], [0], [1], [1], [2]]


def test_docstring_examples():
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(verbose=False)
    modules = [numerical, categorical, image, augmentation, text_vectorization]
    try:
        import farmhash  # noqa: F401
        modules.append(hashing)
    except ImportError:
        pass
    for module in modules:
        names = {n: getattr(module, n) for n in module.__all__}
        for test in finder.find(module, globs={"np": np, **names}):
            runner.run(test)
    assert runner.failures == 0 and runner.tries >= 15
