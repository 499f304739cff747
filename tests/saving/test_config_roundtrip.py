"""get_config/from_config round trips for every registered class: layers (walking the layer
registry), models, optimizers, losses, metrics, initializers, regularizers and schedules.

Each object goes through the Keras-style dict and JSON text and must come back with an equal
config; layers with a sample input are also built, given the original's weights, and must
compute the same outputs. A layer class without sample arguments here that cannot be built with
defaults is skipped with a reason (add it to SAMPLES)."""

import json

import numpy as np
import pytest

import kerasrs
from kerasrs import initializers, layers, losses, metrics, optimizers, regularizers
from kerasrs.layers import base
from kerasrs.optimizers import schedules
from kerasrs.saving import deserialize_keras_object, serialize_keras_object


def _norm(config):
    return json.loads(json.dumps(config))


def _round_trip(obj):
    """The object rebuilt from the JSON text of its Keras-style dict; configs must match."""
    text = json.dumps(serialize_keras_object(obj))
    again = deserialize_keras_object(json.loads(text))
    assert type(again) is type(obj)
    assert _norm(again.get_config()) == _norm(obj.get_config())
    return again


# -- layers --------------------------------------------------------------------------------------
def _lstm_cell():
    return layers.LSTMCell(3)


SEQ, IMG, VOL = (2, 6, 3), (2, 6, 6, 3), (2, 4, 4, 4, 2)
SAMPLES = {  # class name -> (constructor kwargs or a callable returning them, input shape(s))
    "Activation": ({"activation": "tanh"}, (2, 3)),
    "Add": ({}, [(2, 3), (2, 3)]), "Average": ({}, [(2, 3), (2, 3)]),
    "Maximum": ({}, [(2, 3), (2, 3)]), "Minimum": ({}, [(2, 3), (2, 3)]),
    "Multiply": ({}, [(2, 3), (2, 3)]), "Subtract": ({}, [(2, 3), (2, 3)]),
    "Concatenate": ({"axis": -1}, [(2, 3), (2, 2)]), "Dot": ({"axes": 1}, [(2, 3), (2, 3)]),
    "Attention": ({}, [(2, 4, 3), (2, 5, 3)]), "AdditiveAttention": ({}, [(2, 4, 3), (2, 5, 3)]),
    "AveragePooling1D": ({"pool_size": 2}, SEQ), "AveragePooling2D": ({"pool_size": 2}, IMG),
    "AveragePooling3D": ({"pool_size": 2}, VOL), "MaxPooling1D": ({"pool_size": 3}, SEQ),
    "MaxPooling2D": ({"pool_size": 2}, IMG), "MaxPooling3D": ({"pool_size": 2}, VOL),
    "GlobalAveragePooling1D": ({}, SEQ), "GlobalAveragePooling2D": ({}, IMG),
    "GlobalAveragePooling3D": ({}, VOL), "GlobalMaxPooling1D": ({}, SEQ),
    "GlobalMaxPooling2D": ({"keepdims": True}, IMG), "GlobalMaxPooling3D": ({}, VOL),
    "BatchNormalization": ({"momentum": 0.9}, (2, 3)),
    "LayerNormalization": ({"epsilon": 1e-4}, (2, 3)),
    "GroupNormalization": ({"groups": 2}, (2, 4)), "UnitNormalization": ({}, (2, 3)),
    "Conv1D": ({"filters": 2, "kernel_size": 3}, SEQ),
    "Conv2D": ({"filters": 2, "kernel_size": 3, "padding": "same", "strides": 2}, IMG),
    "Conv3D": ({"filters": 2, "kernel_size": 2}, VOL),
    "Conv1DTranspose": ({"filters": 2, "kernel_size": 3}, SEQ),
    "Conv2DTranspose": ({"filters": 2, "kernel_size": 3, "strides": 2}, IMG),
    "Conv3DTranspose": ({"filters": 2, "kernel_size": 2}, VOL),
    "DepthwiseConv1D": ({"kernel_size": 3, "depth_multiplier": 2}, SEQ),
    "DepthwiseConv2D": ({"kernel_size": 3}, IMG),
    "SeparableConv1D": ({"filters": 2, "kernel_size": 3}, SEQ),
    "SeparableConv2D": ({"filters": 2, "kernel_size": 3}, IMG),
    "Cropping1D": ({"cropping": (1, 2)}, SEQ), "Cropping2D": ({}, IMG), "Cropping3D": ({}, VOL),
    "UpSampling1D": ({}, SEQ), "UpSampling2D": ({"size": (2, 3)}, IMG), "UpSampling3D": ({}, VOL),
    "ZeroPadding1D": ({}, SEQ), "ZeroPadding2D": ({"padding": (1, 2)}, IMG),
    "ZeroPadding3D": ({}, VOL),
    "Dense": ({"units": 3, "activation": "relu", "kernel_regularizer": "l2",
               "bias_initializer": "ones"}, (2, 4)),
    "EinsumDense": ({"equation": "ab,bc->ac", "output_shape": 3, "bias_axes": "c"}, (2, 4)),
    "Dropout": ({"rate": 0.3, "seed": 2}, (2, 4)),
    "Embedding": ({"input_dim": 10, "output_dim": 3}, ("int", (2, 5))),
    "Flatten": ({}, (2, 3, 4)), "Identity": ({}, (2, 3)), "Masking": ({}, SEQ),
    "Softmax": ({"axis": -1}, (2, 3)),
    "Rescaling": ({"scale": 0.5, "offset": 1.0}, (2, 3)),
    "Permute": ({"dims": (2, 1)}, (2, 3, 4)), "RepeatVector": ({"n": 3}, (2, 4)),
    "Reshape": ({"target_shape": (2, 2)}, (2, 4)),
    "InputLayer": ({"shape": (3,)}, None),
    "Lambda": ({"function": kerasrs.ops.relu}, (2, 3)),
    "LSTM": ({"units": 3, "return_sequences": True}, (2, 5, 4)),
    "GRU": ({"units": 3}, (2, 5, 4)), "SimpleRNN": ({"units": 3}, (2, 5, 4)),
    "LSTMCell": ({"units": 3}, None), "GRUCell": ({"units": 3}, None),
    "SimpleRNNCell": ({"units": 3}, None),
    "RNN": (lambda: {"cell": _lstm_cell()}, (2, 5, 4)),
    "StackedRNNCells": (lambda: {"cells": [layers.LSTMCell(3), layers.GRUCell(2)]}, None),
    "Bidirectional": (lambda: {"layer": layers.LSTM(3)}, (2, 5, 4)),
    "TimeDistributed": (lambda: {"layer": layers.Dense(2)}, (2, 5, 4)),
    "MultiHeadAttention": ({"num_heads": 2, "key_dim": 3}, ("call", (2, 4, 5), (2, 6, 5))),
    "Normalization": ({"mean": [0.0, 1.0, 2.0], "variance": [1.0, 2.0, 3.0]}, (2, 3)),
    "Discretization": ({"bin_boundaries": [-0.5, 0.5]}, (2, 3)),
    "CategoryEncoding": ({"num_tokens": 10, "output_mode": "count"}, ("int", (2, 5))),
    "IntegerLookup": ({"vocabulary": [1, 2, 3]}, ("int", (2, 5))),
    "Hashing": ({"num_bins": 4}, None),  # calls need pyfarmhash: tests/layers cover them
    "StringLookup": ({"vocabulary": ["a", "b"]}, None),
    "Resizing": ({"height": 3, "width": 2}, IMG), "CenterCrop": ({"height": 3, "width": 2}, IMG),
    "RandomCrop": ({"height": 3, "width": 2, "seed": 1}, IMG), "RandomFlip": ({"seed": 1}, IMG),
    "RandomRotation": ({"factor": 0.1}, IMG), "RandomZoom": ({"height_factor": 0.2}, IMG),
    "RandomTranslation": ({"height_factor": 0.1, "width_factor": 0.1}, IMG),
    "RandomContrast": ({"factor": 0.2}, IMG), "RandomBrightness": ({"factor": 0.2}, IMG),
    "AdaptiveAveragePooling1D": ({"output_size": 2}, SEQ),
    "AdaptiveAveragePooling2D": ({"output_size": 2}, IMG),
    "AdaptiveAveragePooling3D": ({"output_size": 2}, VOL),
    "AdaptiveMaxPooling1D": ({"output_size": 2}, SEQ),
    "AdaptiveMaxPooling2D": ({"output_size": (2, 1)}, IMG),
    "AdaptiveMaxPooling3D": ({"output_size": 1}, VOL),
    "AlphaDropout": ({"rate": 0.2, "seed": 1}, (2, 4)),
    "GaussianDropout": ({"rate": 0.2, "seed": 1}, (2, 4)),
    "GaussianNoise": ({"stddev": 0.1, "seed": 1}, (2, 4)),
    "SpatialDropout1D": ({"rate": 0.2}, SEQ), "SpatialDropout2D": ({"rate": 0.2}, IMG),
    "SpatialDropout3D": ({"rate": 0.2}, VOL),
    "ConvLSTM1D": ({"filters": 2, "kernel_size": 3, "padding": "same"}, (2, 3, 6, 2)),
    "ConvLSTM2D": ({"filters": 2, "kernel_size": 3, "return_sequences": True}, (2, 3, 5, 6, 2)),
    "ConvLSTM3D": ({"filters": 2, "kernel_size": 2}, (2, 2, 3, 3, 3, 2)),
    "GroupedQueryAttention": ({"head_dim": 2, "num_query_heads": 4, "num_key_value_heads": 2},
                              ("call", (2, 4, 5), (2, 6, 5))),
    "ReversibleEmbedding": ({"input_dim": 10, "output_dim": 3}, ("int", (2, 5))),
    "SpectralNormalization": (lambda: {"layer": layers.Dense(3)}, (2, 4)),
    "Wrapper": (lambda: {"layer": layers.Dense(3)}, None),
    "HashedCrossing": ({"num_bins": 5}, None), "MaxNumBoundingBoxes": ({"max_number": 3}, None),
    "Pipeline": (lambda: {"layers": [layers.Rescaling(0.5), layers.RandomFlip(seed=1)]}, IMG),
    "RandomColorDegeneration": ({"factor": 0.3, "seed": 1}, IMG),
    "RandomHue": ({"factor": 0.3, "seed": 1}, IMG),
    "RandomPosterization": ({"factor": 4, "seed": 1}, IMG),
    "RandomSaturation": ({"factor": 0.3, "seed": 1}, IMG),
    "RandomSharpness": ({"factor": 0.3, "seed": 1}, IMG),
}
_ABSTRACT = {"Merge", "Model", "Sequential", "Functional"}


