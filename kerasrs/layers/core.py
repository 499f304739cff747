"""Core layers: Dense, Activation, Dropout, Identity, Embedding, ReversibleEmbedding, Rescaling,
Masking, Softmax."""

import numpy as np

from kerasrs import activations, constraints, initializers, ops, quantizers, random
from kerasrs import backend as backend_module
from kerasrs.autodiff import Variable
from kerasrs.layers.base import InputSpec, Layer
from kerasrs.layers.quantized import KernelQuantization
from kerasrs.layers.quantized_embedding import EmbeddingQuantization, ReverseQuantization
from kerasrs.layers.layer_config import get_regularizer, serialize_regularizer
from kerasrs.ops import creation, projection
from kerasrs.ops.core import constant


class Dense(KernelQuantization, Layer):
    """Densely connected layer: ``activation(inputs @ kernel + bias)`` on the last axis.

    Args:
        units: int > 0, the output size.
        activation: name or callable; None means linear.
        use_bias: whether to add ``bias``. Defaults to True.
        kernel_initializer / bias_initializer: defaults "glorot_uniform" / "zeros".
        kernel_regularizer / bias_regularizer / activity_regularizer: optional regularizers.
        kernel_constraint / bias_constraint: optional callables applied after each update.
        lora_rank / lora_alpha: enable LoRA at build (see `enable_lora`).
        quantization_config: a `kerasrs.quantizers.QuantizationConfig` for a layer built with
            a quantized ``dtype`` ("int8_from_float32"...).
        **kwargs: base `Layer` arguments.

    Input shape: ``(batch, ..., in_features)``. Output shape: ``(batch, ..., units)``.
    Weights: ``kernel`` ``(in_features, units)``, ``bias`` ``(units,)``; after
    ``quantize("int8")`` an int8 ``kernel`` and ``kernel_scale`` ``(units,)`` (see
    `kerasrs.layers.quantized` for int4, float8, GPTQ/AWQ and LoRA).

    Example:
        >>> Dense(3)(np.ones((2, 4), "float32")).shape
        (2, 3)
    """

    supports_masking = True

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 lora_rank=None, lora_alpha=None, quantization_config=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if not isinstance(units, (int, np.integer)) or isinstance(units, bool) or units <= 0:
            raise ValueError(f"{self.name}: Received an invalid value for `units`, expected a "
                             f"positive integer. Received: units={units!r}")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = get_regularizer(kernel_regularizer)
        self.bias_regularizer = get_regularizer(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.lora_rank = lora_rank
        self.lora_alpha = lora_rank if lora_alpha is None else lora_alpha
        self.quantization_config = quantization_config
        self.input_spec = InputSpec(min_ndim=2)

    def build(self, input_shape):
        features = input_shape[-1] if len(input_shape) >= 2 else None
        if features is None:
            raise ValueError(f"{self.name}: the input needs rank >= 2 and a known last axis. "
                             f"Received: input_shape={tuple(input_shape)}")
        self._kernel_shape = (features, self.units)
        mode = self.quantization_mode
        if mode:
            self.quantized_build(self._kernel_shape, mode, self.quantization_config)
        if mode not in ("int8", "int4", "gptq", "awq"):
            self._kernel = self.add_weight(self._kernel_shape, self.kernel_initializer,
                                           name="kernel",
                                           regularizer=self.kernel_regularizer,
                                           constraint=self.kernel_constraint)
        self.bias = self.add_weight((self.units,), self.bias_initializer, name="bias",
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        self.input_spec = InputSpec(min_ndim=2, axes={-1: features})
        self.built = True
        if self.lora_rank:
            self.enable_lora(self.lora_rank, self.lora_alpha)

    def call(self, inputs, training=None):
        act = activations.serialize(self.activation)
        kernel = self.kernel
        if act in projection.ACTIVATIONS and not getattr(inputs, "_kerasrs_symbolic", False):
            # one fused op: a 2-D GEMM on (rows, features), bias and activation in place
            return projection.projection(inputs, kernel, self.bias, activation=act)
        return self._finish(ops.matmul(inputs, kernel))

    def _finish(self, x, round_bias=False):
        if self.bias is not None:
            x = ops.add(x, _bfloat16_rounded(self.bias) if round_bias else self.bias)
        return self.activation(x)

    # hooks of KernelQuantization: a (features, units) kernel contracted on its first axis
    _product = staticmethod(ops.matmul)

    def _kernel_reduced_axes(self):
        return (0,)

    def _input_reduced_axes(self):
        return (-1,)

    def _scale_to_saved(self, scale):
        return ops.reshape(scale, (self.units,))

    def _scale_from_saved(self, scale):
        return ops.reshape(scale, (1, self.units))

    def _input_scale_to_output(self, scale):
        return scale

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def get_config(self):
        config = {**super().get_config(), "units": self.units,
                  "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                  "kernel_initializer": initializers.serialize(self.kernel_initializer),
                  "bias_initializer": initializers.serialize(self.bias_initializer),
                  "kernel_regularizer": serialize_regularizer(self.kernel_regularizer),
                  "bias_regularizer": serialize_regularizer(self.bias_regularizer),
                  "kernel_constraint": constraints.serialize(self.kernel_constraint),
                  "bias_constraint": constraints.serialize(self.bias_constraint),
                  "quantization_config": quantizers.serialize(self.quantization_config)}
        if self.lora_rank:
            config.update(lora_rank=self.lora_rank, lora_alpha=self.lora_alpha)
        return config


def _bfloat16_rounded(x):
    """``x`` rounded to bfloat16 and back (float8 layers add their bias this way, as Keras)."""
    return ops.cast(ops.cast(x, "bfloat16"), x.dtype) if x.dtype == np.float32 else x


class Activation(Layer):
    """Applies an activation function by name or callable; the output has the input's shape."""

    supports_masking = True

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)
        self._build_at_init()

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "activation": activations.serialize(self.activation)}


