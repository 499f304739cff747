"""`RandAugment` (Cubuk et al., "RandAugment: Practical automated data augmentation with a
reduced search space", CVPRW 2020) with Keras 3's arguments and operation list."""

import numpy as np

from kerasrs.layers.preprocessing import augmentation as aug
from kerasrs.layers.preprocessing import color, filters, shear
from kerasrs.layers.preprocessing.image import check_choice, INTERPOLATIONS

__all__ = ["RandAugment"]


class RandAugment(aug._RandomImageLayer):
    """Applies ``num_ops`` operations drawn (once per batch, with repetition) from Keras's
    list: shear, translation, rotation, brightness, colour degeneration, contrast,
    sharpness, posterization, solarization, auto-contrast, equalization; each with
    magnitude range ``factor`` and its parameters drawn per image.

    Args:
        value_range: ``(low, high)`` of the pixel values. Defaults to (0, 255).
        num_ops: how many operations to apply. Defaults to 2.
        factor: a number ``f`` (``[0, f]``) or a pair, in [0, 1]: the magnitude range.
            Defaults to 0.5.
        interpolation: "bilinear" (default) or "nearest", for the geometric operations.
        seed, data_format: see `kerasrs.layers.preprocessing.augmentation`.
    """

    def __init__(self, value_range=(0, 255), num_ops=2, factor=0.5, interpolation="bilinear",
                 seed=None, data_format=None, **kwargs):
        super().__init__(seed, data_format, **kwargs)
        check_choice(self.name, "interpolation", interpolation, INTERPOLATIONS)
        if not isinstance(num_ops, int) or num_ops < 0:
            raise ValueError(f"{self.name}: `num_ops` must be an int >= 0. Received: "
                             f"num_ops={num_ops!r}")
        self.value_range = list(aug._value_range(self.name, value_range))
        self.num_ops, self.interpolation, self.factor = num_ops, interpolation, factor
        f = color.keras_factor(self.name, factor, 0.0, 1.0)
        vr = self.value_range
        self._ops = [
            shear.RandomShear(f, f, interpolation),
            aug.RandomTranslation(f, f, interpolation=interpolation),
            aug.RandomRotation(f, interpolation=interpolation),
            aug.RandomBrightness(f, vr), color.RandomColorDegeneration(f, vr),
            aug.RandomContrast(f, vr), color.RandomSharpness(f, vr),
            color.RandomPosterization(max(1, int(8 * f[1])), vr),
            color.Solarization(f, f, vr), color.AutoContrast(vr), filters.Equalization(vr)]

    def draw(self, rng, shape):
        chosen = rng.integers(0, len(self._ops), self.num_ops)
        params = {int(i): self._ops[i].draw(rng, shape) for i in np.unique(chosen)}
        return {"ops": chosen, "params": params}

    def transform(self, xp, x, params):
        for i in params["ops"]:  # the same draw when an operation repeats, as in Keras
            x = self._ops[int(i)].transform(xp, x, params["params"][int(i)])
        return x

    def get_config(self):
        return {**super().get_config(), "value_range": self.value_range,
                "num_ops": self.num_ops, "factor": self.factor,
                "interpolation": self.interpolation}
