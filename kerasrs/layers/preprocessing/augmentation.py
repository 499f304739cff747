"""Image augmentation layers with Keras 3's names, arguments and transforms.

Each draws random parameters per image (per batch for `RandomCrop`) when training and applies
a deterministic transform (`transform`, reusable with chosen parameters); in inference
(``training=False``, as in ``predict`` and ``evaluate``) the images pass through unchanged
(`RandomCrop` crops the centre). A direct call ``layer(images)`` trains, as in Keras. With
``seed`` a model with seeded augmentation repeats its augmentations run after run; without
it, a layer draws from a stream `kerasrs.utils.set_random_seed` seeds (NumPy's global
generator for the layers that transform on the host, see below). Images are
``(batch, H, W, C)`` or ``(H, W, C)`` (``data_format="channels_last"``; "channels_first" is
accepted too).

In training, `RandomFlip`, `RandomRotation`, `RandomTranslation`, `RandomZoom`,
`RandomShear`, `RandomContrast`, `RandomBrightness`, `RandomCrop` and the colour layers marked
``TRACED`` (`RandomGrayscale`, `RandomInvert`, `Solarization`, `RandomSaturation`,
`RandomHue`, `RandomColorDegeneration`, `RandomPosterization`, `RandomSharpness`) compute in kerasrs ops and draw from a
`kerasrs.random.SeedGenerator` (its ``seed``, or one drawn from the stream ``set_random_seed``
seeds) through a graph op, so ``compile(jit_compile=True)`` traces them and a replayed step
augments each batch anew, as eagerly (a ``seed`` then gives the same augmentations eagerly and
replayed). Their ``draw`` and ``transform`` remain for chosen parameters on arrays. The other
layers transform the raw arrays on the host: a traced training step that holds one is refused,
naming the layer (inference passes the images through in ops, so ``predict`` and ``evaluate``
still trace).
"""

import math

import numpy as np

from kerasrs import autodiff, ops, random
from kerasrs.layers.base import Layer
from kerasrs.layers.core import random_draw
from kerasrs.layers.preprocessing import image
from kerasrs.ops.core import constant

__all__ = ["RandomFlip", "RandomRotation", "RandomTranslation", "RandomZoom", "RandomContrast",
           "RandomBrightness", "RandomCrop"]


class _TracedRandom:
    """What `draw` uses of a NumPy Generator (``random``, ``uniform``, ``integers``), drawn
    by the graph op `kerasrs.layers.core.random_draw` from a layer's seed generator: float64
    Tensors, new numbers at every call and in every replayed step."""

    def __init__(self, generator, backend):
        self.generator, self.backend = generator, backend

    def random(self, n):
        return random_draw(self.generator, "uniform", (int(n),), "float64", self.backend)

    def uniform(self, low, high, n):
        return self.random(n) * (high - low) + low

    def integers(self, low, high, n):
        return ops.cast(ops.floor(self.random(n) * (high - low)), "int64") + low


class _OpsArrays:
    """`kerasrs.ops` in the place of an array module (``xp``) for `transform`, on
    ``backend``: what it computes on Tensors is recorded (``asarray`` of host values makes a
    constant)."""

    remainder = staticmethod(ops.mod)  # NumPy's name

    def __init__(self, backend):
        self.backend = backend

    def __getattr__(self, name):
        return getattr(ops, name)

    def asarray(self, values, dtype=None):
        if not isinstance(values, autodiff.Tensor):
            values = constant(self.backend.asarray(np.asarray(values, dtype)), self.backend)
        return values if dtype is None else ops.cast(values, dtype)


class _RandomImageLayer(Layer):
    """Seeding, training switch and layout handling shared by the augmentation layers.

    A subclass with ``TRACED = True`` has a ``draw`` and a ``transform`` that also run on
    `_TracedRandom` and `_OpsArrays`: it trains in kerasrs ops, drawing from its
    ``seed_generator`` (a graph traces it)."""

    TRACED = False

    def __init__(self, seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.seed = seed
        self.data_format = image.check_data_format(self.name, data_format)
        self._rng = None
        if self.TRACED:
            self.seed_generator = random.SeedGenerator(seed)

    def _generator(self):
        if self.seed is None:
            return np.random.default_rng(np.random.randint(2 ** 31))
        if self._rng is None:
            self._rng = np.random.default_rng(self.seed)
        return self._rng

    def call(self, inputs, training=True):
        x, undo = image.to_nhwc(self.name, inputs, self.data_format)
        if training and self.TRACED:
            return image.in_nhwc(ops.cast(inputs, self.compute_dtype), self.data_format,
                                 self._traced)
        if not training and type(self).inference is _RandomImageLayer.inference:
            return ops.cast(inputs, self.compute_dtype)  # in ops: an inference graph traces
        inputs._report_host_read(f"{type(self).__name__}'s transform of the raw images")
        x = x.astype(self.compute_dtype)
        if training:
            x = self.transform(inputs.backend.xp, x, self.draw(self._generator(), x.shape))
        else:
            x = self.inference(inputs.backend.xp, x)
        return constant(undo(x), inputs.backend)

    def _traced(self, x):
        draws = self.draw(_TracedRandom(self.seed_generator, x.backend), x.shape)
        return self.transform(_OpsArrays(x.backend), x, draws)

    def inference(self, xp, x):
        return x

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "seed": self.seed, "data_format": self.data_format}