def _layer_classes():
    return sorted(name for name, cls in base._LAYER_CLASSES.items()
                  if cls.__module__.startswith("kerasrs.") and not name.startswith(("_", "Base"))
                  and name not in _ABSTRACT)


def _inputs(spec, rng):
    if spec[0] == "int":
        return rng.integers(0, 10, spec[1]).astype("int32")
    if spec[0] == "call":
        return [rng.normal(size=s).astype("float32") for s in spec[1:]]
    if isinstance(spec, list):
        return [rng.normal(size=s).astype("float32") for s in spec]
    return rng.normal(size=spec).astype("float32")


def _call(layer, spec, x):
    out = layer(*x, training=False) if spec[0] == "call" else layer(x, training=False)
    out = out[0] if isinstance(out, (list, tuple)) else out
    return np.asarray(out.numpy())


@pytest.mark.parametrize("name", _layer_classes())
def test_layer_config_round_trip(name):
    cls = base._LAYER_CLASSES[name]
    kwargs, spec = SAMPLES.get(name, ({}, None))
    kwargs = kwargs() if callable(kwargs) else dict(kwargs)
    try:
        layer = cls(**kwargs)
    except TypeError as e:
        if name in SAMPLES:
            raise
        pytest.skip(f"{name}: no sample arguments in SAMPLES and no defaults ({e})")
    config = layer.get_config()
    json.dumps(config)  # plain JSON values only
    again = _round_trip(layer)
    if spec is None:
        return
    rng = np.random.default_rng(0)
    x = _inputs(spec, rng)
    y = _call(layer, spec, x)
    rebuilt = deserialize_keras_object(json.loads(json.dumps(serialize_keras_object(layer))))
    if not rebuilt.built:
        _call(rebuilt, spec, x)
    assert [w.shape for w in rebuilt.weights] == [w.shape for w in layer.weights]
    rebuilt.set_weights(layer.get_weights())
    np.testing.assert_allclose(_call(rebuilt, spec, x), y, rtol=1e-6, atol=1e-6)
    assert again is not layer