class Identity(Layer):
    """Returns its input unchanged (a placeholder in architectures)."""

    supports_masking = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._build_at_init()

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return input_shape


def dropout_mask(generator, shape, rate, dtype, be):
    """An inverted-dropout multiplier (0 with probability ``rate``, else ``1 / (1 - rate)``) of
    ``shape`` from the backend's counter-based Philox kernel (``be.dropout_mask``).

    With a seeded `kerasrs.random.SeedGenerator` the key is its seed and the counter offset its
    counter (the number of masks drawn before); an unseeded one (a layer without ``seed``)
    counts the masks while each takes a fresh key from `kerasrs.backend.dropout_seed` (one host
    stream that ``set_random_seed`` seeds, so a model rebuilt or reloaded in the same process
    continues it). Either way a seed gives the same masks on NumPy and on CuPy.
    """
    generator.next()  # the generator counts every mask (its state is what Keras exposes)
    if rate >= 1:
        return be.xp.zeros(shape, dtype)
    seed = generator._initial_seed
    mask = creation.DropoutMask(shape, rate, dtype, seed)
    if seed is None:  # unseeded: a fresh key from the host stream set_random_seed seeds
        return mask.apply().data
    drawn = _draw_counter(generator, be)
    out = mask.apply(drawn).data
    drawn.assign_add(1)
    return out


def random_draw(generator, kind, shape, dtype, be):
    """A Tensor of random numbers of ``shape`` and ``dtype`` on ``be`` (``kind`` "normal" or
    "uniform", `kerasrs.ops.creation.RandomDraw`) keyed by the seed of ``generator`` (a
    `kerasrs.random.SeedGenerator`: its own seed, or the one it drew from the stream
    ``set_random_seed`` seeds) and the number of draws before: new numbers at every call, the
    same numbers as ``kerasrs.random.normal(shape, seed=generator)`` would give, and a graph
    op, so that a replayed training step draws them as the eager step does."""
    generator.next()  # the generator counts every draw (its state is what Keras exposes)
    drawn = _draw_counter(generator, be)
    out = creation.RandomDraw(kind, shape, dtype, generator.seed).apply(drawn)
    drawn.assign_add(1)
    return out


def _draw_counter(generator, be):
    """The number of draws of ``generator`` as an int64 Variable on ``be``: a traced step
    reads it and updates it, so a replayed step draws the numbers the eager one would."""
    drawn = generator.__dict__.get("_philox_offset")
    if drawn is None:
        with backend_module.using(be.name):
            drawn = Variable(np.zeros((), "int64"), dtype="int64", trainable=False,
                             name="philox_offset")
        drawn.path = f"{generator.name}/philox_offset"
        generator.__dict__["_philox_offset"] = drawn  # not a tracked weight (not saved)
    return drawn


