"""Quantized kernels and LoRA for `Dense` and `EinsumDense` (Keras 3's ``layer.quantize(mode)``
and ``layer.enable_lora(rank)``), with Keras's variables, layouts and saved order, so a quantized
Keras file loads here and predicts the same (`Embedding`'s tables: `quantized_embedding`).

* **int8**: the kernel is stored as int8 ``q = round(kernel * s)``, one scale ``s = 127 /
  max|kernel|`` per output channel (the contracted axes are reduced), saved as
  ``kernel_scale`` in Keras's layout. Inputs are quantized per row the same way at each call
  (``activation_quantizer``), the product runs on the integers (exact in float32 below about a
  thousand contracted elements) and is divided by both scales, as Keras computes it. The
  gradient with respect to the inputs is that of ``inputs @ (q / s)`` (straight-through the
  input rounding, as Keras's custom gradient).
* **int4**: the kernel, seen as a ``(rows, cols)`` matrix (rows = contracted axes), holds
  values in [-8, 7] packed two per byte along the columns (`kerasrs.quantizers.pack_int4`);
  one scale per column, or, with ``block_size`` (default 128), a scale and a zero point per
  group of ``block_size`` rows and column, with the row-to-group map ``g_idx``.
* **float8**: the variables of Keras's float8 training (scales and amax histories); the
  forward pass rounds inputs and kernel to float8_e4m3fn. The delayed-scaling update of the
  scales during training is not implemented (the scales keep their values).
* **gptq / awq**: the layout of a calibrated layer (a 4- or 8-bit packed ``quantized_kernel``,
  group scales and zero points, ``g_idx``, AWQ's per-row scales), so calibrated files load and
  run; the calibration itself is not implemented (see `kerasrs.quantizers.config`).
* **LoRA** (Hu et al. 2021): ``kernel + (alpha / rank) * lora_kernel_a @ lora_kernel_b`` with
  the kernel frozen; saving merges the delta into the kernel (re-quantized for int8/int4), and
  loading sets the LoRA kernels to zero, as Keras does.

The host class keeps its float kernel in ``self._kernel`` (the ``kernel`` property adds LoRA or
unpacks int4) and defines the hooks listed in `KernelQuantization`.
"""

import math

import numpy as np

from kerasrs import dtype_policies, initializers, ops
from kerasrs.quantizers import config as qconfig
from kerasrs.quantizers import quantizers as q

_INT4_RANGE = (-8, 7)


def quantize_table(table, mode, axis, block=None, quantizer=None):
    """``(values, scale, zero)`` of a 2-D float ``table``: int8 or int4 values (unpacked, int8
    dtype) with one abs-max scale per slice along ``axis`` (``scale`` lacks that axis; ``zero``
    is None), or, for int4 with a ``block`` size, a scale and zero point per group of ``block``
    entries along ``axis`` (that axis of ``scale`` and ``zero`` counts the groups).

    ``quantizer`` replaces the default abs-max quantizer of the per-slice case (a config's
    ``weight_quantizer``; it is called with its own axis)."""
    table = np.asarray(ops.convert_to_numpy(table))
    if mode == "int8" or block is None or block == -1:
        value_range = (-127, 127) if mode == "int8" else _INT4_RANGE
        quantizer = quantizer or q.AbsMaxQuantizer(axis=axis, value_range=value_range)
        values, scale = quantizer(table, to_numpy=True)
        scale = np.asarray(scale.numpy())
        return values, scale.reshape(scale.shape[:axis] + scale.shape[axis + 1:]), None
    grouped = table if axis == 0 else table.T  # the grouped quantizer groups rows
    values, scale, zero = q.abs_max_quantize_grouped_with_zero_point(
        grouped, block_size=block, value_range=_INT4_RANGE, to_numpy=True)
    if axis == 0:
        return values, scale, zero
    return tuple(ops.transpose(t) for t in (values, scale, zero))


def dequantize_table(values, scale, zero, g_idx, axis, dtype):
    """The float table of `quantize_table`'s ``(values, scale, zero)`` (``g_idx`` maps each
    entry along ``axis`` to its group when ``zero`` is given)."""
    values = ops.cast(values, dtype)
    if zero is None:
        return ops.divide(values, ops.expand_dims(scale, axis))
    return ops.cast(q.dequantize_with_sz_map(values, scale, zero, g_idx, group_axis=axis), dtype)


