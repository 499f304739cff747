"""Categorical preprocessing: `CategoryEncoding` and the vocabulary lookups `StringLookup` and
`IntegerLookup`, with Keras 3's index layout and output modes.

Index layout of a lookup (Keras's): ``[mask token (if any)] + [OOV indices] + vocabulary``, so
with the defaults (no mask, one OOV index) an unknown token maps to 0 and the vocabulary starts
at 1. `adapt` orders the vocabulary by decreasing frequency, ties by decreasing token (Keras's
lexsort). The vocabulary is part of the layer's config, so it is saved with the model.
"""

import warnings

import numpy as np

from kerasrs.layers.base import Layer
from kerasrs.layers.preprocessing import adapt as adapt_data
from kerasrs.ops.core import constant, raw

__all__ = ["CategoryEncoding", "IntegerLookup", "StringLookup"]


def check_output_mode(who, output_mode, allowed):
    if output_mode not in allowed:
        raise ValueError(f"{who}: unknown `output_mode`; expected one of {list(allowed)}. "
                         f"Received: output_mode={output_mode!r}")


def check_dense(who, sparse):
    """Rejects ``sparse=True``: the layers here give dense outputs only.

    Raises:
        ValueError: for a true ``sparse``, naming the layer ``who``.
    """
    if sparse:
        raise ValueError(f"{who}: sparse outputs are not supported. Received: sparse={sparse!r}")


def check_max_tokens(who, max_tokens):
    """Refuse a ``max_tokens`` that Keras refuses: not None and not above 1. One that leaves no
    index for a learned token after the reserved ones (mask token, OOV indices) is accepted, as
    Keras accepts it (its configs load); `adapt` warns when it learns nothing because of it.

    Raises:
        ValueError: naming the layer ``who`` and the value.
    """
    if max_tokens is None:
        return
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, (int, np.integer)) or \
            max_tokens <= 1:
        raise ValueError(f"{who}: if set, `max_tokens` must be an int greater than 1 (it counts "
                         "the mask token and OOV indices too). Received: "
                         f"max_tokens={max_tokens!r}")


def encode(ids, depth, output_mode, dtype, backend, count_weights=None):
    """Keras's ``encode_categorical_inputs`` on a backend array of integer ids ``< depth``:
    "one_hot" adds an axis (a trailing axis of 1 is replaced), "multi_hot"/"count" reduce
    axis 1 of rank >= 2 ids (axis 0 of rank 1) to 0/1 flags or (weighted) counts."""
    xp = backend.xp
    if ids.ndim == 0:
        ids = ids[None]
    if output_mode == "one_hot" and ids.ndim > 1 and ids.shape[-1] == 1:
        ids = ids[..., 0]
    onehot = (ids[..., None] == xp.arange(depth)).astype(dtype)
    if output_mode == "one_hot":
        return constant(onehot, backend)
    axis = 1 if ids.ndim > 1 else 0
    if output_mode == "multi_hot":
        return constant(onehot.max(axis=axis), backend)
    if count_weights is not None:
        onehot = onehot * xp.asarray(count_weights)[..., None]
    return constant(onehot.sum(axis=axis).astype(onehot.dtype), backend)


