"""Keras's functional merge helpers: ``layers.add([a, b])`` is ``layers.Add()([a, b])``.

Each builds the merge layer with the keyword arguments given and calls it on ``inputs`` (a list of
tensors, symbolic or eager), so it works in functional models and on arrays alike.
"""

from kerasrs.layers import merging


def add(inputs, **kwargs):
    """Elementwise sum of ``inputs`` (see `Add`)."""
    return merging.Add(**kwargs)(inputs)


def subtract(inputs, **kwargs):
    """``inputs[0] - inputs[1]`` (see `Subtract`)."""
    return merging.Subtract(**kwargs)(inputs)


def multiply(inputs, **kwargs):
    """Elementwise product of ``inputs`` (see `Multiply`)."""
    return merging.Multiply(**kwargs)(inputs)


def average(inputs, **kwargs):
    """Elementwise mean of ``inputs`` (see `Average`)."""
    return merging.Average(**kwargs)(inputs)


def maximum(inputs, **kwargs):
    """Elementwise maximum of ``inputs`` (see `Maximum`)."""
    return merging.Maximum(**kwargs)(inputs)


def minimum(inputs, **kwargs):
    """Elementwise minimum of ``inputs`` (see `Minimum`)."""
    return merging.Minimum(**kwargs)(inputs)


def concatenate(inputs, axis=-1, **kwargs):
    """``inputs`` joined along ``axis`` (see `Concatenate`)."""
    return merging.Concatenate(axis=axis, **kwargs)(inputs)


def dot(inputs, axes=-1, normalize=False, **kwargs):
    """Dot product of two inputs along ``axes`` (see `Dot`)."""
    return merging.Dot(axes=axes, normalize=normalize, **kwargs)(inputs)


__all__ = ["add", "subtract", "multiply", "average", "maximum", "minimum", "concatenate", "dot"]
