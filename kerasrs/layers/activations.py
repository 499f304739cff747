"""Activation layers with Keras 3's names and arguments: ReLU, LeakyReLU, PReLU and ELU.

Each is an elementwise map with the input's shape; masks pass through. The formulas and argument
checks follow Keras 3 (``keras/src/layers/activations/``); the functions themselves are
`kerasrs.activations` (ReLU, LeakyReLU, ELU) or composed from `kerasrs.ops` (PReLU), so they are
differentiable like any op.
"""

import numbers

from kerasrs import activations, initializers, ops
from kerasrs.layers.base import InputSpec, Layer
from kerasrs.layers.layer_config import get_regularizer, serialize_regularizer


def _check_number(layer, arg, value, allow_none=False, subject="{arg} of a ReLU layer"):
    """``value`` if it is a real number >= 0 (or None when allowed), else a ValueError (with
    Keras's phrase, "<subject> cannot be ...")."""
    if value is None and allow_none:
        return None
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or value < 0:
        cannot = "a negative value" if allow_none else "None or a negative value"
        raise ValueError(f"{layer}: {subject.format(arg=arg)} cannot be {cannot}; `{arg}` "
                         f"must be a number >= 0{' or None' if allow_none else ''}. "
                         f"Received: {arg}={value!r}")
    return value


class ReLU(Layer):
    """Rectified linear unit with Keras's options.

    ``f(x) = max_value`` for ``x >= max_value``, ``x`` for ``threshold <= x < max_value``, and
    ``negative_slope * (x - threshold)`` otherwise.

    Args:
        max_value: float >= 0 or None (no cap). Defaults to None.
        negative_slope: float >= 0, the slope below ``threshold``. Defaults to 0.
        threshold: float >= 0. Defaults to 0.
        **kwargs: base `Layer` arguments.

    Input/output shape: any; the output has the input's shape and dtype.

    Raises:
        ValueError: if an argument is negative (or None where a number is needed).

    Example:
        >>> ReLU(max_value=10, negative_slope=0.5)(np.array([-10., -5., 0., 5., 10.])).numpy()
        array([-5. , -2.5,  0. ,  5. , 10. ], dtype=float32)
    """

    supports_masking = True

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        self.max_value = _check_number(self.name, "max_value", max_value, allow_none=True)
        self.negative_slope = _check_number(self.name, "negative_slope", negative_slope)
        self.threshold = _check_number(self.name, "threshold", threshold)
        self._build_at_init()

    def call(self, inputs):
        return activations.relu(inputs, negative_slope=self.negative_slope,
                                max_value=self.max_value, threshold=self.threshold)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "max_value": self.max_value,
                "negative_slope": self.negative_slope, "threshold": self.threshold}


class LeakyReLU(Layer):
    """``x`` for ``x >= 0``, else ``negative_slope * x`` (Maas et al., 2013).

    Args:
        negative_slope: float >= 0. Defaults to 0.3 (Keras's default; the function
            ``activations.leaky_relu`` defaults to 0.2). ``alpha=`` (Keras 2's name) is accepted.
        **kwargs: base `Layer` arguments.

    Input/output shape: any; the output has the input's shape and dtype.

    Raises:
        ValueError: if ``negative_slope`` is negative or None.
    """

    supports_masking = True

    def __init__(self, negative_slope=0.3, **kwargs):
        if "alpha" in kwargs:  # Keras 2 configs
            negative_slope = kwargs.pop("alpha")
        super().__init__(**kwargs)
        self.negative_slope = _check_number(self.name, "negative_slope", negative_slope,
                                            subject="The {arg} value of a Leaky ReLU layer")
        self._build_at_init()

    def call(self, inputs):
        return activations.leaky_relu(inputs, negative_slope=self.negative_slope)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "negative_slope": self.negative_slope}


class PReLU(Layer):
    """Parametric ReLU (He et al., 2015): ``x`` for ``x >= 0``, else ``alpha * x`` with a
    learned ``alpha`` per input position, computed as ``relu(x) - alpha * relu(-x)``.

    Args:
        alpha_initializer: initializer of ``alpha``. Defaults to "zeros" (a plain ReLU).
        alpha_regularizer: optional regularizer of ``alpha``.
        alpha_constraint: optional callable applied to ``alpha`` after each update.
        shared_axes: int or list of ints (1 = the first axis after the batch): axes along which
            ``alpha`` is shared (size 1), e.g. ``[1, 2]`` for one slope per channel of images.
        **kwargs: base `Layer` arguments.

    Input/output shape: ``(batch, ...)``; the output has the input's shape and dtype.
    Weights: ``alpha`` of shape ``input_shape[1:]`` with the shared axes set to 1.

    Raises:
        ValueError: if a shared axis is not an axis after the batch axis, or a later input's
            rank or (non-shared) sizes differ from those the layer was built for.
    """

    supports_masking = True

    def __init__(self, alpha_initializer="zeros", alpha_regularizer=None, alpha_constraint=None,
                 shared_axes=None, **kwargs):
        super().__init__(**kwargs)
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = get_regularizer(alpha_regularizer)
        self.alpha_constraint = alpha_constraint
        if shared_axes is None:
            self.shared_axes = None
        else:
            self.shared_axes = list(shared_axes) if isinstance(shared_axes, (list, tuple)) \
                else [shared_axes]

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        shared = set(self.shared_axes or ())
        if any(not isinstance(a, int) or not 1 <= a < len(input_shape) for a in shared):
            raise ValueError(f"{self.name}: `shared_axes` must be axes after the batch axis "
                             f"(1 to {len(input_shape) - 1}). Received: shared_axes="
                             f"{self.shared_axes}, input shape {input_shape}")
        shape = [1 if i in shared else n for i, n in enumerate(input_shape) if i > 0]
        if any(n is None for n in shape):
            raise ValueError(f"{self.name}: every non-shared axis needs a known size to hold "
                             f"`alpha`; share the free axes with `shared_axes`. Received: input "
                             f"shape {input_shape}, shared_axes={self.shared_axes}")
        self.alpha = self.add_weight(tuple(shape), self.alpha_initializer, name="alpha",
                                     regularizer=self.alpha_regularizer,
                                     constraint=self.alpha_constraint)
        self.input_spec = InputSpec(ndim=len(input_shape), axes={
            i: n for i, n in enumerate(input_shape) if i > 0 and i not in shared})

    def call(self, inputs):
        return ops.subtract(ops.relu(inputs), ops.multiply(self.alpha, ops.relu(-inputs)))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(),
                "alpha_initializer": initializers.serialize(self.alpha_initializer),
                "alpha_regularizer": serialize_regularizer(self.alpha_regularizer),
                "alpha_constraint": None, "shared_axes": self.shared_axes}


class ELU(Layer):
    """Exponential linear unit (Clevert et al., 2016): ``x`` for ``x > 0``, else
    ``alpha * (exp(x) - 1)``.

    Args:
        alpha: float, the value approached for large negative inputs is ``-alpha``.
            Defaults to 1.0.
        **kwargs: base `Layer` arguments.

    Input/output shape: any; the output has the input's shape and dtype.
    """

    supports_masking = True

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(alpha, numbers.Real) or isinstance(alpha, bool):
            raise ValueError(f"{self.name}: `alpha` must be a number. Received: alpha={alpha!r}")
        self.alpha = alpha
        self._build_at_init()

    def call(self, inputs):
        return activations.elu(inputs, alpha=self.alpha)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}


__all__ = ["ReLU", "LeakyReLU", "PReLU", "ELU"]