class _FixedImageLayer(_RandomImageLayer):
    """An image layer with nothing random (no ``seed``): `draw` gives None to `transform`."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(None, data_format, **kwargs)

    def _generator(self):
        return None  # nothing random: leave the global generator alone

    def draw(self, rng, shape):
        return None

    def get_config(self):
        config = super().get_config()
        del config["seed"]
        return config


class _TracedImageLayer(_RandomImageLayer):
    """An augmentation in kerasrs ops, with one random number per image from the layer's
    `kerasrs.random.SeedGenerator` (`kerasrs.layers.core.random_draw`): a graph traces it.
    Subclasses define ``augment(x, u, height_axis)``: ``u`` holds the draws in [0, 1), shaped
    to broadcast against the images ``x``."""

    def __init__(self, seed=None, data_format=None, **kwargs):
        super().__init__(seed, data_format, **kwargs)
        self.seed_generator = random.SeedGenerator(seed)

    def call(self, inputs, training=True):
        image.to_nhwc(self.name, inputs, self.data_format)  # the rank check
        x = ops.cast(inputs, self.compute_dtype)
        if not training:
            return x
        batched = x.ndim == 4
        n = x.shape[0] if batched else 1
        u = random_draw(self.seed_generator, "uniform", (n,), "float32", x.backend)
        u = ops.reshape(u, (n, 1, 1, 1) if batched else ())
        height_axis = (2 if self.data_format == "channels_first" else 1) - (not batched)
        return self.augment(x, u, height_axis)

    def between(self, u, low, high, dtype):
        """``u`` mapped from [0, 1) to [low, high), as ``dtype``."""
        return ops.cast(ops.add(ops.multiply(u, high - low), low), dtype)


def _factor_pair(who, name, factor, low=-1.0, high=1.0):
    """``(lower, upper)`` from a float ``f`` (``(-|f|, |f|)``) or a pair (sorted)."""
    if isinstance(factor, (tuple, list)) and len(factor) == 2:
        pair = tuple(sorted(float(f) for f in factor))
    elif isinstance(factor, (int, float)) and not isinstance(factor, bool):
        pair = (-abs(float(factor)), abs(float(factor)))
    else:
        raise ValueError(f"{who}: `{name}` must be a number or a pair of numbers. "
                         f"Received: {name}={factor!r}")
    if pair[0] < low or pair[1] > high:
        raise ValueError(f"{who}: `{name}` must lie in [{low}, {high}]. Received: "
                         f"{name}={factor!r}")
    return pair


class RandomFlip(_TracedImageLayer):
    """Flips each image, with probability 1/2, left-right, up-down, or both (one decision per
    image, as Keras 3 draws it).

    Args:
        mode: "horizontal", "vertical" or "horizontal_and_vertical" (default).
        seed, data_format: see the module docstring.

    Example:
        >>> x = np.arange(4.0).reshape(1, 1, 4, 1)
        >>> RandomFlip("horizontal").transform(np, x, {"flips": np.array([True])}).ravel()
        array([3., 2., 1., 0.])
    """

    def __init__(self, mode="horizontal_and_vertical", seed=None, data_format=None, **kwargs):
        super().__init__(seed, data_format, **kwargs)
        image.check_choice(self.name, "mode", mode, ("horizontal", "vertical",
                                                     "horizontal_and_vertical"))
        self.mode = mode

    def augment(self, x, u, height_axis):
        flipped = x
        if self.mode != "vertical":
            flipped = ops.flip(flipped, height_axis + 1)
        if self.mode != "horizontal":
            flipped = ops.flip(flipped, height_axis)
        return ops.where(ops.less_equal(u, 0.5), flipped, x)

    def draw(self, rng, shape):
        return {"flips": rng.random(shape[0]) <= 0.5}

    def transform(self, xp, x, params):
        flips = xp.asarray(params["flips"])[:, None, None, None]
        flipped = x
        if self.mode != "vertical":
            flipped = flipped[:, :, ::-1]
        if self.mode != "horizontal":
            flipped = flipped[:, ::-1]
        return xp.where(flips, flipped, x)

    def get_config(self):
        return {**super().get_config(), "mode": self.mode}


class _AffineLayer(_TracedImageLayer):
    """Shared by rotation, translation and zoom: resampling options, `transform` (chosen
    parameters, on arrays) and the training call in kerasrs ops: ``DRAWS`` uniform numbers per
    image from the layer's seed generator (a graph op), the subclass's ``matrix`` of them, and
    `kerasrs.layers.preprocessing.image.affine_transform_traced`."""

    DRAWS = 1

    def __init__(self, fill_mode, interpolation, seed, fill_value, data_format, **kwargs):
        super().__init__(seed, data_format, **kwargs)
        image.check_choice(self.name, "fill_mode", fill_mode, image.FILL_MODES)
        image.check_choice(self.name, "interpolation", interpolation, image.INTERPOLATIONS)
        self.fill_mode, self.interpolation = fill_mode, interpolation
        self.fill_value = fill_value

    def call(self, inputs, training=True):
        image.to_nhwc(self.name, inputs, self.data_format)  # the rank check
        x = ops.cast(inputs, self.compute_dtype)
        if not training:
            return x
        return image.in_nhwc(x, self.data_format, self._augment)

    def _augment(self, x):
        n, h, w = x.shape[:3]
        u = random_draw(self.seed_generator, "uniform", (self.DRAWS, n), "float64", x.backend)
        return image.affine_transform_traced(x, self.matrix(u, h, w), self.interpolation,
                                             self.fill_mode, self.fill_value)

    def transform(self, xp, x, params):
        """Apply ``params["matrix"]``, one Keras transform ``(8,)`` per image."""
        return image.affine_transform(xp, x, params["matrix"], self.interpolation,
                                      self.fill_mode, self.fill_value)

    def get_config(self):
        return {**super().get_config(), "fill_mode": self.fill_mode,
                "interpolation": self.interpolation, "fill_value": self.fill_value}


def _float64(values, m):
    return np.asarray(values, "float64") if m is np else ops.cast(values, "float64")


def rotation_matrix(angles_degrees, height, width, m=np):
    """Keras's transforms rotating images about their centre by ``angles_degrees`` (``m``:
    NumPy for arrays, `kerasrs.ops` for Tensors; as the other two)."""
    theta = _float64(angles_degrees, m) * math.pi / 180.0
    cx, cy = 0.5 * (width - 1), 0.5 * (height - 1)
    cos, sin = m.cos(theta), m.sin(theta)
    zeros = m.zeros_like(theta)
    return m.stack([cos, -sin, cx - cx * cos + cy * sin, sin, cos, cy - cx * sin - cy * cos,
                     zeros, zeros], axis=1)


class RandomRotation(_AffineLayer):
    """Rotates each image about its centre by a random angle.

    Args:
        factor: float ``f`` (angles in ``[-f, f] * 360`` degrees) or a pair ``(low, high)``;
            a fraction of a full turn, in [-1, 1].
        fill_mode: "reflect" (default), "wrap", "constant" or "nearest".
        interpolation: "bilinear" (default) or "nearest".
        fill_value: the value outside the image for "constant".
        seed, data_format: see the module docstring.
    """

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.factor = factor
        self._range = _factor_pair(self.name, "factor", factor)  # Keras 3 refuses |f| > 1

    def draw(self, rng, shape):
        angles = rng.uniform(self._range[0] * 360.0, self._range[1] * 360.0, shape[0])
        return {"matrix": rotation_matrix(angles, shape[1], shape[2])}

    def matrix(self, u, height, width):
        angles = self.between(u[0], self._range[0] * 360.0, self._range[1] * 360.0, "float64")
        return rotation_matrix(angles, height, width, ops)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class RandomTranslation(_AffineLayer):
    """Shifts each image by random fractions of its height and width.

    Args:
        height_factor, width_factor: float ``f`` (shifts in ``[-f, f]`` of the size) or a pair
            ``(low, high)``, within [-1, 1]; positive moves the content down/right.
        fill_mode, interpolation, fill_value, seed, data_format: as `RandomRotation`.
    """

    def __init__(self, height_factor, width_factor, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, data_format=None,
                 **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._height = _factor_pair(self.name, "height_factor", height_factor)
        self._width = _factor_pair(self.name, "width_factor", width_factor)

    def draw(self, rng, shape):
        n, h, w = shape[:3]
        dy = rng.uniform(*self._height, n) * h
        dx = rng.uniform(*self._width, n) * w
        return {"matrix": translation_matrix(dx, dy)}

    DRAWS = 2

    def matrix(self, u, height, width):
        dy = self.between(u[0], *self._height, "float64") * height
        dx = self.between(u[1], *self._width, "float64") * width
        return translation_matrix(dx, dy, ops)

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}


def translation_matrix(dx, dy, m=np):
    """Keras's transforms shifting images by ``dx`` columns and ``dy`` rows."""
    dx, dy = _float64(dx, m), _float64(dy, m)
    ones, zeros = m.ones_like(dx), m.zeros_like(dx)
    return m.stack([ones, zeros, -dx, zeros, ones, -dy, zeros, zeros], axis=1)


