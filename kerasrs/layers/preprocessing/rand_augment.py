"""Policies over the image layers, with Keras 3's arguments and operation lists: `RandAugment`
(Cubuk et al., "RandAugment: Practical automated data augmentation with a reduced search
space", CVPRW 2020) and `AugMix` (Hendrycks et al., "AugMix: A Simple Data Processing Method
to Improve Robustness and Uncertainty", ICLR 2020, Algorithm 1)."""

import numpy as np

from kerasrs.layers.preprocessing import augmentation as aug
from kerasrs.layers.preprocessing import color, filters, shear
from kerasrs.layers.preprocessing.image import check_choice, INTERPOLATIONS

__all__ = ["RandAugment", "AugMix"]


def operations(f, value_range, interpolation):
    """The operations both policies draw from, by Keras's names, with magnitude range ``f``."""
    vr = value_range
    return {
        "random_shear": shear.RandomShear(f, f, interpolation),
        "random_translation": aug.RandomTranslation(f, f, interpolation=interpolation),
        "random_rotation": aug.RandomRotation(f, interpolation=interpolation),
        "random_brightness": aug.RandomBrightness(f, vr),
        "random_color_degeneration": color.RandomColorDegeneration(f, vr),
        "random_contrast": aug.RandomContrast(f, vr),
        "random_sharpness": color.RandomSharpness(f, vr),
        "random_posterization": color.RandomPosterization(max(1, int(8 * f[1])), vr),
        "solarization": color.Solarization(f, f, vr),
        "auto_contrast": color.AutoContrast(vr),
        "equalization": filters.Equalization(vr)}


def _check(who, name, value, minimum):
    if not isinstance(value, int) or value < minimum:
        raise ValueError(f"{who}: `{name}` must be an int >= {minimum}. Received: "
                         f"{name}={value!r}")


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
        _check(self.name, "num_ops", num_ops, 0)
        self.value_range = list(aug._value_range(self.name, value_range))
        self.num_ops, self.interpolation, self.factor = num_ops, interpolation, factor
        f = color.keras_factor(self.name, factor, 0.0, 1.0)
        ops = operations(f, self.value_range, interpolation)
        self._ops = [ops[name] for name in (
            "random_shear", "random_translation", "random_rotation", "random_brightness",
            "random_color_degeneration", "random_contrast", "random_sharpness",
            "random_posterization", "solarization", "auto_contrast", "equalization")]

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


_AUGMIX_BASIC = ("random_shear", "random_translation", "random_rotation", "random_posterization",
                 "solarization", "auto_contrast", "equalization")
_AUGMIX_COLOUR = ("random_brightness", "random_color_degeneration", "random_contrast",
                  "random_sharpness")


class AugMix(aug._RandomImageLayer):
    """Mixes ``num_chains`` augmentation chains and the image: ``m x + (1 - m) sum_i w_i
    chain_i(x)``, with ``w ~ Dirichlet(alpha)`` and ``m ~ Beta(alpha, alpha)`` drawn once per
    batch; each chain applies up to ``chain_depth`` operations (each step picks one at random
    or none), clipped to ``value_range``.

    Args:
        value_range: ``(low, high)`` of the pixel values. Defaults to (0, 255).
        num_chains: defaults to 3. chain_depth: defaults to 3.
        factor: a number ``f`` (``[0, f]``) or a pair, in [0, 1]: the operations' magnitude
            range. Defaults to 0.3.
        alpha: the Dirichlet and Beta concentration (> 0). Defaults to 1.
        all_ops: also use brightness, colour degeneration, contrast and sharpness (which the
            paper leaves out as they overlap its test corruptions). Defaults to True.
        interpolation: "bilinear" (default) or "nearest".
        seed, data_format: see `kerasrs.layers.preprocessing.augmentation`.
    """

    def __init__(self, value_range=(0, 255), num_chains=3, chain_depth=3, factor=0.3,
                 alpha=1.0, all_ops=True, interpolation="bilinear", seed=None,
                 data_format=None, **kwargs):
        super().__init__(seed, data_format, **kwargs)
        check_choice(self.name, "interpolation", interpolation, INTERPOLATIONS)
        _check(self.name, "num_chains", num_chains, 1)
        _check(self.name, "chain_depth", chain_depth, 1)
        if not alpha > 0:
            raise ValueError(f"{self.name}: `alpha` must be > 0. Received: alpha={alpha!r}")
        self.value_range = list(aug._value_range(self.name, value_range))
        self.num_chains, self.chain_depth, self.factor = num_chains, chain_depth, factor
        self.alpha, self.all_ops, self.interpolation = alpha, all_ops, interpolation
        f = color.keras_factor(self.name, factor, 0.0, 1.0)
        ops = operations(f, self.value_range, interpolation)
        names = _AUGMIX_BASIC + (_AUGMIX_COLOUR if all_ops else ())
        self._ops = [ops[name] for name in names]

    def draw(self, rng, shape):
        chains = []
        for _ in range(self.num_chains):
            steps = rng.integers(0, len(self._ops) + 1, self.chain_depth)  # last: no-op
            chains.append([(int(i), self._ops[i].draw(rng, shape))
                           for i in steps if i < len(self._ops)])
        return {"chain_weights": rng.dirichlet([self.alpha] * self.num_chains),
                "mix": rng.beta(self.alpha, self.alpha), "chains": chains}

    def transform(self, xp, x, params):
        mixed = xp.zeros_like(x)
        for weight, chain in zip(params["chain_weights"], params["chains"]):
            y = x
            for i, op_params in chain:
                y = self._ops[i].transform(xp, y, op_params)
            mixed += float(weight) * y
        m = float(params["mix"])
        return xp.clip(m * x + (1 - m) * mixed, *self.value_range).astype(x.dtype)

    def get_config(self):
        return {**super().get_config(), "value_range": self.value_range,
                "num_chains": self.num_chains, "chain_depth": self.chain_depth,
                "factor": self.factor, "alpha": self.alpha, "all_ops": self.all_ops,
                "interpolation": self.interpolation}
