"""Image filters with Keras 3's names and transforms: `RandomGaussianBlur` and `Equalization`.

Both follow `augmentation`'s pattern (a deterministic ``transform(xp, images, params)``; images
pass through in inference, as in Keras).
"""

import math

import numpy as np

from kerasrs.layers.preprocessing.augmentation import (_FixedImageLayer, _RandomImageLayer,
                                                       _value_range)
from kerasrs.layers.preprocessing.color import keras_factor, rescale

__all__ = ["RandomGaussianBlur", "Equalization"]


def _gaussian_taps(size, sigma):
    offsets = np.arange(size) - (size - 1) / 2
    taps = np.exp(-0.5 * (offsets / sigma) ** 2)
    return taps / taps.sum()


def _correlate(xp, x, taps, axis):
    """Zero-padded ``same`` correlation of NHWC ``x`` with 1-D ``taps`` along ``axis``."""
    half = len(taps) // 2
    pad = [(0, 0)] * 4
    pad[axis] = (half, half)
    padded = xp.pad(x, pad)
    size = x.shape[axis]
    out = xp.zeros_like(x)
    for k, tap in enumerate(taps):  # loop over the few taps, not over samples or pixels
        out += float(tap) * padded.take(xp.arange(k, k + size), axis=axis)
    return out


class RandomGaussianBlur(_RandomImageLayer):
    """Blurs each image, with a probability drawn from ``factor``, by a Gaussian whose
    standard deviations (horizontal, vertical) are drawn once per batch from ``sigma``
    (zero padding, as Keras's ``ops.image.gaussian_blur``).

    Args:
        factor: probability, a number ``f`` (``[0, f]``) or a pair, in [0, 1]. Defaults to 1.
        kernel_size: odd int (or a pair of equal odd ints), the kernel's side. Defaults to 3.
        sigma: a number ``s`` (standard deviations in ``[0, s]``) or a pair. Defaults to 1.
        value_range: ``(low, high)`` the output is clipped to. Defaults to (0, 255).
        seed, data_format: see `kerasrs.layers.preprocessing.augmentation`.
    """

    def __init__(self, factor=1.0, kernel_size=3, sigma=1.0, value_range=(0, 255),
                 data_format=None, seed=None, **kwargs):
        super().__init__(seed, data_format, **kwargs)
        sizes = tuple(kernel_size) if isinstance(kernel_size, (tuple, list)) else \
            (kernel_size, kernel_size)
        if len(sizes) != 2 or sizes[0] != sizes[1] or int(sizes[0]) % 2 != 1:
            raise ValueError(f"{self.name}: `kernel_size` must be an odd int. Received: "
                             f"kernel_size={kernel_size!r}")
        self.factor, self.kernel_size, self.sigma = factor, kernel_size, sigma
        self._size = int(sizes[0])
        self._range = keras_factor(self.name, factor, 0.0, 1.0)
        self._sigma = keras_factor(self.name, sigma, 0.0, math.inf, "sigma")
        self.value_range = _value_range(self.name, value_range)

    def draw(self, rng, shape):
        probability = rng.uniform(*self._range, shape[0])
        return {"apply": rng.random(shape[0]) < probability,
                "sigma": rng.uniform(*self._sigma, 2) + 1e-6}

    def transform(self, xp, x, params):
        sigma_x, sigma_y = params["sigma"]
        blurred = _correlate(xp, x, _gaussian_taps(self._size, sigma_y), 1)
        blurred = _correlate(xp, blurred, _gaussian_taps(self._size, sigma_x), 2)
        out = xp.where(xp.asarray(params["apply"]).reshape(-1, 1, 1, 1), blurred, x)
        return xp.clip(out, *self.value_range).astype(x.dtype)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "kernel_size": self.kernel_size,
                "sigma": self.sigma, "value_range": list(self.value_range)}


class Equalization(_FixedImageLayer):
    """Histogram equalization of each channel, on the (0, 255) scale with ``bins`` bins. As in
    Keras 3, the histogram of a channel is taken over the whole batch, and a channel with a
    single occupied bin passes through. Applies when training only, as Keras does.

    Args:
        value_range: ``(low, high)`` of the pixel values. Defaults to (0, 255).
        bins: the number of histogram bins. Defaults to 256.
        data_format: see `kerasrs.layers.preprocessing.augmentation`.
    """

    def __init__(self, value_range=(0, 255), bins=256, data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        if int(bins) < 2:
            raise ValueError(f"{self.name}: `bins` must be an int >= 2. Received: bins={bins!r}")
        self.value_range, self.bins = _value_range(self.name, value_range), int(bins)

    def transform(self, xp, x, params=None):
        y = rescale(x, self.value_range, (0, 255))
        channels = x.shape[-1]
        top = self.bins - 1
        # Keras computes the histogram bin and the lookup bin in different orders; float32
        # rounding can make them differ by one, so both are kept
        index = xp.clip((y * top / 255.0).astype("int64"), 0, top)
        lookup = xp.clip(y / 255.0 * top, 0, top).astype("int64")
        # one histogram per channel: offset each channel's bins, count once
        offset = index + xp.arange(channels) * self.bins
        hist = xp.bincount(offset.ravel(), minlength=self.bins * channels)
        hist = hist.reshape(channels, self.bins)
        cdf = xp.cumsum(hist, axis=1)
        first = xp.argmax(cdf > 0, axis=1)
        cdf_min = xp.take_along_axis(cdf, first[:, None], axis=1)
        denominator = cdf[:, -1:] - cdf_min
        denominator = xp.where(denominator == 0, 1, denominator)
        table = xp.clip(xp.round((cdf - cdf_min) * 255.0 / denominator), 0, 255)
        equalized = table[xp.arange(channels), lookup]
        occupied = (hist > 0).sum(axis=1)
        out = xp.where(occupied <= 1, y, equalized.astype(x.dtype))
        return rescale(out.astype(x.dtype), (0, 255), self.value_range)

    def get_config(self):
        return {**super().get_config(), "value_range": list(self.value_range), "bins": self.bins}