class CategoryEncoding(Layer):
    """Encodes integer ids in ``[0, num_tokens)`` as one-hot, multi-hot or count vectors.

    Args:
        num_tokens: int, the number of ids (the output's last size).
        output_mode: "multi_hot" (default: a ``(batch, k)`` input gives ``(batch,
            num_tokens)`` flags), "one_hot" (adds an axis), or "count".
        sparse: only False is supported.

    Call arguments: ``count_weights`` (same shape as the ids, "count" mode only).

    Raises:
        ValueError: for an id outside ``[0, num_tokens)``, an unknown mode, or
            ``count_weights`` in another mode.

    Example:
        >>> CategoryEncoding(4, output_mode="one_hot")(np.array([3, 0])).numpy()
        array([[0., 0., 0., 1.],
               [1., 0., 0., 0.]], dtype=float32)
    """

    def __init__(self, num_tokens=None, output_mode="multi_hot", sparse=False, **kwargs):
        super().__init__(**kwargs)
        check_output_mode(self.name, output_mode, ("one_hot", "multi_hot", "count"))
        if not isinstance(num_tokens, (int, np.integer)) or num_tokens < 1:
            raise ValueError(f"{self.name}: `num_tokens` must be a positive int. Received: "
                             f"num_tokens={num_tokens!r}")
        check_dense(self.name, sparse)
        self.num_tokens, self.output_mode, self.sparse = int(num_tokens), output_mode, False

    def call(self, inputs, count_weights=None):
        if count_weights is not None and self.output_mode != "count":
            raise ValueError(f"{self.name}: `count_weights` needs output_mode='count'. "
                             f"Received: output_mode={self.output_mode!r}")
        ids = inputs.data
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= self.num_tokens):
            raise ValueError(f"{self.name}: ids must be in [0, {self.num_tokens}). Received: "
                             f"ids from {int(ids.min())} to {int(ids.max())}")
        weights = raw(count_weights)
        return encode(ids.astype("int64"), self.num_tokens, self.output_mode,
                      self.compute_dtype, inputs.backend, weights)

    def get_config(self):
        return {**super().get_config(), "num_tokens": self.num_tokens,
                "output_mode": self.output_mode, "sparse": self.sparse}


