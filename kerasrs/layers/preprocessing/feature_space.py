"""`FeatureSpace`: one object that turns a dict of structured-data columns (numbers, integer and
string categories) into the vector a model trains on (Keras's ``keras.utils.FeatureSpace``).

Keras feeds it ``tf.data`` datasets; kerasrs feeds it dicts of arrays (or an iterable of such
dicts, such as batches), and ``feature_space(columns)`` returns a float32 Tensor
``(samples, encoded size)`` (``output_mode="concat"``) or a dict of per-feature Tensors
(``output_mode="dict"``). Each feature is preprocessed by its layer (Normalization,
Discretization, StringLookup/IntegerLookup, Hashing, Rescaling), crossed features by
HashedCrossing, and categorical ones are one-hot encoded; features are concatenated in sorted
name order, crosses after them.

Example::

    space = FeatureSpace({"age": "float_normalized", "job": "string_categorical",
                          "zip": "integer_hashed"}, crosses=[("job", "zip")])
    space.adapt({"age": ages, "job": jobs, "zip": zips})
    x = space({"age": ages, "job": jobs, "zip": zips})   # (samples, 1 + jobs + 32 + 32)
"""

import numpy as np

from kerasrs import ops
from kerasrs.layers.base import Layer

def _layers():
    """``kerasrs.layers`` (imported when first needed: this module is part of it)."""
    import kerasrs.layers

    return kerasrs.layers


_PRESETS = ("float", "float_rescaled", "float_normalized", "float_discretized",
            "integer_categorical", "string_categorical", "integer_hashed", "string_hashed")


class Cross:
    """A crossed feature: the hashed combination of ``feature_names`` into ``crossing_dim``
    bins, encoded as ``"one_hot"`` or ``"int"``. Named ``"<a>_X_<b>"``."""

    def __init__(self, feature_names, crossing_dim, output_mode="one_hot"):
        if output_mode not in ("int", "one_hot"):
            raise ValueError("FeatureSpace.cross: `output_mode` must be 'int' or 'one_hot'. "
                             f"Received: output_mode={output_mode!r}")
        self.feature_names = tuple(feature_names)
        self.crossing_dim, self.output_mode = crossing_dim, output_mode

    @property
    def name(self):
        return "_X_".join(self.feature_names)

    def get_config(self):
        return {"feature_names": list(self.feature_names), "crossing_dim": self.crossing_dim,
                "output_mode": self.output_mode}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class Feature:
    """One input column: its ``dtype`` ("float32", "int32" or "string"), the layer that
    preprocesses it, and how its result is encoded (``"float"``, ``"int"`` or ``"one_hot"``)."""

    def __init__(self, dtype, preprocessor, output_mode):
        if output_mode not in ("int", "one_hot", "float"):
            raise ValueError("FeatureSpace.feature: `output_mode` must be 'int', 'one_hot' or "
                             f"'float'. Received: output_mode={output_mode!r}")
        if isinstance(preprocessor, dict):
            preprocessor = _layers().deserialize(preprocessor)
        self.dtype, self.preprocessor, self.output_mode = dtype, preprocessor, output_mode

    def get_config(self):
        return {"dtype": self.dtype, "preprocessor": _layers().serialize(self.preprocessor),
                "output_mode": self.output_mode}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class TFDIdentity(Layer):
    """The preprocessor of a plain "float" feature: its values as float32 (Keras's class
    name, so that Keras's FeatureSpace configs load)."""

    def call(self, inputs):
        return ops.cast(inputs, "float32")

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)


def _cardinality(layer):
    """How many ids a categorical preprocessor produces (the one-hot size)."""
    if isinstance(layer, (_layers().StringLookup, _layers().IntegerLookup)):
        return layer.vocabulary_size()
    if isinstance(layer, _layers().CategoryEncoding):
        return layer.num_tokens
    if isinstance(layer, (_layers().Discretization, _layers().Hashing,
                          _layers().HashedCrossing)):
        return layer.num_bins
    return None


