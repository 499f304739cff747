"""kerasrs.utils.bounding_boxes against Keras 3 (tests/fixtures/keras_bounding_boxes.json,
written by tests/fixtures/make_keras_bounding_boxes.py), plus gradients through CIoU."""

import json
import pathlib

import numpy as np
import pytest

import kerasrs
from kerasrs.testing import check_gradients
from kerasrs.utils import bounding_boxes as B

K = json.loads((pathlib.Path(__file__).parents[1] / "fixtures" /
                "keras_bounding_boxes.json").read_text())
BOXES = np.array(K["boxes"])


def close(got, want, atol=1e-4):
    np.testing.assert_allclose(kerasrs.ops.convert_to_numpy(got), np.array(want), rtol=1e-5,
                               atol=atol)


def test_the_namespace_is_keras_s():
    names = {"affine_transform", "clip_to_image_size", "compute_ciou", "compute_iou",
             "convert_format", "crop", "decode_deltas_to_boxes", "encode_box_to_deltas", "pad"}
    assert names <= set(dir(B))


@pytest.mark.parametrize("fmt", sorted(K["to"]))
def test_convert_format_both_ways(fmt):
    close(B.convert_format(BOXES, "xyxy", fmt, height=60, width=80), K["to"][fmt])
    close(B.convert_format(np.array(K["to"][fmt]), fmt, "xyxy", height=60, width=80),
          K["from"][fmt])
    back = B.convert_format(B.convert_format(BOXES, "xyxy", fmt, height=60, width=80), fmt,
                            "XYXY", height=60, width=80)
    close(back, BOXES)


def test_convert_format_dict_and_errors():
    out = B.convert_format({"boxes": BOXES, "labels": [1, 2]}, "xyxy", "yxyx")
    assert out["labels"] == [1, 2]
    close(out["boxes"], K["to"]["yxyx"])
    with pytest.raises(ValueError, match="height"):
        B.convert_format(BOXES, "xyxy", "rel_xyxy")
    with pytest.raises(ValueError, match="formats must be among"):
        B.convert_format(BOXES, "xyxy", "xyz")
    with pytest.raises(ValueError, match="last axis of 4"):
        B.convert_format(np.zeros((2, 3)), "xyxy", "yxyx")


def test_clip_crop_pad_affine():
    c = K["clip"]
    clipped = B.clip_to_image_size({"boxes": np.array(c["boxes"]), "labels": np.array(
        c["labels"])}, height=60, width=80)
    close(clipped["boxes"], c["out_boxes"])
    close(clipped["labels"], c["out_labels"])
    close(B.crop(BOXES, 10, 5, 30, 40), K["crop"])
    close(B.pad(BOXES, 3, 7), K["pad"])
    args = {k: np.array(v) for k, v in K["affine_args"].items()}
    close(B.affine_transform(BOXES, height=60, width=80, **args), K["affine"], atol=1e-3)
    with pytest.raises(NotImplementedError):
        B.crop(BOXES, 0, 0, 1, 1, bounding_box_format="yxyx")


def test_iou_ciou_and_deltas():
    close(B.compute_iou(BOXES[0], BOXES[1], "xyxy"), K["iou2"])
    close(B.compute_iou(BOXES, BOXES[:, :2], "xyxy"), K["iou3"])
    padded = np.array(K["iou_masked_boxes"])
    close(B.compute_iou(padded, padded, "xyxy", use_masking=True, mask_val=-1), K["iou_masked"])
    close(B.compute_ciou(BOXES[0], BOXES[1], "xyxy"), K["ciou"])
    anchors = np.array(K["anchors"])
    variance = [0.1, 0.1, 0.2, 0.2]
    deltas = B.encode_box_to_deltas(anchors, BOXES[0], "xyxy", "xyxy", variance=variance)
    close(deltas, K["deltas"])
    close(B.decode_deltas_to_boxes(anchors, deltas, "xyxy", "xywh", variance=variance),
          K["decoded"])
    levels = B.decode_deltas_to_boxes({"p3": anchors}, {"p3": deltas}, "xyxy", "xyxy",
                                      variance=variance)
    close(levels["p3"], BOXES[0])
    with pytest.raises(ValueError, match="variance"):
        B.encode_box_to_deltas(anchors, BOXES[0], "xyxy", "xyxy", variance=[1, 1])


def test_ciou_gradient_in_float64():
    """CIoU as a loss: its gradient with respect to the predicted boxes, by finite
    differences."""
    target = BOXES[1]
    check_gradients(lambda pred: B.compute_ciou(pred, target, "xyxy"), [BOXES[0] + 0.37],
                    eps=1e-6, atol=1e-6, rtol=1e-4)