class _IndexLookup(Layer):
    """Shared by `StringLookup` and `IntegerLookup` (see the module docstring)."""

    _kind = "token"

    def __init__(self, max_tokens, num_oov_indices, mask_token, oov_token, vocabulary,
                 invert, output_mode, pad_to_max_tokens, sparse, vocabulary_dtype, **kwargs):
        super().__init__(**kwargs)
        check_output_mode(self.name, output_mode, ("int", "one_hot", "multi_hot", "count"))
        if invert and output_mode != "int":
            raise ValueError(f"{self.name}: `invert=True` needs output_mode='int'. Received: "
                             f"output_mode={output_mode!r}")
        if not isinstance(num_oov_indices, int) or num_oov_indices < 0:
            raise ValueError(f"{self.name}: `num_oov_indices` must be an int >= 0. Received: "
                             f"num_oov_indices={num_oov_indices!r}")
        check_dense(self.name, sparse)
        check_max_tokens(self.name, max_tokens)
        self.max_tokens, self.num_oov_indices = max_tokens, num_oov_indices
        self.mask_token, self.oov_token = mask_token, oov_token
        self.invert, self.output_mode = bool(invert), output_mode
        self.pad_to_max_tokens, self.sparse = bool(pad_to_max_tokens), False
        self.vocabulary_dtype = vocabulary_dtype
        self._vocabulary = []
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    def _specials(self):
        """The tokens before the vocabulary: the mask token (if any), then the OOV token(s)."""
        head = [] if self.mask_token is None else [self.mask_token]
        return head + [self.oov_token] * self.num_oov_indices

    def get_vocabulary(self, include_special_tokens=True):
        """The tokens in index order (with the mask and OOV tokens first by default)."""
        return (self._specials() if include_special_tokens else []) + list(self._vocabulary)

    def vocabulary_size(self):
        """The number of indices: special tokens plus the vocabulary."""
        return len(self._specials()) + len(self._vocabulary)

    def set_vocabulary(self, vocabulary):
        """Use ``vocabulary`` (a list, array, or a text file with one token a line).

        Raises:
            ValueError: for repeated tokens, or the mask or OOV token inside it.
        """
        if isinstance(vocabulary, str):
            with open(vocabulary, encoding="utf-8") as f:
                vocabulary = [line.rstrip("\n") for line in f]
        tokens = [self._token(t) for t in np.asarray(vocabulary).reshape(-1).tolist()]
        specials = {t for t in (self.mask_token, self.oov_token) if t is not None}
        if specials & set(tokens) and tokens[:len(self._specials())] == self._specials():
            tokens = tokens[len(self._specials()):]  # a vocabulary with its special tokens
        if len(set(tokens)) != len(tokens) or specials & set(tokens):
            raise ValueError(f"{self.name}: the vocabulary must hold distinct tokens, without "
                             f"the mask token {self.mask_token!r} or the OOV token "
                             f"{self.oov_token!r}. Received: {tokens[:20]}")
        self._vocabulary = tokens

    def adapt(self, data, steps=None):
        """Learn the vocabulary from ``data``: tokens by decreasing count (ties: decreasing
        token), at most ``max_tokens`` indices in all."""
        counts = {}
        for batch in adapt_data.batches(data, self.name, steps):
            self._check_values(batch)
            values, n = np.unique(batch.reshape(-1), return_counts=True)
            for value, c in zip(values.tolist(), n.tolist()):
                value = self._token(value)
                counts[value] = counts.get(value, 0) + c
        for special in (self.mask_token, self.oov_token):
            counts.pop(special, None)
        order = sorted(counts, key=lambda t: (counts[t], t), reverse=True)
        if self.max_tokens:
            room = self.max_tokens - len(self._specials())
            if room <= 0 and order:
                warnings.warn(f"{self.name}: max_tokens={self.max_tokens} leaves no index for a "
                              f"learned token after the {len(self._specials())} reserved ones "
                              f"(mask token and OOV indices): the vocabulary stays empty and "
                              f"every token maps to OOV. Raise max_tokens to keep tokens.",
                              UserWarning, stacklevel=2)
            order = order[:max(room, 0)]
        self._vocabulary = order

    def _convert_inputs(self, inputs):
        # lists of strings become one string array (the base class reads lists as structures)
        return super()._convert_inputs(adapt_data.string_lists_to_arrays(inputs))

    def call(self, inputs):
        values = np.asarray(inputs.numpy())
        if self.invert:
            table = np.array(self.get_vocabulary(), dtype=object)
            ids = values.astype("int64")
            out = table[np.clip(ids, 0, len(table) - 1)]
            oov = (ids < 0) | (ids >= len(table))
            out[oov] = self.oov_token
            return constant(out.astype(self._output_array_dtype()), inputs.backend)
        ids = self._lookup(values)
        if self.output_mode == "int":
            return constant(inputs.backend.xp.asarray(ids), inputs.backend)
        depth = self.max_tokens if self.pad_to_max_tokens and self.max_tokens else \
            self.vocabulary_size()
        return encode(inputs.backend.xp.asarray(ids), depth, self.output_mode,
                      self.compute_dtype, inputs.backend)

    def _check_values(self, values):
        """Raise if ``values`` (an array to look up or adapt to) are not this layer's kind."""

    def _lookup(self, values):
        """Integer ids (int64) of ``values`` in the index layout."""
        self._check_values(values)
        start = len(self._specials())
        index = {token: start + i for i, token in enumerate(self._vocabulary)}
        flat = [self._token(v) for v in values.reshape(-1).tolist()]
        ids = np.fromiter((index.get(t, -1) for t in flat), dtype=np.int64, count=len(flat))
        ids = ids.reshape(values.shape)
        offset = 0 if self.mask_token is None else 1
        unknown = ids < 0
        if unknown.any():
            if self.num_oov_indices == 0:
                bad = np.asarray(values)[unknown].reshape(-1)[0]
                raise ValueError(f"{self.name}: {bad!r} is not in the vocabulary and "
                                 f"num_oov_indices=0. Received: {bad!r}")
            ids[unknown] = offset + self._oov_bucket(np.asarray(values)[unknown])
        if self.mask_token is not None:
            ids[np.asarray(values) == self.mask_token] = 0
        return ids

    def _oov_bucket(self, values):
        if self.num_oov_indices == 1:
            return 0
        raise NotImplementedError(f"{self.name}: num_oov_indices > 1 (hashed OOV buckets) is not "
                                  f"supported for {self._kind}s. Received: num_oov_indices="
                                  f"{self.num_oov_indices}")

    def _output_array_dtype(self):
        return object

    def compute_output_shape(self, input_shape):
        if self.output_mode == "int":
            return tuple(input_shape)
        depth = self.max_tokens if self.pad_to_max_tokens and self.max_tokens else \
            self.vocabulary_size()
        return tuple(input_shape[:-1]) + (depth,) if len(input_shape) > 1 else (depth,)

    def get_config(self):
        return {**super().get_config(), "max_tokens": self.max_tokens,
                "num_oov_indices": self.num_oov_indices, "mask_token": self.mask_token,
                "oov_token": self.oov_token, "vocabulary": list(self._vocabulary) or None,
                "invert": self.invert, "output_mode": self.output_mode, "sparse": False,
                "pad_to_max_tokens": self.pad_to_max_tokens,
                "vocabulary_dtype": self.vocabulary_dtype}