class FeatureSpace(Layer):
    """Preprocess and encode a dict of feature columns into one vector per sample.

    Args:
        features: dict feature name -> a preset name ("float", "float_rescaled",
            "float_normalized", "float_discretized", "integer_categorical",
            "string_categorical", "integer_hashed", "string_hashed") or a `Feature` from the
            class methods (``FeatureSpace.float_normalized()``, ...).
        output_mode: "concat" (one float32 Tensor) or "dict" (one Tensor per feature).
        crosses: optional list of `Cross` objects or tuples of feature names.
        crossing_dim: hash bins of crosses given as tuples.
        hashing_dim: hash bins of the "*_hashed" presets.
        num_discretization_bins: bins of the "float_discretized" preset.
        name: the layer's name.

    Raises:
        ValueError: for no features, an unknown preset or output mode, or a cross naming an
            unknown feature.
    """

    @classmethod
    def cross(cls, feature_names, crossing_dim, output_mode="one_hot"):
        return Cross(feature_names, crossing_dim, output_mode=output_mode)

    @classmethod
    def feature(cls, dtype, preprocessor, output_mode):
        return Feature(dtype, preprocessor, output_mode)

    @classmethod
    def float(cls, name=None):
        """Values passed through as float32."""
        return Feature("float32", TFDIdentity(name=name and f"{name}_preprocessor"), "float")

    @classmethod
    def float_rescaled(cls, scale=1.0, offset=0.0, name=None):
        """``value * scale + offset``."""
        return Feature("float32", _layers().Rescaling(scale=scale, offset=offset,
                                            name=name and f"{name}_preprocessor"), "float")

    @classmethod
    def float_normalized(cls, name=None):
        """Standardized with the mean and variance `adapt` measures."""
        return Feature("float32", _layers().Normalization(
            axis=-1, name=name and f"{name}_preprocessor"), "float")

    @classmethod
    def float_discretized(cls, num_bins, bin_boundaries=None, output_mode="one_hot", name=None):
        """Bucketed into ``num_bins`` quantile bins (from `adapt`) or ``bin_boundaries``."""
        return Feature("float32", _layers().Discretization(
            num_bins=num_bins, bin_boundaries=bin_boundaries,
            name=name and f"{name}_preprocessor"), output_mode)

    @classmethod
    def integer_categorical(cls, max_tokens=None, num_oov_indices=1, output_mode="one_hot",
                            name=None):
        """Integer categories indexed by their `adapt` vocabulary."""
        return Feature("int32", _layers().IntegerLookup(
            max_tokens=max_tokens, num_oov_indices=num_oov_indices,
            name=name and f"{name}_preprocessor"), output_mode)

    @classmethod
    def string_categorical(cls, max_tokens=None, num_oov_indices=1, output_mode="one_hot",
                           name=None):
        """String categories indexed by their `adapt` vocabulary."""
        return Feature("string", _layers().StringLookup(
            max_tokens=max_tokens, num_oov_indices=num_oov_indices,
            name=name and f"{name}_preprocessor"), output_mode)

    @classmethod
    def string_hashed(cls, num_bins, output_mode="one_hot", name=None):
        """Strings hashed into ``num_bins`` bins."""
        return Feature("string", _layers().Hashing(num_bins=num_bins,
                                                 name=name and f"{name}_preprocessor"),
                       output_mode)

    @classmethod
    def integer_hashed(cls, num_bins, output_mode="one_hot", name=None):
        """Integers hashed into ``num_bins`` bins."""
        return Feature("int32", _layers().Hashing(num_bins=num_bins,
                                                name=name and f"{name}_preprocessor"),
                       output_mode)

    def __init__(self, features, output_mode="concat", crosses=None, crossing_dim=32,
                 hashing_dim=32, num_discretization_bins=32, name=None):
        super().__init__(name=name)
        if not features:
            raise ValueError("FeatureSpace: `features` must name at least one feature. "
                             f"Received: features={features!r}")
        if output_mode not in ("dict", "concat"):
            raise ValueError("FeatureSpace: `output_mode` must be 'dict' or 'concat'. "
                             f"Received: output_mode={output_mode!r}")
        self.output_mode, self.crossing_dim = output_mode, crossing_dim
        self.hashing_dim, self.num_discretization_bins = hashing_dim, num_discretization_bins
        self.features = {key: self._standardize(key, value) for key, value in features.items()}
        self.crosses = [self._cross(c) for c in crosses or []]
        self.preprocessors = {key: f.preprocessor for key, f in self.features.items()}
        self.crossers = {c.name: _layers().HashedCrossing(c.crossing_dim, name=c.name)
                         for c in self.crosses}
        self.one_hot_encoders = {}
        self.inputs = None
        self.encoded_features = None
        self._is_adapted = not self._adaptable()

    def _standardize(self, key, feature):
        if isinstance(feature, Feature):
            return feature
        if isinstance(feature, dict):  # a serialized Feature
            return Feature.from_config(feature.get("config", feature))
        if feature not in _PRESETS:
            raise ValueError(f"FeatureSpace: feature {key!r} has an unknown type {feature!r}; "
                             f"use one of {_PRESETS} or a FeatureSpace.<type>() Feature.")
        if feature == "float_discretized":
            return self.float_discretized(self.num_discretization_bins, name=key)
        if feature.endswith("_hashed"):
            return getattr(self, feature)(self.hashing_dim, name=key)
        return getattr(self, feature)(name=key)

    def _cross(self, cross):
        if isinstance(cross, dict):
            cross = Cross.from_config(cross.get("config", cross))
        if not isinstance(cross, Cross):
            if not self.crossing_dim:
                raise ValueError("FeatureSpace: crosses given as names need `crossing_dim`.")
            cross = Cross(cross, self.crossing_dim)
        unknown = [k for k in cross.feature_names if k not in self.features]
        if unknown:
            raise ValueError(f"FeatureSpace: the cross {cross.feature_names} names unknown "
                             f"features {unknown}; the features are {sorted(self.features)}.")
        return cross

    def _adaptable(self):
        """Names of the features whose preprocessor learns from data and has not been given
        its statistics."""
        names = []
        for key, layer in self.preprocessors.items():
            if isinstance(layer, _layers().Normalization) and layer.input_mean is not None:
                continue
            if isinstance(layer, _layers().Discretization) and layer.bin_boundaries is not None:
                continue
            if hasattr(layer, "adapt"):
                names.append(key)
        return names

    # -- adapting -------------------------------------------------------------------------------
    def adapt(self, dataset):
        """Learn the preprocessors' statistics (means, vocabularies, bins) from the data.

        Args:
            dataset: a dict of columns (arrays or lists, one value per sample), or an iterable
                of such dicts (batches); ``(features, labels)`` pairs are accepted too.

        Raises:
            ValueError: for data that is not a dict (or dicts), or lacks a feature.
        """
        columns = _columns(dataset)
        for key in self._adaptable():
            if key not in columns:
                raise ValueError(f"FeatureSpace.adapt: the data has no column {key!r}. "
                                 f"Received: columns {sorted(columns)}")
            self.preprocessors[key].adapt(_as_column(columns[key]))
        self._is_adapted = True
        self.built = True

    def _check_adapted(self):
        if not self._is_adapted:
            raise ValueError("FeatureSpace: call adapt(data) before using it (it learns the "
                             f"statistics of {self._adaptable()}).")

    # -- encoding -------------------------------------------------------------------------------
    def _encode(self, columns):
        """The encoded features of ``columns`` (dict of (samples, 1) values), sorted names
        first, crosses after: as a dict, or concatenated."""
        processed = {key: self.preprocessors[key](columns[key]) for key in self.features}
        crossed = {c.name: self.crossers[c.name]([processed[k] for k in c.feature_names])
                   for c in self.crosses}
        specs = {**{k: self.features[k] for k in processed}, **{c.name: c for c in self.crosses}}
        layers = {**self.preprocessors, **self.crossers}
        encoded = {}
        for key, value in [*sorted(processed.items()), *sorted(crossed.items())]:
            if specs[key].output_mode == "one_hot":
                value = self._one_hot(key, value, layers[key])
            encoded[key] = value
        if self.output_mode == "dict":
            return encoded
        for key, value in encoded.items():
            if str(value.dtype) not in ("float32", "float64", "float16", "bfloat16"):
                raise ValueError(f"FeatureSpace: cannot concatenate feature {key!r}: it is not "
                                 f"encoded (dtype {value.dtype}); use output_mode='dict' or a "
                                 "'one_hot' or 'float' output mode.")
        return ops.concatenate(list(encoded.values()), axis=-1)

    def _one_hot(self, key, value, layer):
        if key not in self.one_hot_encoders:
            size = _cardinality(layer)
            if size is None:
                raise ValueError(f"FeatureSpace: feature {key!r} has output_mode='one_hot' but "
                                 "its preprocessor's number of categories is unknown; use "
                                 "output_mode='int'.")
            self.one_hot_encoders[key] = _layers().CategoryEncoding(num_tokens=size,
                                                                      output_mode="multi_hot")
        return self.one_hot_encoders[key](value)

    def __call__(self, data):
        """Encode a dict of columns (or one sample of scalars).

        Returns:
            float32 Tensor ``(samples, size)`` ("concat", ``(size,)`` for one sample of
            scalars) or a dict of Tensors ("dict").

        Raises:
            ValueError: before `adapt`, for data that is not a dict, or a missing column.
        """
        self._check_adapted()
        if not isinstance(data, dict):
            raise ValueError("FeatureSpace: call it with a dict of columns. Received: "
                             f"{type(data).__name__}")
        missing = [k for k in self.features if k not in data]
        if missing:
            raise ValueError(f"FeatureSpace: the data has no column(s) {missing}. Received: "
                             f"columns {sorted(data)}")
        single = all(np.ndim(_numpy(data[k])) == 0 for k in self.features)
        columns = {k: _as_column(np.atleast_1d(_numpy(data[k]))) for k in self.features}
        encoded = self._encode(columns)
        if not single:
            return encoded
        if isinstance(encoded, dict):
            return {k: v[0] for k, v in encoded.items()}
        return encoded[0]

    def get_inputs(self):
        """A dict of ``kerasrs.Input((1,), dtype, name)``, one per feature.

        Raises:
            ValueError: for string features (kerasrs's symbolic tensors are numeric: encode
                string columns by calling the FeatureSpace on the data instead).
        """
        self._check_adapted()
        strings = sorted(k for k, f in self.features.items() if f.dtype == "string")
        if strings:
            raise ValueError(f"FeatureSpace.get_inputs: string features {strings} have no "
                             "symbolic input in kerasrs; call the FeatureSpace on the data "
                             "(space(columns)) and train on the encoded array.")
        if self.inputs is None:
            self.inputs = {k: _layers().Input(shape=(1,), dtype=f.dtype, name=k)
                           for k, f in self.features.items()}
        return self.inputs

    def get_encoded_features(self):
        """The encoding applied to `get_inputs()` (symbolic): put layers on it and build a
        ``Model(space.get_inputs(), outputs)`` that takes raw columns."""
        if self.encoded_features is None:
            self.encoded_features = self._encode(self.get_inputs())
        return self.encoded_features

    def get_config(self):
        return {**super().get_config(), "output_mode": self.output_mode,
                "features": {k: f.get_config() for k, f in self.features.items()},
                "crosses": [c.get_config() for c in self.crosses],
                "crossing_dim": self.crossing_dim, "hashing_dim": self.hashing_dim,
                "num_discretization_bins": self.num_discretization_bins}

    @classmethod
    def from_config(cls, config):
        config = {k: v for k, v in config.items() if k not in ("trainable", "dtype")}
        return cls(**config)


def _numpy(x):
    return ops.convert_to_numpy(x) if hasattr(x, "shape") and not isinstance(
        x, np.ndarray) else np.asarray(x)


def _as_column(x):
    """``(samples,)`` values as ``(samples, 1)``."""
    x = _numpy(x)
    return x[:, None] if x.ndim == 1 else x


def _columns(dataset):
    """A dict of whole columns from a dict or an iterable of dict batches."""
    if isinstance(dataset, dict):
        return dataset
    batches = []
    try:
        for batch in dataset:
            batch = batch[0] if isinstance(batch, tuple) else batch
            if not isinstance(batch, dict):
                raise TypeError
            batches.append(batch)
    except TypeError:
        raise ValueError("FeatureSpace.adapt: expects a dict of columns or an iterable of such "
                         f"dicts. Received: {type(dataset).__name__}") from None
    if not batches:
        raise ValueError("FeatureSpace.adapt: the dataset is empty.")
    return {k: np.concatenate([np.atleast_1d(_numpy(b[k])) for b in batches])
            for k in batches[0]}