def test_every_layer_class_with_required_arguments_has_samples():
    """Tells which new layers the round trip above could only skip."""
    missing = []
    for name in _layer_classes():
        if name in SAMPLES:
            continue
        try:
            base._LAYER_CLASSES[name]()
        except TypeError:
            missing.append(name)
    if missing:
        pytest.skip(f"no sample arguments yet for {missing}; add them to SAMPLES")


# -- models --------------------------------------------------------------------------------------
def test_sequential_and_functional_model_configs_round_trip():
    kerasrs.utils.clear_session()
    seq = kerasrs.Sequential([layers.Input((4,)), layers.Dense(3, activation="relu"),
                              layers.Dropout(0.1), layers.Dense(2)], name="stack")
    a, b = layers.Input((4,), name="left"), layers.Input((2,), name="right")
    h = layers.Concatenate()([seq(a), b])
    func = kerasrs.Model({"left": a, "right": b}, [layers.Dense(1)(h), h], name="graph")
    for model in (seq, func):
        again = _round_trip(model)
        assert [type(x).__name__ for x in again.layers] == [type(x).__name__ for x in model.layers]
        assert [w.shape for w in again.weights] == [w.shape for w in model.weights]


# -- optimizers, losses, metrics, initializers, regularizers, schedules ----------------------------
OPTIMIZER_ARGS = {"SGD": {"momentum": 0.5, "nesterov": True}, "Adam": {"amsgrad": True},
                  "AdamW": {"weight_decay": 0.1}, "RMSprop": {"rho": 0.8, "centered": True},
                  "Lion": {"beta_1": 0.8}}


