"""Warping layers with Keras 3's arguments and transforms. `RandomPerspective`: each image's
corners move by random fractions of its size, and the output samples the input through the
homography that maps the moved corners back to the original ones (constant fill outside).
`RandomElasticTransform`: the output samples the input at pixel positions displaced by a
smoothed random field (Simard et al., "Best practices for convolutional neural networks
applied to visual document analysis", ICDAR 2003)."""

import numpy as np

from kerasrs.layers.preprocessing.augmentation import _RandomImageLayer, _value_range
from kerasrs.layers.preprocessing.color import keras_factor
from kerasrs.layers.preprocessing.filters import _correlate, _gaussian_taps
from kerasrs.layers.preprocessing.image import FILL_MODES, INTERPOLATIONS, check_choice, sample

__all__ = ["RandomPerspective", "RandomElasticTransform"]


def homography(start_points, end_points):
    """``(n, 8)`` homographies ``[a0..a7]`` taking each ``end`` corner to its ``start`` corner
    (the four-point direct linear transform, Hartley & Zisserman, "Multiple View Geometry",
    sec. 4.1): ``x = (a0 u + a1 v + a2) / (a6 u + a7 v + 1)``, ``y`` likewise with a3..a5."""
    start, end = np.asarray(start_points, "float64"), np.asarray(end_points, "float64")
    u, v = end[..., 0], end[..., 1]
    x, y = start[..., 0], start[..., 1]
    zeros, ones = np.zeros_like(u), np.ones_like(u)
    rows_x = np.stack([u, v, ones, zeros, zeros, zeros, -x * u, -x * v], axis=-1)
    rows_y = np.stack([zeros, zeros, zeros, u, v, ones, -y * u, -y * v], axis=-1)
    matrix = np.stack([rows_x, rows_y], axis=2).reshape(len(start), 8, 8)
    target = np.stack([x, y], axis=2).reshape(len(start), 8)
    return np.linalg.solve(matrix, target[..., None])[..., 0]


class RandomPerspective(_RandomImageLayer):
    """Applies, with a probability drawn from ``factor``, a random perspective warp: each
    corner ``p`` moves to ``p (1 + d)`` with ``d`` uniform in ``[-scale / 2, scale / 2]``
    per coordinate.

    Args:
        factor: probability, a number ``f`` (``[0, f]``) or a pair, in [0, 1]. Defaults to 1.
        scale: in [0, 1], the corners' largest relative move times 2. Defaults to 1.
        interpolation: "bilinear" (default) or "nearest".
        fill_value: the value outside the warped image. Defaults to 0.
        seed, data_format: see `kerasrs.layers.preprocessing.augmentation`.
    """

    def __init__(self, factor=1.0, scale=1.0, interpolation="bilinear", fill_value=0.0,
                 seed=None, data_format=None, **kwargs):
        super().__init__(seed, data_format, **kwargs)
        check_choice(self.name, "interpolation", interpolation, INTERPOLATIONS)
        if not 0 <= scale <= 1:
            raise ValueError(f"{self.name}: `scale` must lie in [0, 1]. Received: "
                             f"scale={scale!r}")
        self.factor, self.scale = factor, scale
        self.interpolation, self.fill_value = interpolation, fill_value
        self._range = keras_factor(self.name, factor, 0.0, 1.0)

    def draw(self, rng, shape):
        n, h, w = shape[:3]
        probability = rng.uniform(*self._range, n)
        apply = rng.random(n) < probability
        moves = rng.uniform(-0.5 * self.scale, 0.5 * self.scale, (n, 4, 2))
        start = np.broadcast_to(np.array([[0, 0], [w - 1, 0], [0, h - 1], [w - 1, h - 1]],
                                         "float64"), (n, 4, 2))
        return {"apply": apply, "start_points": start, "end_points": start + start * moves}

    def transform(self, xp, x, params):
        a = xp.asarray(homography(params["start_points"], params["end_points"]), "float32")
        a = a[:, :, None, None]
        grid_y, grid_x = xp.meshgrid(xp.arange(x.shape[1], dtype="float32"),
                                     xp.arange(x.shape[2], dtype="float32"), indexing="ij")
        denominator = a[:, 6] * grid_x + a[:, 7] * grid_y + 1.0
        src_x = (a[:, 0] * grid_x + a[:, 1] * grid_y + a[:, 2]) / denominator
        src_y = (a[:, 3] * grid_x + a[:, 4] * grid_y + a[:, 5]) / denominator
        warped = sample(xp, x, src_x, src_y, self.interpolation, self.fill_value)
        return xp.where(xp.asarray(params["apply"]).reshape(-1, 1, 1, 1), warped, x)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "scale": self.scale,
                "interpolation": self.interpolation, "fill_value": self.fill_value}


