"""Colour and mixing augmentation layers and `Pipeline`: Keras 3 parity with chosen parameters
(tests/fixtures/keras_color_mixing.npz, written by make_keras_color_mixing.py), training-only
and seeded draws, both data formats, use inside a model, config round trips."""

import pathlib

import numpy as np
import pytest

import kerasrs
from kerasrs import layers

REF = np.load(pathlib.Path(__file__).parents[1] / "fixtures" / "keras_color_mixing.npz")
IMAGES, UNIT, APPLY, FACTORS = REF["images"], REF["unit"], REF["apply"], REF["factors"]
MIX = {"permutation_order": REF["mix/order"], "mix_weight": REF["mix/weights"]}


@pytest.fixture(autouse=True)
def fresh_session():
    kerasrs.utils.clear_session()


# (layer, input, params for transform, key of Keras's output, atol)
PARITY = {
    "grayscale": (lambda: layers.RandomGrayscale(), IMAGES, {"apply": APPLY}, 1e-3),
    "invert": (lambda: layers.RandomInvert(), IMAGES, {"apply": APPLY}, 1e-4),
    "solarization": (lambda: layers.Solarization(value_range=(0, 1)), UNIT,
                     {"additions": REF["solarization/additions"],
                      "thresholds": REF["solarization/thresholds"]}, 1e-5),
    "saturation": (lambda: layers.RandomSaturation(0.5, value_range=(0, 1)), UNIT,
                   {"factor": REF["saturation/params"]}, 1e-5),
    "hue": (lambda: layers.RandomHue(0.5), IMAGES, {"factor": REF["hue/params"]}, 1e-3),
    "degeneration": (lambda: layers.RandomColorDegeneration(0.5), IMAGES, {"factor": FACTORS},
                     1e-3),
    "sharpness": (lambda: layers.RandomSharpness(0.5), IMAGES, {"factor": FACTORS}, 1e-3),
    "posterization": (lambda: layers.RandomPosterization(8), IMAGES,
                      {"bits": REF["posterization/bits"]}, 0),
    "mixup": (lambda: layers.MixUp(), IMAGES, MIX, 1e-3),
    "cutmix": (lambda: layers.CutMix(), IMAGES,
               {k: REF["cutmix/" + k] for k in ("x0", "x1", "y0", "y1")} |
               {"permutation_order": REF["mix/order"]}, 0),
    "erasing": (lambda: layers.RandomErasing(), IMAGES,
                {k: REF["cutmix/" + k] for k in ("x0", "x1", "y0", "y1")} |
                {"apply": APPLY, "fill": REF["erasing/fill"]}, 0),
    "blur": (lambda: layers.RandomGaussianBlur(kernel_size=5), IMAGES,
             {"apply": APPLY, "sigma": REF["blur/sigma"]}, 1e-3),
    "equalization": (lambda: layers.Equalization(), REF["integers"], None, 0),
}


@pytest.mark.parametrize("key", PARITY)
def test_transform_matches_keras(key):
    make, x, params, atol = PARITY[key]
    got = make().transform(np, x.copy(), params)
    np.testing.assert_allclose(got, REF[key + "/out"], rtol=1e-5, atol=atol)
    assert got.dtype == x.dtype


