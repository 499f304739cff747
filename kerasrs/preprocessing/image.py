"""Image files <-> arrays through Pillow (Keras's ``load_img``, ``img_to_array``, ...).

Pillow is imported when first needed; without it these raise ImportError saying what to install.
"""

import numpy as np

from kerasrs.backend import settings


def _pil():
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError("Image loading needs Pillow: `pip install pillow`.") from e
    return Image


def load_img(path, color_mode="rgb", target_size=None, interpolation="nearest",
             keep_aspect_ratio=False):
    """A PIL image from ``path`` in "grayscale", "rgb" or "rgba", resized to
    ``target_size=(height, width)`` if given."""
    image_module = _pil()
    modes = {"grayscale": "L", "rgb": "RGB", "rgba": "RGBA"}
    if color_mode not in modes:
        raise ValueError(f"load_img: color_mode must be one of {sorted(modes)}. Received: "
                         f"{color_mode!r}")
    img = image_module.open(path)
    if img.mode != modes[color_mode]:
        img = img.convert(modes[color_mode])
    if target_size is not None:
        size = (target_size[1], target_size[0])
        if img.size != size:
            resample = getattr(image_module, interpolation.upper(), image_module.NEAREST)
            img = img.resize(size, resample)
    return img


def img_to_array(img, data_format=None, dtype=None):
    """A float array (H, W, C) (or (C, H, W) for "channels_first") from a PIL image."""
    data_format = data_format or settings.image_data_format()
    x = np.asarray(img, dtype=dtype or "float32")
    if x.ndim == 2:
        x = x[:, :, None]
    if x.ndim != 3:
        raise ValueError(f"img_to_array: unsupported image shape {x.shape}")
    return x.transpose(2, 0, 1) if data_format == "channels_first" else x


def array_to_img(x, data_format=None, scale=True, dtype=None):
    """A PIL image from a 3D array; ``scale`` maps the value range to 0..255."""
    image_module = _pil()
    x = np.asarray(x, dtype="float32")
    if x.ndim != 3:
        raise ValueError(f"array_to_img: expected a 3D array (H, W, C). Received shape {x.shape}")
    if (data_format or settings.image_data_format()) == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - x.min()
        top = x.max()
        x = x / top * 255 if top else x
    x = x.astype("uint8")
    modes = {1: "L", 3: "RGB", 4: "RGBA"}
    if x.shape[2] not in modes:
        raise ValueError(f"array_to_img: unsupported channel count {x.shape[2]}")
    return image_module.fromarray(x[:, :, 0] if x.shape[2] == 1 else x, modes[x.shape[2]])


def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs):
    """Write array ``x`` as an image file (format from the extension or ``file_format``)."""
    array_to_img(x, data_format=data_format, scale=scale).save(path, format=file_format, **kwargs)
