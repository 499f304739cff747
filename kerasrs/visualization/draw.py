"""Drawing boxes and segmentation masks into images, with NumPy (Keras's
``keras.visualization.draw_bounding_boxes`` / ``draw_segmentation_masks``; Keras draws with
OpenCV, kerasrs needs none: rectangles are NumPy slices and labels are drawn with Pillow when it
is installed)."""

import numpy as np

from kerasrs import backend, ops
from kerasrs.layers.preprocessing.bounding_box_utils import convert_format


def _batched(images, who):
    images = ops.convert_to_numpy(images)
    if images.ndim != 4:
        raise ValueError(f"{who}: `images` must be a batch, a 4-D array. Received: "
                         f"images.shape={images.shape}")
    return images


def to_uint8(images):
    """Floats in ``[0, 1]`` (when no value exceeds 1) or ``[0, 255]`` as uint8, as Keras
    converts before drawing."""
    if images.dtype.kind == "f" and images.size:
        images = np.clip(images, 0, 1) * 255 if images.max() <= 1.0 else np.clip(images, 0, 255)
    return images.astype("uint8")


def _rectangle(image, x1, y1, x2, y2, color, thickness):
    """Outline of the box with corners (x1, y1) and (x2, y2), ``thickness`` pixels wide,
    centred on the box's edges and clipped to the image."""
    h, w = image.shape[:2]
    inner, outer = thickness // 2, (thickness - 1) // 2 + 1
    color = np.asarray(color, image.dtype)[:image.shape[2]]

    def fill(top, bottom, left, right):
        top, bottom = max(top, 0), min(bottom, h)
        left, right = max(left, 0), min(right, w)
        if top < bottom and left < right:
            image[top:bottom, left:right] = color

    fill(y1 - inner, y1 + outer, x1 - inner, x2 + outer)  # top edge
    fill(y2 - inner, y2 + outer, x1 - inner, x2 + outer)  # bottom edge
    fill(y1 - inner, y2 + outer, x1 - inner, x1 + outer)  # left edge
    fill(y1 - inner, y2 + outer, x2 - inner, x2 + outer)  # right edge


def _text(image, text, x, y, color, font_scale):
    """``text`` with its top-left corner at (x, y), in Pillow's default font (skipped without
    Pillow)."""
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError:
        return image
    canvas = Image.fromarray(image)
    try:
        font = ImageFont.load_default(size=max(8, int(12 * font_scale)))
    except TypeError:  # Pillow < 10.1: one size
        font = ImageFont.load_default()
    ImageDraw.Draw(canvas).text((x, y), text, fill=tuple(int(c) for c in color), font=font)
    return np.asarray(canvas).copy()


def _text_origin(x, y, font_scale, thickness):
    """Above the box when there is room, else just inside its top-left corner."""
    font_height = int(font_scale * 12)
    if y - 8 - 2 * font_height > 0:
        return x, y - 8 - font_height
    return x + 3, y + thickness + 3