class QuantizedWeights:
    """What quantized layers share: Keras's saved order of their variables (``_SERIALIZED``
    by mode, ``_WEIGHTS`` mapping saved names to attributes), LoRA's freezing and zeroing, and
    the policy a quantized layer ends with. Hosts define ``_merged_lora_values()``."""

    @classmethod
    def from_config(cls, config):
        """The layer of ``config``, its ``quantization_config`` read back into its object."""
        config = dict(config)
        config["quantization_config"] = qconfig.deserialize(config.get("quantization_config"))
        return super().from_config(config)

    lora_enabled = False
    _is_quantized = False
    _SERIALIZED = {}
    _WEIGHTS = {}  # saved name -> attribute holding the variable ("kernel" -> "_kernel")
    _LORA = ()  # the attributes of the two LoRA weights

    @property
    def variable_serialization_spec(self):
        """Per quantization mode, the names of the saved variables in Keras's order."""
        return {mode: list(names) for mode, names in self._SERIALIZED.items()}

    def _saved_variables(self):
        """``[(name, variable)]`` in Keras's saved order (absent ones skipped)."""
        if not self.built:
            return []
        mode = self.quantization_mode
        if mode not in self._SERIALIZED:
            raise self._quantization_mode_error(mode)
        found = ((name, getattr(self, self._WEIGHTS.get(name, name), None))
                 for name in self._SERIALIZED[mode])
        return [(name, var) for name, var in found if var is not None]

    def save_own_variables(self, store):
        """Write the variables in Keras's order, with LoRA merged into the weights."""
        if not self.built:
            return
        merged = self._merged_lora_values() if self.lora_enabled else {}
        for i, (name, var) in enumerate(self._saved_variables()):
            store[str(i)] = merged.get(name, var)

    def load_own_variables(self, store):
        """Read variables written by `save_own_variables` (or by Keras); LoRA weights restart
        at zero since the saved weights already hold their delta.

        Raises:
            ValueError: when the number of stored arrays differs (without LoRA).
        """
        if not self.lora_enabled:
            self._check_load_own_variables(store)
        if not self.built:
            return
        mode = self.quantization_mode
        if mode in ("gptq", "awq"):
            setattr(self, f"is_{mode}_calibrated", True)
        for i, (_, var) in enumerate(self._saved_variables()):
            var.assign(_stored(store[str(i)], var.dtype))
        if self.lora_enabled:
            for name in self._LORA:
                var = getattr(self, name)
                var.assign(np.zeros(var.shape, var.dtype))

    def _lora_delta(self):
        a, b = (getattr(self, name) for name in self._LORA)
        return ops.multiply(ops.matmul(a, b), self.lora_alpha / self.lora_rank)

    def _check_lora(self, constraint, what):
        if constraint:
            raise ValueError(f"{self.name}: Lora is incompatible with {what} constraints. In "
                             f"order to enable lora on this layer, remove the `{what}_constraint`"
                             " argument.")
        if not self.built:
            raise ValueError(f"{self.name}: Cannot enable lora on a layer that isn't yet "
                             "built.")
        if self.lora_enabled:
            raise ValueError(f"{self.name}: lora is already enabled. This can only be done "
                             "once per layer.")

    def _add_lora_weights(self, names, shapes, initializers_, regularizer, frozen, rank,
                          lora_alpha):
        # float32 whatever the policy: low-rank updates underflow in half precision
        for name, shape, init in zip(names, shapes, initializers_):
            setattr(self, name, self.add_weight(name=name, shape=shape,
                                                initializer=initializers.get(init),
                                                dtype="float32", regularizer=regularizer))
        self._freeze(frozen)
        self.lora_enabled, self.lora_rank = True, rank
        self.lora_alpha = rank if lora_alpha is None else lora_alpha

    def _add_kernel_lora(self, rank, lora_alpha, a_initializer, b_initializer):
        """LoRA on ``self._kernel`` of shape ``_kernel_shape``: ``lora_kernel_a`` is
        ``(*_kernel_shape[:-1], rank)`` and ``lora_kernel_b`` ``(rank, _kernel_shape[-1])``, so
        ``a @ b`` has the kernel's shape."""
        shape = tuple(self._kernel_shape)
        self._add_lora_weights(self._LORA, (shape[:-1] + (rank,), (rank, shape[-1])),
                               (a_initializer, b_initializer), self.kernel_regularizer,
                               self._kernel, rank, lora_alpha)

    def _freeze(self, variable):
        """Move a trainable variable to the non-trainable ones (Keras re-tracks it the same
        way when its ``trainable`` flag changes)."""
        variable.trainable = False
        if any(v is variable for v in self._trainable_variables):
            self._trainable_variables[:] = [v for v in self._trainable_variables
                                            if v is not variable]
            self._non_trainable_variables.append(variable)

    def _drop(self, attr):
        """Forget the variable in ``attr`` (replaced by its quantized form)."""
        var = getattr(self, attr)
        for store in (self._trainable_variables, self._non_trainable_variables,
                      self._regularized):
            store[:] = [v for v in store if v is not var]
        delattr(self, attr)

    def _frozen(self, name, shape, dtype=None, initializer="zeros"):
        return self.add_weight(name=name, shape=shape, initializer=initializer, dtype=dtype,
                               trainable=False)

    def _check_type(self, type_check):
        """Keras refuses to quantize subclasses (their ``call`` may use the weights another
        way) unless ``type_check=False``; kerasrs's own classes are known."""
        if type_check and not type(self).__module__.startswith("kerasrs."):
            raise self._not_implemented_error(self.quantize)

    def _set_quantized_policy(self, mode, config):
        """The policy ``"<mode>_from_<source>"`` after ``quantize`` (unless already set)."""
        policy = self._policy()
        if policy is not None and policy.quantization_mode is not None:
            return
        if mode in ("gptq", "awq"):
            name = config.dtype_policy_string()
        elif mode == "int4":
            block = qconfig.block_size_for(self, config)
            name = f"int4/{-1 if block is None else block}"
        else:
            name = mode
        self.dtype_policy = dtype_policies.get(f"{name}_from_{self.dtype_policy.name}")