class StringLookup(_IndexLookup):
    """Maps strings to integer indices (or back with ``invert=True``) through a vocabulary.

    Args:
        max_tokens: int or None, the most indices (special tokens included) `adapt` keeps.
        num_oov_indices: int, indices for unknown strings (default 1; only 0 or 1 here:
            Keras hashes into several with FarmHash).
        mask_token: str or None (default): a token mapped to index 0 (padding).
        oov_token: str, the token `get_vocabulary` shows for OOV indices. Defaults to "[UNK]".
        vocabulary: list of strings, or a text file path, or None to `adapt`.
        invert: bool, map indices back to strings.
        output_mode: "int" (default), "one_hot", "multi_hot" or "count".
        pad_to_max_tokens: bool, encoded outputs have ``max_tokens`` columns.
        sparse: only False. encoding: accepted ("utf-8").

    Raises:
        ValueError: for a ``max_tokens`` of 1 or less (as Keras), or
            numeric inputs to a call or to `adapt` (use `IntegerLookup`).

    Example:
        >>> layer = StringLookup(vocabulary=["a", "b", "c"])
        >>> layer(np.array([["a", "c", "d"]])).numpy()
        array([[1, 3, 0]])
    """

    _kind = "string"

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token="[UNK]",
                 vocabulary=None, idf_weights=None, invert=False, output_mode="int",
                 pad_to_max_tokens=False, sparse=False, encoding="utf-8", name=None, **kwargs):
        kwargs.pop("vocabulary_dtype", None)
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, vocabulary,
                         invert, output_mode, pad_to_max_tokens, sparse, "string", name=name,
                         **kwargs)
        self.encoding = encoding

    @staticmethod
    def _token(value):
        return value.decode("utf-8") if isinstance(value, bytes) else str(value)

    def _check_values(self, values):
        # str() would read 3 as "3": numbers are IntegerLookup's (invert=True looks up ids)
        values = np.asarray(values)
        if values.dtype.kind in "biufc":
            raise ValueError(f"{self.name}: StringLookup takes strings; use IntegerLookup for "
                             f"integers. Received: inputs of dtype {values.dtype} (e.g. "
                             f"{values.reshape(-1)[:3].tolist()})")

    def _output_array_dtype(self):
        return str

    def get_config(self):
        return {**super().get_config(), "encoding": self.encoding}


class IntegerLookup(_IndexLookup):
    """Maps integers to contiguous indices (or back with ``invert=True``) through a vocabulary.

    Args as `StringLookup`, with integer tokens: ``mask_token`` None (default) or an int,
    ``oov_token`` -1; with ``num_oov_indices > 1`` an unknown value goes to OOV index
    ``value % num_oov_indices`` (Keras's integer hashing).

    Raises:
        ValueError: (at a call or `adapt`) for inputs that are not integers (strings, or floats
            with a fractional part); for a ``max_tokens`` of 1 or less.

    Example:
        >>> layer = IntegerLookup(vocabulary=[12, 36, 1138, 42])
        >>> layer(np.array([[12, 1138, 42], [42, 1000, 36]])).numpy()
        array([[1, 3, 4],
               [4, 0, 2]])
    """

    _kind = "integer"

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=-1,
                 output_mode="int", pad_to_max_tokens=False, sparse=False, vocabulary=None,
                 vocabulary_dtype="int64", idf_weights=None, invert=False, name=None, **kwargs):
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, vocabulary,
                         invert, output_mode, pad_to_max_tokens, sparse, vocabulary_dtype,
                         name=name, **kwargs)

    @staticmethod
    def _token(value):
        return int(value)

    def _check_values(self, values):
        # int() would read 12.5 as 12 and "12" as 12: refuse what is not an integer
        values = np.asarray(values)
        if values.dtype.kind not in "iub" and not (
                values.dtype.kind == "f" and np.all(values == np.round(values))):
            raise ValueError(f"{self.name}: IntegerLookup takes integers. Received: inputs of "
                             f"dtype {values.dtype} (e.g. {values.reshape(-1)[:3].tolist()})")

    def _oov_bucket(self, values):
        return np.asarray(values, np.int64) % max(self.num_oov_indices, 1)

    def _output_array_dtype(self):
        return np.int64
