"""kerasrs.visualization: boxes and masks land on the right pixels; the galleries draw the right
grid and save a PNG (matplotlib's Agg backend)."""

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from kerasrs import visualization  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def test_draw_bounding_boxes_outlines_the_box_and_skips_padding():
    images = np.zeros((2, 20, 30, 3), "uint8")
    boxes = {"boxes": np.array([[[5, 4, 15, 12], [0, 0, 3, 3]], [[0.1, 0.1, 0.5, 0.5],
                                                                 [0, 0, 1, 1]]]),
             "labels": np.array([[0, -1], [1, -1]])}
    out = visualization.draw_bounding_boxes(images[:1], {k: v[:1] for k, v in boxes.items()},
                                            "xyxy", color=(255, 0, 0), line_thickness=1)
    assert out.dtype == np.uint8 and out.shape == (1, 20, 30, 3)
    red = out[0, ..., 0] == 255
    assert red[4, 5:16].all() and red[12, 5:16].all()  # top and bottom edges
    assert red[4:13, 5].all() and red[4:13, 15].all()  # left and right edges
    assert not red[5:12, 6:15].any()  # inside untouched
    assert red.sum() == 2 * 11 + 2 * 7  # the padded box (label -1) is not drawn
    assert not images.any()  # the input is not modified
    relative = visualization.draw_bounding_boxes(np.ones((1, 20, 30, 3)),  # floats in [0, 1]
                                                 {"boxes": boxes["boxes"][1:],
                                                  "labels": boxes["labels"][1:]},
                                                 "rel_xyxy", line_thickness=3)
    assert relative[0, 2, 3:16].tolist() == [[128, 128, 128]] * 13
    with pytest.raises(ValueError, match="'boxes' and 'labels'"):
        visualization.draw_bounding_boxes(images, {"boxes": boxes["boxes"]}, "xyxy")
    with pytest.raises(ValueError, match="4-D"):
        visualization.draw_bounding_boxes(images[0], boxes, "xyxy")


def test_labels_are_written_with_pillow():
    pytest.importorskip("PIL")
    images = np.zeros((1, 60, 80, 3), "uint8")
    boxes = {"boxes": np.array([[[10, 40, 70, 55]]]), "labels": np.array([[3]]),
             "confidences": np.array([[0.9]])}
    plain = visualization.draw_bounding_boxes(images, {**boxes, "labels": np.array([[2]])},
                                              "xyxy", class_mapping={3: "cat"})
    named = visualization.draw_bounding_boxes(images, boxes, "xyxy", class_mapping={3: "cat"})
    assert (named != plain).any() and (named[0, :38] != 0).any()  # text above the box


def test_draw_segmentation_masks_colours_and_blends():
    images = np.full((1, 4, 4, 3), 100, "uint8")
    masks = np.array([[0, 1], [2, -1]]).repeat(2, 0).repeat(2, 1)[None, ..., None]
    palette = visualization.draw.color_palette(3)
    painted = visualization.draw_segmentation_masks(images, masks, num_classes=3, blend=False)
    assert painted.dtype == np.float32
    assert painted[0, 0, 0].tolist() == palette[0] and painted[0, 0, 3].tolist() == palette[1]
    assert painted[0, 3, 3].tolist() == [100, 100, 100]  # ignore_index
    blended = visualization.draw_segmentation_masks(images, masks, alpha=0.5)
    assert blended.dtype == np.uint8
    np.testing.assert_allclose(blended[0, 3, 0], (100 + np.array(palette[2])) / 2, atol=1)
    assert blended[0, 3, 3].tolist() == [100, 100, 100]
    with pytest.raises(TypeError, match="integers"):
        visualization.draw_segmentation_masks(images, masks.astype("float32"))


def test_image_gallery_grid_titles_and_file(tmp_path):
    images = np.random.default_rng(0).uniform(-1, 1, (5, 8, 8, 3))
    fig = visualization.plot_image_gallery(images, y_true=[0, 1, 0, 1, 1], y_pred=[0, 0, 0, 1, 1],
                                           label_map={0: "cat", 1: "dog"}, value_range=(-1, 1),
                                           show=False)
    axes = fig.get_axes()
    assert len(axes) == 6  # 3 x 2 grid, the sixth cell empty
    assert axes[1].get_title() == "Label: dog  Pred: cat"
    assert len(axes[5].get_images()) == 0
    path = tmp_path / "gallery.png"
    assert visualization.plot_image_gallery(images, path=str(path)) is None
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="label_map"):
        visualization.plot_image_gallery(images, y_true=[0] * 5, show=False)


def test_box_and_mask_galleries(tmp_path):
    images = np.zeros((2, 16, 16, 3), "uint8")
    truth = {"boxes": np.array([[[2, 2, 10, 10]], [[1, 1, 5, 5]]]), "labels": np.array([[0], [0]])}
    fig = visualization.plot_bounding_box_gallery(images, "xyxy", y_true=truth, y_pred=truth,
                                                  legend=True, class_mapping={0: "a"},
                                                  show=False)
    assert len(fig.get_axes()) == 2 and fig.legends
    shown = fig.get_axes()[0].get_images()[0].get_array()
    assert tuple(shown[2, 5]) == (255, 235, 59)  # the prediction drawn over the truth
    masks = np.zeros((2, 16, 16, 1), "int32")
    masks[:, 8:] = 1
    fig = visualization.plot_segmentation_mask_gallery(images, 2, y_true=masks, y_pred=masks,
                                                       show=False)
    assert len(fig.get_axes()) == 6  # image, truth, prediction per row
    visualization.plot_segmentation_mask_gallery(images, 2, y_true=masks,
                                                 path=str(tmp_path / "masks.png"))
    assert (tmp_path / "masks.png").exists()