@pytest.mark.parametrize("fill", ["reflect", "constant"])
@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_random_shear_transform_matches_keras(fill, interpolation):
    from kerasrs.layers.preprocessing.shear import shear_matrix
    shears = REF["shear/params"]
    layer = layers.RandomShear(0.5, 0.5, interpolation, fill, 9.0)
    got = layer.transform(np, IMAGES.copy(), {"matrix": shear_matrix(shears[:, 0],
                                                                     shears[:, 1])})
    np.testing.assert_allclose(got, REF[f"shear/{fill}/{interpolation}"], rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_random_perspective_transform_matches_keras(interpolation):
    layer = layers.RandomPerspective(interpolation=interpolation, fill_value=3.0)
    params = {"apply": APPLY, "start_points": REF["perspective/start"],
              "end_points": REF["perspective/end"]}
    np.testing.assert_allclose(layer.transform(np, IMAGES.copy(), params),
                               REF[f"perspective/{interpolation}"], rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("fill, interpolation", [("reflect", "bilinear"),
                                                  ("constant", "nearest")])
def test_random_elastic_transform_matches_keras(fill, interpolation):
    layer = layers.RandomElasticTransform(interpolation=interpolation, fill_mode=fill,
                                          fill_value=5.0)
    x = IMAGES if fill == "reflect" else REF["elastic/big"]  # 7x7 blur on the big images
    params = {"apply": APPLY[:len(x)], "scale": 0.8 if fill == "reflect" else 1.0,
              "noise": REF[f"elastic/{fill}/noise"][..., None]}
    np.testing.assert_allclose(layer.transform(np, x.copy(), params),
                               REF[f"elastic/{fill}/{interpolation}"], rtol=1e-5, atol=1e-3)


def test_auto_contrast_matches_keras_in_training_and_inference():
    layer = layers.AutoContrast()
    np.testing.assert_allclose(layer(IMAGES).numpy(), REF["autocontrast/out"], atol=1e-3)
    np.testing.assert_allclose(layer(IMAGES, training=False).numpy(), REF["autocontrast/out"],
                               atol=1e-3)
    np.testing.assert_allclose(layers.AutoContrast((0, 1))(UNIT).numpy(),
                               REF["autocontrast/unit"], atol=1e-5)


def test_equalization_in_unit_range_with_fewer_bins_matches_keras():
    got = layers.Equalization((0, 1), bins=32)(UNIT).numpy()
    np.testing.assert_allclose(got, REF["equalization/unit"], atol=1e-6)
    np.testing.assert_array_equal(layers.Equalization()(UNIT, training=False).numpy(), UNIT)


def test_rand_augment_applies_the_chosen_operations_in_order():
    layer = layers.RandAugment(factor=0.6)
    x = IMAGES.copy()
    params = layer.draw(np.random.default_rng(0), x.shape)
    params["ops"] = np.array([9, 3])  # auto-contrast, then brightness
    params["params"].setdefault(9, None)
    brightness = params["params"].setdefault(3, layer._ops[3].draw(np.random.default_rng(1),
                                                                    x.shape))
    want = layers.RandomBrightness((0, 0.6)).transform(
        np, layers.AutoContrast().transform(np, x), brightness)
    np.testing.assert_allclose(layer.transform(np, x, params), want)
    ops = [type(op).__name__ for op in layer._ops]
    assert ops == ["RandomShear", "RandomTranslation", "RandomRotation", "RandomBrightness",
                   "RandomColorDegeneration", "RandomContrast", "RandomSharpness",
                   "RandomPosterization", "Solarization", "AutoContrast", "Equalization"]


def test_aug_mix_mixes_the_chains_as_algorithm_1():
    layer = layers.AugMix(all_ops=False)
    x = IMAGES.copy()
    invert_like = layer._ops[4]  # solarization with the default magnitude
    steps = [(4, invert_like.draw(np.random.default_rng(0), x.shape)), (5, None)]
    params = {"chain_weights": np.array([0.25, 0.75]), "mix": 0.4, "chains": [steps, []]}
    chain = layers.AutoContrast().transform(np, invert_like.transform(np, x, steps[0][1]))
    want = np.clip(0.4 * x + 0.6 * (0.25 * chain + 0.75 * x), 0, 255)
    np.testing.assert_allclose(layer.transform(np, x, params), want, rtol=1e-5, atol=1e-3)
    assert len(layer._ops) == 7 and len(layers.AugMix()._ops) == 11


def test_clahe_matches_keras():
    clahe = layers.ContrastLimitedAdaptiveHistogramEqualization
    np.testing.assert_allclose(clahe()(REF["elastic/big"]).numpy(), REF["clahe/default"],
                               atol=1e-3)
    uneven = clahe(clip_limit=2.0, tile_grid_size=(3, 5))
    np.testing.assert_allclose(uneven(IMAGES, training=False).numpy(), REF["clahe/uneven"],
                               atol=1e-3)
    first = clahe(clip_limit=2.0, tile_grid_size=(3, 5), data_format="channels_first")
    np.testing.assert_allclose(first(IMAGES.transpose(0, 3, 1, 2)).numpy(),
                               REF["clahe/uneven"].transpose(0, 3, 1, 2), atol=1e-3)
    unit = clahe(value_range=(0, 1), clip_limit=0.0, tile_grid_size=(2, 2))
    np.testing.assert_allclose(unit(UNIT).numpy(), REF["clahe/unit"], atol=1e-5)
    config = uneven.get_config()
    assert clahe.from_config(config).get_config() == config
    with pytest.raises(ValueError, match="tile_grid_size"):
        clahe(tile_grid_size=(0, 2))


@pytest.mark.parametrize("make", [lambda: layers.MixUp(0.8, seed=0),
                                  lambda: layers.CutMix(seed=0)])
def test_mixing_a_dict_mixes_images_and_labels_with_one_draw(make):
    n = 6
    images = np.broadcast_to(np.arange(n, dtype="float32")[:, None, None, None],
                             (n, 5, 5, 1)).copy()  # image i is filled with i
    labels = np.eye(n, dtype="float32")
    layer = make()
    out = layer({"images": images, "labels": labels, "weights": np.ones(n)})
    mixed, mixed_labels = out["images"].numpy(), out["labels"].numpy()
    assert set(out) == {"images", "labels", "weights"}
    np.testing.assert_allclose(mixed_labels.sum(axis=1), 1.0, rtol=1e-6)
    for i in range(n):  # the pixels come from the images the label row names
        if isinstance(layer, layers.CutMix):
            assert set(np.unique(mixed[i])) <= set(np.flatnonzero(mixed_labels[i])) | {i}
        else:
            np.testing.assert_allclose(mixed[i], mixed_labels[i] @ np.arange(n), rtol=1e-5)
    untouched = make()({"images": images, "labels": labels}, training=False)
    np.testing.assert_array_equal(untouched["labels"].numpy(), labels)


def test_mixed_labels_match_keras():
    mixup = layers.MixUp().mix_labels(np, REF["mix/labels"], MIX)
    np.testing.assert_allclose(mixup, REF["mixup/labels_out"], atol=1e-6)
    params = layers.CutMix().draw(np.random.default_rng(0), IMAGES.shape)
    assert params["mix_weight"].shape == (3,) and np.all(params["mix_weight"] <= 1)
    box = {k: REF["cutmix/" + k] for k in ("x0", "x1", "y0", "y1")}
    area = (box["x1"] - box["x0"]) * (box["y1"] - box["y0"]) / (6 * 7)
    np.testing.assert_allclose(1 - area, REF["cutmix/mix_weight"].ravel(), atol=1e-6)


RANDOM = [lambda s: layers.RandomGrayscale(seed=s),
          lambda s: layers.RandomInvert((0.9, 1.0), seed=s),
          lambda s: layers.Solarization(0.2, 0.5, seed=s),
          lambda s: layers.RandomSaturation(0.4, seed=s), lambda s: layers.RandomHue(0.4, seed=s),
          lambda s: layers.RandomColorDegeneration(0.6, seed=s),
          lambda s: layers.RandomPosterization((2, 6), seed=s),
          lambda s: layers.RandomSharpness(0.7, seed=s), lambda s: layers.MixUp(0.4, seed=s),
          lambda s: layers.CutMix(seed=s), lambda s: layers.RandomErasing(seed=s),
          lambda s: layers.RandomGaussianBlur(0.9, 5, (0.5, 2.0), seed=s),
          lambda s: layers.RandomShear(0.3, (0.1, 0.4), seed=s),
          lambda s: layers.RandAugment(num_ops=3, factor=0.7, seed=s),
          lambda s: layers.RandomPerspective(0.9, 0.4, seed=s),
          lambda s: layers.AugMix(seed=s), lambda s: layers.AugMix(all_ops=False, seed=s),
          lambda s: layers.RandomElasticTransform(0.9, (0.5, 1.0), seed=s),
          lambda s: layers.RandomErasing(0.9, (0.1, 0.5), (1, 2, 3), seed=s),
          lambda s: layers.Pipeline([layers.RandomInvert(seed=s), layers.RandomHue(0.3, seed=s)]),
          lambda s: layers.RandomColorJitter((0, 255), 0.2, 0.3, 0.4, 0.1, seed=s)]


@pytest.mark.parametrize("make", RANDOM)
def test_only_when_training_seeded_and_channels_first(make):
    a, b = make(3), make(3)
    x = IMAGES.copy()
    np.testing.assert_array_equal(a(x, training=False).numpy(), x)
    first, second = a(x).numpy(), a(x).numpy()
    np.testing.assert_array_equal(first, b(x).numpy())
    np.testing.assert_array_equal(second, b(x).numpy())
    assert not np.array_equal(first, x) or not np.array_equal(second, x)
    # channels_first: the same draws on the transposed images give the transposed result
    c = make(3)
    if hasattr(c, "data_format"):
        c.data_format = "channels_first"
        for sub in getattr(c, "layers", getattr(c, "_steps", ())):
            sub.data_format = "channels_first"
        got = c(np.moveaxis(x, -1, 1)).numpy()
        np.testing.assert_allclose(np.moveaxis(got, 1, -1), first, atol=1e-4)


def test_single_image_and_inside_a_model():
    out = layers.RandomInvert(seed=0)(IMAGES[0]).numpy()
    assert out.shape == IMAGES[0].shape
    model = kerasrs.Sequential([layers.Input((6, 7, 3)), layers.Pipeline(
        [layers.RandomHue(0.2, seed=1), layers.MixUp(seed=2), layers.AutoContrast()]),
        layers.Flatten(), layers.Dense(1)])
    model.compile("adam", "mse")
    model.fit(IMAGES, np.ones((3, 1), "float32"), epochs=1, verbose=0)
    np.testing.assert_array_equal(model.predict(IMAGES, verbose=0),
                                  model.predict(IMAGES, verbose=0))


CONFIGURED = [lambda: layers.RandomGrayscale(0.3, seed=1), lambda: layers.RandomInvert(0.5),
              lambda: layers.Solarization((0.1, 0.2), 0.5, (0, 1)),
              lambda: layers.AutoContrast((0, 1)), lambda: layers.RandomSaturation((0.2, 0.6)),
              lambda: layers.RandomHue(0.3, (0, 1)), lambda: layers.RandomColorDegeneration(0.2),
              lambda: layers.RandomPosterization(4), lambda: layers.RandomSharpness(0.1),
              lambda: layers.MixUp(0.5, seed=2),
              lambda: layers.AugMix((0, 1), 2, 4, (0.1, 0.5), 0.5, False, "nearest", 3),
              lambda: layers.RandomElasticTransform(0.5, 0.3, "nearest", "wrap", 1.0, (0, 1)),
              lambda: layers.RandomPerspective(0.5, 0.3, "nearest", 2.0, seed=1),
              lambda: layers.RandAugment((0, 1), 3, (0.2, 0.4), "nearest", seed=7),
              lambda: layers.RandomShear(0.2, 0.1, "nearest", "constant", 1.0, seed=5),
              lambda: layers.Equalization((0, 1), 64),
              lambda: layers.RandomGaussianBlur(0.5, (5, 5), 2.0, (0, 1), seed=4),
              lambda: layers.RandomErasing(0.5, 0.3, 7.0), lambda: layers.CutMix((0.2, 0.8)),
              lambda: layers.Pipeline([layers.RandomInvert(), layers.AutoContrast()]),
              lambda: layers.RandomColorJitter((0, 1), 0.1, hue_factor=0.2, seed=3)]


@pytest.mark.parametrize("make", CONFIGURED)
def test_config_round_trip(make, config_round_trip):
    config_round_trip(make())


@pytest.mark.parametrize("make, message", [
    (lambda: layers.RandomGrayscale(1.5), "factor"),
    (lambda: layers.RandomHue("a"), "factor"), (lambda: layers.MixUp(0), "alpha"),
    (lambda: layers.Solarization(2.0), "addition_factor"),
    (lambda: layers.RandomPosterization(9), "factor"),
    (lambda: layers.RandomGaussianBlur(kernel_size=4), "kernel_size"),
    (lambda: layers.Equalization(bins=1), "bins"),
    (lambda: layers.RandomShear(1.5), "x_factor"),
    (lambda: layers.RandAugment(num_ops=-1), "num_ops"),
    (lambda: layers.AugMix(num_chains=0), "num_chains"),
    (lambda: layers.AugMix(alpha=0), "alpha"),
    (lambda: layers.RandomPerspective(scale=2.0), "scale"),
    (lambda: layers.RandomElasticTransform(fill_mode="mirror"), "fill_mode"),
    (lambda: layers.RandomErasing(fill_value="x"), "fill_value"),
    (lambda: layers.Pipeline([np.zeros(2)]), "layers")])
def test_bad_arguments_name_the_layer(make, message):
    with pytest.raises(ValueError, match=message):
        make()


# -- HashedCrossing (Keras needs TensorFlow for it: its documented examples instead) -----------
def test_hashed_crossing_documented_examples():
    pytest.importorskip("farmhash")  # the test extra installs it where a wheel exists (>= 3.11)
    letters, numbers = np.array(["A", "B", "A", "B", "A"]), np.array([101, 101, 101, 102, 102])
    layer = layers.HashedCrossing(num_bins=5)
    np.testing.assert_array_equal(layer((letters, numbers)).numpy(), [1, 4, 1, 1, 3])
    np.testing.assert_array_equal(layer((letters[:, None], numbers[:, None])).numpy(),
                                  [[1], [4], [1], [1], [3]])
    one_hot = layers.HashedCrossing(num_bins=5, output_mode="one_hot")((letters, numbers))
    np.testing.assert_array_equal(one_hot.numpy(), np.eye(5)[[1, 4, 1, 1, 3]])
    assert layer((np.array("A"), np.array(101))).numpy().shape == ()


def test_hashed_crossing_of_integers_needs_no_farmhash_and_checks_shapes():
    layer = layers.HashedCrossing(num_bins=7)
    ids = layer((np.array([1, 2, 3]), np.array([4, 5, 6]), np.array([7, 8, 9]))).numpy()
    assert ids.dtype == np.int64 and ids.shape == (3,) and np.all((ids >= 0) & (ids < 7))
    np.testing.assert_array_equal(ids, layer((np.array([1, 2, 3]), np.array([4, 5, 6]),
                                              np.array([7, 8, 9]))).numpy())
    assert layer.compute_output_shape([(None, 1), (None, 1)]) == (None, 1)
    with pytest.raises(ValueError, match="same shape|share one shape"):
        layer((np.array([1, 2]), np.array([1, 2, 3])))
    with pytest.raises(ValueError, match="at least two"):
        layer(np.array([1, 2]))
    with pytest.raises(ValueError, match="num_bins"):
        layers.HashedCrossing(0)
    config = layers.HashedCrossing(3, "one_hot").get_config()
    assert layers.HashedCrossing.from_config(config).get_config() == config


def test_max_num_bounding_boxes_pads_and_truncates_as_keras_documents():
    images = np.zeros((1, 8, 8, 3), "uint8")
    boxes = {"boxes": np.array([[[10, 20, 100, 150], [50, 60, 200, 250], [0, 0, 50, 50]]]),
             "labels": np.array([[1, 2, 3]])}
    out = layers.MaxNumBoundingBoxes(5)({"images": images, "bounding_boxes": boxes})
    np.testing.assert_array_equal(out["images"].numpy(), images)
    np.testing.assert_array_equal(out["bounding_boxes"]["boxes"].numpy(), np.concatenate(
        [boxes["boxes"], -np.ones((1, 2, 4), int)], axis=1))
    np.testing.assert_array_equal(out["bounding_boxes"]["labels"].numpy(), [[1, 2, 3, -1, -1]])
    short = layers.MaxNumBoundingBoxes(2, fill_value=0)({"images": images,
                                                         "bounding_boxes": boxes})
    np.testing.assert_array_equal(short["bounding_boxes"]["labels"].numpy(), [[1, 2]])
    np.testing.assert_array_equal(layers.MaxNumBoundingBoxes(2)(IMAGES).numpy(), IMAGES)
    with pytest.raises(KeyError, match="unsupported keys"):
        layers.MaxNumBoundingBoxes(2)({"images": images, "bounding_boxes": {**boxes, "x": 1}})
    layer = layers.MaxNumBoundingBoxes(7, 3)
    assert type(layer).from_config(layer.get_config()).get_config() == layer.get_config()
    assert layer.compute_output_shape({"images": (None, 8, 8, 3), "bounding_boxes": {
        "boxes": (None, 3, 4), "labels": (None, 3)}})["bounding_boxes"]["boxes"] == (None, 7, 4)
