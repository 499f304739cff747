"""`Hashing`: values to ``num_bins`` buckets with FarmHash's Fingerprint64, the hash Keras 3
(through TensorFlow's ``to_hash_bucket_fast``) uses, so the buckets are the same as Keras's.

FarmHash comes from the optional ``pyfarmhash`` package (``pip install kerasrs[preprocessing]``),
imported on the first call.
"""

import numpy as np

from kerasrs.layers.base import Layer
from kerasrs.layers.preprocessing import adapt as adapt_data
from kerasrs.layers.preprocessing import categorical
from kerasrs.ops.core import constant

__all__ = ["Hashing"]


def _fingerprint64():
    try:
        import farmhash
    except ImportError as e:
        raise ImportError("Hashing needs FarmHash from the `pyfarmhash` package: pip install "
                          "pyfarmhash (or kerasrs[preprocessing]).") from e
    return farmhash.fingerprint64


class Hashing(Layer):
    """Hashes strings or integers into ``num_bins`` buckets: ``Fingerprint64(str(value)) %
    num_bins`` (integers hash as their decimal text, as in Keras).

    Args:
        num_bins: int, the number of buckets, the mask bucket included.
        mask_value: None, or a value that maps to bucket 0; the others then use buckets
            ``1 .. num_bins - 1``.
        salt: only None: Keras's salted (SipHash) variant is not supported.
        output_mode: "int" (default), "one_hot", "multi_hot" or "count" (see
            `CategoryEncoding`).
        sparse: only False.

    Raises:
        ValueError: for ``num_bins`` below 1 (2 with a mask value) or an unknown mode.
        NotImplementedError: for a ``salt``.
        ImportError: on the first call without ``pyfarmhash``.

    Example:
        >>> Hashing(num_bins=3)(np.array([["A"], ["B"], ["C"], ["D"], ["E"]])).numpy().ravel()
        array([1, 0, 1, 1, 2])
    """

    def __init__(self, num_bins, mask_value=None, salt=None, output_mode="int", sparse=False,
                 **kwargs):
        super().__init__(**kwargs)
        categorical.check_output_mode(self.name, output_mode, ("int", "one_hot", "multi_hot",
                                                               "count"))
        if not isinstance(num_bins, int) or num_bins < (2 if mask_value is not None else 1):
            raise ValueError(f"{self.name}: `num_bins` must be an int >= 1 (>= 2 with a "
                             f"mask_value). Received: num_bins={num_bins!r}")
        if salt is not None:
            raise NotImplementedError(f"{self.name}: salted hashing is not supported. "
                                      f"Received: salt={salt!r}")
        categorical.check_dense(self.name, sparse)
        self.num_bins, self.mask_value, self.salt = num_bins, mask_value, None
        self.output_mode, self.sparse = output_mode, False

    def _convert_inputs(self, inputs):
        # lists of strings become one string array (the base class reads lists as structures)
        return super()._convert_inputs(adapt_data.string_lists_to_arrays(inputs))

    def call(self, inputs):
        fingerprint = _fingerprint64()
        values = np.asarray(inputs.numpy())
        distinct, inverse = np.unique(values.reshape(-1), return_inverse=True)
        text = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in distinct.tolist()]
        bins = self.num_bins - (self.mask_value is not None)
        buckets = np.array([fingerprint(t) % bins for t in text], dtype=np.int64)
        if self.mask_value is not None:
            buckets = np.where(distinct == self.mask_value, 0, buckets + 1)
        ids = buckets[inverse].reshape(values.shape)
        xp_ids = inputs.backend.xp.asarray(ids)
        if self.output_mode == "int":
            return constant(xp_ids, inputs.backend)
        return categorical.encode(xp_ids, self.num_bins, self.output_mode, self.compute_dtype,
                                  inputs.backend)

    def get_config(self):
        return {**super().get_config(), "num_bins": self.num_bins, "mask_value": self.mask_value,
                "salt": self.salt, "output_mode": self.output_mode, "sparse": self.sparse}
