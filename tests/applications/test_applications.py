"""Every application against what Keras 3.15 builds (tests/fixtures/keras_applications.json,
written by tests/fixtures/make_keras_applications.py): parameter counts, layer names in order,
the shapes of each layer's weights in order (the order a Keras weights file is read in) and the
output shape.

Building a model costs its weight initialization plus one batch-1 forward pass (the functional
graph's shape probe), so the default run builds one member of each family at a small input
(which changes neither the parameters nor the layer names, VGG's flattened top aside); the
`slow` run builds every model at its default input size and without its top.
"""

import hashlib
import json
import pathlib

import numpy as np
import pytest

import kerasrs
from kerasrs import applications

FIXTURE = json.loads((pathlib.Path(__file__).parents[1] / "fixtures" /
                      "keras_applications.json").read_text())
MODELS = FIXTURE["models"]

# One member of every family runs by default, at this input size (>= the family's minimum).
DEFAULT_RUN = {"ConvNeXtTiny": 32, "DenseNet121": 32, "EfficientNetB0": 32,
               "EfficientNetV2B0": 32, "InceptionResNetV2": 75, "InceptionV3": 75,
               "MobileNet": 32, "MobileNetV2": 32, "MobileNetV3Small": 32, "NASNetMobile": 64,
               "ResNet50": 32, "ResNet50V2": 32, "Xception": 71}
# VGG16/VGG19 need 224x224 with their flattened top: the default run builds VGG16 without it
# (the variant "VGG16_notop_32").


def weights_digest(layers):
    lines = [layer.name + ": " + ", ".join(str(tuple(w.shape)) for w in layer.weights)
             for layer in layers]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def describe(model):
    layers = model.layers  # as Keras: without the op layers of `x + 3.0`-style arithmetic
    return {"params": int(sum(np.prod(w.shape) for w in model.weights)),
            "trainable_params": int(sum(np.prod(w.shape) for w in model.trainable_weights)),
            "layer_names": [layer.name for layer in layers],
            "operation_names": [op.name for op in model.operations],
            "weights_digest": weights_digest(layers),
            "output_shape": list(model.output_shape), "input_shape": list(model.input_shape),
            "name": model.name}


def build(app, **kwargs):
    kerasrs.utils.clear_session()  # default layer names count from 0, as in the fixture
    return getattr(applications, app)(weights=None, **kwargs)


def assert_matches(got, want, keys):
    for key in keys:
        if key == "operation_names":
            want_value = want.get("operation_names", want["layer_names"])
        else:
            want_value = want[key]
        if key == "layer_names" and got[key] != want_value:
            first = next(i for i, (a, b) in enumerate(zip(got[key] + [None], want_value + [None]))
                         if a != b)
            raise AssertionError(f"layer {first}: kerasrs {got[key][first:first + 3]} != Keras "
                                 f"{want_value[first:first + 3]}")
        assert got[key] == want_value, (key, got[key], want_value)


STRUCTURE = ("params", "trainable_params", "layer_names", "weights_digest", "output_shape")


def test_the_fixture_covers_every_application():
    public = sorted(n for n in dir(applications) if n[0].isupper())
    assert public == sorted(MODELS) and len(public) == 40
    for app in set(MODELS) - set(DEFAULT_RUN) - {"VGG16", "VGG19"}:
        family = getattr(applications, app).__module__
        assert any(getattr(applications, d).__module__ == family for d in DEFAULT_RUN), app


@pytest.mark.parametrize("app", sorted(DEFAULT_RUN))
def test_application_matches_keras_at_a_small_input(app):
    size = DEFAULT_RUN[app]
    got = describe(build(app, input_shape=(size, size, 3)))
    assert_matches(got, MODELS[app], STRUCTURE + ("operation_names",))


@pytest.mark.slow
@pytest.mark.parametrize("app", sorted(MODELS))
def test_application_matches_keras_at_its_default_input(app):
    got = describe(build(app))
    assert_matches(got, MODELS[app], STRUCTURE + ("input_shape", "name", "operation_names"))


@pytest.mark.slow
@pytest.mark.parametrize("app", sorted(FIXTURE["headless"]))
def test_application_without_top_matches_keras(app):
    model = build(app, include_top=False, pooling="avg")
    want = FIXTURE["headless"][app]
    assert list(model.output_shape) == want["output_shape"]
    assert sum(int(np.prod(w.shape)) for w in model.weights) == want["params"]


VARIANTS = FIXTURE["variants"]
SLOW_VARIANTS = {"ConvNeXtTiny_noprep_10", "EfficientNetV2B0_noprep", "MobileNetV2_alpha1.4",
                 "ResNet50_notop_avg_32"}  # their families are in the default run already


@pytest.mark.parametrize("key", [pytest.param(k, marks=pytest.mark.slow) if k in SLOW_VARIANTS
                                 else k for k in sorted(VARIANTS)])
def test_constructor_arguments_match_keras(key):
    variant = VARIANTS[key]
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in variant["kwargs"].items()}
    got = describe(build(variant["application"], **kwargs))
    assert_matches(got, variant, STRUCTURE + ("input_shape", "name", "operation_names"))


@pytest.mark.parametrize("family", sorted(FIXTURE["preprocess_input"]))
def test_preprocess_input_matches_keras(family):
    images = np.array(FIXTURE["images"], dtype="float32")
    want = np.array(FIXTURE["preprocess_input"][family], dtype="float32")
    before = images.copy()
    got = getattr(applications, family).preprocess_input(images)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-4)
    np.testing.assert_array_equal(images, before)  # the input is left alone


@pytest.mark.parametrize("family", ["resnet", "densenet", "xception"])
def test_preprocess_input_on_tensors_equals_numpy(family):
    images = np.array(FIXTURE["images"], dtype="float32")
    module = getattr(applications, family)
    want = module.preprocess_input(images)
    got = module.preprocess_input(kerasrs.ops.convert_to_tensor(images))
    np.testing.assert_allclose(kerasrs.ops.convert_to_numpy(got), want, rtol=1e-6, atol=1e-4)
    # inside a functional model (symbolic input)
    inputs = kerasrs.Input((3, 4, 3))
    model = kerasrs.Model(inputs, module.preprocess_input(inputs))
    np.testing.assert_allclose(model.predict(images, verbose=0), want, rtol=1e-6, atol=1e-4)


def test_preprocess_input_channels_first_and_integers():
    images = np.arange(2 * 3 * 4 * 3).reshape(2, 3, 4, 3).astype("uint8")
    last = applications.imagenet_utils.preprocess_input(images, mode="torch")
    assert last.dtype == np.float32
    first = applications.imagenet_utils.preprocess_input(images.transpose(0, 3, 1, 2),
                                                         data_format="channels_first",
                                                         mode="caffe")
    want = applications.imagenet_utils.preprocess_input(images, mode="caffe")
    np.testing.assert_allclose(first, want.transpose(0, 3, 1, 2), rtol=1e-6)
    with pytest.raises(ValueError, match="mode"):
        applications.imagenet_utils.preprocess_input(images, mode="keras")
    with pytest.raises(ValueError, match="data_format"):
        applications.imagenet_utils.preprocess_input(images, data_format="NHWC")
