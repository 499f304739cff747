"""`Input` and `InputLayer`: where a functional or Sequential model's data enters."""

import warnings

import numpy as np

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
        super().__init__(name=name, dtype=None, **kwargs)
        if input_tensor is not None:
            self._check_input_tensor(input_tensor, dict(
                shape=shape, batch_size=batch_size, batch_shape=batch_shape, dtype=dtype,
                sparse=sparse))
            shape, batch_size = None, None
            batch_shape, dtype = input_tensor.shape, input_tensor.dtype
        for flag, value in (("sparse", sparse), ("ragged", ragged)):
            if value:
                raise ValueError(f"{self.name}: `{flag}=True` is not supported ({flag} inputs). "
                                 f"Received: {flag}={value!r}")
        if shape is not None and batch_shape is not None:
            raise ValueError(f"{self.name}: You cannot pass both `shape` and `batch_shape` at "
                             f"the same time; give one. Received: shape={shape}, "
                             f"batch_shape={batch_shape}")
        if batch_size is not None and batch_shape is not None:
            raise ValueError(f"{self.name}: You cannot pass both `batch_size` and `batch_shape` "
                             f"at the same time; give one. Received: batch_size={batch_size}, "
                             f"batch_shape={batch_shape}")
        if shape is None and batch_shape is None:
            raise ValueError(f"{self.name}: You must pass a `shape` argument. An input needs a "
                             "`shape` (without the batch axis). Received: shape=None")
        if batch_shape is None:
            shape = (shape,) if isinstance(shape, int) else tuple(shape)
            batch_shape = (batch_size,) + shape
        batch_shape = tuple(int(d) if isinstance(d, np.integer) else d for d in batch_shape)
        if any(d is not None and (not isinstance(d, int) or d <= 0) for d in batch_shape):
            raise ValueError(f"{self.name}: every size must be a positive int or None. "
                             f"Received: batch_shape={batch_shape}")
        self.batch_shape = batch_shape
        self.optional = bool(optional)
        self.sparse = self.ragged = False  # Keras's attributes (no sparse/ragged tensors here)
        self._input_dtype = backend_module.standardize_dtype(dtype).name
        self.built = True
        tensor = node.SymbolicTensor(batch_shape, self._input_dtype, name=self.name) \
            if input_tensor is None else input_tensor
        node.Node(self, (), {}, [tensor])

    @property
    def dtype(self):
        return self._input_dtype

    compute_dtype = dtype

    def call(self, inputs=None):
        """Nothing to compute: the input passes through (``call()`` alone gives None)."""
        return inputs

    def _check_input_tensor(self, tensor, args):
        """The other arguments given with ``input_tensor`` (``args``, by name) must agree with
        it (Keras's rule)."""
        if not isinstance(tensor, node.SymbolicTensor):
            raise ValueError(f"{self.name}: Argument `input_tensor` must be a KerasTensor "
                             "(a symbolic tensor, e.g. from `Input`). Received invalid type: "
                             f"input_tensor of type {type(tensor).__name__}")
        given = tuple(tensor.shape)
        shape, batch_size, batch_shape, dtype, sparse = (args[k] for k in (
            "shape", "batch_size", "batch_shape", "dtype", "sparse"))
        conflicts = (
            ("batch_size", batch_size is not None and (not given or given[0] != batch_size)),
            ("shape", shape is not None and tuple(shape) != given[1:]),
            ("batch_shape", batch_shape is not None and tuple(batch_shape) != given),
            ("dtype", dtype is not None and backend_module.standardize_dtype(dtype) !=
             backend_module.standardize_dtype(tensor.dtype)),
            ("sparse", sparse is not None and bool(sparse) != tensor.sparse))
        for arg, conflict in conflicts:
            if conflict:
                raise ValueError(f"{self.name}: When providing the `input_tensor` argument, you "
                                 f"cannot provide an incompatible `{arg}` argument. Received: "
                                 f"input_tensor of shape {given} and dtype {tensor.dtype}, "
                                 f"{arg}={args[arg]!r}")

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
