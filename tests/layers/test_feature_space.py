"""utils.FeatureSpace: presets, crosses, one-hot sizes, adapt from dicts or batches, dict and
concat outputs, a symbolic graph for numeric features, and a model trained on its encoding."""

import numpy as np
import pytest

import kerasrs
from kerasrs import layers
from kerasrs.utils import FeatureSpace

RNG = np.random.default_rng(0)
N = 120
DATA = {"age": RNG.uniform(20, 60, N), "job": RNG.choice(["cook", "nurse", "pilot"], N),
        "zip": RNG.integers(0, 100, N), "score": RNG.normal(size=N), "size": RNG.integers(1, 4, N)}


def space(**kwargs):
    features = {"age": "float_normalized", "job": "string_categorical", "zip": "integer_hashed",
                "score": "float_discretized", "size": "integer_categorical"}
    return FeatureSpace(features, hashing_dim=16, num_discretization_bins=4, **kwargs)


def test_presets_encode_to_the_expected_columns():
    fs = space(output_mode="dict")
    fs.adapt(DATA)
    out = {k: kerasrs.ops.convert_to_numpy(v) for k, v in fs(DATA).items()}
    assert list(out) == ["age", "job", "score", "size", "zip"]  # sorted
    assert {k: v.shape for k, v in out.items()} == {"age": (N, 1), "job": (N, 4), "score": (N, 4),
                                                    "size": (N, 4), "zip": (N, 16)}
    np.testing.assert_allclose([out["age"].mean(), out["age"].std()], [0, 1], atol=1e-5)
    for key in ("job", "score", "size", "zip"):  # one-hot rows
        assert np.array_equal(out[key].sum(axis=1), np.ones(N))
    assert out["job"][:, 0].sum() == 0  # index 0 is out-of-vocabulary: unused here
    counts = out["score"].sum(axis=0)
    assert counts.min() >= N / 4 - 3  # quantile bins: about N/4 samples each
    unseen = fs({**{k: v[:1] for k, v in DATA.items()}, "job": np.array(["astronaut"])})
    assert kerasrs.ops.convert_to_numpy(unseen["job"])[0, 0] == 1


def test_concat_crosses_and_single_samples():
    fs = space(crosses=[("job", "size"), FeatureSpace.cross(("zip", "size"), 8)],
               crossing_dim=32)
    fs.adapt(DATA)
    x = kerasrs.ops.convert_to_numpy(fs(DATA))
    assert x.shape == (N, 1 + 4 + 4 + 4 + 16 + 32 + 8) and x.dtype == np.float32
    assert np.array_equal(x[:, -40:].sum(axis=1), 2 * np.ones(N))  # two crosses, one hot each
    one = fs({k: v[3] for k, v in DATA.items()})
    np.testing.assert_allclose(kerasrs.ops.convert_to_numpy(one), x[3], rtol=1e-6)


def test_adapt_from_batches_equals_adapt_from_columns():
    whole, batched = space(), space()
    whole.adapt(DATA)
    batched.adapt([({k: v[i:i + 32] for k, v in DATA.items()}, None) for i in range(0, N, 32)])
    np.testing.assert_allclose(kerasrs.ops.convert_to_numpy(batched(DATA)),
                               kerasrs.ops.convert_to_numpy(whole(DATA)), rtol=1e-5, atol=1e-6)


def test_custom_features_and_config():
    fs = FeatureSpace({"age": FeatureSpace.float_rescaled(scale=0.1, offset=-1.0),
                       "score": FeatureSpace.float_discretized(3, bin_boundaries=[-1.0, 1.0],
                                                               output_mode="int"),
                       "size": FeatureSpace.float()}, output_mode="dict")
    out = fs(DATA)  # nothing to adapt
    np.testing.assert_allclose(kerasrs.ops.convert_to_numpy(out["age"])[:, 0],
                               DATA["age"] * 0.1 - 1, rtol=1e-5)
    assert set(np.unique(kerasrs.ops.convert_to_numpy(out["score"]))) <= {0, 1, 2}
    again = FeatureSpace.from_config(fs.get_config())
    assert again.get_config() == fs.get_config()
    for key in out:
        np.testing.assert_allclose(kerasrs.ops.convert_to_numpy(again(DATA)[key]),
                                   kerasrs.ops.convert_to_numpy(out[key]))


def test_a_model_learns_from_the_encoding():
    """A label that depends on the job and the age bracket: logistic regression on the
    encoded features fits it."""
    y = ((DATA["job"] == "pilot") | (DATA["age"] > 50)).astype("float32")
    fs = space()
    fs.adapt(DATA)
    x = fs(DATA)
    kerasrs.utils.set_random_seed(0)
    model = kerasrs.Sequential([kerasrs.Input((x.shape[1],)),
                                layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer=kerasrs.optimizers.Adam(0.05), loss="binary_crossentropy",
                  metrics=["accuracy"])
    model.fit(x, y, epochs=40, batch_size=32, verbose=0)
    assert model.evaluate(x, y, verbose=0)[1] > 0.9


def test_symbolic_encoding_for_numeric_features():
    fs = FeatureSpace({"age": "float_normalized", "size": "integer_categorical"})
    fs.adapt(DATA)
    inputs = fs.get_inputs()
    encoded = fs.get_encoded_features()
    assert encoded.shape == (None, 1 + 4)
    model = kerasrs.Model(inputs, layers.Dense(2)(encoded))
    columns = {k: DATA[k][:, None] for k in ("age", "size")}
    assert model.predict(columns, verbose=0).shape == (N, 2)
    with_strings = space()
    with_strings.adapt(DATA)
    with pytest.raises(ValueError, match="string features"):
        with_strings.get_inputs()


def test_errors_say_what_is_wrong():
    with pytest.raises(ValueError, match="unknown type"):
        FeatureSpace({"a": "float_magic"})
    with pytest.raises(ValueError, match="unknown features"):
        FeatureSpace({"a": "float"}, crosses=[("a", "b")])
    with pytest.raises(ValueError, match="output_mode"):
        FeatureSpace({"a": "float"}, output_mode="list")
    with pytest.raises(ValueError, match="adapt"):
        space()(DATA)
    fs = space()
    with pytest.raises(ValueError, match="no column"):
        fs.adapt({"age": DATA["age"]})
    fs.adapt(DATA)
    with pytest.raises(ValueError, match="no column"):
        fs({"age": DATA["age"]})
    with pytest.raises(ValueError, match="not encoded"):
        bad = FeatureSpace({"size": FeatureSpace.integer_categorical(output_mode="int")})
        bad.adapt(DATA)
        bad(DATA)
