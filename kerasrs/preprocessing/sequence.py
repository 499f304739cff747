"""Padding variable-length sequences into one array (Keras's ``keras.utils.pad_sequences``)."""

import numpy as np


def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre",
                  value=0.0):
    """Pad (or cut) each sequence to ``maxlen`` and stack them.

    Args:
        sequences: list of sequences (lists or arrays); each item may itself be a vector, which
            then becomes the trailing axes of the result.
        maxlen: output length; defaults to the longest sequence.
        dtype: result dtype (strings and objects work too).
        padding: "pre" or "post": where the padding goes.
        truncating: "pre" or "post": which end of a long sequence is cut off.
        value: the padding value.

    Returns:
        NumPy array of shape ``(len(sequences), maxlen) + item_shape``.

    Raises:
        ValueError: for a bad ``padding``/``truncating`` value, items of differing shapes, or a
            string ``value`` with a numeric ``dtype``.
    """
    for arg, v in (("padding", padding), ("truncating", truncating)):
        if v not in ("pre", "post"):
            raise ValueError(f"pad_sequences: `{arg}` must be 'pre' or 'post'. Received: "
                             f"{arg}={v!r}")
    if not hasattr(sequences, "__len__"):
        raise ValueError("pad_sequences: `sequences` must be iterable with a length.")
    lengths = [len(s) for s in sequences]
    maxlen = max(lengths, default=0) if maxlen is None else int(maxlen)
    item_shape = next((np.asarray(s).shape[1:] for s in sequences if len(s)), ())
    is_str = np.issubdtype(dtype, np.str_) or np.issubdtype(dtype, np.object_)
    if isinstance(value, str) and dtype != object and not is_str:
        raise ValueError(f"pad_sequences: `dtype` {dtype} is not compatible with `value`'s type "
                         f"{type(value)}; use dtype=object for variable-length strings.")
    out = np.full((len(sequences), maxlen) + item_shape, value, dtype=dtype)
    for i, s in enumerate(sequences):
        if not len(s) or not maxlen:
            continue
        s = np.asarray(s, dtype=dtype)
        if s.shape[1:] != item_shape:
            raise ValueError(f"pad_sequences: shape of sample {i} ({s.shape[1:]}) differs from "
                             f"the expected item shape {item_shape}")
        s = s[-maxlen:] if truncating == "pre" else s[:maxlen]
        if padding == "post":
            out[i, :len(s)] = s
        else:
            out[i, maxlen - len(s):] = s
    return out
