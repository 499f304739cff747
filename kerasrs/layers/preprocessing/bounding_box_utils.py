"""Bounding-box utilities (Keras's ``keras.utils.bounding_boxes``): format conversion, clipping,
cropping, padding and affine transforms of boxes, IoU and CIoU, and anchor-box deltas.

Boxes are tensors whose last axis holds 4 numbers, in one of these formats (``rel_``: as
fractions of the image's width and height, which the conversion then needs):

=================  ================================================
``xyxy``           left, top, right, bottom (pixels)
``yxyx``           top, left, bottom, right
``xywh``           left, top, width, height
``center_xywh``    centre x, centre y, width, height
``center_yxhw``    centre y, centre x, height, width
``rel_xyxy``, ``rel_yxyx``, ``rel_xywh``, ``rel_center_xywh``: relative versions
=================  ================================================

Every function also takes Keras's dict form ``{"boxes": ..., "labels": ...}`` where Keras does
and returns kerasrs Tensors (differentiable where the arithmetic is, e.g. `compute_ciou`).
"""

import math

from kerasrs import ops
from kerasrs.backend import epsilon

FORMATS = ("xyxy", "yxyx", "xywh", "center_xywh", "center_yxhw", "rel_xyxy", "rel_yxyx",
           "rel_xywh", "rel_center_xywh")
# where each format keeps x1/y1 (or the centre) and x2/y2 (or the size): indices into the last axis
_ORDER = {"xyxy": (0, 1, 2, 3), "yxyx": (1, 0, 3, 2), "xywh": (0, 1, 2, 3),
          "center_xywh": (0, 1, 2, 3), "center_yxhw": (1, 0, 3, 2)}


def _columns(boxes):
    return [boxes[..., i:i + 1] for i in range(4)]


def _to_corners(boxes, source, height, width):
    """x1, y1, x2, y2 (each ``(..., 1)``) in pixels."""
    relative = source.startswith("rel_")
    kind = source[4:] if relative else source
    c = _columns(boxes)
    a, b, p, q = (c[i] for i in _ORDER[kind])
    if kind == "xywh":
        p, q = a + p, b + q
    elif kind.startswith("center"):
        a, b, p, q = a - p / 2.0, b - q / 2.0, a + p / 2.0, b + q / 2.0
    if relative:
        a, b, p, q = a * width, b * height, p * width, q * height
    return a, b, p, q


def _from_corners(x1, y1, x2, y2, target, height, width):
    relative = target.startswith("rel_")
    kind = target[4:] if relative else target
    if relative:
        x1, y1, x2, y2 = x1 / width, y1 / height, x2 / width, y2 / height
    if kind == "xywh":
        x2, y2 = x2 - x1, y2 - y1
    elif kind.startswith("center"):
        x1, y1, x2, y2 = x1 + (x2 - x1) / 2.0, y1 + (y2 - y1) / 2.0, x2 - x1, y2 - y1
    values = (x1, y1, x2, y2)
    return ops.concatenate([values[i] for i in _ORDER[kind]], axis=-1)


