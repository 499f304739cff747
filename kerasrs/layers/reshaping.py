"""Reshaping layers: Flatten, Reshape, Permute, RepeatVector. The batch axis is never touched."""

import numpy as np

from kerasrs import ops
from kerasrs.layers.base import InputSpec, Layer


def _prod(dims):
    return None if any(d is None for d in dims) else int(np.prod(dims, dtype=np.int64))


class Flatten(Layer):
    """Flattens every axis but the batch axis: ``(batch, d1, d2, ...) -> (batch, d1 * d2 * ...)``.

    Args:
        data_format: "channels_last" (default) or "channels_first"; with "channels_first" the
            channel axis is moved last first, so the order of values matches channels_last.
    """

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format or "channels_last"
        if self.data_format not in ("channels_last", "channels_first"):
            raise ValueError(f"{self.name}: `data_format` must be 'channels_last' or "
                             f"'channels_first'. Received: data_format={data_format!r}")
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs):
        if self.data_format == "channels_first" and inputs.ndim > 2:
            inputs = ops.transpose(inputs, (0,) + tuple(range(2, inputs.ndim)) + (1,))
        size = int(np.prod(inputs.shape[1:], dtype=np.int64))
        return ops.reshape(inputs, (inputs.shape[0], size))

    def compute_output_shape(self, input_shape):
        return (input_shape[0], _prod(input_shape[1:]))

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


class Reshape(Layer):
    """Reshapes each sample to ``target_shape`` (without the batch axis; one entry may be -1).

    Raises:
        ValueError: if the sample size does not fit ``target_shape``, naming both shapes.
    """

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(target_shape)
        bad = [d for d in self.target_shape if not isinstance(d, (int, np.integer)) or d == 0
               or d < -1]
        if bad:
            raise ValueError(f"{self.name}: each `target_shape` entry must be a non-negative "
                             f"integer (kerasrs: nonzero) or -1 for one unknown dimension. "
                             f"Received: target_shape={target_shape!r}")
        if sum(d == -1 for d in self.target_shape) > 1:
            raise ValueError(f"{self.name}: `target_shape` may have at most one unknown dimension "
                             f"(-1). Received: target_shape={target_shape!r}")

    def _resolve(self, input_shape):
        size = _prod(input_shape[1:])
        known = int(np.prod([d for d in self.target_shape if d != -1], dtype=np.int64))
        if size is None:
            return tuple(None if d == -1 else d for d in self.target_shape)
        if (-1 in self.target_shape and size % known) or (-1 not in self.target_shape
                                                           and size != known):
            raise ValueError(f"{self.name}: cannot reshape a sample of shape "
                             f"{tuple(input_shape[1:])} ({size} values) to {self.target_shape}. "
                             f"Received: input_shape={tuple(input_shape)}")
        return tuple(size // known if d == -1 else d for d in self.target_shape)

    def call(self, inputs):
        return ops.reshape(inputs, (inputs.shape[0],) + self._resolve(inputs.shape))

    def compute_output_shape(self, input_shape):
        return (input_shape[0],) + self._resolve(input_shape)

    def get_config(self):
        return {**super().get_config(), "target_shape": list(self.target_shape)}


class Permute(Layer):
    """Permutes the non-batch axes: ``dims`` is a permutation of ``1..rank-1`` (1-indexed, as
    Keras), e.g. ``Permute((2, 1))`` swaps the two axes of ``(batch, a, b)``."""

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError(f"{self.name}: Invalid permutation argument `dims`: it must be a "
                             f"permutation of 1..{len(self.dims)} (the batch axis 0 is "
                             f"excluded). Received: dims={dims!r}")
        self.input_spec = InputSpec(ndim=len(self.dims) + 1)

    def call(self, inputs):
        return ops.transpose(inputs, (0,) + self.dims)

    def compute_output_shape(self, input_shape):
        return (input_shape[0],) + tuple(input_shape[d] for d in self.dims)

    def get_config(self):
        return {**super().get_config(), "dims": list(self.dims)}


class RepeatVector(Layer):
    """Repeats a ``(batch, features)`` input ``n`` times: output ``(batch, n, features)``."""

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"{self.name}: Expected an integer value for `n`. Received: n={n!r}")
        if n <= 0:
            raise ValueError(f"{self.name}: `n` should be a positive integer. Received: n={n!r}")
        self.n = int(n)
        self.input_spec = InputSpec(ndim=2)

    def call(self, inputs):
        batch, features = inputs.shape
        return ops.broadcast_to(ops.expand_dims(inputs, 1), (batch, self.n, features))

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.n, input_shape[1])

    def get_config(self):
        return {**super().get_config(), "n": self.n}
