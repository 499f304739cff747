"""Normalization layers: BatchNormalization, LayerNormalization, GroupNormalization,
UnitNormalization and RMSNormalization.

Batch and layer normalization in training use the fused ops of `kerasrs.ops.normalization`
(one tape entry, closed-form backward); the others compose `kerasrs.ops`.
"""

import contextlib

import numpy as np

from kerasrs import context, initializers, ops
from kerasrs.layers import padding
from kerasrs.layers.base import InputSpec, Layer
from kerasrs.layers.layer_config import get_regularizer, serialize_regularizer
from kerasrs.ops import normalization as norm_ops
from kerasrs.ops.core import constant

__all__ = ["BatchNormalization", "LayerNormalization", "GroupNormalization", "UnitNormalization",
           "RMSNormalization"]


def _check_axes(layer, axes, input_shape):
    """``axes`` (int or list) as sorted non-negative ints; ValueError naming the layer if out of
    range or of unknown size."""
    rank = len(input_shape)
    listed = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    if not listed or any(not -rank <= a < rank for a in listed):
        raise ValueError(f"{layer.name}: axis {axes} is out of range for an input of rank {rank}. "
                         f"Received: input shape {tuple(input_shape)}")
    listed = sorted(int(a) % rank for a in listed)
    if any(input_shape[a] is None for a in listed):
        raise ValueError(f"{layer.name}: the normalized axes must have known sizes (an input "
                         f"tensor should have a defined dimension but the layer received an "
                         f"input with shape {tuple(input_shape)} and axis={axes})")
    return listed


class _ScaleShift:
    """Mixin: the ``center``/``scale`` arguments and their gamma/beta weights and config."""

    def _init_scale_shift(self, center, scale, beta_initializer, gamma_initializer,
                          beta_regularizer, gamma_regularizer, beta_constraint, gamma_constraint):
        self.center, self.scale = bool(center), bool(scale)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer = get_regularizer(beta_regularizer)
        self.gamma_regularizer = get_regularizer(gamma_regularizer)
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint
        self.gamma = self.beta = None

    def _build_scale_shift(self, shape, scale=None, center=None):
        if self.scale if scale is None else scale:
            self.gamma = self.add_weight(shape, self.gamma_initializer, name="gamma",
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint)
        if self.center if center is None else center:
            self.beta = self.add_weight(shape, self.beta_initializer, name="beta",
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint)

    def _scale_shift_config(self):
        return {"center": self.center, "scale": self.scale,
                "beta_initializer": initializers.serialize(self.beta_initializer),
                "gamma_initializer": initializers.serialize(self.gamma_initializer),
                "beta_regularizer": serialize_regularizer(self.beta_regularizer),
                "gamma_regularizer": serialize_regularizer(self.gamma_regularizer),
                "beta_constraint": None, "gamma_constraint": None}


def _moving_average(moving, batch, momentum):
    """``moving = moving * momentum + batch * (1 - momentum)`` in ``moving``'s dtype, outside any
    tape. Eagerly on the raw arrays; while `kerasrs.graph` traces, the same arithmetic as ops
    (without a mixed-precision layer's autocast), so that the assignment is a graph update."""
    if not context.tracers.get():
        moving.assign(moving.data * momentum +
                      batch.data.astype(moving.dtype) * (1.0 - momentum))
        return
    with _no_autocast():
        moving.assign(ops.add(ops.multiply(moving, momentum),
                              ops.multiply(ops.cast(batch, moving.dtype), 1.0 - momentum)))


def _assign_variance_from_stddev(variance, stddev, epsilon):
    """``variance = max(stddev**2 - epsilon, 0)`` outside any tape, as `_moving_average`."""
    if not context.tracers.get():
        variance.assign(np.maximum(stddev.data ** 2 - epsilon, 0).astype(variance.dtype))
        return
    with _no_autocast():
        variance.assign(ops.relu(ops.subtract(ops.square(stddev), epsilon)))


