"""Drawing boxes and masks into images and showing image galleries (Keras's
``keras.visualization``), on NumPy and matplotlib (imported when a gallery is drawn)."""

from kerasrs.visualization.draw import draw_bounding_boxes, draw_segmentation_masks  # noqa: F401
from kerasrs.visualization.gallery import (plot_bounding_box_gallery,  # noqa: F401
                                           plot_image_gallery, plot_segmentation_mask_gallery)
