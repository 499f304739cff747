"""`HashedCrossing`: crosses of categorical features hashed into ``num_bins`` buckets, the
same buckets as Keras 3 (TensorFlow's ``sparse.cross_hashed``): strings hash with FarmHash's
Fingerprint64, integers enter as their own 64-bit value, and the features of a row combine
with ``FingerprintCat64`` starting from TensorFlow's default key.

FarmHash comes from the optional ``pyfarmhash`` package (``pip install kerasrs[preprocessing]``),
needed only for string features.
"""

import numpy as np

from kerasrs.layers.base import Layer
from kerasrs.layers.preprocessing import categorical
from kerasrs.layers.preprocessing.hashing import _fingerprint64
from kerasrs.ops.core import constant

__all__ = ["HashedCrossing"]

_DEFAULT_KEY = 0xDECAFCAFFE  # tf.sparse.cross_hashed's key when none is given
_MUL = np.uint64(0xC6A4A7935BD1E995)  # MurmurHash2-64's multiplier, as in FingerprintCat64


def _shift_mix(value):
    return value ^ (value >> np.uint64(47))


def fingerprint_cat64(first, second):
    """TensorFlow's ``FingerprintCat64`` on uint64 arrays (wrapping arithmetic)."""
    result = first ^ _MUL
    result ^= _shift_mix(second * _MUL) * _MUL
    result *= _MUL
    return _shift_mix(_shift_mix(result) * _MUL)


def _feature_hashes(values):
    """uint64 hashes of one feature's values: Fingerprint64 of text, integers as they are."""
    if values.dtype.kind in "iub":
        return values.astype(np.int64).view(np.uint64)
    fingerprint = _fingerprint64()
    distinct, inverse = np.unique(values.reshape(-1), return_inverse=True)
    text = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in distinct.tolist()]
    hashes = np.array([fingerprint(t) for t in text], dtype=np.uint64)
    return hashes[inverse].reshape(values.shape)


class HashedCrossing(Layer):
    """Crosses two or more categorical features (strings or integers) and hashes each cross
    into ``num_bins`` buckets.

    Args:
        num_bins: int >= 1, the number of buckets.
        output_mode: "int" (default: int64 bucket ids, the inputs' shape) or "one_hot".
        sparse: only False.

    Call arguments:
        inputs: a tuple or list of at least two arrays of the same shape, ``(batch,)``,
            ``(batch, 1)`` or ``()``.

    Raises:
        ValueError: for fewer than two features, features of different shapes, or a bad
            ``num_bins``/``output_mode``.
        ImportError: for string features without ``pyfarmhash``.

    Example:
        >>> layer = HashedCrossing(num_bins=5)
        >>> layer((np.array(["A", "B", "A", "B", "A"]), np.array([101, 101, 101, 102, 102])))
        ... # doctest: +SKIP
        array([1, 4, 1, 1, 3])
    """

    def __init__(self, num_bins, output_mode="int", sparse=False, **kwargs):
        super().__init__(**kwargs)
        categorical.check_output_mode(self.name, output_mode, ("int", "one_hot"))
        if not isinstance(num_bins, int) or num_bins < 1:
            raise ValueError(f"{self.name}: `num_bins` must be an int >= 1. Received: "
                             f"num_bins={num_bins!r}")
        categorical.check_dense(self.name, sparse)
        self.num_bins, self.output_mode, self.sparse = num_bins, output_mode, False

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise ValueError(f"{self.name}: expected a tuple of at least two features. "
                             f"Received: {type(inputs).__name__}")
        values = [np.asarray(x.numpy()) for x in inputs]
        shapes = {v.shape for v in values}
        if len(shapes) != 1 or values[0].ndim > 2 or (values[0].ndim == 2 and
                                                      values[0].shape[1] != 1):
            raise ValueError(f"{self.name}: the features must share one shape, (batch,), "
                             f"(batch, 1) or (). Received shapes: {[v.shape for v in values]}")
        # on 1-D arrays: NumPy warns about wrapping products of 0-d ones
        crossed = np.full(values[0].size, _DEFAULT_KEY, dtype=np.uint64)
        for feature in values:
            crossed = fingerprint_cat64(crossed, _feature_hashes(feature.reshape(-1)))
        ids = (crossed % np.uint64(self.num_bins)).astype(np.int64).reshape(values[0].shape)
        backend = inputs[0].backend
        if self.output_mode == "int":
            return constant(backend.xp.asarray(ids), backend)
        return categorical.encode(backend.xp.asarray(ids), self.num_bins, "one_hot",
                                  self.compute_dtype, backend)

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape[0])
        if self.output_mode == "int":
            return shape
        if shape and shape[-1] == 1:
            shape = shape[:-1]
        return shape + (self.num_bins,)

    def get_config(self):
        return {**super().get_config(), "num_bins": self.num_bins,
                "output_mode": self.output_mode, "sparse": self.sparse}