@contextlib.contextmanager
def _no_autocast():
    """Moving statistics stay in their own dtype under a mixed policy."""
    token = context.autocast.set(None)
    try:
        yield
    finally:
        context.autocast.reset(token)


class BatchNormalization(_ScaleShift, Layer):
    """Normalizes each feature with batch statistics in training and moving averages otherwise
    (Ioffe & Szegedy, 2015), as Keras 3.

    Training (``training=True`` and the layer trainable): ``y = gamma * (x - mean) /
    sqrt(var + epsilon) + beta`` with the batch mean and the biased batch variance over every
    axis but ``axis``; then, in place and outside any gradient tape, ``moving_mean =
    momentum * moving_mean + (1 - momentum) * mean`` and the same for ``moving_variance`` with
    the biased variance (Keras 3's rule; PyTorch and Keras 2 use the unbiased one).
    Inference (``training`` False/None, or the layer frozen with ``trainable=False``): the same
    formula with the moving statistics, which do not change.

    Args:
        axis: int, the feature axis (-1 for channels_last, 1 after a channels_first conv).
        momentum: float, the moving averages' decay. Defaults to 0.99.
        epsilon: float added to the variance. Defaults to 1e-3.
        center / scale: whether to add ``beta`` / multiply by ``gamma``. Default True.
        beta_initializer / gamma_initializer / moving_mean_initializer /
            moving_variance_initializer: "zeros" / "ones" / "zeros" / "ones".
        beta_regularizer, gamma_regularizer, beta_constraint, gamma_constraint: optional.
        synchronized: accepted (one device: no effect).
        renorm: bool, batch renormalization (Ioffe, 2017, "Batch Renormalization", Algorithm 1):
            in training the batch-normalized values are corrected to ``x_hat * r + d`` with
            ``r = batch_stddev / renorm_stddev`` and ``d = (batch_mean - renorm_mean) /
            renorm_stddev`` (no gradient through ``r`` and ``d``), so training and inference
            see the same statistics. Adds the non-trainable ``moving_stddev``, ``renorm_mean``
            and ``renorm_stddev``; ``moving_variance`` follows ``moving_stddev**2 - epsilon``.
        renorm_clipping: dict with optional keys ``rmax``, ``rmin``, ``dmax``: ``r`` is clipped
            to ``[rmin, rmax]`` and ``d`` to ``[-dmax, dmax]``.
        renorm_momentum: float, the decay of ``renorm_mean`` and ``renorm_stddev``. 0.99.

    Call arguments: ``training``; ``mask`` ``(batch, ...)`` (the input's rank minus one):
    statistics only over the unmasked positions (training only).

    Weights (in this order): ``gamma`` and ``beta`` (trainable, when enabled), ``moving_mean``
    and ``moving_variance`` (non-trainable), each ``(features,)``.

    Example:
        >>> bn = BatchNormalization()
        >>> x = np.array([[1.0], [2.0], [3.0], [4.0]], "float32")
        >>> bn(x, training=True).numpy().ravel().round(4)
        array([-1.3411, -0.447 ,  0.447 ,  1.3411], dtype=float32)
        >>> bn.moving_mean.numpy().round(6), bn.moving_variance.numpy().round(6)
        (array([0.025], dtype=float32), array([1.0025], dtype=float32))
    """

    supports_masking = True

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99,
                 synchronized=False, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(axis, (int, np.integer)):
            raise TypeError(f"{self.name}: `axis` must be an int. Received: axis={axis!r}")
        if renorm:
            renorm_clipping = _check_renorm_clipping(self.name, renorm_clipping or {})
        if not 0.0 <= float(momentum) <= 1.0 or float(epsilon) <= 0:
            raise ValueError(f"{self.name}: `momentum` must be in [0, 1] and `epsilon` > 0. "
                             f"Received: momentum={momentum!r}, epsilon={epsilon!r}")
        self.axis, self.momentum, self.epsilon = int(axis), float(momentum), float(epsilon)
        self.synchronized = bool(synchronized)
        self.renorm, self.renorm_clipping, self.renorm_momentum = bool(renorm), \
            renorm_clipping, renorm_momentum
        self._init_scale_shift(center, scale, beta_initializer, gamma_initializer,
                               beta_regularizer, gamma_regularizer, beta_constraint,
                               gamma_constraint)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)

    def build(self, input_shape):
        (axis,) = _check_axes(self, self.axis, input_shape)
        shape = (input_shape[axis],)
        self._build_scale_shift(shape)
        self.moving_mean = self.add_weight(shape, self.moving_mean_initializer, name="moving_mean",
                                           trainable=False)
        self.moving_variance = self.add_weight(shape, self.moving_variance_initializer,
                                               name="moving_variance", trainable=False)
        if self.renorm:  # the stddevs start at the square root of the variance initializer's
            def stddev_init(shape, dtype=None):
                return np.sqrt(ops.convert_to_numpy(self.moving_variance_initializer(shape,
                                                                                     dtype)))

            self.moving_stddev = self.add_weight(shape, stddev_init, name="moving_stddev",
                                                 trainable=False)
            self.renorm_mean = self.add_weight(shape, self.moving_mean_initializer,
                                               name="renorm_mean", trainable=False)
            self.renorm_stddev = self.add_weight(shape, stddev_init, name="renorm_stddev",
                                                 trainable=False)
        self.input_spec = InputSpec(ndim=len(input_shape), axes={self.axis: shape[0]})

    def call(self, inputs, training=None, mask=None):
        if not (training and self.trainable):
            return norm_ops.batch_normalization(inputs, self.moving_mean, self.moving_variance,
                                                self.axis, self.beta, self.gamma, self.epsilon)
        weights = self._step_weights(inputs, mask)
        if self.renorm:
            return self._renorm_call(inputs, weights)
        if weights is None:
            outputs, mean, variance = norm_ops.fused_batch_normalization(
                inputs, self.gamma, self.beta, self.axis, self.epsilon)
        else:
            mean, variance = self._masked_moments(inputs, weights)
            outputs = norm_ops.batch_normalization(inputs, mean, variance, self.axis, self.beta,
                                                   self.gamma, self.epsilon)
        for moving, batch in ((self.moving_mean, mean), (self.moving_variance, variance)):
            _moving_average(moving, batch, self.momentum)
        return outputs

    def _step_weights(self, inputs, mask):
        """1 where a position counts in the statistics, 0 where masked or a padding row of
        ``fit(pad_last_batch=True)`` (broadcastable to ``inputs``); None if all count."""
        xp = inputs.backend.xp
        weights = None
        if mask is not None:  # ops (not raw arrays): a graph records the mask's conversion
            m = ops.convert_to_tensor(mask)
            if m.ndim != inputs.ndim - 1:
                raise ValueError(f"{self.name}: the mask must have one dimension less than the "
                                 f"inputs. Received: mask shape {tuple(m.shape)}, inputs shape "
                                 f"{inputs.shape}")
            weights = ops.expand_dims(ops.cast(m, inputs.dtype), -1)  # the mask: (batch, ...)
        rows = padding.current()
        if rows is not None and rows[0] < rows[1] == inputs.shape[0]:
            real = (xp.arange(rows[1]) < rows[0]).astype(inputs.dtype)
            real = constant(real.reshape((-1,) + (1,) * (inputs.ndim - 1)), inputs.backend)
            weights = real if weights is None else ops.multiply(weights, real)
        return weights

    def _renorm_call(self, inputs, weights):
        """Batch renormalization in training (see the class docstring)."""
        if weights is None:
            axes = [i for i in range(inputs.ndim) if i != self.axis % inputs.ndim]
            mean, variance = (ops.reshape(m, (inputs.shape[self.axis],))
                              for m in ops.moments(inputs, axes))
        else:
            mean, variance = self._masked_moments(inputs, weights)
        stddev = ops.sqrt(ops.add(variance, self.epsilon))
        renorm_stddev = ops.maximum(self.renorm_stddev, float(np.sqrt(self.epsilon)))
        r = ops.stop_gradient(ops.divide(stddev, renorm_stddev))
        d = ops.stop_gradient(ops.divide(ops.subtract(mean, self.renorm_mean), renorm_stddev))
        clip = self.renorm_clipping
        if clip.get("rmin") is not None:
            r = ops.maximum(r, clip["rmin"])
        if clip.get("rmax") is not None:
            r = ops.minimum(r, clip["rmax"])
        if clip.get("dmax") is not None:
            d = ops.clip(d, -clip["dmax"], clip["dmax"])
        # (x_hat * r + d) * gamma + beta = x_hat * (r * gamma) + (d * gamma + beta)
        gamma = r if self.gamma is None else ops.multiply(r, self.gamma)
        beta = d if self.gamma is None else ops.multiply(d, self.gamma)
        beta = beta if self.beta is None else ops.add(beta, self.beta)
        outputs = norm_ops.batch_normalization(inputs, mean, variance, self.axis, beta, gamma,
                                               self.epsilon)
        for moving, batch, momentum in (
                (self.renorm_mean, mean, self.renorm_momentum),
                (self.renorm_stddev, stddev, self.renorm_momentum),
                (self.moving_mean, mean, self.momentum),
                (self.moving_stddev, stddev, self.momentum)):
            _moving_average(moving, batch, momentum)
        _assign_variance_from_stddev(self.moving_variance, self.moving_stddev, self.epsilon)
        return outputs

    def _masked_moments(self, inputs, weights):
        """Mean and biased variance over the positions where ``weights`` is 1
        (differentiable)."""
        axes = tuple(i for i in range(inputs.ndim) if i != self.axis % inputs.ndim)
        channels = inputs.shape[self.axis]
        weights = ops.broadcast_to(weights, inputs.shape)
        count = ops.add(ops.sum(weights, axis=axes, keepdims=True), 1e-7)
        mean = ops.divide(ops.sum(ops.multiply(inputs, weights), axis=axes, keepdims=True), count)
        centered = ops.multiply(ops.subtract(inputs, mean), weights)
        variance = ops.divide(ops.sum(ops.square(centered), axis=axes, keepdims=True), count)
        return ops.reshape(mean, (channels,)), ops.reshape(variance, (channels,))

    def compute_output_shape(self, input_shape):
        _check_axes(self, self.axis, input_shape)
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "momentum": self.momentum,
                "epsilon": self.epsilon, **self._scale_shift_config(),
                "moving_mean_initializer": initializers.serialize(self.moving_mean_initializer),
                "moving_variance_initializer": initializers.serialize(
                    self.moving_variance_initializer),
                "synchronized": self.synchronized, "renorm": self.renorm,
                "renorm_clipping": self.renorm_clipping, "renorm_momentum": self.renorm_momentum}


