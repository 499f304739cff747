"""Batch-mixing augmentation (`MixUp`, `CutMix`), `RandomErasing`, `Pipeline` and
`RandomColorJitter`, with Keras 3's names.

The mixing layers pair each image with another of the batch (a random permutation) and blend
the two: `MixUp` by a weight ``w ~ Beta(alpha, alpha)`` (Zhang et al., "mixup: Beyond
Empirical Risk Minimization", ICLR 2018, eq. 1), `CutMix` by pasting a random box of the
partner (Yun et al., "CutMix", ICCV 2019, eq. 1-2). ``layer(images)`` mixes the images;
``layer({"images": images, "labels": labels})`` (labels one-hot ``(batch, classes)``) mixes
both with the same draw and returns the same keys, as in Keras.
"""

import numpy as np

from kerasrs.layers.base import Layer
from kerasrs.layers.preprocessing.augmentation import (RandomBrightness, RandomContrast,
                                                       _RandomImageLayer, _value_range)
from kerasrs.layers.preprocessing.color import RandomHue, RandomSaturation, keras_factor
from kerasrs.layers.preprocessing import image
from kerasrs.layers.serialization import deserialize, serialize
from kerasrs.ops.core import constant

__all__ = ["MixUp", "CutMix", "RandomErasing", "Pipeline", "RandomColorJitter"]


def _draw_boxes(rng, n, height, width, ratio_x, ratio_y):
    """Boxes ``ratio`` of the image's width and height, at uniform random positions."""
    box = {}
    for axis, size, ratio in (("x", width, ratio_x), ("y", height, ratio_y)):
        length = ratio * size
        box[axis + "0"] = rng.random(n) * (size - length)
        box[axis + "1"] = box[axis + "0"] + length
    return box


def _box_mask(xp, x, params):
    """``(n, h, w, 1)`` True inside each image's box ``[x0, x1) x [y0, y1)`` (pixel indices)."""
    rows = xp.arange(x.shape[1], dtype=x.dtype).reshape(1, -1, 1, 1)
    cols = xp.arange(x.shape[2], dtype=x.dtype).reshape(1, 1, -1, 1)

    def edge(key):
        return xp.asarray(params[key], x.dtype).reshape(-1, 1, 1, 1)

    return ((cols >= edge("x0")) & (cols < edge("x1")) &
            (rows >= edge("y0")) & (rows < edge("y1")))


class _MixingLayer(_RandomImageLayer):

    def call(self, inputs, training=True):
        if not isinstance(inputs, dict):
            return super().call(inputs, training)
        if not training:
            return inputs
        images = inputs["images"]
        images._report_host_read(f"{type(self).__name__}'s mixing of the raw images")
        x, undo = image.to_nhwc(self.name, images, self.data_format)
        xp, backend = images.backend.xp, images.backend
        x = x.astype(self.compute_dtype)
        params = self.draw(self._generator(), x.shape)
        out = {**inputs, "images": constant(undo(self.transform(xp, x, params)), backend)}
        if "labels" in inputs:
            labels = inputs["labels"].data.astype(self.compute_dtype)
            out["labels"] = constant(self.mix_labels(xp, labels, params), backend)
        return out

    def mix_labels(self, xp, labels, params):
        """Labels ``(batch, classes)`` mixed with the images' weights and partners."""
        w = xp.asarray(params["mix_weight"], labels.dtype).reshape(-1, 1)
        return w * labels + (1 - w) * labels[xp.asarray(params["permutation_order"])]


class MixUp(_MixingLayer):
    """Blends each image with a partner of the batch: ``w x + (1 - w) x[perm]``.

    Args:
        alpha: the Beta distribution's concentration (> 0). Defaults to 0.2.
        data_format, seed: see `kerasrs.layers.preprocessing.augmentation`.
    """

    def __init__(self, alpha=0.2, data_format=None, seed=None, **kwargs):
        super().__init__(seed, data_format, **kwargs)
        if not alpha > 0:
            raise ValueError(f"{self.name}: `alpha` must be > 0. Received: alpha={alpha!r}")
        self.alpha = alpha

    def draw(self, rng, shape):
        return {"permutation_order": rng.permutation(shape[0]),
                "mix_weight": rng.beta(self.alpha, self.alpha, shape[0])}

    def transform(self, xp, x, params):
        w = xp.asarray(params["mix_weight"], x.dtype).reshape(-1, 1, 1, 1)
        return (w * x + (1 - w) * x[xp.asarray(params["permutation_order"])]).astype(x.dtype)

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}