def _check_noise_shape(name, noise_shape):
    """``noise_shape`` as a tuple of positive ints and Nones (or None), else Keras's ValueError."""
    if noise_shape is None:
        return None
    bad = "Invalid value received for argument `noise_shape`."
    if not isinstance(noise_shape, (list, tuple)):
        raise ValueError(f"{name}: {bad} Expected a tuple or list of integers. "
                         f"Received: noise_shape={noise_shape!r}")
    if any(d is not None and (not isinstance(d, (int, np.integer)) or isinstance(d, bool))
           for d in noise_shape):
        raise ValueError(f"{name}: {bad} Expected all elements to be integers or None. "
                         f"Received: noise_shape={noise_shape!r}")
    if any(d is not None and d <= 0 for d in noise_shape):
        raise ValueError(f"{name}: {bad} Expected all dimensions to be positive integers or "
                         f"None. Received: noise_shape={noise_shape!r}")
    return tuple(noise_shape)


def resolve_noise_shape(noise_shape, shape):
    """The mask shape: ``shape`` where ``noise_shape`` is None or has None entries."""
    if noise_shape is None:
        return tuple(shape)
    return tuple(n if s is None else s for s, n in zip(noise_shape, shape))


class Dropout(Layer):
    """Inverted dropout: in training, zeroes each element with probability ``rate`` and scales
    the rest by ``1 / (1 - rate)``; at inference it is the identity (Srivastava et al., 2014).

    Args:
        rate: float in [0, 1], the fraction of elements dropped.
        noise_shape: optional shape of the keep mask, broadcast over the input (None entries
            take the input's size), e.g. ``(batch, 1, features)`` to drop whole features.
        seed: int key of the layer's Philox stream (the same masks on every backend); None
            draws a key from the generator ``kerasrs.utils.set_random_seed`` seeds.

    Raises:
        ValueError: for a rate outside [0, 1].
    """

    supports_masking = True

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise ValueError(f"{self.name}: Invalid value received for argument `rate`. Expected "
                             f"a float value between 0 and 1. Received: rate={rate!r}")
        self.rate, self.seed = float(rate), seed
        self.noise_shape = _check_noise_shape(self.name, noise_shape)
        if self.rate > 0:
            self.seed_generator = random.SeedGenerator(seed)
        self._build_at_init()

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        be = inputs.backend
        shape = resolve_noise_shape(self.noise_shape, inputs.shape)
        dtype = inputs.dtype if backend_module.is_float_dtype(inputs.dtype) else np.float32
        mask = dropout_mask(self.seed_generator, shape, self.rate, dtype, be)
        return ops.multiply(inputs, constant(mask, be))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed,
                "noise_shape": None if self.noise_shape is None else list(self.noise_shape)}


def _positive_int(layer, name, value):
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{layer}: `{name}` must be a positive integer. Received: "
                         f"{name}={value!r} (of type {type(value).__name__}).")
    return int(value)