def _check_renorm_clipping(name, clipping):
    """``renorm_clipping`` as given, after checking its keys and bounds (Keras's phrases)."""
    unknown = set(clipping) - {"rmax", "rmin", "dmax"}
    if unknown:
        raise ValueError(f"{name}: Received invalid keys for `renorm_clipping` argument: "
                         f"{sorted(unknown)}. Supported values: ['rmax', 'rmin', 'dmax']. "
                         f"Received: renorm_clipping={clipping!r}")
    rmax, rmin, dmax = clipping.get("rmax"), clipping.get("rmin"), clipping.get("dmax")
    if rmax is not None and rmin is not None and rmax < rmin:
        raise ValueError(f"{name}: rmax should be greater than rmin in the `renorm_clipping` "
                         f"argument. Received: rmax={rmax}, rmin={rmin}")
    if dmax is not None and dmax < 0:
        raise ValueError(f"{name}: dmax should be non-negative in the `renorm_clipping` "
                         f"argument. Received: dmax={dmax}")
    return clipping


class LayerNormalization(_ScaleShift, Layer):
    """Normalizes each example over ``axis`` with its own mean and biased variance (Ba et al.,
    2016), then applies per-feature ``gamma`` and ``beta``: Keras 3's LayerNormalization.

    Args:
        axis: int or list of ints, the normalized axes (their sizes give the weights' shape).
            Defaults to -1.
        epsilon: float added to the variance. Defaults to 1e-3 (PyTorch uses 1e-5).
        center, scale, beta/gamma initializers, regularizers, constraints: as
            `BatchNormalization`.
        rms_scaling: Keras's deprecated mode: ``x * rsqrt(var(x) + epsilon) * gamma`` (no
            centering, no beta).

    Weights: ``gamma``, ``beta``, each of the normalized axes' shape.

    Example:
        >>> LayerNormalization()(np.array([[1.0, 3.0]], "float32")).numpy().round(4)
        array([[-0.9995,  0.9995]], dtype=float32)
    """

    supports_masking = True

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", beta_regularizer=None, gamma_regularizer=None,
                 beta_constraint=None, gamma_constraint=None, rms_scaling=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axis, (list, tuple)):
            self.axis = [int(a) for a in axis]
        elif isinstance(axis, (int, np.integer)):
            self.axis = int(axis)
        else:
            raise TypeError(f"{self.name}: Expected an int or a list/tuple of ints for the "
                            f"argument 'axis'. Received: axis={axis!r}")
        self.epsilon, self.rms_scaling = float(epsilon), bool(rms_scaling)
        self._init_scale_shift(center, scale, beta_initializer, gamma_initializer,
                               beta_regularizer, gamma_regularizer, beta_constraint,
                               gamma_constraint)

    def build(self, input_shape):
        self._axes = _check_axes(self, self.axis, input_shape)
        shape = tuple(input_shape[a] for a in self._axes)
        self._build_scale_shift(shape, scale=self.scale or self.rms_scaling,
                                center=self.center and not self.rms_scaling)

    def call(self, inputs):
        return norm_ops.layer_normalization(inputs, self.gamma, self.beta, self._axes,
                                            self.epsilon, rms_scaling=self.rms_scaling)

    def compute_output_shape(self, input_shape):
        _check_axes(self, self.axis, input_shape)
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon,
                "rms_scaling": self.rms_scaling, **self._scale_shift_config()}


