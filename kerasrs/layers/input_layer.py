"""`Input` and `InputLayer`: where a functional or Sequential model's data enters."""

import warnings

from kerasrs import backend as backend_module
from kerasrs.layers import base, node


class InputLayer(base.Layer):
    """The entry point of a model: holds the input's shape and dtype, computes nothing.

    Args:
        shape: tuple, the shape of one sample (no batch axis); None entries are free sizes.
        batch_size: optional fixed batch size.
        dtype: dtype name of the input. Defaults to ``floatx()``.
        batch_shape: the full shape including the batch axis (instead of ``shape``).
        input_tensor: an existing `SymbolicTensor` to use as the output.
        name: layer name; defaults to ``input_layer``, ``input_layer_1``, ...
        optional: bool; an optional input of a functional model may be given ``None`` when the
            model is called (the layers it feeds then receive ``None``).
        sparse, ragged: accepted for Keras compatibility; must be falsy.

    Raises:
        ValueError: if neither or both of ``shape`` and ``batch_shape`` are given, or a size is
            not a positive int or None.
    """

    def __init__(self, shape=None, batch_size=None, dtype=None, sparse=None, batch_shape=None,
                 input_tensor=None, optional=False, name=None, ragged=None, **kwargs):
        if "batch_input_shape" in kwargs:  # Keras 2 configs
            batch_shape = kwargs.pop("batch_input_shape")
        if "input_shape" in kwargs:  # Keras's deprecated spelling of `shape`
            input_shape = kwargs.pop("input_shape")
            warnings.warn("Argument `input_shape` is deprecated. Use `shape` instead.",
                          UserWarning, stacklevel=2)
            shape = input_shape if shape is None and batch_shape is None else shape
        for flag, value in (("sparse", sparse), ("ragged", ragged)):
            if value:
                raise ValueError(f"InputLayer: `{flag}=True` is not supported ({flag} inputs). "
                                 f"Received: {flag}={value!r}")
        super().__init__(name=name, dtype=None, **kwargs)
        if input_tensor is not None:
            batch_shape, dtype = input_tensor.shape, input_tensor.dtype
        if shape is not None and batch_shape is not None:
            raise ValueError(f"{self.name}: You cannot pass both `shape` and `batch_shape` at "
                             f"the same time; give one. Received: shape={shape}, "
                             f"batch_shape={batch_shape}")
        if batch_size is not None and batch_shape is not None and input_tensor is None:
            raise ValueError(f"{self.name}: You cannot pass both `batch_size` and `batch_shape` "
                             f"at the same time; give one. Received: batch_size={batch_size}, "
                             f"batch_shape={batch_shape}")
        if shape is None and batch_shape is None:
            raise ValueError(f"{self.name}: You must pass a `shape` argument. An input needs a "
                             "`shape` (without the batch axis). Received: shape=None")
        if batch_shape is None:
            shape = (shape,) if isinstance(shape, int) else tuple(shape)
            batch_shape = (batch_size,) + shape
        batch_shape = tuple(batch_shape)
        if any(d is not None and (not isinstance(d, int) or d <= 0) for d in batch_shape):
            raise ValueError(f"{self.name}: every size must be a positive int or None. "
                             f"Received: batch_shape={batch_shape}")
        self.batch_shape = batch_shape
        self.optional = bool(optional)
        self._input_dtype = backend_module.standardize_dtype(dtype).name
        self.built = True
        tensor = input_tensor or node.SymbolicTensor(batch_shape, self._input_dtype, name=self.name)
        node.Node(self, (), {}, [tensor])

    @property
    def dtype(self):
        return self._input_dtype

    compute_dtype = dtype

    def call(self, inputs):
        return inputs

    def get_config(self):
        return {"batch_shape": list(self.batch_shape), "dtype": self.dtype, "sparse": False,
                "ragged": False, "name": self.name, "optional": self.optional}


def Input(shape=None, batch_size=None, dtype=None, sparse=None, batch_shape=None, name=None,
          tensor=None, optional=False):
    """A symbolic model input: the start of a functional model.

    Args:
        shape: tuple, the shape of one sample, without the batch axis, e.g. ``(784,)`` or
            ``(28, 28, 1)``; None entries are free sizes (e.g. sequence length).
        batch_size: optional fixed batch size.
        dtype: dtype name ("float32" by default; "int32" for token ids).
        batch_shape: full shape including the batch axis (instead of ``shape``).
        name: the `InputLayer`'s name (also the key for dict inputs in ``fit``).
        tensor: an existing symbolic tensor to use as the input.
        optional: bool; the model may then be called with ``None`` for this input.

    Returns:
        A `SymbolicTensor` of shape ``(batch_size, *shape)``.

    Example:
        >>> x = Input(shape=(784,))
        >>> x.shape
        (None, 784)
    """
    layer = InputLayer(shape=shape, batch_size=batch_size, dtype=dtype, sparse=sparse,
                       batch_shape=batch_shape, name=name, input_tensor=tensor, optional=optional)
    return layer.output