class Embedding(EmbeddingQuantization, Layer):
    """Looks up a dense vector per integer token id: ``embeddings[ids]``.

    Args:
        input_dim: int, vocabulary size: ids must be in ``[0, input_dim)``.
        output_dim: int, size of each vector.
        embeddings_initializer: defaults to "uniform" (uniform on [-0.05, 0.05]).
        embeddings_regularizer / embeddings_constraint: optional.
        mask_zero: if True, id 0 is padding: the output mask is ``ids != 0``.
        weights: optional initial ``(input_dim, output_dim)`` array (the layer is built).
        lora_rank / lora_alpha / quantization_config: see `kerasrs.layers.quantized_embedding`.

    Input shape: integer ``(batch, ...)``. Output shape: ``(batch, ..., output_dim)``.

    Raises:
        ValueError: for ``input_dim``/``output_dim`` that are not positive ints; on a call with
            an id outside ``[0, input_dim)``, naming it (checked on every backend: a GPU
            gather would otherwise wrap it around silently).
    """

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform",
                 embeddings_regularizer=None, embeddings_constraint=None, mask_zero=False,
                 weights=None, lora_rank=None, lora_alpha=None, quantization_config=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.input_dim = _positive_int(self.name, "input_dim", input_dim)
        self.output_dim = _positive_int(self.name, "output_dim", output_dim)
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.embeddings_regularizer = get_regularizer(embeddings_regularizer)
        self.embeddings_constraint = constraints.get(embeddings_constraint)
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero
        self.autocast = False  # ids are never cast (Keras's choice)
        self.lora_rank = lora_rank
        self.lora_alpha = lora_rank if lora_alpha is None else lora_alpha
        self.quantization_config = quantization_config
        if weights is not None:
            self.build()
            self.set_weights(weights if isinstance(weights, list) else [weights])

    def build(self, input_shape=None):
        if self.built:
            return
        shape = (self.input_dim, self.output_dim)
        mode = self.quantization_mode
        if mode:
            self.quantized_build(shape, mode, self.quantization_config)
        if mode not in ("int8", "int4"):
            self._embeddings = self.add_weight(
                shape, self.embeddings_initializer, name="embeddings",
                regularizer=self.embeddings_regularizer, constraint=self.embeddings_constraint)
        self.built = True
        if self.lora_rank:
            self.enable_lora(self.lora_rank, self.lora_alpha)

    def _lookup_ids(self, inputs):
        """The ids as an int Tensor, each checked to be in ``[0, input_dim)``."""
        if inputs.dtype.kind not in "iu":  # an op, so that a traced step records the cast
            inputs = ops.cast(inputs, "int64")
        ids = inputs.data
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= self.input_dim):
            bad = int(ids[(ids < 0) | (ids >= self.input_dim)].reshape(-1)[0])
            raise ValueError(f"{self.name}: token ids must be in [0, {self.input_dim}) "
                             f"(input_dim={self.input_dim}). Received: id {bad} in an input of "
                             f"shape {tuple(ids.shape)}")
        return constant(ids, inputs.backend)

    def call(self, inputs):
        return ops.cast(ops.take(self.embeddings, self._lookup_ids(inputs), axis=0),
                        self.compute_dtype)

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return ops.not_equal(inputs, 0)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.output_dim,)

    def get_config(self):
        config = {**super().get_config(), "input_dim": self.input_dim,
                  "output_dim": self.output_dim,
                  "embeddings_initializer": initializers.serialize(self.embeddings_initializer),
                  "embeddings_regularizer": serialize_regularizer(self.embeddings_regularizer),
                  "activity_regularizer": serialize_regularizer(self.activity_regularizer),
                  "embeddings_constraint": constraints.serialize(self.embeddings_constraint),
                  "mask_zero": self.mask_zero,
                  "quantization_config": quantizers.serialize(self.quantization_config)}
        if self.lora_rank:
            config.update(lora_rank=self.lora_rank, lora_alpha=self.lora_alpha)
        return config


class ReversibleEmbedding(ReverseQuantization, Embedding):
    """An `Embedding` that can also map vectors back to token logits: ``layer(ids)`` embeds,
    ``layer(vectors, reverse=True)`` returns ``vectors @ embeddings^T`` (tied) or ``vectors @
    reverse_embeddings`` (``tie_weights=False``), optionally soft-capped
    ``cap * tanh(logits / cap)`` (``logit_soft_cap``)."""

    def __init__(self, input_dim, output_dim, tie_weights=True, embeddings_initializer="uniform",
                 embeddings_regularizer=None, embeddings_constraint=None, mask_zero=False,
                 reverse_dtype=None, logit_soft_cap=None, **kwargs):
        self.tie_weights, self.reverse_dtype = tie_weights, reverse_dtype
        self.logit_soft_cap = logit_soft_cap
        super().__init__(input_dim, output_dim, embeddings_initializer=embeddings_initializer,
                         embeddings_regularizer=embeddings_regularizer,
                         embeddings_constraint=embeddings_constraint, mask_zero=mask_zero,
                         **kwargs)

    def build(self, input_shape=None):
        if self.built:
            return
        super().build(input_shape)
        if not self.tie_weights and self.quantization_mode not in ("int8", "int4"):
            self.reverse_embeddings = self.add_weight(
                shape=(self.output_dim, self.input_dim), name="reverse_embeddings",
                initializer=self.embeddings_initializer)

    def call(self, inputs, reverse=False):
        if not reverse:
            return super().call(inputs)
        kernel = ops.transpose(self.embeddings) if self.tie_weights else self.reverse_embeddings
        if self.reverse_dtype is not None:
            inputs, kernel = ops.cast(inputs, self.reverse_dtype), ops.cast(kernel,
                                                                           self.reverse_dtype)
        return self._soft_cap(ops.matmul(inputs, kernel))

    def _soft_cap(self, logits):
        if self.logit_soft_cap is None:
            return logits
        return ops.multiply(ops.tanh(ops.divide(logits, self.logit_soft_cap)),
                            self.logit_soft_cap)

    def _int8_call(self, inputs, reverse=False):
        if not reverse:
            return super()._int8_call(inputs)
        return self._soft_cap(self._quantized_reverse(inputs))

    def _int4_call(self, inputs, reverse=False):
        if not reverse:
            return super()._int4_call(inputs)
        return self._soft_cap(self._quantized_reverse(inputs))

    def compute_mask(self, inputs, mask=None):
        if inputs is None or getattr(inputs, "dtype", np.dtype("int64")).kind == "f":
            return None  # a reverse call (float vectors in) has no token mask
        return super().compute_mask(inputs, mask)

    def compute_output_shape(self, input_shape, reverse=False):
        if reverse:
            return tuple(input_shape[:-1]) + (self.input_dim,)
        return super().compute_output_shape(input_shape)

    def get_config(self):
        return {**super().get_config(), "tie_weights": self.tie_weights,
                "reverse_dtype": self.reverse_dtype, "logit_soft_cap": self.logit_soft_cap}