@pytest.mark.parametrize("cls", optimizers.ALL_OBJECTS, ids=lambda c: c.__name__)
def test_optimizer_config_round_trip(cls):
    opt = cls(learning_rate=0.003, clipnorm=1.5, **OPTIMIZER_ARGS.get(cls.__name__, {}))
    again = _round_trip(opt)
    assert again.learning_rate == pytest.approx(0.003)


def test_optimizer_with_a_schedule_round_trips():
    schedule = schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    again = _round_trip(optimizers.Adam(schedule))
    assert isinstance(again._learning_rate, schedules.ExponentialDecay)


LOSS_ARGS = {"BinaryCrossentropy": {"from_logits": True, "label_smoothing": 0.1},
             "CategoricalCrossentropy": {"from_logits": True},
             "SparseCategoricalCrossentropy": {"from_logits": True}, "Huber": {"delta": 2.0}}


@pytest.mark.parametrize("cls", losses.ALL_OBJECTS, ids=lambda c: c.__name__)
def test_loss_config_round_trip(cls):
    _round_trip(cls(reduction="sum", **LOSS_ARGS.get(cls.__name__, {})))


METRIC_ARGS = {"AUC": {"num_thresholds": 50, "curve": "PR"}, "Precision": {"thresholds": 0.3},
               "Recall": {"top_k": 2}, "TopKCategoricalAccuracy": {"k": 3},
               "SparseTopKCategoricalAccuracy": {"k": 2}, "BinaryAccuracy": {"threshold": 0.7},
               "IoU": {"num_classes": 3, "target_class_ids": [0, 2]},
               "MeanIoU": {"num_classes": 3}, "OneHotIoU": {"num_classes": 3,
                                                            "target_class_ids": [1]},
               "OneHotMeanIoU": {"num_classes": 4}, "BinaryIoU": {"threshold": 0.3},
               "SensitivityAtSpecificity": {"specificity": 0.4},
               "SpecificityAtSensitivity": {"sensitivity": 0.6},
               "PrecisionAtRecall": {"recall": 0.7}, "RecallAtPrecision": {"precision": 0.2},
               "FBetaScore": {"beta": 2.0, "average": "macro"}, "R2Score": {"num_regressors": 1},
               "F1Score": {"threshold": 0.4}, "FalsePositives": {"thresholds": [0.2, 0.6]},
               "CategoricalCrossentropy": {"label_smoothing": 0.1}}