def _stored(value, dtype):
    """A stored value (array, h5py dataset, Tensor) as a NumPy array of ``dtype``."""
    value = value.numpy() if hasattr(value, "numpy") else value
    return np.asarray(value[()] if hasattr(value, "id") else value).astype(dtype, copy=False)


class KernelQuantization(QuantizedWeights):
    """Mixin of `Dense` and `EinsumDense`. Hooks of the host class:

    * ``_product(inputs, kernel)``: the product before bias and activation;
    * ``_kernel_reduced_axes()``: the kernel axes contracted with the inputs;
    * ``_input_reduced_axes()``: the input axes contracted with the kernel;
    * ``_scale_to_saved(scale)`` / ``_scale_from_saved(scale)``: an int8 kernel scale with the
      kernel's rank (size 1 on the reduced axes) to Keras's saved layout and back;
    * ``_input_scale_to_output(scale)``: an input scale with the input's rank to one that
      broadcasts against the outputs;
    * ``_calibration_matrix_shape(kernel_shape)``: the ``(rows, columns)`` of GPTQ/AWQ;
    * ``_finish(x, round_bias=False)``: bias (rounded to bfloat16 first with ``round_bias``,
      as Keras's float8 layers add it) and activation.
    """

    _WEIGHTS = {"kernel": "_kernel"}
    _LORA = ("lora_kernel_a", "lora_kernel_b")
    _raw_block_size = True  # `_int4_block_size` as given (Dense) or None per channel
    _SERIALIZED = {
        None: ("kernel", "bias"),
        "int8": ("kernel", "bias", "kernel_scale"),
        "int4": ("kernel", "bias", "kernel_scale", "kernel_zero", "g_idx"),
        "float8": ("kernel", "bias", "inputs_scale", "inputs_amax_history", "kernel_scale",
                   "kernel_amax_history", "outputs_grad_scale", "outputs_grad_amax_history"),
        "gptq": ("bias", "quantized_kernel", "kernel_scale", "kernel_zero", "g_idx"),
        "awq": ("bias", "quantized_kernel", "kernel_scale", "kernel_zero", "awq_scales",
                "g_idx"),
    }

    # -- the kernel the computation sees ------------------------------------------------------
    @property
    def kernel(self):
        """The float kernel (int4: unpacked integers; calibrated GPTQ/AWQ: the unpacked
        quantized kernel), plus the LoRA delta when LoRA is on."""
        if not self.built:
            raise AttributeError(f"{self.name}: You must build the layer before accessing "
                                 "`kernel`.")
        mode = self.quantization_mode
        if mode == "int4":
            kernel = ops.reshape(q.unpack_int4(self._kernel, self._int4_unpacked_column_size,
                                               axis=-1), self._kernel_shape)
        elif mode in ("gptq", "awq") and self._calibrated():
            kernel = self._unpacked_quantized_kernel()
        else:
            kernel = self._kernel
        if self.lora_enabled:
            kernel = ops.cast(ops.add(kernel, self._lora_delta()), self.compute_dtype)
        return kernel

    # -- LoRA ---------------------------------------------------------------------------------
    def enable_lora(self, rank, lora_alpha=None, a_initializer="he_uniform",
                    b_initializer="zeros"):
        """Freeze the kernel and learn a low-rank delta ``(lora_alpha / rank) * a @ b``.

        Raises:
            ValueError: with a kernel constraint, before the layer is built, or when LoRA is
                already on. NotImplementedError: for a GPTQ-quantized layer.
        """
        self._check_lora(self.kernel_constraint, "kernel")
        if self.quantization_mode == "gptq":
            raise NotImplementedError(f"{self.name}: lora is not currently supported with "
                                      "GPTQ quantization.")
        self._add_kernel_lora(rank, lora_alpha, a_initializer, b_initializer)

    # -- quantize -------------------------------------------------------------------------------
    def quantize(self, mode=None, type_check=True, config=None):
        """Quantize the built layer's kernel in place (see the module docstring).

        Raises:
            NotImplementedError: for a subclass defined outside kerasrs (its ``call`` may use
                the kernel differently) unless ``type_check=False``.
            ValueError: see `kerasrs.layers.Layer.quantize`.
        """
        self._check_type(type_check)
        self.quantization_config = config
        kernel = np.asarray(self._kernel.numpy())
        if mode == "int8":
            quantizer = qconfig.QuantizationConfig.weight_quantizer_or_default(
                config, q.AbsMaxQuantizer(axis=self._kernel_reduced_axes()))
            values, scale = quantizer(kernel, to_numpy=True)
            self._drop("_kernel")
            self.quantized_build(kernel.shape, mode, config)
            self._kernel.assign(values)
            self.kernel_scale.assign(self._scale_to_saved(scale))
        elif mode == "int4":
            block = config.block_size if isinstance(config, qconfig.Int4QuantizationConfig) \
                else None
            packed, scale, zero = self._int4_values(kernel, block, config)
            self._drop("_kernel")
            self.quantized_build(kernel.shape, mode, config)
            self._kernel.assign(packed)
            self.kernel_scale.assign(scale)
            if zero is not None:
                self.kernel_zero.assign(zero)
        else:  # float8 keeps the float kernel; gptq/awq add their (uncalibrated) variables
            self.quantized_build(kernel.shape, mode, config)
        self._set_quantized_policy(mode, config)

    def _int4_values(self, kernel, block, config):
        """``(packed, scale, zero or None)`` of a float kernel (see the module docstring)."""
        flat = np.asarray(kernel).reshape(self._int4_matrix_shape(kernel.shape))
        quantizer = config.weight_quantizer if config is not None else None
        values, scale, zero = quantize_table(flat, "int4", 0, block, quantizer)
        packed, _, _ = q.pack_int4(values, axis=-1)
        return packed, scale, zero

    def _int4_matrix_shape(self, kernel_shape):
        reduced = set(self._kernel_reduced_axes())
        rows = math.prod(d for i, d in enumerate(kernel_shape) if i in reduced)
        return rows, math.prod(kernel_shape) // max(rows, 1)

    def _saved_scale_shape(self, keepdims_shape):
        """The shape of the saved int8 ``kernel_scale`` for a scale of ``keepdims_shape``."""
        return tuple(self._scale_to_saved(ops.ones(keepdims_shape)).shape)

    def _calibration_matrix_shape(self, kernel_shape):
        """The ``(rows, columns)`` GPTQ/AWQ see (Dense: the kernel itself)."""
        return tuple(kernel_shape)

    # -- quantized variables ---------------------------------------------------------------------
    def quantized_build(self, kernel_shape, mode, config=None):
        """Create the variables of ``mode`` for a kernel of ``kernel_shape``.

        Raises:
            NotImplementedError: for an unknown mode ("Invalid quantization mode.").
        """
        builders = {"int8": self._int8_build, "int4": self._int4_build,
                    "float8": self._float8_build, "gptq": self._calibrated_build,
                    "awq": self._calibrated_build}
        if mode not in builders:
            raise self._quantization_mode_error(mode)
        self._kernel_shape = tuple(kernel_shape)
        builders[mode](tuple(kernel_shape), mode, config)
        self._is_quantized = True

    def _int8_build(self, kernel_shape, mode, config):
        self.inputs_quantizer = qconfig.QuantizationConfig.activation_quantizer_or_default(
            config, q.AbsMaxQuantizer())
        self._kernel = self._frozen("kernel", kernel_shape, "int8")
        keepdims = [1 if i in self._kernel_reduced_axes() else d
                    for i, d in enumerate(kernel_shape)]
        self.kernel_scale = self._frozen("kernel_scale", self._saved_scale_shape(keepdims),
                                         initializer="ones")

    def _int4_build(self, kernel_shape, mode, config):
        self.inputs_quantizer = qconfig.QuantizationConfig.activation_quantizer_or_default(
            config, None)
        rows, cols = self._int4_matrix_shape(kernel_shape)
        block = qconfig.block_size_for(self, config)
        groups = self._int4_groups = None if block is None or block == -1 else block
        # Keras's attribute names (Dense keeps the block size as given, EinsumDense None for -1)
        self._int4_block_size = block if self._raw_block_size else groups
        self._int4_rows, self._int4_unpacked_column_size = rows, cols
        self._orig_input_dim, self._orig_output_dim = rows, cols
        self.original_kernel_shape = tuple(kernel_shape)
        self._kernel = self._frozen("kernel", (rows, (cols + 1) // 2), "int8")
        scale_shape = (cols,) if groups is None else (math.ceil(rows / groups), cols)
        self.kernel_scale = self._frozen("kernel_scale", scale_shape, initializer="ones")
        if groups is not None:
            self.kernel_zero = self._frozen("kernel_zero", scale_shape, "int8")
            self.g_idx = self._frozen("g_idx", (rows,), "float32")
            self.g_idx.assign(np.arange(rows, dtype="float32") // groups)

    def _float8_build(self, kernel_shape, mode, config):
        history = getattr(self._policy() or self.dtype_policy, "amax_history_length",
                          dtype_policies.QuantizedFloat8DTypePolicy.default_amax_history_length)
        for name in ("inputs", "kernel", "outputs_grad"):
            setattr(self, f"{name}_scale", self.add_weight(
                name=f"{name}_scale", shape=(), initializer="ones", dtype="float32"))
            setattr(self, f"{name}_amax_history", self.add_weight(
                name=f"{name}_amax_history", shape=(history,), initializer="zeros",
                dtype="float32"))

    def _calibrated_build(self, kernel_shape, mode, config):
        bits = 4 if mode == "awq" else qconfig.calibration_setting(self, config, "weight_bits")
        group = qconfig.calibration_setting(self, config, "group_size")
        rows, cols = self._calibration_matrix_shape(kernel_shape)
        self._calibration = (mode, bits, cols)
        setattr(self, f"is_{mode}_calibrated", False)
        packed_cols = (cols + 1) // 2 if bits == 4 else cols
        self.quantized_kernel = self._frozen("kernel", (packed_cols, rows), "uint8")
        groups = 1 if group == -1 else math.ceil(rows / group)
        self.kernel_scale = self._frozen("kernel_scale", (cols, groups), initializer="ones")
        self.kernel_zero = self._frozen("kernel_zero", (cols, groups), "uint8")
        if mode == "awq":
            self.awq_scales = self._frozen("awq_scales", (rows,), initializer="ones")
        self.g_idx = self._frozen("g_idx", (rows,), "float32")

    def _calibrated(self):
        mode = self.quantization_mode
        return bool(getattr(self, f"is_{mode}_calibrated", False))

    def _unpacked_quantized_kernel(self):
        mode, bits, cols = self._calibration
        kernel = self.quantized_kernel
        if bits == 4:
            kernel = q.unpack_int4(kernel, cols, axis=0, dtype="uint8")
        return kernel

    # -- quantized calls ------------------------------------------------------------------------
    def _int8_call(self, inputs, training=None):
        kernel = ops.cast(self._kernel, self.compute_dtype)
        scale = self.kernel_scale
        if self.inputs_quantizer:
            values, in_scale = self.inputs_quantizer(inputs, axis=self._input_reduced_axes())
            in_scale = ops.stop_gradient(in_scale)
            x = self._product(_straight_through(values, inputs, in_scale, self.compute_dtype),
                              kernel)
            x = ops.divide(x, ops.multiply(self._input_scale_to_output(in_scale), scale))
        else:  # weight-only: the float inputs times the integers, then the scale
            x = ops.divide(self._product(inputs, kernel), scale)
        return self._finish(self._add_lora(inputs, x))

    def _int4_call(self, inputs, training=None):
        if self._int4_groups is None:
            kernel = self._dequantized_int4()
            if self.inputs_quantizer:
                q_in, in_scale = self.inputs_quantizer(inputs, axis=self._input_reduced_axes())
                in_scale = ops.stop_gradient(in_scale)
                x = self._product(_straight_through(q_in, inputs, in_scale, self.compute_dtype),
                                  kernel)
                x = ops.divide(x, self._input_scale_to_output(in_scale))
            else:
                x = self._product(inputs, kernel)
        else:
            x = self._product(inputs, self._dequantized_int4())
        return self._finish(self._add_lora(inputs, x))

    def _dequantized_int4(self):
        values = q.unpack_int4(self._kernel, self._int4_unpacked_column_size, axis=-1)
        zero = None if self._int4_groups is None else self.kernel_zero
        kernel = dequantize_table(values, self.kernel_scale, zero,
                                  getattr(self, "g_idx", None), 0, self.compute_dtype)
        return ops.reshape(kernel, self._kernel_shape)

    def _float8_call(self, inputs, training=None):
        if self.lora_enabled:
            raise NotImplementedError(f"{self.name}: Currently, `_float8_call` doesn't support "
                                      "LoRA")
        dtype = self.compute_dtype
        x = self._product(_float8_round(inputs, self.inputs_scale, dtype),
                          _float8_round(ops.cast(self._kernel, dtype), self.kernel_scale, dtype))
        return self._finish(x, round_bias=dtype == "float32")

    def _calibrated_call(self, inputs, training=None):
        if not self._calibrated():
            kernel = self._kernel
        else:
            values = self._unpacked_quantized_kernel()
            kernel = ops.transpose(q.dequantize_with_sz_map(values, self.kernel_scale,
                                                            self.kernel_zero, self.g_idx))
            if self.quantization_mode == "awq":
                kernel = ops.divide(kernel, ops.expand_dims(self.awq_scales, -1))
            kernel = ops.reshape(ops.cast(kernel, self.compute_dtype), self._kernel_shape)
        return self._finish(self._product(inputs, kernel))

    _gptq_call = _awq_call = _calibrated_call

    def _add_lora(self, inputs, x):
        if not self.lora_enabled:
            return x
        low = ops.matmul(self._product(inputs, self.lora_kernel_a), self.lora_kernel_b)
        return ops.cast(ops.add(x, ops.multiply(low, self.lora_alpha / self.lora_rank)),
                        self.compute_dtype)

    # -- saving ----------------------------------------------------------------------------------
    def _merged_lora_values(self):
        """``{name: array}`` of the kernel (and scale, zero point) with the LoRA delta merged
        and re-quantized in the layer's mode."""
        mode = self.quantization_mode
        delta = np.asarray(self._lora_delta().numpy())
        if mode is None:
            return {"kernel": np.asarray(self.kernel.numpy())}
        if mode == "int8":
            scale = np.asarray(self._scale_from_saved(self.kernel_scale).numpy())
            merged = np.asarray(self._kernel.numpy(), "float32") / scale + delta
            values, new_scale = q.abs_max_quantize(merged, self._kernel_reduced_axes(),
                                                   to_numpy=True)
            return {"kernel": values, "kernel_scale": self._scale_to_saved(new_scale)}
        if mode == "int4":
            merged = np.asarray(self._dequantized_int4().numpy()) + delta
            packed, scale, zero = self._int4_values(merged, self._int4_groups, None)
            out = {"kernel": packed, "kernel_scale": scale}
            if zero is not None:
                out["kernel_zero"] = zero
            return out
        return {}


def _straight_through(values, inputs, scale, dtype):
    """``values`` (quantized inputs) as floats whose gradient with respect to ``inputs`` is
    ``scale`` (the rounding is skipped in the backward pass, as Keras's custom gradient)."""
    scaled = ops.multiply(inputs, scale)
    return ops.add(ops.cast(values, dtype), ops.subtract(scaled, ops.stop_gradient(scaled)))


def _float8_round(x, scale, dtype):
    """``x`` rounded to the float8_e4m3fn grid with ``scale`` (the gradient passes through)."""
    rounded = q.quantize_and_dequantize(x, scale, "float8_e4m3fn", dtype)
    return ops.add(x, ops.stop_gradient(ops.subtract(rounded, x)))