class CutMix(_MixingLayer):
    """Pastes into each image a box of its partner covering ``1 - w`` of the area (``w ~
    Beta(a, a)``, ``a`` drawn from ``factor`` once per batch); ``mix_weight`` becomes the area
    left of the image itself.

    Args:
        factor: a number ``f`` (``a`` in ``[0, f]``) or a pair, in [0, 1]. Defaults to 1.0.
        seed, data_format: see `kerasrs.layers.preprocessing.augmentation`.
    """

    def __init__(self, factor=1.0, seed=None, data_format=None, **kwargs):
        super().__init__(seed, data_format, **kwargs)
        self.factor = factor
        self._range = keras_factor(self.name, factor, 0.0, 1.0)

    def draw(self, rng, shape):
        n, height, width = shape[:3]
        alpha = rng.uniform(*self._range) + 1e-6
        ratio = np.sqrt(1.0 - rng.beta(alpha, alpha, n))
        box = _draw_boxes(rng, n, height, width, ratio, ratio)
        area = (box["x1"] - box["x0"]) * (box["y1"] - box["y0"])
        return {**box, "permutation_order": rng.permutation(n),
                "mix_weight": 1.0 - area / (width * height)}

    def transform(self, xp, x, params):
        return xp.where(_box_mask(xp, x, params), x[xp.asarray(params["permutation_order"])], x)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class RandomErasing(_RandomImageLayer):
    """Erases a random box of each image, with a probability drawn from ``factor``; the box
    spans ``sqrt(s)`` of the width and ``sqrt(s')`` of the height, ``s, s'`` drawn from
    ``scale`` (Zhong et al., "Random Erasing Data Augmentation", AAAI 2020).

    Args:
        factor: probability, a number ``f`` (``[0, f]``) or a pair, in [0, 1]. Defaults to 1.
        scale: a number or pair in [0, 1], the box's area fractions. Defaults to (0.02, 0.33).
        fill_value: a number, three numbers (per channel) or None (default: Gaussian noise
            times ``high``), clipped to ``value_range``.
        value_range: ``(low, high)`` of the pixel values. Defaults to (0, 255).
        seed, data_format: see `kerasrs.layers.preprocessing.augmentation`.
    """

    def __init__(self, factor=1.0, scale=(0.02, 0.33), fill_value=None, value_range=(0, 255),
                 seed=None, data_format=None, **kwargs):
        super().__init__(seed, data_format, **kwargs)
        self.factor, self.scale = factor, scale
        self._range = keras_factor(self.name, factor, 0.0, 1.0)
        self._scale = keras_factor(self.name, scale, 0.0, 1.0, "scale")
        if not (fill_value is None or isinstance(fill_value, (int, float)) or
                (isinstance(fill_value, (tuple, list)) and len(fill_value) == 3)):
            raise ValueError(f"{self.name}: `fill_value` must be a number, three numbers or "
                             f"None. Received: fill_value={fill_value!r}")
        self.fill_value = fill_value
        self.value_range = _value_range(self.name, value_range)

    def draw(self, rng, shape):
        n, height, width = shape[:3]
        ratios = np.sqrt(rng.uniform(*self._scale, (n, 2)))
        box = _draw_boxes(rng, n, height, width, ratios[:, 0], ratios[:, 1])
        probability = rng.uniform(*self._range, n)
        fill = rng.standard_normal(shape) * self.value_range[1] if self.fill_value is None \
            else np.broadcast_to(np.asarray(self.fill_value, "float64"), shape)
        return {**box, "apply": rng.random(n) < probability,
                "fill": np.clip(fill, *self.value_range)}

    def transform(self, xp, x, params):
        erase = _box_mask(xp, x, params) & xp.asarray(params["apply"]).reshape(-1, 1, 1, 1)
        return xp.where(erase, xp.asarray(params["fill"], x.dtype), x)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "scale": self.scale,
                "fill_value": self.fill_value, "value_range": list(self.value_range)}


class Pipeline(Layer):
    """Applies ``layers`` one after the other, passing ``training`` on. Unlike `Sequential`
    it is a layer: no model of its own, usable inside any model or on arrays.

    Args:
        layers: list of layers.
        name: the layer name.
    """

    def __init__(self, layers, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if not isinstance(layers, (list, tuple)) or \
                not all(isinstance(layer, Layer) for layer in layers):
            raise ValueError(f"{self.name}: `layers` must be a list of layers. Received: "
                             f"layers={layers!r}")
        self.layers = list(layers)

    def call(self, inputs, training=True):
        for layer in self.layers:
            inputs = layer(inputs, training=training)
        return inputs

    def compute_output_shape(self, input_shape):
        for layer in self.layers:
            input_shape = layer.compute_output_shape(input_shape)
        return input_shape

    def get_config(self):
        return {"name": self.name, "layers": [serialize(layer) for layer in self.layers]}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["layers"] = [deserialize(layer) for layer in config["layers"]]
        return cls(**config)


class RandomColorJitter(Layer):
    """Random brightness, contrast, saturation and hue, in that order (each only when its
    factor is given), as `RandomBrightness`, `RandomContrast`, `RandomSaturation` and
    `RandomHue` with the same ``value_range`` and ``seed``; images pass through in inference.

    Args:
        value_range: ``(low, high)`` of the pixel values. Defaults to (0, 255).
        brightness_factor, contrast_factor, saturation_factor, hue_factor: the ``factor``
            of each layer, or None (default) to skip it.
        seed, data_format: see `kerasrs.layers.preprocessing.augmentation`.
    """

    def __init__(self, value_range=(0, 255), brightness_factor=None, contrast_factor=None,
                 saturation_factor=None, hue_factor=None, seed=None, data_format=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.value_range, self.seed, self.data_format = list(value_range), seed, data_format
        self.brightness_factor, self.contrast_factor = brightness_factor, contrast_factor
        self.saturation_factor, self.hue_factor = saturation_factor, hue_factor
        steps = [(RandomBrightness, brightness_factor), (RandomContrast, contrast_factor),
                 (RandomSaturation, saturation_factor), (RandomHue, hue_factor)]
        self._steps = [make(factor, value_range=value_range, seed=seed,
                            data_format=data_format)
                       for make, factor in steps if factor is not None]

    def call(self, inputs, training=True):
        for step in self._steps:
            inputs = step(inputs, training=training)
        return inputs

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "value_range": self.value_range,
                "brightness_factor": self.brightness_factor,
                "contrast_factor": self.contrast_factor,
                "saturation_factor": self.saturation_factor, "hue_factor": self.hue_factor,
                "seed": self.seed, "data_format": self.data_format}
