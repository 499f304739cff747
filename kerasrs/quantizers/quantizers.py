"""Quantizers and the quantization arithmetic of Keras 3 (``keras.quantizers``).

Symmetric "abs-max" quantization maps a float tensor ``x`` to integers ``q = clip(round(x * s),
lo, hi)`` with one scale ``s = hi / (max|x| + epsilon)`` per slice (the slices run along the
reduced ``axis``); ``q / s`` gives ``x`` back up to half a step. int4 weights use the range
[-8, 7] and are stored two to a byte (`pack_int4`); grouped int4 (``block_size`` input rows per
group) is asymmetric: per group and column a scale and a zero point (`abs_max_quantize_grouped_
with_zero_point`). float8 quantize-dequantize (`quantize_and_dequantize`) rounds to the float8
grid with a per-tensor scale (Micikevicius et al. 2022, "FP8 Formats for Deep Learning").

Weights are quantized on the host (NumPy, ``to_numpy=True``), as Keras does to save device
memory; activations are quantized with `kerasrs.ops` at every call.
"""

import math

import numpy as np

from kerasrs import backend as backend_module
from kerasrs import ops
from kerasrs.backend import settings


class Quantizer:
    """Base class of quantizers: ``quantizer(x)`` returns the quantized tensor (and, for the
    abs-max quantizer, the scale).

    Args:
        output_dtype: dtype name of the quantized values. Defaults to "int8".
    """

    def __init__(self, output_dtype="int8"):
        self.output_dtype = output_dtype

    def __call__(self, x):
        return x

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def get_config(self):
        raise NotImplementedError(f"{self} does not implement get_config()")


def _axes(axis, ndim):
    """``axis`` (an int or a sequence of ints, negative allowed) as a sorted tuple."""
    axis = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return tuple(sorted(int(a) % ndim for a in axis))


def abs_max_quantize(inputs, axis, value_range=(-127, 127), dtype="int8", epsilon=None,
                     to_numpy=False):
    """``(q, scale)``: ``inputs`` quantized with one abs-max scale per slice along ``axis``.

    Args:
        inputs: float tensor or array.
        axis: int or tuple of ints, the axes each scale covers (kept with size 1 in ``scale``).
        value_range: ``(lo, hi)`` of the integers; the scale maps ``max|x|`` to ``hi``.
        dtype: dtype of ``q``. epsilon: added to ``max|x|``; defaults to
            `kerasrs.backend.epsilon()`.
        to_numpy: compute on the host with NumPy (for weights).

    Returns:
        ``q`` (``dtype``, the shape of ``inputs``) and ``scale`` (the dtype of ``inputs``,
        size 1 along ``axis``), with ``inputs ~= q / scale``.
    """
    epsilon = settings.epsilon() if epsilon is None else epsilon
    lo, hi = value_range
    if to_numpy:
        x = np.asarray(ops.convert_to_numpy(inputs))
        axes = _axes(axis, x.ndim)
        scale = hi / (np.max(np.abs(x), axis=axes, keepdims=True) + epsilon)
        q = np.clip(np.round(x * scale), lo, hi).astype(dtype)
        return ops.convert_to_tensor(q), ops.convert_to_tensor(scale.astype(x.dtype))
    x = ops.convert_to_tensor(inputs)
    axes = _axes(axis, x.ndim)
    scale = ops.cast(ops.divide(hi, ops.add(ops.max(ops.abs(x), axis=axes, keepdims=True),
                                            epsilon)), x.dtype)
    q = ops.cast(ops.clip(ops.round(ops.multiply(x, scale)), lo, hi), dtype)
    return q, scale


