"""Data preparation helpers with Keras's names (sequences, time series, files on disk)."""

from kerasrs.preprocessing.datasets import (  # noqa: F401
    image_dataset_from_directory, text_dataset_from_directory, timeseries_dataset_from_array)
from kerasrs.preprocessing.sequence import pad_sequences  # noqa: F401
