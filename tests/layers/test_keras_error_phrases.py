"""Argument and input errors raise Keras's exception type with the phrase Keras's own tests (and
users' code) match on, inside kerasrs's message, which still names the layer and the value.

Each phrase is the regex of a test in Keras 3.15.1's wheel (tests/keras_conformance runs them).
"""

import numpy as np
import pytest

from kerasrs import layers


def _call(layer, *args, **kwargs):
    return lambda: layer(*args, **kwargs)


def _x(*shape):
    return np.ones(shape, dtype="float32")


CASES = [
    ("dense units", lambda: layers.Dense(0, name="d"), "d: .*positive integer.*units=0"),
    ("embedding input_dim", lambda: layers.Embedding(3.7, 2),
     "`input_dim` must be a positive integer"),
    ("embedding output_dim", lambda: layers.Embedding(3, 3.7),
     "`output_dim` must be a positive integer"),
    ("conv filters", lambda: layers.Conv1D(0, 2),
     "Invalid value for argument `filters`. Expected a strictly positive value. "
     "Received filters=0."),
    ("conv transpose filters", lambda: layers.Conv2DTranspose(0, 2),
     "Invalid value for argument `filters`. Expected a strictly positive value."),
    ("separable depth_multiplier", lambda: layers.SeparableConv1D(2, 2, depth_multiplier=0),
     "Invalid value for argument `depth_multiplier`. Expected a strictly positive value. "
     "Received depth_multiplier=0."),
    ("conv kernel_size", lambda: layers.Conv2D(2, (1, 0)),
     r"The `kernel_size` argument must be a tuple of \d+ integers. Received kernel_size=\(1, 0\), "
     r"including values \{0\} that do not satisfy `value > 0`"),
    ("depthwise strides", lambda: layers.DepthwiseConv2D(2, strides=(1, 0)),
     r"The `strides` argument must be a tuple of \d+ integers. Received strides=\(1, 0\), "
     r"including values \{0\} that do not satisfy `value > 0`"),
    ("conv strides with dilation", lambda: layers.Conv2D(2, 2, strides=2, dilation_rate=(2, 1)),
     r"`strides > 1` not supported in conjunction with `dilation_rate > 1`. Received: "
     r"strides=\(2, 2\) and dilation_rate=\(2, 1\)"),
    ("conv groups", lambda: layers.Conv2D(5, 2, groups=0),
     "The number of groups must be a positive integer. Received: groups=0."),
    ("conv groups divide filters", lambda: layers.Conv2D(5, 2, groups=2),
     "The number of filters must be evenly divisible by the number of groups. Received: "
     "groups=2, filters=5."),
    ("conv transpose output_padding",
     lambda: layers.Conv2DTranspose(2, 3, strides=(2, 3), output_padding=(1, 3)),
     r"`output_padding` must be strictly less than `strides`"),
    ("conv output size", _call(layers.SeparableConv1D(2, 11), _x(4, 10, 12)),
     "Computed output size would be zero or negative."),
    ("relu max_value", lambda: layers.ReLU(max_value=-10),
     "max_value of a ReLU layer cannot be a negative value"),
    ("relu negative_slope", lambda: layers.ReLU(negative_slope=None),
     "negative_slope of a ReLU layer cannot be None or a negative value"),
    ("relu threshold", lambda: layers.ReLU(threshold=None),
     "threshold of a ReLU layer cannot be None or a negative value"),
    ("leaky relu", lambda: layers.LeakyReLU(negative_slope=None),
     "The negative_slope value of a Leaky ReLU layer cannot be None"),
    ("dropout rate", lambda: layers.Dropout(1.5),
     "Invalid value received for argument `rate`. Expected a float value between 0 and 1."),
    ("alpha dropout rate", lambda: layers.AlphaDropout(-0.5),
     "Invalid value received for argument `rate`. Expected a float value between 0 and 1."),
    ("reshape entry", lambda: layers.Reshape((-2, 5)),
     r"non-negative integer.*-1.*target_shape=\(-2, 5\)"),
    ("reshape unknowns", lambda: layers.Reshape((-1, -1, 5)),
     r"at most one unknown dimension.*target_shape=\(-1, -1, 5\)"),
    ("permute", lambda: layers.Permute((0, 1, 2)), r"Invalid permutation .*dims.*"),
    ("attention score_mode", lambda: layers.Attention(score_mode="x"),
     "Invalid value for argument score_mode. Expected one of {'dot', 'concat'}"),
    ("attention not a list", _call(layers.Attention(), _x(1, 2, 2)), "must be called on a list"),
    ("attention list length", _call(layers.Attention(), [_x(1, 2, 2)] * 4), "length 2 or 3"),
    ("attention mask", _call(layers.Attention(), [_x(1, 2, 2)] * 2, mask=_x(1, 2)),
     "layer mask must be a list"),
    ("mha num_heads", lambda: layers.MultiHeadAttention(num_heads=1.5, key_dim=4),
     "argument `num_heads`"),
    ("mha key_dim", lambda: layers.MultiHeadAttention(num_heads=4, key_dim=0),
     "argument `key_dim`"),
    ("mha value_dim", lambda: layers.MultiHeadAttention(num_heads=4, key_dim=4, value_dim=-2),
     "argument `value_dim`"),
    ("group norm groups", lambda: layers.GroupNormalization(groups=0), "argument `groups`"),
    ("group norm too many groups", _call(layers.GroupNormalization(groups=5), _x(2, 4)),
     "cannot be more than the number of channels"),
    ("group norm groups not dividing", _call(layers.GroupNormalization(groups=3), _x(2, 4)),
     "must be a multiple of the number of channels"),
    ("group norm unknown channels",
     _call(layers.GroupNormalization(), layers.Input(shape=(2, 2, 2, None))),
     "input tensor should have a defined dimension but the layer received an input with shape"),
    ("subtract inputs", _call(layers.Subtract(), [_x(2, 3)] * 3),
     "layer should be called on exactly 2 inputs"),
    ("concatenate shapes", _call(layers.Concatenate(axis=-1), [_x(1, 2, 5), _x(1, 1, 4)]),
     "requires inputs with matching shapes except for the concatenation axis"),
    ("cropping1d", _call(layers.Cropping1D((3, 3)), _x(3, 5, 7)),
     "`cropping` parameter of `Cropping1D` layer must be smaller than"),
    ("cropping2d", _call(layers.Cropping2D(((4, 5), (0, 0))), _x(3, 8, 9, 5)),
     "Values in `cropping` argument should be smaller than the corresponding spatial "
     "dimension of the input."),
    ("cropping3d", _call(layers.Cropping3D(((8, 1), (1, 1), (1, 1))), _x(3, 7, 9, 13, 5)),
     "Values in `cropping` argument should be smaller than the"),
    ("time distributed mask", _call(layers.TimeDistributed(layers.Dense(2)), _x(4, 5, 3),
                                     mask=np.ones((4, 6), dtype=bool)),
     r"The `mask` passed to the `TimeDistributed` layer has a shape.*"),
]


