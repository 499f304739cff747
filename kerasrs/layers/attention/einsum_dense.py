"""`EinsumDense`: a dense layer whose product is an einsum (Keras's ``keras.layers.EinsumDense``).

MultiHeadAttention's projections are EinsumDense sublayers (``query``, ``key``, ``value``,
``attention_output``), so their weights have Keras's shapes and paths. Equations of the usual
projection form (input axes = free axes then contracted axes; kernel = contracted axes then new
axes; output = free axes then new axes) run as one 2-D GEMM on ``(prod(free), prod(contracted))``;
any other equation runs through `kerasrs.ops.einsum`.
"""

import re
import string

import numpy as np

from kerasrs import activations, constraints, initializers, ops, quantizers
from kerasrs.layers.base import InputSpec, Layer
from kerasrs.layers.quantized import KernelQuantization
from kerasrs.layers.layer_config import get_regularizer, serialize_regularizer
from kerasrs.ops import projection as projection_ops


def analyze_equation(equation, bias_axes, input_shape, output_shape, who="einsum_dense"):
    """Kernel shape, bias shape, full output shape and the parsed specs of an equation.

    Follows Keras's rules: ``output_shape`` gives the output axes after the batch axis (None for
    sizes taken from the input), ``...`` may stand for leading (``...ab,bc->...ac``) or trailing
    (``ab...,bc->ac...``) input axes.

    Raises:
        ValueError: for an equation of another form, or axes that do not match.
    """
    eq = equation.replace("...", "0")
    for pattern, left in (("([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)$", False),
                          ("0([a-zA-Z]+),([a-zA-Z]+)->0([a-zA-Z]+)$", True),
                          ("([a-zA-Z]{2,})0,([a-zA-Z]+)->([a-zA-Z]+)0$", False)):
        match = re.match(pattern, eq)
        if match:
            break
    else:
        raise ValueError(f"{who}: the equation must look like 'ab,bc->ac', '...b,bc->...c' or "
                         f"'ab...,bc->ac...'. Received: equation={equation!r}")
    ins, ker, outs = match.groups()
    input_shape = tuple(input_shape)
    elided = len(input_shape) - len(ins)
    full = [input_shape[0]] + (list(output_shape) if isinstance(output_shape, (list, tuple))
                               else [output_shape])
    if elided > 0 and left:
        full[1:1] = list(input_shape[1:elided])
    elif elided > 0:
        full += list(input_shape[len(input_shape) - elided:])
    in_at = {c: (i + elided - len(input_shape) if left else i) for i, c in enumerate(ins)}
    out_at = {c: (i + elided if left else i) for i, c in enumerate(outs)}
    for c in ins:
        if c in out_at and full[out_at[c]] is not None and full[out_at[c]] != input_shape[in_at[c]]:
            raise ValueError(f"{who}: input and output sizes differ on axis {c!r}. Received: "
                             f"input_shape={input_shape}, output_shape={tuple(full)}")
    kernel_shape, in_axes, out_axes = [], [], []
    for i, c in enumerate(ker):
        if c in out_at:
            kernel_shape.append(full[out_at[c]])
            out_axes.append(i)
        elif c in in_at:
            kernel_shape.append(input_shape[in_at[c]])
            in_axes.append(i)
        else:
            raise ValueError(f"{who}: kernel axis {c!r} is in neither the input nor the output. "
                             f"Received: equation={equation!r}")
    for i, c in enumerate(outs):
        if full[out_at[c]] is None and c in in_at:
            full[out_at[c]] = input_shape[in_at[c]]
    bias_shape = None
    if bias_axes:
        for c in bias_axes:
            if c not in outs:
                raise ValueError(f"{who}: bias axis {c!r} is not an output axis. "
                                 f"Received: bias_axes={bias_axes!r}, equation={equation!r}")
        first = min(outs.index(c) for c in bias_axes)
        shift = elided if left else 0
        bias_shape = [full[outs.index(c) + shift] if c in bias_axes else 1 for c in outs[first:]]
        if not left:
            bias_shape += [1] * max(elided, 0)
    return tuple(kernel_shape), bias_shape and tuple(bias_shape), tuple(full), \
        (ins, ker, outs, left, in_axes, out_axes)


class _FannedInitializer:
    """A variance-scaling initializer drawn as a ``(fan_in, fan_out)`` matrix and reshaped, so
    fans count the contracted and the new kernel axes (what Keras's ``input_axes`` do)."""

    def __init__(self, base, fan_in, fan_out):
        self.base, self.fan_in, self.fan_out = base, fan_in, fan_out

    def __call__(self, shape, dtype=None):
        return np.asarray(self.base((self.fan_in, self.fan_out), dtype=dtype)).reshape(shape)


