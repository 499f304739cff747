"""`ContrastLimitedAdaptiveHistogramEqualization` (CLAHE: Zuiderveld, "Contrast Limited
Adaptive Histogram Equalization", Graphics Gems IV, 1994) with Keras 3's arguments and
numbers: per tile and channel a clipped histogram (the excess spread evenly over the 256
bins) gives an equalizing map; each pixel blends the maps of its four nearest tile centres
bilinearly. Images are padded symmetrically to whole tiles. Applies in training and
inference alike, as in Keras."""

import numpy as np

from kerasrs.layers.preprocessing.color import AutoContrast, rescale

__all__ = ["ContrastLimitedAdaptiveHistogramEqualization"]


def _axis_weights(xp, size, tile, grid):
    """Lower/upper tile-map indices (into maps padded by one tile each side) and weights."""
    pos = (xp.arange(size * 1.0, dtype="float32") - tile / 2.0) / tile + 1.0
    low = xp.floor(pos)
    weight = pos - low
    return (xp.clip(low, 0, grid + 1).astype(np.int64),
            xp.clip(low + 1, 0, grid + 1).astype(np.int64), weight)


class ContrastLimitedAdaptiveHistogramEqualization(AutoContrast):
    """Contrast-limited adaptive histogram equalization of each channel, on the (0, 255)
    scale with 256 bins.

    Args:
        value_range: ``(low, high)`` of the pixel values. Defaults to (0, 255).
        clip_limit: the histogram cap as a multiple of the mean bin count, truncated to a
            whole count as Keras does (<= 0: no cap, plain adaptive equalization).
            Defaults to 4.
        tile_grid_size: ``(rows, cols)`` of tiles. Defaults to (8, 8).
        data_format: "channels_last" (default) or "channels_first".
    """

    def __init__(self, value_range=(0, 255), clip_limit=4.0, tile_grid_size=(8, 8),
                 data_format=None, **kwargs):
        super().__init__(value_range, data_format=data_format, **kwargs)
        if not (isinstance(tile_grid_size, (tuple, list)) and len(tile_grid_size) == 2 and
                all(isinstance(g, int) and g >= 1 for g in tile_grid_size)):
            raise ValueError(f"{self.name}: `tile_grid_size` must be two ints >= 1. Received: "
                             f"tile_grid_size={tile_grid_size!r}")
        self.clip_limit, self.tile_grid_size = clip_limit, tuple(tile_grid_size)

    def transform(self, xp, x, params=None):
        y = rescale(x.astype("float32"), self.value_range, (0, 255))
        n, h, w, c = y.shape
        grid_h, grid_w = self.tile_grid_size
        tile_h, tile_w = -(-h // grid_h), -(-w // grid_w)
        y = xp.pad(y, ((0, 0), (0, tile_h * grid_h - h), (0, tile_w * grid_w - w), (0, 0)),
                   mode="symmetric")
        pixels = xp.clip(y.astype(np.int32), 0, 255)
        # histograms (n, grid_h, grid_w, c, 256): one bincount over offset bin ids
        tiles = pixels.reshape(n, grid_h, tile_h, grid_w, tile_w, c).transpose(0, 1, 3, 5, 2, 4)
        cells = n * grid_h * grid_w * c
        ids = tiles.reshape(cells, -1) + (xp.arange(cells) * 256)[:, None]
        hists = xp.bincount(ids.ravel(), minlength=cells * 256).reshape(
            n, grid_h, grid_w, c, 256).astype("float32")
        if self.clip_limit > 0:
            # Keras counts in integers, so the cap is truncated to a whole count
            clipped = xp.clip(hists, 0, int(self.clip_limit * tile_h * tile_w / 256.0))
            hists = clipped + (hists - clipped).sum(axis=-1, keepdims=True) / 256.0
        cdf = xp.cumsum(hists, axis=-1)
        cdf_min = cdf.min(axis=-1, keepdims=True)
        denominator = tile_h * tile_w - cdf_min
        maps = xp.clip((cdf - cdf_min) * 255.0 / xp.where(denominator == 0, 1, denominator),
                       0, 255)
        maps = xp.pad(maps, ((0, 0), (1, 1), (1, 1), (0, 0), (0, 0)), mode="edge")
        y0, y1, wy = _axis_weights(xp, tile_h * grid_h, tile_h, grid_h)
        x0, x1, wx = _axis_weights(xp, tile_w * grid_w, tile_w, grid_w)
        b = xp.arange(n)[:, None, None, None]
        ch = xp.arange(c)[None, None, None, :]

        def lookup(rows, cols):
            return maps[b, rows[None, :, None, None], cols[None, None, :, None], ch, pixels]

        wy, wx = wy[None, :, None, None], wx[None, None, :, None]
        top = lookup(y0, x0) * (1 - wx) + lookup(y0, x1) * wx
        bottom = lookup(y1, x0) * (1 - wx) + lookup(y1, x1) * wx
        out = (top * (1 - wy) + bottom * wy)[:, :h, :w]
        return rescale(out.astype("float32"), (0, 255), self.value_range).astype(x.dtype)

    def get_config(self):
        return {**super().get_config(), "clip_limit": self.clip_limit,
                "tile_grid_size": list(self.tile_grid_size), "data_format": self.data_format}
