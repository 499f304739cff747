"""Data preparation helpers with Keras's names (sequences, time series, image files)."""

from kerasrs.preprocessing.sequence import pad_sequences  # noqa: F401