def zoom_matrix(zoom_x, zoom_y, height, width, m=np):
    """Keras's transforms scaling image coordinates about the centre (``zoom > 1`` shows
    more of the image: zooms out)."""
    zx, zy = _float64(zoom_x, m), _float64(zoom_y, m)
    zeros = m.zeros_like(zx)
    return m.stack([zx, zeros, (width - 1) / 2 * (1 - zx), zeros, zy,
                     (height - 1) / 2 * (1 - zy), zeros, zeros], axis=1)


class RandomZoom(_AffineLayer):
    """Zooms each image in or out by a random factor.

    Args:
        height_factor: float ``f`` (zoom ``1 + [-f, f]``) or a pair, in (-1, 1]; positive
            values zoom out, negative zoom in.
        width_factor: as ``height_factor``, or None (default) to keep the aspect ratio.
        fill_mode, interpolation, fill_value, seed, data_format: as `RandomRotation`.
    """

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, data_format=None,
                 **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._height = _factor_pair(self.name, "height_factor", height_factor)
        self._width = None if width_factor is None else \
            _factor_pair(self.name, "width_factor", width_factor)
        if self._height[0] <= -1 or (self._width is not None and self._width[0] <= -1):
            raise ValueError(f"{self.name}: zoom factors must be > -1. Received: height_factor="
                             f"{height_factor!r}, width_factor={width_factor!r}")
        self.DRAWS = 1 if self._width is None else 2

    def draw(self, rng, shape):
        n, h, w = shape[:3]
        zoom_y = 1.0 + rng.uniform(*self._height, n)
        zoom_x = zoom_y if self._width is None else 1.0 + rng.uniform(*self._width, n)
        return {"matrix": zoom_matrix(zoom_x, zoom_y, h, w)}

    def matrix(self, u, height, width):
        zoom_y = 1.0 + self.between(u[0], *self._height, "float64")
        zoom_x = zoom_y if self._width is None else \
            1.0 + self.between(u[1], *self._width, "float64")
        return zoom_matrix(zoom_x, zoom_y, height, width, ops)

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}


