"""Colour augmentation layers with Keras 3's names, arguments and transforms.

They follow `augmentation`'s pattern (seeded draws per image when training, a deterministic
``transform(xp, images, params)`` reusable with chosen parameters, images pass through in
inference); `AutoContrast` is deterministic and applies always, as in Keras. ``value_range``
is ``(low, high)`` of the pixel values (default (0, 255)); several transforms work on the
(0, 255) scale internally, as Keras's do. Colour conversions are Keras's: grayscale
``0.2989 R + 0.587 G + 0.114 B`` (ITU-R BT.601 luma), RGB <-> HSV after Smith,
"Color gamut transform pairs" (SIGGRAPH 1978).
"""

import numpy as np

from kerasrs.layers.preprocessing.augmentation import (_FixedImageLayer, _RandomImageLayer,
                                                       _value_range)

__all__ = ["RandomGrayscale", "RandomInvert", "Solarization", "AutoContrast",
           "RandomSaturation", "RandomHue", "RandomColorDegeneration", "RandomPosterization",
           "RandomSharpness"]

_LUMA = (0.2989, 0.587, 0.114)


def keras_factor(who, factor, low=-1.0, high=1.0, name="factor"):
    """Keras's factor range: a number ``f`` gives ``(max(-f, low), f)``, a pair is sorted.

    Raises:
        ValueError: for anything else, or values outside ``[low, high]``.
    """
    if isinstance(factor, (tuple, list)) and len(factor) == 2:
        pair = tuple(sorted(float(f) for f in factor))
        bad = pair[0] > high or pair[1] < low
    elif isinstance(factor, (int, float)) and not isinstance(factor, bool):
        bad = not low <= factor <= high
        pair = (max(-abs(float(factor)), low), abs(float(factor)))
    else:
        bad = True
    if bad:
        raise ValueError(f"{who}: `{name}` must be a number or a pair of numbers in "
                         f"[{low}, {high}]. Received: {name}={factor!r}")
    return pair


def grayscale(xp, x):
    """Luma of NHWC RGB images, ``(n, h, w, 1)``."""
    weights = xp.asarray(_LUMA, x.dtype)
    return (x[..., :3] * weights).sum(axis=-1, keepdims=True).astype(x.dtype)


def rgb_to_hsv(xp, x):
    """NHWC RGB -> HSV, all channels in [0, 1] for RGB in [0, 1]."""
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    value = xp.maximum(xp.maximum(r, g), b)
    spread = value - xp.minimum(xp.minimum(r, g), b)
    saturation = xp.where(value > 0, spread / xp.where(value > 0, value, 1), 0)
    norm = 1.0 / (6.0 * xp.where(spread > 0, spread, 1))
    hue = xp.where(value == g, norm * (b - r) + 2.0 / 6.0, norm * (r - g) + 4.0 / 6.0)
    hue = xp.where(value == r, norm * (g - b), hue)
    hue = xp.where(spread > 0, hue, 0) + (hue < 0)
    return xp.stack([hue, saturation, value], axis=-1).astype(x.dtype)


def hsv_to_rgb(xp, x):
    hue, saturation, value = x[..., 0], x[..., 1], x[..., 2]
    dh = xp.remainder(hue, 1.0) * 6.0
    planes = (xp.clip(xp.abs(dh - 3.0) - 1.0, 0, 1), xp.clip(2.0 - xp.abs(dh - 2.0), 0, 1),
              xp.clip(2.0 - xp.abs(dh - 4.0), 0, 1))
    return xp.stack([value * (1 - saturation + saturation * d) for d in planes],
                    axis=-1).astype(x.dtype)


def rescale(x, source, target):
    """Map values linearly from range ``source`` to range ``target``."""
    scale = (target[1] - target[0]) / (source[1] - source[0])
    return ((x - source[0]) * scale + target[0]).astype(x.dtype)


def _per_image(xp, values, x):
    return xp.asarray(values, x.dtype).reshape(-1, 1, 1, 1)


class _ColorLayer(_RandomImageLayer):
    """A colour layer with a ``factor`` range (within ``_bounds``) and a ``value_range``; its
    ``__init__`` has the arguments, order and defaults Keras gives most colour layers."""

    _bounds = (-1.0, 1.0)

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(seed, data_format, **kwargs)
        self.factor = factor
        self._range = keras_factor(self.name, factor, *self._bounds)
        self.value_range = _value_range(self.name, value_range)

    def draw(self, rng, shape):
        return {"factor": rng.uniform(*self._range, shape[0])}

    def get_config(self):
        return {**super().get_config(), "factor": self.factor,
                "value_range": list(self.value_range)}