def abs_max_quantize_grouped_with_zero_point(inputs, block_size, value_range=(-8, 7),
                                             dtype="int8", epsilon=None, to_numpy=False):
    """Asymmetric quantization of a 2-D ``(rows, cols)`` tensor in groups of ``block_size``
    rows: per group and column ``scale = (max - min + epsilon) / (hi - lo)`` and a zero point
    ``z = clip(round(-min / scale) + lo)``; ``q = clip(round(x / scale) + z)``, so
    ``x ~= (q - z) * scale``. The last group is padded with zeros.

    Returns:
        ``(q (rows, cols) dtype, scale (groups, cols), zero (groups, cols) int8)``.
    """
    epsilon = settings.epsilon() if epsilon is None else epsilon
    lo, hi = value_range
    x = np.asarray(ops.convert_to_numpy(inputs))
    rows, cols = x.shape
    groups = math.ceil(rows / block_size)
    padded = np.zeros((groups * block_size, cols), x.dtype)
    padded[:rows] = x
    blocks = padded.reshape(groups, block_size, cols)
    low, high = blocks.min(axis=1, keepdims=True), blocks.max(axis=1, keepdims=True)
    scale = (high - low + epsilon) / (hi - lo)
    zero = np.clip(np.round(-low / scale) + lo, lo, hi)
    q = np.clip(np.round(blocks / scale) + zero, lo, hi).astype(dtype)
    q = q.reshape(groups * block_size, cols)[:rows]
    # computed on the host either way (weights are quantized once); ``to_numpy`` is Keras's flag
    return tuple(ops.convert_to_tensor(r) for r in (q, scale[:, 0].astype(x.dtype),
                                                     zero[:, 0].astype("int8")))


def dequantize_with_sz_map(weights, scale, zero, g_idx, group_axis=-1):
    """``(weights - zero[g]) * scale[g]``, where ``g = g_idx`` gives each position along the
    grouped axis its group (scale and zero have one entry per group along ``group_axis``)."""
    groups = ops.cast(g_idx, "int32")
    scale_at = ops.take(scale, groups, axis=group_axis)
    zero_at = ops.cast(ops.take(zero, groups, axis=group_axis), scale_at.dtype)
    return ops.multiply(ops.subtract(ops.cast(weights, scale_at.dtype), zero_at), scale_at)


class AbsMaxQuantizer(Quantizer):
    """Abs-max quantizer: ``quantizer(x, axis)`` returns ``abs_max_quantize(x, axis, ...)``.

    Args:
        axis: default axis (or axes) of the scales; None means -1. Keras deprecates giving it
            here in favour of the call argument.
        value_range: ``(lo, hi)``. epsilon: see `abs_max_quantize`.
        output_dtype: dtype of the quantized values.

    Raises:
        ValueError: for an int8 output with a range outside [-128, 127].
    """

    def __init__(self, axis=None, value_range=(-127, 127), epsilon=None, output_dtype="int8"):
        super().__init__(output_dtype=output_dtype)
        self.axis = None if axis is None else tuple(_axis_list(axis))
        self.value_range = tuple(value_range)
        self.epsilon = settings.epsilon() if epsilon is None else epsilon
        if output_dtype == "int8" and (self.value_range[0] < -128 or self.value_range[1] > 127):
            raise ValueError(f"AbsMaxQuantizer: Quantizer with output_dtype='int8' requires "
                             f"value_range to be within the interval [-128, 127]. Received: "
                             f"value_range={value_range}")

    def __call__(self, x, axis=None, to_numpy=False):
        axis = self.axis if axis is None else axis
        return abs_max_quantize(x, -1 if axis is None else axis, self.value_range,
                                self.output_dtype, self.epsilon, to_numpy)

    def get_config(self):
        config = {"value_range": self.value_range, "epsilon": self.epsilon,
                  "output_dtype": self.output_dtype}
        if self.axis is not None:
            config["axis"] = self.axis
        return config


def _axis_list(axis):
    return [axis] if isinstance(axis, (int, np.integer)) else list(axis)


# -- int4 packing ---------------------------------------------------------------------------------
def pack_int4(arr, axis=0, dtype="int8"):
    """Two int4 values (in [-8, 7]) per byte along ``axis``: element ``2i`` in the low nibble,
    ``2i + 1`` in the high nibble (an odd length is padded with a zero).

    Args:
        arr: int8 (or uint8) tensor or array of int4 values. axis: the axis to pack.
        dtype: "int8" or "uint8", the dtype of ``arr`` and of the result.

    Returns:
        ``(packed, packed_shape, original_length)``.

    Raises:
        ValueError: for another ``dtype``. TypeError: for ``arr`` of another dtype.
    """
    if dtype not in ("int8", "uint8"):
        raise ValueError(f"pack_int4: Expected dtype to be 'int8' or 'uint8', but got '{dtype}'.")
    if backend_module.standardize_dtype(arr.dtype).name != dtype:
        raise TypeError(f"pack_int4: Expected {dtype} tensor for packing, got "
                        f"{backend_module.standardize_dtype(arr.dtype).name}.")
    a = np.moveaxis(np.asarray(ops.convert_to_numpy(arr)), axis, 0)
    n = a.shape[0]
    if n % 2:
        a = np.concatenate([a, np.zeros((1,) + a.shape[1:], a.dtype)])
    packed = ((a[0::2] & 0x0F) | ((a[1::2] & 0x0F) << 4)).astype(dtype)
    packed = np.moveaxis(packed, 0, axis)
    return ops.convert_to_tensor(packed), tuple(packed.shape), n