class GroupNormalization(_ScaleShift, Layer):
    """Splits the channels into ``groups`` and normalizes each example over each group's channels
    and all other non-batch axes (Wu & He, 2018); per-channel ``gamma``/``beta``.

    Args:
        groups: int, a divisor of the channel count, or -1 for one group per channel (instance
            normalization). Defaults to 32.
        axis: int, the channel axis. Defaults to -1.
        epsilon: float. Defaults to 1e-3.
        center, scale, initializers, regularizers, constraints: as `LayerNormalization`.

    Weights: ``gamma``, ``beta``, each ``(channels,)``.

    The statistics are computed in float32 at least (inputs are not cast down first, so values
    beyond float16's range do not overflow under ``mixed_float16``); the output is in the
    compute dtype.

    Raises:
        ValueError: if ``groups`` is invalid or does not divide the channels (naming the layer
            and the shape).
    """

    supports_masking = True

    def __init__(self, groups=32, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(groups, (int, np.integer)) or (groups <= 0 and groups != -1):
            raise ValueError(f"{self.name}: Invalid argument `groups`: it must be a positive int "
                             f"or -1. Received: groups={groups!r}")
        self.groups, self.axis, self.epsilon = int(groups), int(axis), float(epsilon)
        self.autocast = False  # the input is cast in `call`, to float32 at least (Keras)
        self._init_scale_shift(center, scale, beta_initializer, gamma_initializer,
                               beta_regularizer, gamma_regularizer, beta_constraint,
                               gamma_constraint)

    def build(self, input_shape):
        (axis,) = _check_axes(self, self.axis, input_shape)
        channels = input_shape[axis]
        if self.groups == -1:
            self.groups = channels
        if self.groups > channels:  # Keras's phrases, then ours
            raise ValueError(f"{self.name}: Number of groups ({self.groups}) cannot be more than "
                             f"the number of channels ({channels}). Received: input shape "
                             f"{tuple(input_shape)}")
        if channels % self.groups:
            raise ValueError(f"{self.name}: groups={self.groups} must divide the {channels} "
                             f"channels (Number of groups ({self.groups}) must be a multiple of "
                             f"the number of channels ({channels})). Received: input shape "
                             f"{tuple(input_shape)}")
        self._build_scale_shift((channels,))
        self.input_spec = InputSpec(ndim=len(input_shape), axes={self.axis: channels})

    def call(self, inputs):
        axis, g = self.axis % inputs.ndim, self.groups
        shape = inputs.shape
        if inputs.dtype not in ("float32", "float64"):
            inputs = ops.cast(inputs, "float32")
        grouped_shape = shape[:axis] + (g, shape[axis] // g) + shape[axis + 1:]
        x = ops.reshape(inputs, grouped_shape)
        reduce = tuple(i for i in range(1, x.ndim) if i != axis)
        mean, variance = ops.moments(x, reduce, keepdims=True)
        inv = ops.rsqrt(ops.add(variance, self.epsilon))
        y = ops.reshape(ops.multiply(ops.subtract(x, mean), inv), shape)
        bshape = [1] * inputs.ndim
        bshape[axis] = shape[axis]
        if self.gamma is not None:
            y = ops.multiply(y, ops.reshape(self.gamma, bshape))
        if self.beta is not None:
            y = ops.add(y, ops.reshape(self.beta, bshape))
        return ops.cast(y, self.compute_dtype)

    def compute_output_shape(self, input_shape):
        _check_axes(self, self.axis, input_shape)
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "groups": self.groups, "axis": self.axis,
                "epsilon": self.epsilon, **self._scale_shift_config()}


class UnitNormalization(Layer):
    """Scales each example to unit L2 norm over ``axis``: ``x / max(||x||, 1e-12)``.

    Args:
        axis: int or list of ints. Defaults to -1.

    Example:
        >>> UnitNormalization()(np.array([[3.0, 4.0]], "float32")).numpy()
        array([[0.6, 0.8]], dtype=float32)
    """

    supports_masking = True

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axis, (list, tuple)):
            self.axis = [int(a) for a in axis]
        elif isinstance(axis, (int, np.integer)):
            self.axis = int(axis)
        else:
            raise TypeError(f"{self.name}: Invalid value for `axis` argument: expected an int or "
                            f"a list/tuple of ints. Received: axis={axis!r}")
        self._build_at_init()

    def call(self, inputs):
        axis = tuple(self.axis) if isinstance(self.axis, list) else self.axis
        return ops.normalize(inputs, axis=axis, order=2, epsilon=1e-12)

    def compute_output_shape(self, input_shape):
        _check_axes(self, self.axis, tuple(1 if d is None else d for d in input_shape))
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


class RMSNormalization(Layer):
    """Root-mean-square layer normalization (Zhang & Sennrich 2019): ``x / sqrt(mean(x**2) +
    epsilon) * scale`` over ``axis``; weight ``scale`` (ones)."""

    def __init__(self, axis=-1, epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        self.axis, self.epsilon = axis, epsilon

    def build(self, input_shape):
        axes = sorted(self.axis) if isinstance(self.axis, (list, tuple)) else [self.axis]
        self._axes = axes
        shape = tuple(input_shape[a] for a in axes)
        self.scale = self.add_weight(name="scale", shape=shape, initializer="ones")

    def call(self, x):
        axes = [a % x.ndim for a in self._axes]
        scale = self.scale
        if axes != list(range(x.ndim - len(axes), x.ndim)):  # place scale on its axes
            shape = [1] * x.ndim
            for a, n in zip(axes, self.scale.shape):
                shape[a] = n
            scale = ops.reshape(self.scale, tuple(shape))
        ms = ops.mean(ops.square(x), axis=tuple(axes), keepdims=True)
        return x * ops.rsqrt(ms + self.epsilon) * scale

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon}