@pytest.mark.parametrize("make, phrase", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_errors_carry_keras_phrase(make, phrase):
    with pytest.raises(ValueError, match=phrase):
        make()


def test_merge_masks_follow_keras():
    """Merge masks: the OR of the input masks (None if one input has none), from Tensors,
    NumPy arrays or symbolic tensors, with Keras's argument checks."""
    a, b = np.array([[True, False, False]]), np.array([[False, False, True]])
    x = [_x(1, 3, 2)] * 2
    out = layers.Add().compute_mask(x, [a, b])  # NumPy masks (was: a memoryview error)
    assert np.asarray(out).tolist() == [[True, False, True]]
    assert layers.Add().compute_mask(x, [a, None]) is None
    sym = [layers.Input((3, 2)), layers.Input((3, 2))]
    assert tuple(layers.Maximum().compute_mask(sym, [layers.Input((3,), dtype="bool")] * 2)
                 .shape) == (None, 3)
    cat = layers.Concatenate().compute_mask(x, [a, None])
    assert np.asarray(cat).tolist() == [[True, True, True]]
    with pytest.raises(ValueError, match="`mask` should be a list."):
        layers.Add().compute_mask(x, a)
    with pytest.raises(ValueError, match="`inputs` should be a list."):
        layers.Add().compute_mask(x[0], [a, b])
    with pytest.raises(ValueError, match=" should have the same length."):
        layers.Add().compute_mask(x, [a])


@pytest.mark.parametrize("noise_shape, phrase", [
    ("Invalid", "Expected a tuple or list of integers."),
    ((20, 1.5, 10), "Expected all elements to be integers or None."),
    ((20, -1, 10), "Expected all dimensions to be positive integers or None."),
    ((20, 0, 10), "Expected all dimensions to be positive integers or None."),
])
def test_dropout_checks_noise_shape(noise_shape, phrase):
    with pytest.raises(ValueError, match="Invalid value received for argument `noise_shape`. "
                       + phrase):
        layers.Dropout(0.5, noise_shape=noise_shape)
    assert layers.Dropout(0.5, noise_shape=[None, 1, 3]).noise_shape == (None, 1, 3)


def test_softmax_refuses_a_mask_that_would_grow_the_inputs():
    inputs = np.array([[1.0, 2.0, 1.0]])
    with pytest.raises(ValueError, match="broadcastable"):
        layers.Softmax()(inputs, mask=np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]))
    with pytest.raises(ValueError, match="must not have more dimensions"):
        layers.Softmax()(inputs, mask=np.array([[[1.0, 0.0, 1.0]]]))
    out = layers.Softmax()(inputs, mask=np.array([[1.0, 0.0, 1.0]]))
    np.testing.assert_allclose(out.numpy(), [[0.5, 0.0, 0.5]], atol=1e-6)