def _full_specs(equation, ndim):
    """The input, kernel and output letters with ``...`` replaced by letters of their own (the
    same ones in the input and the output) for an input of rank ``ndim``."""
    ins, ker, outs = equation.replace("...", "0").replace("->", ",").split(",")
    if "0" not in ins:
        return ins, ker, outs
    free = [c for c in string.ascii_letters if c not in ins + ker + outs]
    extra = "".join(free[:ndim - len(ins) + 1])
    return ins.replace("0", extra), ker, outs.replace("0", extra)


def quantization_layout(equation, ndim):
    """How a per-slice scale of the input and of the kernel is laid out against the output
    (Keras's ``_analyze_quantization_info``): for each operand, ``(reduced, perm, expand,
    squeeze)``: the operand axes contracted away, the permutation that orders the operand's
    axes as the output's (reduced ones put where the output has axes the operand lacks), the
    axes then inserted and the axes squeezed. Keras's saved ``kernel_scale`` has this layout,
    so it is reproduced step by step (including which slot a reduced axis takes when none is
    left: the last one used, as Keras's loop variable)."""
    ins, ker, outs = _full_specs(equation, ndim)
    slot = outs.find(ker[-1])
    layouts = []
    for spec in (ins, ker):
        reduced = [i for i, c in enumerate(spec) if c not in outs]
        expand = [i for i, c in enumerate(outs) if c not in spec]
        perm = [spec.index(c) for c in outs if c in spec]
        squeeze = []
        for axis in reduced:
            if expand:
                slot = expand.pop(0)
            else:
                squeeze.append(axis)
            perm.insert(slot, axis)
        layouts.append((reduced, perm, expand, squeeze))
    return layouts


def output_layout_shape(shape, layout):
    """The shape `to_output_layout` gives a scale of ``shape`` (Keras's list arithmetic,
    which also sizes the saved ``kernel_scale``)."""
    _, perm, expand, squeeze = layout
    shape = [shape[i] for i in perm] if perm else list(shape)
    for axis in sorted(expand):
        shape.insert(axis, 1)
    for axis in sorted(squeeze, reverse=True):
        shape.pop(axis)
    return tuple(shape)


def to_output_layout(scale, layout):
    """A scale with the operand's rank (size 1 on reduced axes) in the output's layout."""
    perm = layout[1]
    shape = output_layout_shape(tuple(scale.shape), layout)
    return ops.reshape(ops.transpose(scale, perm) if perm else scale, shape)


def from_output_layout(scale, layout):
    """The inverse of `to_output_layout`."""
    _, perm, expand, squeeze = layout
    shape = list(scale.shape)
    for axis in sorted(squeeze):
        shape.insert(axis, 1)
    for axis in sorted(expand, reverse=True):
        shape.pop(axis)
    scale = ops.reshape(scale, shape)
    return ops.transpose(scale, [perm.index(i) for i in range(len(perm))]) if perm else scale