def convert_format(boxes, source, target, height=None, width=None, dtype="float32"):
    """Boxes converted from format ``source`` to format ``target``.

    Args:
        boxes: tensor ``(..., 4)``, or a dict whose ``"boxes"`` entry is one (the dict is
            returned with that entry converted).
        source, target: format names (see the module docstring; case-insensitive).
        height, width: the image size, needed when either format is relative.
        dtype: the result's dtype.

    Returns:
        Tensor ``(..., 4)`` of ``dtype`` (or the dict).

    Raises:
        ValueError: for an unknown format, a last axis other than 4, or a relative format
            without ``height`` and ``width``.
    """
    if isinstance(boxes, dict):
        return {**boxes, "boxes": convert_format(boxes["boxes"], source, target, height, width,
                                                 dtype)}
    boxes = ops.cast(boxes, dtype)
    if boxes.shape[-1] != 4:
        raise ValueError("convert_format: `boxes` must have a last axis of 4. Received: "
                         f"boxes.shape={boxes.shape}")
    source, target = source.lower(), target.lower()
    if source not in FORMATS or target not in FORMATS:
        raise ValueError(f"convert_format: formats must be among {FORMATS}. Received: "
                         f"source={source!r}, target={target!r}")
    if (source.startswith("rel_") or target.startswith("rel_")) and (height is None or
                                                                     width is None):
        raise ValueError("convert_format: relative formats need `height` and `width`. "
                         f"Received: source={source!r}, target={target!r}, height={height}, "
                         f"width={width}")
    if source == target:
        return boxes
    if source.startswith("rel_") and target.startswith("rel_"):
        source, target, height, width = source[4:], target[4:], None, None
    return _from_corners(*_to_corners(boxes, source, height, width), target, height, width)


def _float_dtype(boxes):
    """float64 boxes stay float64 (so gradients can be checked); anything else is float32."""
    return "float64" if str(getattr(boxes, "dtype", "")) == "float64" else "float32"


def _area(x1, y1, x2, y2):
    return (x2 - x1) * (y2 - y1)


def clip_to_image_size(bounding_boxes, height=None, width=None, bounding_box_format="xyxy"):
    """Clip ``{"boxes", "labels"}`` boxes to the image; labels of boxes left without area
    become -1.

    Args:
        bounding_boxes: dict with ``"boxes"`` ``(..., 4)`` and optionally ``"labels"``.
        height, width: the image size (needed for "xyxy").
        bounding_box_format: "xyxy" or "rel_xyxy" (clipped to ``[0, 1]``).

    Returns:
        A new dict with the clipped boxes (and labels).

    Raises:
        NotImplementedError: for other formats. ValueError: "xyxy" without the image size.
    """
    if bounding_box_format not in ("xyxy", "rel_xyxy"):
        raise NotImplementedError("clip_to_image_size: supports 'xyxy' and 'rel_xyxy'. "
                                  f"Received: bounding_box_format={bounding_box_format!r}")
    if bounding_box_format == "xyxy" and (height is None or width is None):
        raise ValueError("clip_to_image_size: 'xyxy' needs `height` and `width`. Received: "
                         f"height={height}, width={width}")
    boxes = ops.convert_to_tensor(bounding_boxes["boxes"])
    if bounding_box_format == "rel_xyxy":
        height = width = 1.0
    x1, y1, x2, y2 = _columns(boxes)
    x1, x2 = ops.clip(x1, 0, width), ops.clip(x2, 0, width)
    y1, y2 = ops.clip(y1, 0, height), ops.clip(y2, 0, height)
    result = {**bounding_boxes, "boxes": ops.concatenate([x1, y1, x2, y2], axis=-1)}
    if bounding_boxes.get("labels") is not None:
        areas = ops.squeeze(_area(x1, y1, x2, y2), axis=-1)
        result["labels"] = ops.where(areas > 0, bounding_boxes["labels"], -1)
    return result


def _xyxy_only(who, bounding_box_format):
    if bounding_box_format != "xyxy":
        raise NotImplementedError(f"{who}: supports bounding_box_format='xyxy' only. Received: "
                                  f"{bounding_box_format!r}")


def crop(boxes, top, left, height, width, bounding_box_format="xyxy"):
    """Boxes in the coordinates of the crop ``[top, top + height) x [left, left + width)``,
    clipped to it."""
    _xyxy_only("crop", bounding_box_format)
    x1, y1, x2, y2 = _columns(ops.convert_to_tensor(boxes))
    return ops.concatenate([ops.clip(x1 - left, 0, width), ops.clip(y1 - top, 0, height),
                            ops.clip(x2 - left, 0, width), ops.clip(y2 - top, 0, height)], axis=-1)


