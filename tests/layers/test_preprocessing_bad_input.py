"""Bad input to the preprocessing layers (issue 23, preprocessing layers): a clear error naming
the layer and the argument or data, never NaN statistics, a ZeroDivisionError or silent OOVs."""

import numpy as np
import pytest

import kerasrs
from kerasrs import layers


@pytest.fixture(autouse=True)
def fresh_session():
    kerasrs.utils.clear_session()


@pytest.mark.parametrize("data", [[], np.empty((0, 3), "float32"), [np.empty((0, 2))]])
def test_preprocessing_layers_normalization_adapt_on_empty_data_is_refused(data):
    # before: adapt([]) raised ZeroDivisionError from inside the statistics
    layer = layers.Normalization()
    with pytest.raises(ValueError, match=r"normalization\.adapt: the data have no samples"):
        layer.adapt(data)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_preprocessing_layers_normalization_adapt_refuses_nan_and_inf(bad):
    # before: mean [1.5, nan] and every output NaN, silently (a RuntimeWarning at most)
    data = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, bad]], "float32")
    layer = layers.Normalization()
    with pytest.raises(ValueError, match=r"normalization\.adapt: the data hold 1 NaN or inf "
                                         r"value\(s\) \(batch 0, first at index \(2, 1\)\).*"
                                         r"nan_to_num.*shape \(3, 2\)"):
        layer.adapt(data)
    batches = [data[:2], data[2:]]  # in a later batch of a stream, too
    with pytest.raises(ValueError, match=r"batch 1, first at index \(0, 1\)"):
        layers.Normalization().adapt(batches)
    layer.adapt(np.nan_to_num(data, posinf=0.0, neginf=0.0))
    assert np.isfinite(layer.mean.numpy()).all()


@pytest.mark.parametrize("length", [0, -1, 2.5, True])
def test_preprocessing_layers_text_vectorization_output_sequence_length_must_be_positive(length):
    # before: 0 and -1 were accepted; 0 then meant "the longest string", -1 cut a token
    with pytest.raises(ValueError, match=r"`output_sequence_length` must be None or an int >= 1"
                                         rf".*output_sequence_length={length!r}"):
        layers.TextVectorization(output_sequence_length=length)
    assert layers.TextVectorization(output_sequence_length=np.int64(1)).output_sequence_length == 1


_SMALL_MAX_TOKENS_LAYERS = [  # (make, the reserved indices: mask token and OOV indices)
    (lambda m: layers.TextVectorization(max_tokens=m), 2),
    (lambda m: layers.TextVectorization(max_tokens=m, output_mode="multi_hot"), 2),
    (lambda m: layers.StringLookup(max_tokens=m), 1),
    (lambda m: layers.StringLookup(max_tokens=m, mask_token="", num_oov_indices=2), 3),
    (lambda m: layers.IntegerLookup(max_tokens=m, num_oov_indices=3), 3),
    (lambda m: layers.IntegerLookup(max_tokens=m, num_oov_indices=0), 0),
]


def _adapt_abc(layer):
    layer.adapt(np.array([7, 8, 7]) if isinstance(layer, layers.IntegerLookup) else
                np.array(["a", "b", "a"]))


@pytest.mark.parametrize("make, reserved", _SMALL_MAX_TOKENS_LAYERS)
@pytest.mark.parametrize("max_tokens", [1, 0, -1, 2.0, True])
def test_preprocessing_layers_max_tokens_of_one_or_less_is_refused_as_keras(make, reserved,
                                                                           max_tokens):
    with pytest.raises(ValueError, match=r"if set, `max_tokens` must be an int greater than 1.*"
                                         rf"max_tokens={max_tokens!r}"):
        make(max_tokens)


@pytest.mark.parametrize("make, reserved", _SMALL_MAX_TOKENS_LAYERS)
def test_preprocessing_layers_accept_a_small_max_tokens_as_keras(make, reserved):
    # before: max_tokens=2 (and up to the reserved count) was refused, so a Keras config with it
    # did not load; Keras accepts any max_tokens above 1
    layer = make(2)
    config = layer.get_config()
    assert type(layer).from_config(config).get_config()["max_tokens"] == 2
    if reserved >= 2:  # no room for a learned token: an empty vocabulary, said in a warning
        with pytest.warns(UserWarning, match=rf"max_tokens=2 leaves no index for a learned token "
                                             rf"after the {reserved} reserved ones"):
            _adapt_abc(layer)
        assert layer.vocabulary_size() == reserved
    else:
        _adapt_abc(layer)
        assert layer.vocabulary_size() == 2
    layer = make(max(reserved + 1, 2))
    _adapt_abc(layer)
    assert layer.vocabulary_size() == max(reserved + 1, 2)


@pytest.mark.parametrize("data", [np.array([1, 2]), np.array([[1.0], [2.0]]), np.array([True])])
def test_preprocessing_layers_string_lookup_refuses_numbers(data):
    # before: 1 and 2 were read as the strings "1" and "2": all OOV, silently
    layer = layers.StringLookup(vocabulary=["a", "b"])
    with pytest.raises(ValueError, match=r"StringLookup takes strings; use IntegerLookup.*"
                                         rf"dtype {data.dtype.name[:4]}"):
        layer(data)
    with pytest.raises(ValueError, match=r"StringLookup takes strings"):
        layers.StringLookup().adapt(data)
    assert layer(np.array(["b", "z"])).numpy().tolist() == [2, 0]
    inverse = layers.StringLookup(vocabulary=["a", "b"], invert=True)
    assert inverse(np.array([1, 2])).numpy().tolist() == ["a", "b"]  # ids are its input