class RandomGrayscale(_RandomImageLayer):
    """Turns each image to grayscale with probability ``factor``, keeping its channel count.

    Args:
        factor: probability in [0, 1]. Defaults to 0.5.
        seed, data_format: see `kerasrs.layers.preprocessing.augmentation`.
    """

    TRACED = True

    def __init__(self, factor=0.5, data_format=None, seed=None, **kwargs):
        super().__init__(seed, data_format, **kwargs)
        if not 0 <= factor <= 1:
            raise ValueError(f"{self.name}: `factor` must lie in [0, 1]. Received: "
                             f"factor={factor!r}")
        self.factor = factor

    def draw(self, rng, shape):
        return {"apply": rng.random(shape[0]) < self.factor}

    def transform(self, xp, x, params):
        return xp.where(xp.asarray(params["apply"]).reshape(-1, 1, 1, 1), grayscale(xp, x), x)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class RandomInvert(_ColorLayer):
    """Replaces each image by ``high - x`` with a probability drawn from ``factor``.

    Args:
        factor: probability, a number ``f`` (``[0, f]`` ... ``[-f, f]`` as Keras) or a pair.
            Defaults to 1.0.
        value_range, seed, data_format: see the module docstring.
    """

    TRACED = True

    def __init__(self, factor=1.0, value_range=(0, 255), seed=None, data_format=None,
                 **kwargs):
        super().__init__(factor, value_range, data_format, seed, **kwargs)

    def draw(self, rng, shape):
        probability = rng.uniform(*self._range, shape[0])
        return {"apply": rng.random(shape[0]) < probability}

    def transform(self, xp, x, params):
        apply = xp.asarray(params["apply"]).reshape(-1, 1, 1, 1)
        return xp.where(apply, self.value_range[1] - x, x).astype(x.dtype)


class Solarization(_RandomImageLayer):
    """Adds a random offset, then inverts (``255 - x``) the pixels at or above a random
    threshold, on the (0, 255) scale. With the default factors every pixel is inverted.

    Args:
        addition_factor: number ``f`` (offsets in ``[0, 255 f]``) or pair ``(a, b)`` (offsets
            in ``[a, 255 b]``, Keras's rule), in [0, 1]. Defaults to 0.
        threshold_factor: as ``addition_factor``, for the threshold. Defaults to 0.
        value_range, seed: see the module docstring.
    """

    TRACED = True

    def __init__(self, addition_factor=0.0, threshold_factor=0.0, value_range=(0, 255),
                 seed=None, **kwargs):
        data_format = kwargs.pop("data_format", None)
        super().__init__(seed, data_format, **kwargs)
        self.addition_factor = list(keras_factor(self.name, addition_factor, 0, 1,
                                                 "addition_factor"))
        self.threshold_factor = list(keras_factor(self.name, threshold_factor, 0, 1,
                                                  "threshold_factor"))
        self.value_range = _value_range(self.name, value_range)

    def draw(self, rng, shape):
        (a0, a1), (t0, t1) = self.addition_factor, self.threshold_factor
        return {"additions": rng.uniform(a0, a1 * 255, shape[0]),
                "thresholds": rng.uniform(t0, t1 * 255, shape[0])}

    def transform(self, xp, x, params):
        y = xp.clip(rescale(x, self.value_range, (0, 255)) +
                    _per_image(xp, params["additions"], x), 0, 255)
        y = xp.where(y < _per_image(xp, params["thresholds"], x), y, 255 - y)
        return rescale(y, (0, 255), self.value_range)

    def get_config(self):
        return {**super().get_config(), "addition_factor": self.addition_factor,
                "threshold_factor": self.threshold_factor,
                "value_range": list(self.value_range)}