def pad(boxes, top, left, height=None, width=None, bounding_box_format="xyxy"):
    """Boxes moved by the ``top``/``left`` padding of their image (``height``/``width`` are
    accepted for Keras compatibility)."""
    _xyxy_only("pad", bounding_box_format)
    x1, y1, x2, y2 = _columns(ops.convert_to_tensor(boxes))
    return ops.concatenate([x1 + left, y1 + top, x2 + left, y2 + top], axis=-1)


def _inverse_affine_matrix(center_x, center_y, angle, translate_x, translate_y, scale, shear_x,
                           shear_y, height, width):
    """Per image, the 3x3 matrix mapping input to output pixel coordinates of the affine image
    transform (rotation ``angle`` and shears in degrees, translations as fractions of the
    image, about the centre ``(center_x, center_y)`` given as fractions)."""
    angle = ops.convert_to_tensor(angle)
    rot = -angle * (math.pi / 180.0)
    sx, sy = -ops.convert_to_tensor(shear_x) * (math.pi / 180.0), \
        -ops.convert_to_tensor(shear_y) * (math.pi / 180.0)
    cx, cy = center_x * (width - 1), center_y * (height - 1)
    tx, ty = -ops.convert_to_tensor(translate_x) * (width - 1), \
        -ops.convert_to_tensor(translate_y) * (height - 1)
    a = ops.cos(rot - sy) / ops.cos(sy)
    b = a * ops.tan(sx) + ops.sin(rot)
    c = -ops.sin(rot - sy) / ops.cos(sy)
    d = ops.cos(rot) - c * ops.tan(sx)
    a0, a1, b0, b1 = d * scale, -b * scale, -c * scale, a * scale
    a2 = cx - a0 * (cx + tx) - a1 * (cy + ty)
    b2 = cy - b0 * (cx + tx) - b1 * (cy + ty)
    zeros, ones = ops.zeros_like(a0), ops.ones_like(a0)
    return ops.reshape(ops.stack([a0, a1, a2, b0, b1, b2, zeros, zeros, ones], axis=-1),
                       (-1, 3, 3))


def affine_transform(boxes, angle, translate_x, translate_y, scale, shear_x, shear_y, height,
                     width, center_x=None, center_y=None, bounding_box_format="xyxy"):
    """Boxes ``(batch, boxes, 4)`` carried through the per-image affine transform of an image
    augmentation (``angle``, ``translate_x``... each of shape ``(batch,)``), as the axis-aligned
    box around the transformed corners.

    Raises:
        NotImplementedError: for a format other than "xyxy".
    """
    _xyxy_only("affine_transform", bounding_box_format)
    matrix = _inverse_affine_matrix(0.5 if center_x is None else center_x,
                                    0.5 if center_y is None else center_y, angle, translate_x,
                                    translate_y, scale, shear_x, shear_y, height, width)
    boxes = ops.cast(boxes, matrix.dtype)
    x1, y1, x2, y2 = (boxes[..., i] for i in range(4))
    corners = ops.stack([ops.stack([x1, y1], -1), ops.stack([x2, y1], -1),
                         ops.stack([x2, y2], -1), ops.stack([x1, y2], -1)], axis=2)
    corners = ops.concatenate([corners, ops.ones_like(corners[..., :1])], axis=-1)
    moved = ops.einsum("bnkj,bij->bnki", corners, matrix[:, :2, :])
    return ops.concatenate([ops.min(moved, axis=2), ops.max(moved, axis=2)], axis=-1)


