"""`TextVectorization`: strings to token ids (or encoded vectors) through a learned vocabulary."""

import re
import string

import numpy as np

from kerasrs.layers.base import Layer
from kerasrs.layers.preprocessing import adapt as adapt_data
from kerasrs.layers.preprocessing import categorical
from kerasrs.ops.core import constant

__all__ = ["TextVectorization"]

_PUNCTUATION = re.compile("[%s]" % re.escape(string.punctuation))


class TextVectorization(Layer):
    """Standardizes, splits and indexes strings, as Keras 3's TextVectorization.

    Steps: ``standardize`` ("lower_and_strip_punctuation" (default), "lower",
    "strip_punctuation", None or a callable on one string), ``split`` ("whitespace" (default),
    "character", None or a callable returning a list of tokens), ``ngrams`` (None, an int n
    for 1..n-grams, or a tuple of sizes; joined with a space), then a `StringLookup` with mask
    token "" at index 0 and "[UNK]" at 1.

    Args:
        max_tokens: int or None, the vocabulary size including the mask and OOV tokens (so
            at least 3).
        output_mode: "int" (default: ids padded with 0, or cut, to ``output_sequence_length``
            when given, else to the longest string of the batch), "multi_hot", "count" or
            "one_hot".
        output_sequence_length: int >= 1 or None ("int" mode only).
        pad_to_max_tokens: bool, encoded outputs have ``max_tokens`` columns.
        vocabulary: list of tokens, or None to `adapt`.
        encoding: accepted ("utf-8"). sparse, ragged: only False.

    Raises:
        ValueError: for an ``output_sequence_length`` that is not None or an int >= 1 (or given
            outside "int" mode), a ``max_tokens`` of 1 or less (as Keras), sparse or ragged
            outputs.

    Input: strings of shape ``(batch,)`` or ``(batch, 1)``. Output: ``(batch, length)`` int64,
    or ``(batch, vocabulary size)`` float32 for the encoded modes.

    Example:
        >>> layer = TextVectorization(output_sequence_length=4)
        >>> layer.adapt(["the cat sat", "the dog"])
        >>> layer.get_vocabulary()
        ['', '[UNK]', 'the', 'sat', 'dog', 'cat']
        >>> layer(np.array(["The cat ran!"])).numpy()
        array([[2, 5, 1, 0]])
    """

    def __init__(self, max_tokens=None, standardize="lower_and_strip_punctuation",
                 split="whitespace", ngrams=None, output_mode="int", output_sequence_length=None,
                 pad_to_max_tokens=False, vocabulary=None, idf_weights=None, sparse=False,
                 ragged=False, encoding="utf-8", name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        categorical.check_output_mode(self.name, output_mode,
                                      ("int", "multi_hot", "count", "one_hot"))
        if sparse or ragged:
            raise ValueError(f"{self.name}: sparse and ragged outputs are not supported. "
                             f"Received: sparse={sparse!r}, ragged={ragged!r}")
        if output_sequence_length is not None and (
                isinstance(output_sequence_length, bool) or
                not isinstance(output_sequence_length, (int, np.integer)) or
                output_sequence_length < 1):
            raise ValueError(f"{self.name}: `output_sequence_length` must be None or an int >= 1 "
                             "(the length every output is padded or cut to). Received: "
                             f"output_sequence_length={output_sequence_length!r}")
        categorical.check_max_tokens(self.name, max_tokens)
        if output_sequence_length is not None and output_mode != "int":
            raise ValueError(f"{self.name}: `output_sequence_length` needs output_mode='int'. "
                             f"Received: output_mode={output_mode!r}")
        self.max_tokens, self.standardize, self.split = max_tokens, standardize, split
        self.ngrams = (tuple(range(1, ngrams + 1)) if isinstance(ngrams, int)
                       else None if ngrams is None else tuple(ngrams))
        self.output_mode, self.output_sequence_length = output_mode, output_sequence_length
        self.pad_to_max_tokens, self.encoding = bool(pad_to_max_tokens), encoding
        self.lookup = categorical.StringLookup(
            max_tokens=max_tokens, mask_token="", oov_token="[UNK]", vocabulary=vocabulary,
            output_mode="int" if output_mode == "int" else output_mode,
            pad_to_max_tokens=pad_to_max_tokens, name=f"{self.name}_lookup")

    def _tokens(self, text):
        if self.standardize in ("lower", "lower_and_strip_punctuation"):
            text = text.lower()
        if self.standardize in ("strip_punctuation", "lower_and_strip_punctuation"):
            text = _PUNCTUATION.sub("", text)
        elif callable(self.standardize):
            text = self.standardize(text)
        if self.split == "whitespace":
            tokens = text.split()
        elif self.split == "character":
            tokens = list(text)
        elif callable(self.split):
            tokens = list(self.split(text))
        else:
            tokens = [text]
        if self.ngrams:
            tokens = [" ".join(tokens[i:i + n]) for n in self.ngrams
                      for i in range(len(tokens) - n + 1)]
        return tokens

    def _texts(self, values):
        values = np.asarray(values)
        if values.ndim == 2 and values.shape[1] == 1:
            values = values[:, 0]
        if values.ndim > 1:
            raise ValueError(f"{self.name}: expected strings of shape (batch,) or (batch, 1). "
                             f"Received: shape {values.shape}")
        return [v.decode(self.encoding) if isinstance(v, bytes) else str(v)
                for v in values.reshape(-1).tolist()]

    def adapt(self, data, steps=None):
        """Learn the vocabulary from the strings in ``data``."""
        tokens = [t for batch in adapt_data.batches(data, self.name, steps)
                  for text in self._texts(batch) for t in self._tokens(text)]
        self.lookup.adapt(np.array(tokens, dtype=object) if tokens else np.array([""]))

    def get_vocabulary(self, include_special_tokens=True):
        return self.lookup.get_vocabulary(include_special_tokens)

    def vocabulary_size(self):
        return self.lookup.vocabulary_size()

    def set_vocabulary(self, vocabulary, idf_weights=None):
        self.lookup.set_vocabulary(vocabulary)

    def _convert_inputs(self, inputs):
        # lists of strings become one string array (the base class reads lists as structures)
        return super()._convert_inputs(adapt_data.string_lists_to_arrays(inputs))

    def call(self, inputs):
        texts = self._texts(inputs.numpy())
        token_lists = [self._tokens(t) for t in texts]
        if self.output_mode != "int":
            rows = [self.lookup._lookup(np.array(tokens + [""], dtype=object))
                    for tokens in token_lists]  # "" (the mask, id 0) keeps empty rows valid
            depth = self.max_tokens if self.pad_to_max_tokens and self.max_tokens else \
                self.vocabulary_size()
            out = np.zeros((len(rows), depth), "float32")
            for i, ids in enumerate(rows):
                np.add.at(out[i], ids[:-1], 1.0)
            if self.output_mode != "count":
                out = np.minimum(out, 1.0)
            return constant(inputs.backend.xp.asarray(out), inputs.backend)
        length = self.output_sequence_length or max([len(t) for t in token_lists] + [0])
        out = np.zeros((len(token_lists), length), "int64")
        for i, tokens in enumerate(token_lists):
            ids = self.lookup._lookup(np.array(tokens[:length], dtype=object))
            out[i, :len(ids)] = ids
        return constant(inputs.backend.xp.asarray(out), inputs.backend)

    def get_config(self):
        standardize = self.standardize if not callable(self.standardize) else None
        split = self.split if not callable(self.split) else None
        return {**super().get_config(), "max_tokens": self.max_tokens,
                "standardize": standardize, "split": split,
                "ngrams": None if self.ngrams is None else list(self.ngrams),
                "output_mode": self.output_mode,
                "output_sequence_length": self.output_sequence_length,
                "pad_to_max_tokens": self.pad_to_max_tokens, "sparse": False, "ragged": False,
                "vocabulary": self.lookup.get_vocabulary(False) or None,
                "idf_weights": None, "encoding": self.encoding}
