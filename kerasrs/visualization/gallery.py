"""Image galleries with matplotlib (Keras's ``keras.visualization.plot_image_gallery``,
``plot_bounding_box_gallery`` and ``plot_segmentation_mask_gallery``)."""

import math

import numpy as np

from kerasrs import backend, ops
from kerasrs.visualization import draw


def _pyplot(who):
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError(f"{who} needs matplotlib: pip install matplotlib (or "
                          "pip install kerasrs[plot]).") from error
    return plt


def _to_pixels(images, value_range):
    """Values mapped linearly from ``value_range`` to ``[0, 255]``, as uint8."""
    low, high = value_range
    scaled = (np.asarray(images, "float32") - low) * (255.0 / (high - low))
    return np.clip(scaled, 0, 255).astype("uint8")


def plot_image_gallery(images, y_true=None, y_pred=None, label_map=None, rows=None, cols=None,
                       value_range=(0, 255), scale=2, path=None, show=None, transparent=True,
                       dpi=60, legend_handles=None, data_format=None):
    """Show a batch of images in a grid, optionally titled with their true and predicted labels.

    Args:
        images: ``(batch, height, width, channels)`` (or channels first), values in
            ``value_range``.
        y_true, y_pred: optional labels per image, looked up in ``label_map``.
        label_map: dict label -> name (required with labels).
        rows, cols: the grid; default about square.
        value_range: ``(low, high)`` of the image values.
        scale: inches per image.
        path: save the figure there (and close it) instead of showing it.
        show: ``plt.show()`` the figure (default: when no ``path``); with ``show=False`` and
            no path the figure is returned open.
        transparent, dpi: for saving.
        legend_handles: optional matplotlib legend handles.
        data_format: image layout; default `kerasrs.backend.image_data_format()`.

    Returns:
        The matplotlib Figure when neither shown nor saved, else None.

    Raises:
        ValueError: for both ``path`` and ``show``, labels without ``label_map``, or images that
            are not 4-D.
        ImportError: without matplotlib.
    """
    plt = _pyplot("plot_image_gallery")
    if path is not None and show:
        raise ValueError("plot_image_gallery: give `path` (save) or `show=True`, not both.")
    if (y_true is not None or y_pred is not None) and label_map is None:
        raise ValueError("plot_image_gallery: labels (`y_true`/`y_pred`) need `label_map`.")
    show = path is None if show is None else show
    images = np.asarray(ops.convert_to_numpy(images))
    if images.ndim != 4:
        raise ValueError("plot_image_gallery: `images` must be a batch, a 4-D array. Received: "
                         f"images.shape={images.shape}")
    if (data_format or backend.image_data_format()) == "channels_first":
        images = images.transpose(0, 2, 3, 1)
    count = len(images)
    rows = rows or int(math.ceil(math.sqrt(count)))
    cols = cols or int(math.ceil(count / rows))
    images = _to_pixels(images[:rows * cols], value_range)
    fig, axes = plt.subplots(rows, cols, figsize=(cols * scale, rows * scale), frameon=False,
                             layout="tight", squeeze=False)
    fig.subplots_adjust(wspace=0, hspace=0)
    if legend_handles is not None:
        fig.legend(handles=legend_handles, loc="lower center")
    y_true = None if y_true is None else ops.convert_to_numpy(y_true)
    y_pred = None if y_pred is None else ops.convert_to_numpy(y_pred)
    for index, axis in enumerate(axes.reshape(-1)):
        axis.axis("off")
        if index >= len(images):
            continue
        image = images[index]
        axis.imshow(image[..., 0] if image.shape[-1] == 1 else image,
                    cmap="gray" if image.shape[-1] == 1 else None)
        axis.margins(x=0, y=0)
        title = []
        if y_true is not None and index < len(y_true):
            title.append(f"Label: {label_map.get(_key(y_true[index]), 'Unknown')}")
        if y_pred is not None and index < len(y_pred):
            title.append(f"Pred: {label_map.get(_key(y_pred[index]), 'Unknown')}")
        if title:
            axis.set_title("  ".join(title), fontsize=8)
    if path is not None:
        fig.savefig(path, pad_inches=0, bbox_inches="tight", transparent=transparent, dpi=dpi)
        plt.close(fig)
    elif show:
        plt.show()
        plt.close(fig)
    else:
        return fig
    return None


def _key(label):
    return label.item() if hasattr(label, "item") else label