def compute_iou(boxes1, boxes2, bounding_box_format, use_masking=False, mask_val=-1,
                image_shape=None):
    """Pairwise intersection over union.

    Args:
        boxes1: ``(N, 4)`` or ``(batch, N, 4)``.
        boxes2: ``(M, 4)`` or ``(batch, M, 4)``.
        bounding_box_format: the boxes' format.
        use_masking: boxes whose coordinates are all negative are padding: their IoUs become
            ``mask_val``.
        image_shape: ``(height, width, channels)``, needed for relative formats.

    Returns:
        Tensor ``(N, M)`` or ``(batch, N, M)``, float32 (float64 for float64 boxes).

    Raises:
        ValueError: for boxes of rank other than 2 or 3, or a relative format without
            ``image_shape``.
    """
    r1, r2 = len(ops.shape(boxes1)), len(ops.shape(boxes2))
    if r1 not in (2, 3) or r2 not in (2, 3):
        raise ValueError("compute_iou: boxes must be (N, 4) or (batch, N, 4). Received: ranks "
                         f"{r1} and {r2}")
    if "rel" in bounding_box_format and image_shape is None:
        raise ValueError("compute_iou: relative formats need `image_shape`. Received: "
                         f"bounding_box_format={bounding_box_format!r}, image_shape=None")
    height, width = (None, None) if image_shape is None else image_shape[:2]
    dtype = _float_dtype(boxes1)
    b1 = convert_format(boxes1, bounding_box_format, "xyxy", height, width, dtype)
    b2 = convert_format(boxes2, bounding_box_format, "xyxy", height, width, dtype)
    swap = [1, 0] if r2 == 2 else [0, 2, 1]
    x1a, y1a, x2a, y2a = _columns(b1)  # (..., N, 1)
    x1b, y1b, x2b, y2b = (ops.transpose(c, swap) for c in _columns(b2))  # (..., 1, M)
    inter = ops.maximum(ops.minimum(x2a, x2b) - ops.maximum(x1a, x1b), 0.0) * \
        ops.maximum(ops.minimum(y2a, y2b) - ops.maximum(y1a, y1b), 0.0)
    union = _area(x1a, y1a, x2a, y2a) + _area(x1b, y1b, x2b, y2b) - inter
    iou = inter / (union + epsilon())
    if not use_masking:
        return iou
    padding1 = ops.max(b1, axis=-1, keepdims=True) < 0.0
    padding2 = ops.transpose(ops.max(b2, axis=-1, keepdims=True) < 0.0, [1, 0] if r1 == 2 else
                             [0, 2, 1])
    mask_val = ops.convert_to_tensor(mask_val, iou.dtype)
    return ops.where(ops.logical_or(padding1, padding2), mask_val, iou)


def compute_ciou(boxes1, boxes2, bounding_box_format, image_shape=None):
    """Complete IoU of matching boxes (Zheng et al., "Distance-IoU Loss", AAAI 2020, eq. 11):
    IoU minus the squared centre distance over the enclosing box's squared diagonal, minus
    ``alpha * v`` for the aspect-ratio mismatch ``v``.

    Args:
        boxes1, boxes2: tensors ``(..., 4)`` of the same shape.
        bounding_box_format: an absolute format.

    Returns:
        Tensor ``boxes1.shape[:-1]``, in ``[-1, 1]``, float32 (float64 for float64 boxes).

    Raises:
        ValueError: for a relative format.
    """
    if "rel" in bounding_box_format:
        raise ValueError("compute_ciou: needs an absolute box format. Received: "
                         f"bounding_box_format={bounding_box_format!r}")
    dtype = _float_dtype(boxes1)
    x1a, y1a, x2a, y2a = _columns(convert_format(boxes1, bounding_box_format, "xyxy",
                                                 dtype=dtype))
    x1b, y1b, x2b, y2b = _columns(convert_format(boxes2, bounding_box_format, "xyxy",
                                                 dtype=dtype))
    eps = epsilon()
    wa, ha = x2a - x1a, y2a - y1a + eps
    wb, hb = x2b - x1b, y2b - y1b + eps
    inter = ops.maximum(ops.minimum(x2a, x2b) - ops.maximum(x1a, x1b), 0.0) * \
        ops.maximum(ops.minimum(y2a, y2b) - ops.maximum(y1a, y1b), 0.0)
    union = wa * ha + wb * hb - inter + eps
    iou = ops.squeeze(inter / (union + eps), axis=-1)
    diagonal = ops.squeeze((ops.maximum(x2a, x2b) - ops.minimum(x1a, x1b)) ** 2 +
                           (ops.maximum(y2a, y2b) - ops.minimum(y1a, y1b)) ** 2 + eps, axis=-1)
    centres = ops.squeeze(((x1a + x2a) / 2 - (x1b + x2b) / 2) ** 2 +
                          ((y1a + y2a) / 2 - (y1b + y2b) / 2) ** 2, axis=-1)
    v = ops.squeeze(4 / math.pi ** 2 * (ops.arctan(wb / hb) - ops.arctan(wa / ha)) ** 2,
                    axis=-1)
    alpha = v / (v - iou + (1 + eps))
    return iou - (centres / diagonal + v * alpha)