def test_masking_mask_from_numpy_and_symbolic_inputs():
    x = np.array([[[0.0, 0.0], [1.0, 2.0], [0.0, 0.0]], [[2.0, 2.0], [0.0, 0.0], [2.0, 1.0]]])
    mask = layers.Masking(mask_value=0.0).compute_mask(x)  # was: 'bool' has no attribute 'any'
    assert np.asarray(mask).tolist() == [[False, True, False], [True, False, True]]
    assert tuple(layers.Masking().compute_mask(layers.Input((3, 2))).shape) == (None, 3)
    np.testing.assert_array_equal(layers.Masking()(x).numpy(), x)


def test_conv_lstm_refuses_strides_with_dilation():
    with pytest.raises(ValueError, match=r"Specifying `strides > 1` is not compatible with "
                                         r"`dilation_rate > 1`"):
        layers.ConvLSTM1D(filters=1, kernel_size=1, strides=2, padding="same", dilation_rate=3)


@pytest.mark.parametrize("cls, phrase", [
    (layers.LayerNormalization, "Expected an int or a list/tuple of ints for the argument 'axis'"),
    (layers.UnitNormalization, "Invalid value for `axis` argument: expected an int or a "
                               "list/tuple of ints."),
])
def test_normalization_axis_type_errors(cls, phrase):
    with pytest.raises(TypeError, match=phrase):
        cls(axis={"axis": -1})


@pytest.mark.parametrize("make, error, phrase", [
    (lambda: layers.RepeatVector(n="3"), TypeError, "Expected an integer value for `n`"),
    (lambda: layers.RepeatVector(n=3.5), TypeError, "Expected an integer value for `n`"),
    (lambda: layers.RepeatVector(n=0), ValueError, "should be a positive integer"),
    (lambda: layers.UpSampling1D(size=-2), ValueError, "should be a positive integer"),
    (lambda: layers.UpSampling1D(size="2"), TypeError, "Expected an integer value for `size`"),
])
def test_integer_arguments_keras_types_and_phrases(make, error, phrase):
    with pytest.raises(error, match=phrase):
        make()


def test_adaptive_pooling_config_holds_a_tuple():
    config = layers.AdaptiveAveragePooling2D(output_size=(8, 16)).get_config()
    assert config["output_size"] == (8, 16)
    assert layers.AdaptiveAveragePooling2D.from_config(config).output_size == (8, 16)


def test_input_layer_arguments_follow_keras():
    with pytest.raises(ValueError, match="`sparse=True` is not supported"):
        layers.InputLayer(shape=(2,), sparse=True)
    with pytest.raises(ValueError, match="`ragged=True` is not supported"):
        layers.InputLayer(shape=(2,), ragged=True)
    with pytest.raises(ValueError, match="cannot pass both `shape` and `batch_shape`"):
        layers.InputLayer(shape=(2, 3), batch_shape=(2, 3))
    with pytest.raises(ValueError, match="cannot pass both `batch_size` and `batch_shape`"):
        layers.InputLayer(batch_size=2, batch_shape=(2, 3))
    with pytest.raises(ValueError, match="pass a `shape` argument."):
        layers.InputLayer(shape=None, batch_shape=None)
    with pytest.warns(UserWarning, match="Argument `input_shape` is deprecated. Use `shape`"):
        layer = layers.InputLayer(input_shape=(4,))
    assert layer.batch_shape == (None, 4)