@pytest.mark.parametrize("cls", metrics.ALL_OBJECTS, ids=lambda c: c.__name__)
def test_metric_config_round_trip(cls):
    _round_trip(cls(name=f"my_{cls.__name__.lower()}", **METRIC_ARGS.get(cls.__name__, {})))


@pytest.mark.parametrize("name", sorted(initializers._CLASSES))
def test_initializer_config_round_trip(name):
    cls = initializers._CLASSES[name]
    args = {"Constant": {"value": 0.5}, "RandomNormal": {"stddev": 0.2, "seed": 1},
            "Orthogonal": {"gain": 2.0, "seed": 3}, "Identity": {"gain": 0.5}}
    obj = cls(**args.get(cls.__name__, {}))
    again = _round_trip(obj)
    shape = (4, 1, 3) if cls.__name__ == "STFT" else (3, 3)  # STFT kernels are 3-D
    if not getattr(obj, "seed", 0) is None:
        np.testing.assert_array_equal(again(shape), obj(shape))


@pytest.mark.parametrize("obj", [regularizers.L1(0.3), regularizers.L2(0.2),
                                 regularizers.L1L2(0.1, 0.4),
                                 regularizers.OrthogonalRegularizer(0.2, "columns")],
                         ids=lambda o: type(o).__name__)
def test_regularizer_config_round_trip(obj):
    again = _round_trip(obj)
    w = kerasrs.Variable(np.array([[1.0, -2.0]], "float32"))
    np.testing.assert_allclose(again(w).numpy(), obj(w).numpy())


SCHEDULE_ARGS = {
    "ExponentialDecay": {"initial_learning_rate": 0.1, "decay_steps": 10, "decay_rate": 0.9},
    "PiecewiseConstantDecay": {"boundaries": [5, 10], "values": [0.1, 0.05, 0.01]},
    "InverseTimeDecay": {"initial_learning_rate": 0.1, "decay_steps": 10, "decay_rate": 0.5},
    "PolynomialDecay": {"initial_learning_rate": 0.1, "decay_steps": 10, "power": 2.0},
    "CosineDecay": {"initial_learning_rate": 0.1, "decay_steps": 10, "alpha": 0.1},
    "CosineDecayRestarts": {"initial_learning_rate": 0.1, "first_decay_steps": 10},
}


@pytest.mark.parametrize("name", sorted(schedules.ALL_SCHEDULES))
def test_schedule_config_round_trip(name):
    cls = schedules.ALL_SCHEDULES[name]
    if name not in SCHEDULE_ARGS:
        pytest.skip(f"no sample arguments for {name}; add them to SCHEDULE_ARGS")
    obj = cls(**SCHEDULE_ARGS[name])
    again = _round_trip(obj)
    for step in (0, 7, 12):
        assert float(again(step)) == pytest.approx(float(obj(step)))