def _value_range(who, value_range):
    if not isinstance(value_range, (tuple, list)) or len(value_range) != 2 or \
            value_range[0] >= value_range[1]:
        raise ValueError(f"{who}: `value_range` must be a pair (low, high) with low < high. "
                         f"Received: value_range={value_range!r}")
    return tuple(float(v) for v in value_range)


class RandomContrast(_TracedImageLayer):
    """Scales each image's deviation from its per-channel mean by a random factor:
    ``clip((x - mean) * c + mean, *value_range)``.

    Args:
        factor: float ``f`` (``c`` in ``[1, 1 + f]``, Keras 3's rule) or a pair ``(a, b)``
            (``c`` in ``[1 - a, 1 + b]``), values in [0, 1].
        value_range: ``(low, high)`` of the pixel values. Defaults to (0, 255).
        seed: see the module docstring.
    """

    def __init__(self, factor, value_range=(0, 255), seed=None, **kwargs):
        data_format = kwargs.pop("data_format", None)
        super().__init__(seed, data_format, **kwargs)
        self.factor = factor
        low, high = _factor_pair(self.name, "factor", factor, -1.0, 1.0)
        self._range = (0.0, high) if not isinstance(factor, (tuple, list)) else (low, high)
        if self._range[0] < 0:
            raise ValueError(f"{self.name}: `factor` must lie in [0, 1]. Received: "
                             f"factor={factor!r}")
        self.value_range = _value_range(self.name, value_range)

    def augment(self, x, u, height_axis):
        factor = self.between(u, 1.0 - self._range[0], 1.0 + self._range[1], x.dtype)
        mean = ops.mean(x, axis=(height_axis, height_axis + 1), keepdims=True)
        return ops.clip(ops.add(ops.multiply(ops.subtract(x, mean), factor), mean),
                        *self.value_range)

    def draw(self, rng, shape):
        return {"contrast": rng.uniform(1.0 - self._range[0], 1.0 + self._range[1], shape[0])}

    def transform(self, xp, x, params):
        factor = xp.asarray(params["contrast"], x.dtype)[:, None, None, None]
        mean = x.mean(axis=(1, 2), keepdims=True)
        return xp.clip((x - mean) * factor + mean, *self.value_range).astype(x.dtype)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor,
                "value_range": list(self.value_range)}