def _check_variance(variance):
    if variance is None:
        return None
    variance = ops.convert_to_tensor(variance, "float32")
    if variance.shape[-1] != 4:
        raise ValueError(f"`variance` must have 4 values. Received: variance={variance}")
    return variance


def _check_encoding(who, encoding):
    if encoding not in ("center_xywh", "center_yxhw"):
        raise ValueError(f"{who}: the encoding must be 'center_xywh' or 'center_yxhw'. "
                         f"Received: {encoding!r}")


def encode_box_to_deltas(anchors, boxes, anchor_format, box_format,
                         encoding_format="center_yxhw", variance=None, image_shape=None):
    """Regression targets of ``boxes`` relative to their ``anchors`` (Ren et al., Faster R-CNN,
    NeurIPS 2015, eq. 2): centre offsets over the anchor size, log size ratios, each divided by
    ``variance``.

    Returns:
        Tensor ``(..., 4)`` in ``encoding_format``'s order.

    Raises:
        ValueError: for an unknown encoding or a ``variance`` not of 4 values.
    """
    variance = _check_variance(variance)
    _check_encoding("encode_box_to_deltas", encoding_format)
    height, width = (None, None) if image_shape is None else image_shape[:2]
    anchors = convert_format(anchors, anchor_format, encoding_format, height, width)
    boxes = convert_format(boxes, box_format, encoding_format, height, width)
    anchor_size = ops.maximum(anchors[..., 2:], epsilon())
    box_size = ops.maximum(boxes[..., 2:], epsilon())
    deltas = ops.concatenate([(boxes[..., :2] - anchors[..., :2]) / anchor_size,
                              ops.log(box_size / anchor_size)], axis=-1)
    return deltas if variance is None else deltas / variance


def decode_deltas_to_boxes(anchors, boxes_delta, anchor_format, box_format,
                           encoded_format="center_yxhw", variance=None, image_shape=None):
    """The boxes that `encode_box_to_deltas` encoded (per feature level when ``anchors`` and
    ``boxes_delta`` are dicts of levels).

    Returns:
        Tensor ``(..., 4)`` in ``box_format`` (or a dict of them).
    """
    variance = _check_variance(variance)
    _check_encoding("decode_deltas_to_boxes", encoded_format)
    height, width = (None, None) if image_shape is None else image_shape[:2]

    def decode(anchor, delta):
        anchor = convert_format(anchor, anchor_format, encoded_format, height, width)
        delta = ops.convert_to_tensor(delta)
        if variance is not None:
            delta = delta * variance
        box = ops.concatenate([delta[..., :2] * anchor[..., 2:] + anchor[..., :2],
                               ops.exp(delta[..., 2:]) * anchor[..., 2:]], axis=-1)
        return convert_format(box, encoded_format, box_format, height, width)

    if isinstance(anchors, dict) and isinstance(boxes_delta, dict):
        return {level: decode(anchor, boxes_delta[level]) for level, anchor in anchors.items()}
    return decode(anchors, boxes_delta)