def plot_bounding_box_gallery(images, bounding_box_format, y_true=None, y_pred=None,
                              value_range=(0, 255), true_color=(0, 188, 212),
                              pred_color=(255, 235, 59), line_thickness=2, font_scale=1.0,
                              text_thickness=None, class_mapping=None, ground_truth_mapping=None,
                              prediction_mapping=None, legend=False, legend_handles=None,
                              rows=None, cols=None, data_format=None, **kwargs):
    """A gallery of images with their true boxes (``true_color``) and predicted boxes
    (``pred_color``) drawn in (`kerasrs.visualization.draw_bounding_boxes`).

    Args:
        images: a 4-D batch with values in ``value_range``.
        bounding_box_format: the boxes' format.
        y_true, y_pred: optional ``{"boxes", "labels"[, "confidences"]}`` dicts.
        class_mapping: dict label -> name for both (``ground_truth_mapping`` /
            ``prediction_mapping`` override it per kind).
        legend: add a "Ground Truth" / "Prediction" legend (or pass ``legend_handles``).
        **kwargs: passed to `plot_image_gallery` (``path``, ``show``, ``scale``...).

    Returns:
        What `plot_image_gallery` returns.

    Raises:
        ValueError: for both ``legend`` and ``legend_handles``, or images that are not 4-D.
    """
    _pyplot("plot_bounding_box_gallery")
    from matplotlib import patches

    images = np.asarray(ops.convert_to_numpy(images))
    if images.ndim != 4:
        raise ValueError("plot_bounding_box_gallery: `images` must be a batch, a 4-D array. "
                         f"Received: images.shape={images.shape}")
    if (data_format or backend.image_data_format()) == "channels_first":
        images = images.transpose(0, 2, 3, 1)
    images = _to_pixels(images, value_range)
    options = dict(bounding_box_format=bounding_box_format, line_thickness=line_thickness,
                   text_thickness=text_thickness, font_scale=font_scale,
                   data_format="channels_last")
    if y_true is not None:
        images = draw.draw_bounding_boxes(images, y_true, color=true_color,
                                          class_mapping=ground_truth_mapping or class_mapping,
                                          **options)
    if y_pred is not None:
        images = draw.draw_bounding_boxes(images, y_pred, color=pred_color,
                                          class_mapping=prediction_mapping or class_mapping,
                                          **options)
    if legend:
        if legend_handles:
            raise ValueError("plot_bounding_box_gallery: pass `legend` or `legend_handles`, not "
                             "both.")
        legend_handles = [patches.Patch(color=np.array(true_color) / 255.0, label="Ground Truth"),
                          patches.Patch(color=np.array(pred_color) / 255.0, label="Prediction")]
    return plot_image_gallery(images, value_range=(0, 255), legend_handles=legend_handles,
                              rows=rows, cols=cols, data_format="channels_last", **kwargs)


def plot_segmentation_mask_gallery(images, num_classes, value_range=(0, 255), y_true=None,
                                   y_pred=None, color_mapping=None, blend=True, alpha=0.8,
                                   ignore_index=-1, data_format=None, **kwargs):
    """A gallery with one row per image: the image, then its true and predicted masks drawn
    over it (`kerasrs.visualization.draw_segmentation_masks`).

    Args:
        images: a 4-D batch with values in ``value_range``.
        num_classes: number of classes.
        y_true, y_pred: optional integer masks ``(batch, height, width, 1)``.
        color_mapping, blend, alpha, ignore_index: as in `draw_segmentation_masks`.
        **kwargs: passed to `plot_image_gallery`.

    Returns:
        What `plot_image_gallery` returns.
    """
    images = np.asarray(ops.convert_to_numpy(images))
    if images.ndim != 4:
        raise ValueError("plot_segmentation_mask_gallery: `images` must be a batch, a 4-D array. "
                         f"Received: images.shape={images.shape}")
    first = (data_format or backend.image_data_format()) == "channels_first"
    if first:
        images = images.transpose(0, 2, 3, 1)
    images = _to_pixels(images, value_range)
    columns = [images]
    for masks in (y_true, y_pred):
        if masks is not None:
            masks = np.asarray(ops.convert_to_numpy(masks)).astype("int32")
            masks = masks.transpose(0, 2, 3, 1) if first else masks
            drawn = draw.draw_segmentation_masks(images, masks, num_classes, color_mapping, alpha,
                                                 blend, ignore_index, "channels_last")
            columns.append(draw.to_uint8(np.asarray(drawn)))
    gallery = np.stack(columns, axis=1).reshape((-1,) + images.shape[1:])
    return plot_image_gallery(gallery, value_range=(0, 255), rows=len(images),
                              cols=len(columns), data_format="channels_last", **kwargs)
