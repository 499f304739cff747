"""Activation functions by name, as Keras's ``keras.activations``.

Each function takes a Tensor (or array) and returns a Tensor of the same shape and dtype; they
are differentiable (see `kerasrs.ops.nn`). ``get("relu")`` returns the function, ``get(None)``
returns `linear`, and ``serialize(fn)`` returns its name (what layer configs store).
"""

from kerasrs import ops, registry
from kerasrs.ops import nn


def relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    """Rectified linear unit ``max(x, 0)``; with Keras's options: ``negative_slope * (x -
    threshold)`` below ``threshold``, and outputs capped at ``max_value``."""
    if negative_slope == 0.0 and max_value is None and threshold == 0.0:
        return nn.relu(x)
    x = ops.convert_to_tensor(x)
    y = ops.where(x > threshold, x, negative_slope * (x - threshold) if negative_slope else
                  ops.multiply(x, 0.0))
    return ops.minimum(y, max_value) if max_value is not None else y


def leaky_relu(x, negative_slope=0.2):
    """``x`` for ``x > 0``, else ``negative_slope * x``."""
    return nn.leaky_relu(x, negative_slope=negative_slope)


def relu6(x):
    """``min(max(x, 0), 6)``."""
    return nn.relu6(x)


def elu(x, alpha=1.0):
    """``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)`` (Clevert et al., 2016)."""
    return nn.elu(x, alpha=alpha)


def selu(x):
    """Scaled ELU with Klambauer et al.'s (2017) constants (use with lecun_normal weights)."""
    return nn.selu(x)


def celu(x, alpha=1.0):
    """Continuously differentiable ELU ``max(x, 0) + min(0, alpha * (exp(x / alpha) - 1))``."""
    return nn.celu(x, alpha=alpha)


def sigmoid(x):
    """``1 / (1 + exp(-x))``, without overflow."""
    return nn.sigmoid(x)


def hard_sigmoid(x):
    """``relu6(x + 3) / 6`` (Keras 3's piecewise-linear sigmoid)."""
    return nn.hard_sigmoid(x)


def hard_silu(x):
    """``x * hard_sigmoid(x)``."""
    return nn.hard_silu(x)


hard_swish = hard_silu


def tanh(x):
    """Hyperbolic tangent."""
    return ops.tanh(x)


def softplus(x):
    """``log(1 + exp(x))``, finite for any ``x``."""
    return nn.softplus(x)


def softsign(x):
    """``x / (1 + |x|)``."""
    return nn.softsign(x)


def silu(x):
    """``x * sigmoid(x)`` (also called swish)."""
    return nn.silu(x)


swish = silu


def gelu(x, approximate=False):
    """Gaussian error linear unit; exact (erf) by default, as Keras's activation (the op's
    default is the tanh approximation)."""
    return nn.gelu(x, approximate=approximate)


def mish(x):
    """``x * tanh(softplus(x))`` (Misra, 2019)."""
    return ops.multiply(x, ops.tanh(nn.softplus(x)))


def exponential(x):
    """``exp(x)``."""
    return ops.exp(x)


def linear(x):
    """The identity: returns ``x`` unchanged."""
    return x


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along ``axis``, without overflow."""
    return nn.softmax(x, axis=axis)


def log_softmax(x, axis=-1):
    """``x - logsumexp(x)`` along ``axis``."""
    return nn.log_softmax(x, axis=axis)


def log_sigmoid(x):
    """``log(sigmoid(x))``, finite for any ``x``."""
    return nn.log_sigmoid(x)


def hard_tanh(x):
    """``clip(x, -1, 1)``."""
    return nn.hard_tanh(x)


def hard_shrink(x, threshold=0.5):
    """``x`` where ``|x| > threshold``, else 0."""
    return nn.hard_shrink(x, threshold)


def soft_shrink(x, threshold=0.5):
    """``x - sign(x) * threshold`` where ``|x| > threshold``, else 0."""
    return nn.soft_shrink(x, threshold)


def tanh_shrink(x):
    """``x - tanh(x)``."""
    return nn.tanh_shrink(x)


def threshold(x, threshold, default_value):
    """``x`` where ``x > threshold``, else ``default_value``."""
    return nn.threshold(x, threshold, default_value)


def glu(x, axis=-1):
    """Gated linear unit: ``a * sigmoid(b)`` for the two halves of ``x`` along ``axis``."""
    return nn.glu(x, axis)


def sparse_plus(x):
    """0 below -1, ``(x + 1)**2 / 4`` on [-1, 1], ``x`` above 1."""
    return nn.sparse_plus(x)


def sparse_sigmoid(x):
    """0 below -1, ``(x + 1) / 2`` on [-1, 1], 1 above."""
    return nn.sparse_sigmoid(x)


def squareplus(x, b=4):
    """``(x + sqrt(x**2 + b)) / 2``."""
    return nn.squareplus(x, b)


def sparsemax(x, axis=-1):
    """Euclidean projection of ``x`` onto the probability simplex along ``axis`` (Martins &
    Astudillo 2016, eq. 2): a softmax alternative with exact zeros."""
    return nn.sparsemax(x, axis)


_ALL = {f.__name__: f for f in (hard_tanh, hard_shrink, soft_shrink, tanh_shrink, threshold, glu,
                                sparse_plus, sparse_sigmoid, squareplus, sparsemax,

    relu, leaky_relu, relu6, elu, selu, celu, sigmoid, hard_sigmoid, hard_silu, tanh, softplus,
    softsign, silu, gelu, mish, exponential, linear, softmax, log_softmax, log_sigmoid)}
_ALL.update({"swish": silu, "hard_swish": hard_silu})


def get(identifier):
    """The activation function for a name ("relu"), a callable (returned as is) or None
    (`linear`).

    Raises:
        ValueError: for an unknown name, listing the known ones.
    """
    if identifier is None:
        return linear
    if isinstance(identifier, dict):  # {"class_name": "relu", ...} or a serialized function
        identifier = identifier.get("config", identifier.get("class_name"))
        if isinstance(identifier, dict):
            identifier = identifier.get("name")
    if isinstance(identifier, str):
        fn = _ALL.get(identifier)
        if fn is None:
            raise ValueError(f"Unknown activation {identifier!r}. Known names: {sorted(_ALL)}. "
                             f"Received: {identifier!r}")
        return fn
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret activation identifier. Received: {identifier!r}")


def serialize(activation):
    """The name of an activation function ("linear" for None); other callables by
    ``__name__``."""
    if activation is None:
        return "linear"
    name = getattr(activation, "__name__", None)
    if name in _ALL and _ALL[name] is activation:
        return name
    for key, fn in _ALL.items():
        if fn is activation:
            return key
    return name or repr(activation)


def deserialize(name):
    """The function for ``serialize``'s name."""
    return get(name)


registry.register_functions("keras.activations", _ALL)