class Rescaling(Layer):
    """``inputs * scale + offset`` (e.g. ``Rescaling(1 / 255)`` for pixel values)."""

    supports_masking = True

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale, self.offset = scale, offset

    def call(self, inputs):
        if inputs.dtype.kind not in "f" and not backend_module.is_float_dtype(inputs.dtype):
            inputs = ops.cast(inputs, self.compute_dtype)
        return ops.add(ops.multiply(inputs, self.scale), self.offset)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "offset": self.offset}


class Masking(Layer):
    """Marks time steps whose features all equal ``mask_value`` as padding.

    The output is the input with those steps set to 0, and carries the mask ``any(inputs !=
    mask_value, axis=-1)`` for mask-aware layers (RNNs, attention) downstream.
    """

    supports_masking = True

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = mask_value
        self._build_at_init()

    def _keep(self, inputs, keepdims=False):
        # through ops: inputs may be Tensors, NumPy arrays or symbolic tensors
        return ops.any(ops.not_equal(inputs, self.mask_value), axis=-1, keepdims=keepdims)

    def call(self, inputs):
        return ops.multiply(inputs, ops.cast(self._keep(inputs, keepdims=True), inputs.dtype))

    def compute_mask(self, inputs, mask=None):
        return self._keep(inputs)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "mask_value": self.mask_value}


def _check_softmax_mask(name, input_shape, mask_shape):
    """A mask must broadcast to the inputs without growing them (Keras's checks and phrases)."""
    input_shape, mask_shape = tuple(input_shape), tuple(mask_shape)
    if len(mask_shape) > len(input_shape):
        raise ValueError(f"{name}: the mask must not have more dimensions than the inputs. "
                         f"Received: mask shape {mask_shape}, input shape {input_shape}")
    for m, i in zip(mask_shape[::-1], input_shape[::-1]):
        if m is not None and i is not None and m not in (1, i):
            raise ValueError(f"{name}: the mask must be broadcastable to the inputs' shape. "
                             f"Received: mask shape {mask_shape}, input shape {input_shape}")


class Softmax(Layer):
    """Softmax over ``axis``; where ``mask`` is False the output is exactly 0.

    Masked logits get a large negative number added (-1e9, or -3e4 in float16 so it stays
    finite) before the softmax, as Keras does, and the output is multiplied by the mask, so a
    fully masked row gives zeros rather than NaN.
    """

    supports_masking = True

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis
        self._build_at_init()

    def call(self, inputs, mask=None):
        if mask is not None:
            _check_softmax_mask(self.name, inputs.shape, mask.shape)
            mask = ops.cast(mask, inputs.dtype)
            large = -3e4 if inputs.dtype == np.float16 else -1e9
            inputs = ops.add(inputs, ops.multiply(ops.subtract(1.0, mask), large))
        outputs = activations.softmax(inputs, axis=self.axis)
        return outputs if mask is None else ops.multiply(outputs, mask)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}
