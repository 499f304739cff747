"""Numerical preprocessing: `Normalization` (feature-wise standardization) and `Discretization`
(bucketing), with Keras 3's arguments, weights and outputs."""

import numpy as np

from kerasrs import ops
from kerasrs.layers.base import Layer
from kerasrs.layers.preprocessing import adapt as adapt_data
from kerasrs.layers.preprocessing import categorical
from kerasrs.ops.core import constant

__all__ = ["Normalization", "Discretization"]

EPSILON = 1e-7  # Keras's backend.epsilon(): the smallest standard deviation divided by


class Normalization(Layer):
    """Shifts and scales inputs to mean 0 and variance 1 per feature: ``(x - mean) /
    max(sqrt(variance), 1e-7)`` (``invert=True``: ``mean + x * max(sqrt(variance), 1e-7)``).

    The statistics come from ``mean``/``variance`` given here, or from `adapt`.

    Args:
        axis: int, tuple of ints or None: the axes that keep their own statistics (-1: one
            mean per feature of the last axis; None: one scalar mean and variance).
        mean, variance: optional fixed statistics, broadcastable to the kept axes.
        invert: bool, undo a normalization instead.

    Attributes: ``mean`` and ``variance`` (once built), tensors in the inputs' broadcast shape.

    Weights (when adapted): ``mean`` and ``variance`` of the kept axes' shape and ``count``
    (int32 scalar: the samples seen; Keras leaves it 0), non-trainable, saved with the model.

    Raises:
        ValueError: for only one of ``mean``/``variance``, shapes that differ, an axis out of
            range or of unknown size, a call before the statistics exist, or `adapt` on data
            without samples or with NaN or inf values (which would make every output NaN).

    Example:
        >>> layer = Normalization()
        >>> layer.adapt(np.array([[0.0, 7.0], [2.0, 9.0]], "float32"))
        >>> layer(np.array([[1.0, 8.0]], "float32")).numpy()
        array([[0., 0.]], dtype=float32)
    """

    supports_masking = True

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super().__init__(**kwargs)
        self.axis = () if axis is None else (int(axis),) if isinstance(axis, (int, np.integer)) \
            else tuple(int(a) for a in axis)
        if (mean is None) != (variance is None):
            raise ValueError(f"{self.name}: give both `mean` and `variance`, or neither. "
                             f"Received: mean={mean!r}, variance={variance!r}")
        if mean is not None and np.shape(mean) != np.shape(variance):
            raise ValueError(f"{self.name}: `mean` and `variance` must have the same shape. "
                             f"Received: shapes {np.shape(mean)} and {np.shape(variance)}")
        self.input_mean, self.input_variance, self.invert = mean, variance, bool(invert)
        self.adapt_mean = self.adapt_variance = self.count = None

    def build(self, input_shape):
        ndim = len(input_shape)
        if any(not -ndim <= a < ndim for a in self.axis):
            raise ValueError(f"{self.name}: axis {self.axis} is out of range for inputs of rank "
                             f"{ndim}. Received: input shape {tuple(input_shape)}")
        self._keep = tuple(sorted(a % ndim for a in self.axis))
        if any(input_shape[a] is None for a in self._keep):
            raise ValueError(f"{self.name}: the kept axes {self.axis} need known sizes. "
                             f"Received: input shape {tuple(input_shape)}")
        self._reduce = tuple(a for a in range(ndim) if a not in self._keep)
        self._broadcast = tuple(input_shape[a] if a in self._keep else 1 for a in range(ndim))
        self._build_input_shape = tuple(input_shape)
        if self.input_mean is None:
            shape = tuple(input_shape[a] for a in self._keep)
            self.adapt_mean = self.add_weight(shape, "zeros", name="mean", trainable=False)
            self.adapt_variance = self.add_weight(shape, "ones", name="variance", trainable=False)
            self.count = self.add_weight((), "zeros", name="count", dtype="int32", trainable=False)

    def adapt(self, data, steps=None):
        """Set ``mean`` and ``variance`` from ``data`` (an array, a `PyDataset` or an iterable
        of batches; batches are combined exactly, Chan et al. 1979's pairwise update)."""
        stream = adapt_data.batches(data, self.name, steps)
        first = next(stream)
        if first.size == 0:  # before `build`, which would make statistics of size 0
            raise ValueError(f"{self.name}.adapt: the data have no samples. Received: a first "
                             f"batch of shape {first.shape}")
        if not self.built:
            self.build(first.shape)
            self.built = True
        mean = variance = None
        total = 0
        for index, batch in enumerate(_chain(first, stream)):
            batch = batch.astype("float64")
            if batch.size == 0:
                continue
            _check_finite(batch, index, self.name)
            size = batch.size // int(np.prod([batch.shape[a] for a in self._keep]))
            b_mean, b_var = batch.mean(axis=self._reduce), batch.var(axis=self._reduce)
            if mean is None:
                mean, variance, total = b_mean, b_var, size
                continue
            weight = size / (total + size)
            new_mean = mean * (1 - weight) + b_mean * weight
            variance = (variance + (mean - new_mean) ** 2) * (1 - weight) + \
                (b_var + (b_mean - new_mean) ** 2) * weight
            mean, total = new_mean, total + size
        if total == 0:  # NumPy would give NaN statistics with a RuntimeWarning
            raise ValueError(f"{self.name}.adapt: the data have no samples. Received: a first "
                             f"batch of shape {first.shape}")
        self.adapt_mean.assign(np.asarray(mean, self.adapt_mean.dtype))
        self.adapt_variance.assign(np.asarray(variance, self.adapt_variance.dtype))
        self.count.assign(np.asarray(total, "int32"))

    @property
    def mean(self):
        """The mean in the inputs' broadcast shape (e.g. ``(1, features)``), as Keras 3 exposes
        it; None before the layer is built."""
        return self._broadcast_statistic(0)

    @property
    def variance(self):
        """The variance, shaped as `mean`; None before the layer is built."""
        return self._broadcast_statistic(1)

    def _broadcast_statistic(self, index):
        if not self.built:
            return None
        return ops.convert_to_tensor(tuple(self._statistics(self.compute_dtype))[index])

    def _statistics(self, dtype):
        if self.input_mean is not None:
            mean, variance = (np.asarray(v, dtype) for v in (self.input_mean,
                                                               self.input_variance))
            shape = [1] * len(self._broadcast)
            for i, axis in enumerate(self._keep[len(self._keep) - mean.ndim:]):
                shape[axis] = mean.shape[i]
            return mean.reshape(shape), variance.reshape(shape)
        return (ops.reshape(ops.cast(v, dtype), self._broadcast)
                for v in (self.adapt_mean, self.adapt_variance))

    def call(self, inputs):
        inputs = ops.cast(inputs, self.compute_dtype)
        shape = tuple(inputs.shape)
        if len(shape) != len(self._broadcast) or \
                any(shape[a] != self._broadcast[a] for a in self._keep):
            expected = {a: self._broadcast[a] for a in self._keep}
            raise ValueError(f"{self.name}: expected inputs of rank {len(self._broadcast)} with "
                             f"the sizes {expected} (axis: size) that the statistics have. "
                             f"Received: input shape {shape}")
        mean, variance = self._statistics(self.compute_dtype)
        scale = ops.maximum(ops.sqrt(variance), EPSILON)
        if self.invert:
            return ops.add(mean, ops.multiply(inputs, scale))
        return ops.divide(ops.subtract(inputs, mean), scale)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "axis": list(self.axis), "invert": self.invert,
                "mean": _to_list(self.input_mean), "variance": _to_list(self.input_variance)}


