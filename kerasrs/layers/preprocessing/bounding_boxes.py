"""`MaxNumBoundingBoxes`: a fixed number of boxes per image, as Keras 3 (kerasrs's image
layers do not transform bounding boxes; this one only pads or truncates them)."""

from kerasrs import ops
from kerasrs.layers.base import Layer

__all__ = ["MaxNumBoundingBoxes"]


class MaxNumBoundingBoxes(Layer):
    """Pads (with ``fill_value``) or truncates the boxes ``(batch, n, 4)`` and labels
    ``(batch, n)`` of ``{"images": ..., "bounding_boxes": {"boxes": ..., "labels": ...}}`` to
    ``max_number`` per image; the images (and a plain image array) pass through.

    Args:
        max_number: the number of boxes per image in the output.
        fill_value: the padding of boxes and labels. Defaults to -1.

    Raises:
        KeyError: for keys of ``bounding_boxes`` other than "boxes" and "labels".
    """

    def __init__(self, max_number, fill_value=-1, **kwargs):
        super().__init__(**kwargs)
        self.max_number, self.fill_value = int(max_number), int(fill_value)

    def _fit(self, x):
        x = x[:, :self.max_number]
        pad = [(0, 0), (0, self.max_number - x.shape[1])] + [(0, 0)] * (x.ndim - 2)
        return ops.pad(x, pad, constant_values=self.fill_value)

    def call(self, inputs):
        if not isinstance(inputs, dict) or "bounding_boxes" not in inputs:
            return inputs
        boxes = dict(inputs["bounding_boxes"])
        extra = set(boxes) - {"boxes", "labels"}
        if extra:
            raise KeyError(f"{self.name}: unsupported keys in `bounding_boxes`: {sorted(extra)}; "
                           f"only 'boxes' and 'labels' are supported")
        boxes.update({key: self._fit(value) for key, value in boxes.items()})
        return {**inputs, "bounding_boxes": boxes}

    def compute_output_shape(self, input_shape):
        if isinstance(input_shape, dict) and "bounding_boxes" in input_shape:
            boxes = {key: (shape[0], self.max_number) + tuple(shape[2:])
                     for key, shape in input_shape["bounding_boxes"].items()}
            return {**input_shape, "bounding_boxes": boxes}
        return input_shape

    def get_config(self):
        return {**super().get_config(), "max_number": self.max_number,
                "fill_value": self.fill_value}