def unpack_int4(packed, orig_len, axis=0, dtype="int8"):
    """The inverse of `pack_int4`: the int4 values of ``packed`` as ``dtype`` (signed values
    in [-8, 7] for "int8", nibbles in [0, 15] for "uint8"), ``orig_len`` of them along ``axis``.

    Raises:
        ValueError: for another ``dtype``. TypeError: for ``packed`` that is not int8/uint8.
    """
    if dtype not in ("int8", "uint8"):
        raise ValueError(f"unpack_int4: Expected dtype to be 'int8' or 'uint8', but got "
                         f"'{dtype}'.")
    packed = ops.convert_to_tensor(packed)
    if backend_module.standardize_dtype(packed.dtype).name not in ("int8", "uint8"):
        raise TypeError(f"unpack_int4: Expected int8 or uint8 tensor for unpacking, got "
                        f"{packed.dtype}")
    axis = axis % packed.ndim
    x = ops.moveaxis(packed, axis, 0)
    low = ops.bitwise_and(x, 0x0F)
    high = ops.bitwise_and(ops.right_shift(x, 4), 0x0F)
    if dtype == "int8":  # nibble n in [0, 15] -> (n ^ 8) - 8 in [-8, 7]
        low = ops.subtract(ops.bitwise_xor(low, 8), 8)
        high = ops.subtract(ops.bitwise_xor(high, 8), 8)
    both = ops.stack([ops.cast(low, dtype), ops.cast(high, dtype)], axis=1)
    out = ops.reshape(both, (-1,) + tuple(x.shape[1:]))[:orig_len]
    return ops.moveaxis(out, 0, axis)


# -- float8 -----------------------------------------------------------------------------------------
def compute_float8_scale(amax, scale, dtype_max, margin=0):
    """The next float8 scale: ``amax / (dtype_max / 2**margin)``, keeping ``scale`` where
    ``amax`` is 0 or not finite (delayed scaling, as Keras)."""
    keep = ops.reciprocal(scale)
    factor = ops.divide(ops.divide(dtype_max, amax), 2 ** margin)
    factor = ops.where(ops.logical_and(ops.greater(amax, 0.0), ops.isfinite(amax)), factor, keep)
    return ops.reciprocal(factor)


def compute_float8_amax_history(x, amax_history):
    """The history rolled by one with ``max|x|`` as its first entry."""
    update = ops.cast(ops.max(ops.abs(x)), amax_history.dtype)
    return ops.scatter_update(ops.roll(amax_history, shift=-1), [[0]], ops.reshape(update, [1]))


def quantize_and_dequantize(inputs, scale, quantized_dtype, compute_dtype):
    """``inputs`` rounded to the ``quantized_dtype`` grid (float8_e4m3fn, float8_e5m2) after
    dividing by ``scale``, clipped to its range, and multiplied back: in ``compute_dtype``.
    The rounding runs on the host with ml_dtypes."""
    import ml_dtypes  # the float8 types; a runtime dependency, imported where float8 is used

    top = float(ml_dtypes.finfo(quantized_dtype).max)
    x = ops.divide(ops.convert_to_tensor(inputs), ops.cast(scale, compute_dtype))
    host = np.clip(np.asarray(ops.convert_to_numpy(x), "float32"), -top, top)
    grid = host.astype(quantized_dtype).astype("float32")
    return ops.multiply(ops.cast(ops.convert_to_tensor(grid), compute_dtype),
                        ops.cast(scale, compute_dtype))