class Discretization(Layer):
    """Buckets numbers by boundaries: bucket ``i`` holds ``boundaries[i-1] <= x <
    boundaries[i]`` (NumPy's ``digitize``), so ``len(boundaries) + 1`` buckets.

    Args:
        bin_boundaries: sorted list of floats, or None to learn ``num_bins - 1`` boundaries
            with `adapt` (quantiles of the data, NumPy's linear interpolation; Keras uses an
            approximate quantile summary, so boundaries learned from large data may differ
            slightly).
        num_bins: int, the number of buckets to learn (with `adapt`).
        epsilon: accepted for Keras compatibility (the summary's error bound).
        output_mode: "int" (bucket ids), "one_hot", "multi_hot" or "count" (see
            `CategoryEncoding`).
        sparse: only False is supported.

    Outputs are int64 ids ("int") or float vectors of the layer's dtype.

    Raises:
        ValueError: for unsorted ``bin_boundaries``, ``bin_boundaries`` and ``num_bins`` that
            disagree, an unknown output mode, or a call before the boundaries exist.

    Example:
        >>> Discretization(bin_boundaries=[0.0, 1.0])(np.array([-1.0, 0.0, 0.5, 2.0])).numpy()
        array([0, 1, 1, 2])
    """

    def __init__(self, bin_boundaries=None, num_bins=None, epsilon=0.01, output_mode="int",
                 sparse=False, dtype=None, name=None, **kwargs):
        super().__init__(name=name, dtype=dtype, **kwargs)
        if bin_boundaries is not None and num_bins is not None and \
                num_bins != len(bin_boundaries) + 1:  # both: an adapted layer's config
            raise ValueError(f"{self.name}: give `bin_boundaries` or `num_bins` (or both, "
                             f"with num_bins = len(bin_boundaries) + 1). Received: "
                             f"bin_boundaries={bin_boundaries}, num_bins={num_bins}")
        categorical.check_output_mode(self.name, output_mode, ("int", "one_hot", "multi_hot",
                                                               "count"))
        categorical.check_dense(self.name, sparse)
        self.bin_boundaries = None if bin_boundaries is None else [float(b) for b in
                                                                   bin_boundaries]
        if self.bin_boundaries is not None and self.bin_boundaries != sorted(self.bin_boundaries):
            # a binary search over unsorted boundaries gives wrong buckets without an error
            raise ValueError(f"{self.name}: `bin_boundaries` must be sorted in increasing order. "
                             f"Received: bin_boundaries={bin_boundaries}")
        self.num_bins, self.epsilon = num_bins, epsilon
        self.output_mode, self.sparse = output_mode, False

    def adapt(self, data, steps=None):
        """Learn ``num_bins - 1`` boundaries: the quantiles ``i / num_bins`` of ``data``."""
        if not self.num_bins:
            raise ValueError(f"{self.name}: adapt needs `num_bins`. Received: num_bins="
                             f"{self.num_bins!r}")
        values = np.concatenate([b.reshape(-1) for b in adapt_data.batches(data, self.name,
                                                                            steps)])
        quantiles = np.arange(1, self.num_bins) / self.num_bins
        self.bin_boundaries = np.quantile(values.astype("float64"), quantiles).tolist()

    def call(self, inputs):
        if self.bin_boundaries is None:
            raise ValueError(f"{self.name}: no bin boundaries: pass `bin_boundaries` or call "
                             "adapt(data) first. Received: bin_boundaries=None")
        xp = inputs.backend.xp
        ids = xp.digitize(inputs.data, xp.asarray(self.bin_boundaries, inputs.data.dtype))
        if self.output_mode == "int":
            return constant(ids.astype("int64"), inputs.backend)
        return categorical.encode(ids, len(self.bin_boundaries) + 1, self.output_mode,
                                  self.compute_dtype, inputs.backend)

    def get_config(self):
        return {**super().get_config(), "bin_boundaries": self.bin_boundaries,
                "num_bins": self.num_bins, "epsilon": self.epsilon,
                "output_mode": self.output_mode, "sparse": self.sparse}


def _chain(first, rest):
    yield first
    yield from rest


def _to_list(value):
    return None if value is None else np.asarray(value).tolist()


def _check_finite(batch, index, who):
    """Refuse NaN and inf in `adapt`'s data: one would make the mean (and so every output) NaN.

    Raises:
        ValueError: naming the layer, the batch, the count and the first position.
    """
    bad = ~np.isfinite(batch)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{who}.adapt: the data hold {int(bad.sum())} NaN or inf value(s) (batch "
                         f"{index}, first at index {first}), which would make the mean and "
                         "variance, and so every output, NaN. Remove or replace them (e.g. with "
                         f"numpy.nan_to_num) before adapt. Received: a batch of shape "
                         f"{batch.shape}")