class RandomBrightness(_TracedImageLayer):
    """Adds a random offset to each image: ``clip(x + d * (high - low), low, high)`` with
    ``d`` drawn from the factor range and ``(low, high)`` the value range.

    Args:
        factor: float ``f`` (``d`` in ``[-f, f]``) or a pair ``(low, high)``, in [-1, 1].
        value_range: ``(low, high)`` of the pixel values. Defaults to (0, 255).
        seed: see the module docstring.

    Example:
        >>> x = np.full((1, 1, 1, 1), 100.0)
        >>> RandomBrightness((0.1, 0.1))(x).numpy().ravel()
        array([125.5], dtype=float32)
    """

    def __init__(self, factor, value_range=(0, 255), seed=None, **kwargs):
        data_format = kwargs.pop("data_format", None)
        super().__init__(seed, data_format, **kwargs)
        self.factor = factor
        self._range = _factor_pair(self.name, "factor", factor)
        self.value_range = _value_range(self.name, value_range)

    def augment(self, x, u, height_axis):
        span = self.value_range[1] - self.value_range[0]
        delta = self.between(u, self._range[0] * span, self._range[1] * span, x.dtype)
        return ops.clip(ops.add(x, delta), *self.value_range)

    def draw(self, rng, shape):
        span = self.value_range[1] - self.value_range[0]
        return {"delta": rng.uniform(*self._range, shape[0]) * span}

    def transform(self, xp, x, params):
        delta = xp.asarray(params["delta"], x.dtype)[:, None, None, None]
        return xp.clip(x + delta, *self.value_range).astype(x.dtype)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor,
                "value_range": list(self.value_range)}


class RandomCrop(_RandomImageLayer):
    """Crops a random ``(height, width)`` window, one offset per batch; in inference (or when
    the images are not larger than the window) the centred crop of the target aspect ratio,
    resized to ``(height, width)``.

    Args:
        height, width: ints, the output size.
        seed, data_format: see the module docstring.
    """

    def __init__(self, height, width, seed=None, data_format=None, name=None, **kwargs):
        super().__init__(seed, data_format, name=name, **kwargs)
        self.height, self.width = image.check_size(self.name, height, width)
        self.seed_generator = random.SeedGenerator(seed)

    def call(self, inputs, training=True):
        """In kerasrs ops: a training crop (its offset drawn by a graph op, so that a replayed
        step crops each batch anew), else the centred crop resized."""
        x, _ = image.to_nhwc(self.name, inputs, self.data_format)
        h, w = x.shape[1:3]
        x = ops.cast(inputs, self.compute_dtype)
        if not (training and h > self.height and w > self.width):
            return image.in_nhwc(x, self.data_format, lambda x: image.resize_traced(
                x, self.height, self.width, crop_to_aspect_ratio=True))
        u = random_draw(self.seed_generator, "uniform", (2,), "float64", x.backend)
        top, left = (ops.cast(ops.floor(u[i] * float(n)), "int64")
                     for i, n in enumerate((h - self.height + 1, w - self.width + 1)))
        axis = x.ndim - 3 + (self.data_format == "channels_first")  # the height axis
        x = ops.take(x, top + np.arange(self.height), axis=axis)
        return ops.take(x, left + np.arange(self.width), axis=axis + 1)

    def draw(self, rng, shape):
        h, w = shape[1], shape[2]
        if h > self.height and w > self.width:
            return {"top": int(rng.uniform(0, h - self.height + 1)),
                    "left": int(rng.uniform(0, w - self.width + 1))}
        return None

    def transform(self, xp, x, params):
        if params is None:
            return self.inference(xp, x)
        top, left = params["top"], params["left"]
        return x[:, top:top + self.height, left:left + self.width]

    def inference(self, xp, x):
        return image.resize(xp, x, self.height, self.width, crop_to_aspect_ratio=True)

    def compute_output_shape(self, input_shape):
        return image._with_size(input_shape, self.height, self.width, self.data_format)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width}
