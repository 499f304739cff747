"""Keras 3's own configs of the convolution, pooling, normalization and spatial layers load in
kerasrs (``from_config``), give Keras's output shapes and weight shapes, and ``get_config()``
writes the same values back. Fixture: tests/fixtures/keras_layer_configs.json, written by
tests/fixtures/make_keras_layer_configs.py with Keras 3.15."""

import json
import pathlib

import numpy as np
import pytest

from kerasrs import layers

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "keras_layer_configs.json"
CASES = json.loads(FIXTURE.read_text())["layers"]


def _plain(value):
    """JSON-normal form: tuples become lists, recursively."""
    return json.loads(json.dumps(value))


@pytest.mark.parametrize("name", sorted(CASES))
def test_keras_config_loads_and_matches_keras_shapes(rng, name):
    case = CASES[name]
    cls = getattr(layers, case["class_name"])
    layer = cls.from_config(case["config"])
    shape = tuple(case["input_shape"])
    assert list(layer.compute_output_shape(shape)) == case["output_shape"]
    y = layer(rng.standard_normal(shape).astype("float32"))
    assert list(y.shape) == case["output_shape"]
    assert [[w.name, list(w.shape)] for w in layer.weights] == case["weight_shapes"]

    ours = _plain(layer.get_config())
    for key, value in case["config"].items():
        if key in ("name", "trainable", "dtype"):
            continue
        if isinstance(value, dict) and "class_name" in value:  # initializer or regularizer
            assert ours[key]["class_name"] == value["class_name"], key
            if key.endswith("regularizer"):
                assert ours[key]["config"] == value["config"], key
        else:
            assert ours[key] == value, f"{name}.{key}: kerasrs {ours[key]!r}, Keras {value!r}"


def test_every_layer_of_this_family_is_covered():
    covered = {case["class_name"] for case in CASES.values()}
    from kerasrs.layers import (conv, conv_transpose, depthwise, normalization, pooling,
                                reshaping_spatial)

    public = {getattr(m, n).__name__ for m in (conv, conv_transpose, depthwise, normalization,
                                               pooling, reshaping_spatial) for n in m.__all__}
    assert public == covered
    assert np.all([hasattr(layers, n) for n in covered])