class AutoContrast(_FixedImageLayer):
    """Stretches each channel of each image to the full value range (minimum to ``low``,
    maximum to ``high``), in training and inference alike. Constant channels (0/0) pass
    through unchanged.

    Args:
        value_range: ``(low, high)`` of the pixel values. Defaults to (0, 255).
    """

    def __init__(self, value_range=(0, 255), **kwargs):
        super().__init__(**kwargs)
        self.value_range = _value_range(self.name, value_range)

    def transform(self, xp, x, params=None):
        y = rescale(x, self.value_range, (0, 255))
        low = y.min(axis=(1, 2), keepdims=True)
        high = y.max(axis=(1, 2), keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = 255.0 / (high - low)
            y = xp.clip(y * scale - low * scale, 0, 255)
        y = rescale(y, (0, 255), self.value_range)
        return xp.where(xp.isnan(y), x, y).astype(x.dtype)

    def inference(self, xp, x):
        return self.transform(xp, x)

    def get_config(self):
        return {**super().get_config(), "value_range": list(self.value_range)}


class RandomSaturation(_ColorLayer):
    """Scales each image's HSV saturation by ``f / (1 - f)`` for ``f`` drawn from ``factor``
    (0.5 keeps the image, 0 makes it gray, 1 fully saturated); the saturation is clipped to
    ``value_range`` as Keras does.

    Args:
        factor: a number ``f`` (``[-f, f]``) or a pair, in [-1, 1].
        value_range, seed, data_format: see the module docstring.
    """

    TRACED = True

    def draw(self, rng, shape):
        f = rng.uniform(*self._range, shape[0])
        return {"factor": f / (1 - f + 1e-7)}

    def transform(self, xp, x, params):
        hsv = rgb_to_hsv(xp, x)
        s = xp.clip(hsv[..., 1:2] * _per_image(xp, params["factor"], x), *self.value_range)
        return hsv_to_rgb(xp, xp.concatenate([hsv[..., :1], s, hsv[..., 2:]], axis=-1))


class RandomHue(_ColorLayer):
    """Rotates each image's hue by ``+-f / 2`` of a turn, ``f`` drawn from ``factor`` and the
    sign at random.

    Args:
        factor: a number ``f`` (``[-f, f]``) or a pair, in [-1, 1].
        value_range, seed, data_format: see the module docstring.
    """

    TRACED = True

    def draw(self, rng, shape):
        sign = 1.0 - 2.0 * (rng.random(shape[0]) > 0.5)  # -1 or 1 (arrays and Tensors)
        return {"factor": sign * rng.uniform(*self._range, shape[0]) * 0.5}

    def transform(self, xp, x, params):
        hsv = rgb_to_hsv(xp, rescale(x, self.value_range, (0, 1)))
        h = hsv[..., :1] + _per_image(xp, params["factor"], x)
        h = xp.where(h > 1, h - 1, xp.where(h < 0, h + 1, h))
        rgb = xp.clip(hsv_to_rgb(xp, xp.concatenate([h, hsv[..., 1:]], axis=-1)), 0, 1)
        return rescale(rgb, (0, 1), self.value_range)


class RandomColorDegeneration(_ColorLayer):
    """Blends each image towards its grayscale version: ``x + f (gray - x)``, clipped.

    Args:
        factor: a number ``f`` (``[-f, f]``) or a pair, in [-1, 1]; 0 keeps the image,
            1 makes it gray.
        value_range, seed, data_format: see the module docstring.
    """

    TRACED = True

    def transform(self, xp, x, params):
        f = _per_image(xp, params["factor"], x)
        return xp.clip(x + f * (grayscale(xp, x) - x), *self.value_range).astype(x.dtype)


class RandomPosterization(_ColorLayer):
    """Keeps only the ``bits`` most significant bits of each 8-bit channel value.

    Args:
        factor: int ``b`` in [1, 8] (bits drawn from ``[1, b)``, or exactly ``b`` when
            ``b == 1``), or a pair ``(low, high)`` (``[low, high)``, or ``low`` when equal).
        value_range, seed, data_format: see the module docstring.
    """

    _bounds = (1, 8)  # factor counts bits
    TRACED = True

    def draw(self, rng, shape):
        low, high = int(self._range[0]), int(self._range[1])
        bits = np.full(shape[0], low) if low == high else rng.integers(low, high, shape[0])
        return {"bits": bits}

    def transform(self, xp, x, params):
        shift = xp.asarray(8 - xp.asarray(params["bits"]), "uint8").reshape(-1, 1, 1, 1)
        y = rescale(x, self.value_range, (0, 255)).astype("uint8")
        y = xp.left_shift(xp.right_shift(y, shift), shift).astype(x.dtype)
        return rescale(y, (0, 255), self.value_range)


class RandomSharpness(_ColorLayer):
    """Blends each image with its 3x3-smoothed version (kernel ``[[1,1,1],[1,5,1],[1,1,1]] /
    13``, zero padding): ``x + (1 - 2 f)(smooth - x)``, clipped. ``f = 0.5`` keeps the image,
    0 blurs it, 1 sharpens it.

    Args:
        factor: a number ``f`` (``[-f, f]``) or a pair, in [-1, 1].
        value_range, seed, data_format: see the module docstring.
    """

    TRACED = True

    def transform(self, xp, x, params):
        height, width = x.shape[1:3]
        padded = xp.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
        smooth = sum(padded[:, i:i + height, j:j + width] for i in range(3) for j in range(3))
        smooth = (smooth + 4 * x) / 13.0
        f = 2 * _per_image(xp, params["factor"], x)
        return xp.clip(x + (1 - f) * (smooth - x), *self.value_range).astype(x.dtype)
