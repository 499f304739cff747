"""`RandomShear` with Keras 3's arguments and transform (resampled by
`kerasrs.layers.preprocessing.image.affine_transform`, as the other affine layers)."""

import numpy as np

from kerasrs import ops
from kerasrs.layers.preprocessing.augmentation import _AffineLayer, _float64

__all__ = ["RandomShear"]


def _shear_range(who, name, factor):
    values = list(factor) if isinstance(factor, (tuple, list)) else [factor]
    if len(values) not in (1, 2) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1
            for v in values):
        raise ValueError(f"{who}: `{name}` must be a number or a pair of numbers in [0, 1]. "
                         f"Received: {name}={factor!r}")
    return tuple(sorted(values)) if len(values) == 2 else (-float(values[0]), float(values[0]))


def shear_matrix(shear_x, shear_y, m=np):
    """Keras's transforms shearing image coordinates: ``x' = x + sx y``, ``y' = sy x + y``
    (``m``: NumPy for arrays, `kerasrs.ops` for Tensors)."""
    sx, sy = _float64(shear_x, m), _float64(shear_y, m)
    ones, zeros = m.ones_like(sx), m.zeros_like(sx)
    return m.stack([ones, sx, zeros, sy, ones, zeros, zeros, zeros], axis=1)


class RandomShear(_AffineLayer):
    """Shears each image along x and y by random factors, both negated together with
    probability 1/2 (Keras's draw).

    Args:
        x_factor, y_factor: a number ``f`` (shears in ``[-f, f]``) or a pair, in [0, 1].
            Default 0 (no shear).
        interpolation: "bilinear" (default) or "nearest".
        fill_mode: "reflect" (default), "wrap", "constant" or "nearest".
        fill_value: the value outside the image for "constant".
        data_format, seed: see `kerasrs.layers.preprocessing.augmentation`.
    """

    def __init__(self, x_factor=0.0, y_factor=0.0, interpolation="bilinear",
                 fill_mode="reflect", fill_value=0.0, data_format=None, seed=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.x_factor, self.y_factor = x_factor, y_factor
        self._x = _shear_range(self.name, "x_factor", x_factor)
        self._y = _shear_range(self.name, "y_factor", y_factor)

    def draw(self, rng, shape):
        n = shape[0]
        sign = np.where(rng.random(n) > 0.5, -1.0, 1.0)
        shear_y, shear_x = rng.uniform(*self._y, n), rng.uniform(*self._x, n)
        return {"matrix": shear_matrix(sign * shear_x, sign * shear_y)}

    DRAWS = 3

    def matrix(self, u, height, width):
        sign = ops.where(ops.greater(u[0], 0.5), -1.0, 1.0)
        shear_y = self.between(u[1], *self._y, "float64")
        shear_x = self.between(u[2], *self._x, "float64")
        return shear_matrix(sign * shear_x, sign * shear_y, ops)

    def get_config(self):
        return {**super().get_config(), "x_factor": self.x_factor, "y_factor": self.y_factor}