class RandomElasticTransform(_RandomImageLayer):
    """Displaces each pixel by ``alpha * blur(sigma * N(0, 1))`` per axis, with probability
    drawn from ``factor``; ``alpha = 0.1 s max(h, w)`` and ``sigma = 0.05 s min(h, w)`` for
    ``s`` drawn once per batch from ``scale`` (a Gaussian of side ``int(6 sigma) | 1``, zero
    padded). The output is clipped to ``value_range``.

    Args:
        factor: probability, a number ``f`` (``[0, f]``) or a pair, in [0, 1]. Defaults to 1.
        scale: a number ``s`` (``[0, s]``) or a pair, in [0, 1]. Defaults to 1.
        interpolation: "bilinear" (default) or "nearest".
        fill_mode: "reflect" (default), "wrap", "constant" or "nearest".
        fill_value: the value outside the image for "constant".
        value_range: ``(low, high)`` of the pixel values. Defaults to (0, 255).
        seed, data_format: see `kerasrs.layers.preprocessing.augmentation`.
    """

    def __init__(self, factor=1.0, scale=1.0, interpolation="bilinear", fill_mode="reflect",
                 fill_value=0.0, value_range=(0, 255), seed=None, data_format=None,
                 **kwargs):
        super().__init__(seed, data_format, **kwargs)
        check_choice(self.name, "interpolation", interpolation, INTERPOLATIONS)
        check_choice(self.name, "fill_mode", fill_mode, FILL_MODES)
        self.factor, self.scale = factor, scale
        self.interpolation, self.fill_mode, self.fill_value = interpolation, fill_mode, \
            fill_value
        self.value_range = _value_range(self.name, value_range)
        self._range = keras_factor(self.name, factor, 0.0, 1.0)
        self._scale = keras_factor(self.name, scale, 0.0, 1.0, "scale")

    def draw(self, rng, shape):
        if self._range[1] == 0 or self._scale[1] == 0:
            return None
        n, h, w = shape[:3]
        probability = rng.uniform(*self._range, n)
        return {"apply": rng.random(n) < probability, "scale": rng.uniform(*self._scale),
                "noise": rng.standard_normal((2, n, h, w, 1))}

    def transform(self, xp, x, params):
        if params is None:
            return x
        h, w = x.shape[1:3]
        alpha, sigma = max(h, w) * 0.1 * params["scale"], min(h, w) * 0.05 * params["scale"]
        taps = _gaussian_taps(int(6 * sigma) | 1, sigma)
        dx, dy = (_correlate(xp, _correlate(xp, xp.asarray(field, x.dtype) * sigma, taps, 1),
                             taps, 2)[..., 0] for field in params["noise"])
        grid_y, grid_x = xp.meshgrid(xp.arange(h, dtype=x.dtype), xp.arange(w, dtype=x.dtype),
                                     indexing="ij")
        warped = sample(xp, x, grid_x + alpha * dx, grid_y + alpha * dy, self.interpolation,
                        self.fill_value, self.fill_mode)
        out = xp.where(xp.asarray(params["apply"]).reshape(-1, 1, 1, 1), warped, x)
        return xp.clip(out, *self.value_range).astype(x.dtype)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "scale": self.scale,
                "interpolation": self.interpolation, "fill_mode": self.fill_mode,
                "fill_value": self.fill_value, "value_range": list(self.value_range)}