def draw_bounding_boxes(images, bounding_boxes, bounding_box_format, class_mapping=None,
                        color=(128, 128, 128), line_thickness=2, text_thickness=1,
                        font_scale=1.0, data_format=None):
    """Draw each image's boxes (and, for labels in ``class_mapping``, their class names and
    confidences) into a copy of the images.

    Args:
        images: ``(batch, height, width, channels)`` (channels first with
            ``data_format="channels_first"``), values in ``[0, 255]`` or floats in ``[0, 1]``.
        bounding_boxes: dict with ``"boxes"`` ``(batch, boxes, 4)``, ``"labels"``
            ``(batch, boxes)`` (label -1: padding, not drawn) and optionally ``"confidences"``.
        bounding_box_format: the boxes' format (`kerasrs.utils.bounding_boxes`).
        class_mapping: optional dict label -> name.
        color: RGB outline and text colour.
        line_thickness: outline width in pixels.
        text_thickness, font_scale: label text weight (accepted for Keras compatibility) and
            size relative to a 12-pixel font.
        data_format: image layout; default `kerasrs.backend.image_data_format()`.

    Returns:
        uint8 NumPy array ``(batch, height, width, channels)`` (channels last).

    Raises:
        ValueError: for images that are not 4-D or a dict without "boxes" and "labels".
        TypeError: when ``bounding_boxes`` is not a dict.
    """
    images = _batched(images, "draw_bounding_boxes")
    if (data_format or backend.image_data_format()) == "channels_first":
        images = images.transpose(0, 2, 3, 1)
    if not isinstance(bounding_boxes, dict):
        raise TypeError("draw_bounding_boxes: `bounding_boxes` must be a dict with 'boxes' and "
                        f"'labels'. Received: {type(bounding_boxes).__name__}")
    if "boxes" not in bounding_boxes or "labels" not in bounding_boxes:
        raise ValueError("draw_bounding_boxes: `bounding_boxes` needs 'boxes' and 'labels'. "
                         f"Received: keys {sorted(bounding_boxes)}")
    height, width = images.shape[1:3]
    boxes = ops.convert_to_numpy(convert_format(bounding_boxes["boxes"], bounding_box_format,
                                                "xyxy", height, width)).astype("int32")
    labels = np.asarray(ops.convert_to_numpy(bounding_boxes["labels"])).astype("int32")
    confidences = bounding_boxes.get("confidences")
    confidences = None if confidences is None else ops.convert_to_numpy(confidences)
    class_mapping = class_mapping or {}
    out = to_uint8(images).copy()
    for i, image in enumerate(out):
        for j, (x1, y1, x2, y2) in enumerate(boxes[i]):
            if labels[i, j] == -1:
                continue
            _rectangle(image, x1, y1, x2, y2, color, line_thickness)
            name = class_mapping.get(int(labels[i, j]))
            if name is not None:
                if confidences is not None:
                    name = f"{name} | {confidences[i][j]:.2f}"
                origin = _text_origin(x1, y1, font_scale, text_thickness or line_thickness)
                out[i] = _text(image, name, *origin, color, font_scale)
    return out


def color_palette(num_classes):
    """Keras's distinct RGB colours per class: ``i * (2**25 - 1, 2**15 - 1, 2**21 - 1) % 255``."""
    return [(i * np.array([2 ** 25 - 1, 2 ** 15 - 1, 2 ** 21 - 1]) % 255).tolist()
            for i in range(num_classes)]


def draw_segmentation_masks(images, segmentation_masks, num_classes=None, color_mapping=None,
                            alpha=0.8, blend=True, ignore_index=-1, data_format=None):
    """Colour each pixel of the images by its class in ``segmentation_masks``.

    Args:
        images: ``(batch, height, width, channels)`` in ``[0, 255]`` (or channels first).
        segmentation_masks: integer ``(batch, height, width, 1)`` class ids (or channels first).
        num_classes: number of classes; default the largest id + 1.
        color_mapping: optional dict class -> RGB colour; default `color_palette`.
        alpha: weight of the colour when blending.
        blend: mix colours and image (``alpha``) and return uint8; else return the colours
            painted over the image, float32.
        ignore_index: class id left unpainted.
        data_format: image layout; default `kerasrs.backend.image_data_format()`.

    Returns:
        NumPy array ``(batch, height, width, channels)``: uint8 with ``blend``, else float32.

    Raises:
        ValueError: for images that are not 4-D. TypeError: for non-integer masks.
    """
    images = _batched(images, "draw_segmentation_masks").astype("float32")
    masks = np.asarray(ops.convert_to_numpy(segmentation_masks))
    if (data_format or backend.image_data_format()) == "channels_first":
        images, masks = images.transpose(0, 2, 3, 1), masks.transpose(0, 2, 3, 1)
    if masks.dtype.kind not in "iu":
        raise TypeError("draw_segmentation_masks: `segmentation_masks` must be integers. "
                        f"Received: dtype {masks.dtype}")
    masks = masks[..., 0]
    if num_classes is None:
        num_classes = int(masks.max()) + 1
    colors = color_palette(num_classes) if color_mapping is None else \
        [color_mapping[i] for i in range(num_classes)]
    palette = np.zeros((num_classes + 1, images.shape[-1]), "float32")
    palette[:num_classes] = np.asarray(colors, "float32")[:, :images.shape[-1]]
    known = (masks >= 0) & (masks < num_classes)
    painted = np.where(known[..., None], palette[np.where(known, masks, num_classes)], images)
    if not blend:
        return painted.astype("float32")
    mixed = images * (1 - alpha) + painted * alpha
    return np.where((masks != ignore_index)[..., None], mixed, images).astype("uint8")