class EinsumDense(KernelQuantization, Layer):
    """A dense layer computing ``activation(einsum(equation, inputs, kernel) + bias)``.

    Args:
        equation: e.g. ``"ab,bc->ac"`` (Dense), ``"abc,cde->abde"`` (a per-head projection).
        output_shape: the output's sizes after the batch axis (int or tuple; None entries are
            taken from the input).
        activation: optional activation.
        bias_axes: letters of the output axes that get a bias, or None.
        kernel_initializer / bias_initializer / *_regularizer / *_constraint: as `Dense`.
        lora_rank / lora_alpha / quantization_config: as `Dense` (see
            `kerasrs.layers.quantized`); int8 scales follow Keras's layout
            (`quantization_layout`).

    Weights: ``kernel`` (the kernel letters' sizes), ``bias`` (``bias_axes`` sizes, broadcast).

    Example:
        >>> EinsumDense("abc,cde->abde", (None, 2, 4))(np.ones((3, 5, 6))).shape
        (3, 5, 2, 4)
    """

    _raw_block_size = False  # Keras's EinsumDense stores None for per-channel int4

    def __init__(self, equation, output_shape, activation=None, bias_axes=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, lora_rank=None, lora_alpha=None,
                 gptq_unpacked_column_size=None, quantization_config=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.equation = equation
        self.partial_output_shape = tuple(output_shape) if isinstance(output_shape, (list, tuple)) \
            else (output_shape,)
        self.activation = activations.get(activation)
        self.bias_axes = bias_axes
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = get_regularizer(kernel_regularizer)
        self.bias_regularizer = get_regularizer(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.lora_rank = lora_rank
        self.lora_alpha = lora_rank if lora_alpha is None else lora_alpha
        self.gptq_unpacked_column_size = gptq_unpacked_column_size
        self.quantization_config = quantization_config

    def build(self, input_shape):
        kernel_shape, bias_shape, self.full_output_shape, spec = analyze_equation(
            self.equation, self.bias_axes, input_shape, self.partial_output_shape, self.name)
        ins, ker, outs, left, in_axes, out_axes = spec
        self.input_spec = InputSpec(ndim=len(input_shape))
        self._layouts = quantization_layout(self.equation, len(input_shape))
        self._kernel_shape = tuple(kernel_shape)
        mode = self.quantization_mode
        if mode:
            self.quantized_build(self._kernel_shape, mode, self.quantization_config)
        if mode not in ("int8", "int4", "gptq", "awq"):
            init = self.kernel_initializer
            if isinstance(init, initializers.VarianceScaling):
                init = _FannedInitializer(init, int(np.prod([kernel_shape[i] for i in in_axes])),
                                          int(np.prod([kernel_shape[i] for i in out_axes])))
            self._kernel = self.add_weight(self._kernel_shape, init, name="kernel",
                                           regularizer=self.kernel_regularizer,
                                           constraint=self.kernel_constraint)
        self.bias = self.add_weight(bias_shape, self.bias_initializer, name="bias",
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if bias_shape else None
        n_bound = self._n_bound = len(in_axes)
        right_elided = "..." in self.equation and not self.equation.startswith("...")
        self._gemm = (not right_elided and in_axes == list(range(n_bound)) and
                      ins[len(ins) - n_bound:] == ker[:n_bound] and
                      outs == ins[:len(ins) - n_bound] + ker[n_bound:])
        self.built = True
        if self.lora_rank:
            self.enable_lora(self.lora_rank, self.lora_alpha)

    def call(self, inputs, training=None):
        n_bound, bias, kernel = self._n_bound, self.bias, self.kernel
        if self._gemm:  # (free..., bound...) @ (bound..., new...): one 2-D GEMM, bias in place
            fits = bias is not None and bias.shape == tuple(kernel.shape[n_bound:])
            y = projection_ops.projection(inputs, kernel, bias if fits else None, n_bound)
            if fits:
                bias = None
        else:
            y = ops.einsum(self.equation, inputs, kernel)
        if bias is not None:
            y = ops.add(y, bias)
        return self.activation(y)

    def _finish(self, x, round_bias=False):
        if self.bias is not None:
            bias = self.bias
            if round_bias and bias.dtype == np.float32:
                bias = ops.cast(ops.cast(bias, "bfloat16"), "float32")
            x = ops.add(x, bias)
        return self.activation(x)

    # hooks of KernelQuantization
    def _product(self, inputs, kernel):
        return ops.einsum(self.equation, inputs, kernel)

    def _kernel_reduced_axes(self):
        return tuple(self._layouts[1][0])

    def _input_reduced_axes(self):
        return tuple(self._layouts[0][0])

    def _scale_to_saved(self, scale):
        return to_output_layout(ops.convert_to_tensor(scale), self._layouts[1])

    def _scale_from_saved(self, scale):
        return from_output_layout(scale, self._layouts[1])

    def _saved_scale_shape(self, keepdims_shape):
        return output_layout_shape(tuple(keepdims_shape), self._layouts[1])

    def _input_scale_to_output(self, scale):
        return to_output_layout(scale, self._layouts[0])

    def _calibration_matrix_shape(self, kernel_shape):
        """GPTQ/AWQ see the kernel as (rows, columns): Keras's split for 2-D kernels and for
        the 3-D kernels of attention projections (the largest axis is the model's width)."""
        shape = list(kernel_shape)
        if len(shape) == 3 and shape.index(max(shape)) == 0:
            return shape[0], shape[1] * shape[2]
        if len(shape) == 3:
            return shape[0] * shape[1], shape[2]
        return shape[0], int(np.prod(shape[1:]))

    def compute_output_shape(self, input_shape):
        return analyze_equation(self.equation, self.bias_axes, input_shape,
                                self.partial_output_shape, self.name)[2]

    def get_config(self):
        config = {**super().get_config(), "output_shape": list(self.partial_output_shape),
                  "equation": self.equation, "activation": activations.serialize(self.activation),
                  "bias_axes": self.bias_axes,
                  "kernel_initializer": initializers.serialize(self.kernel_initializer),
                  "bias_initializer": initializers.serialize(self.bias_initializer),
                  "kernel_regularizer": serialize_regularizer(self.kernel_regularizer),
                  "bias_regularizer": serialize_regularizer(self.bias_regularizer),
                  "activity_regularizer": serialize_regularizer(self.activity_regularizer),
                  "kernel_constraint": constraints.serialize(self.kernel_constraint),
                  "bias_constraint": constraints.serialize(self.bias_constraint),
                  "quantization_config": quantizers.serialize(self.quantization_config)}
        if self.lora_rank:
            config.update(lora_rank=self.lora_rank, lora_alpha=self.lora_alpha)
        if self.gptq_unpacked_column_size:
            config["gptq_unpacked_column_size"] = self.gptq_unpacked_column_size
        return config


__all__ = ["EinsumDense"]
