"""Batched datasets built from arrays or from a directory of files (Keras's
``timeseries_dataset_from_array``, ``text_dataset_from_directory`` and
``image_dataset_from_directory``). Keras returns ``tf.data`` pipelines; kerasrs returns a
`Batches` object: ``len()`` batches, indexable and iterable, each batch a NumPy
``(inputs, targets)`` pair (or inputs alone)."""

import os

import numpy as np

from kerasrs.preprocessing import image as image_module


class Batches:
    """A sequence of batches computed on demand: ``batches[i]`` is ``make(indices_i)``.

    Attributes:
        class_names: the class names (directory datasets), else None.
    """

    def __init__(self, n, batch_size, make, class_names=None):
        self._n, self.batch_size, self._make = n, batch_size, make
        self.class_names = class_names

    def __len__(self):
        return -(-self._n // self.batch_size)

    def __getitem__(self, i):
        if not -len(self) <= i < len(self):
            raise IndexError(f"batch {i} out of range ({len(self)} batches)")
        i %= len(self)
        return self._make(np.arange(i * self.batch_size, min((i + 1) * self.batch_size,
                                                             self._n)))

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1,
                                  sampling_rate=1, batch_size=128, shuffle=False, seed=None,
                                  start_index=None, end_index=None):
    """Sliding windows over ``data``: window ``i`` is ``data[s_i : s_i + sequence_length *
    sampling_rate : sampling_rate]`` with ``s_i = start_index + i * sequence_stride``, paired with
    ``targets[s_i]`` (Keras's rule); windows optionally shuffled with ``seed``.

    Raises:
        ValueError: for non-positive lengths/strides or indices out of range.
    """
    data = np.asarray(data)
    for arg, value in (("sequence_length", sequence_length), ("sequence_stride", sequence_stride),
                       ("sampling_rate", sampling_rate), ("batch_size", batch_size)):
        if int(value) <= 0:
            raise ValueError(f"timeseries_dataset_from_array: `{arg}` must be > 0. Received: "
                             f"{arg}={value}")
    start = 0 if start_index is None else int(start_index)
    end = len(data) if end_index is None else int(end_index)
    if not 0 <= start < end <= len(data):
        raise ValueError(f"timeseries_dataset_from_array: need 0 <= start_index < end_index <= "
                         f"{len(data)}. Received: start_index={start_index}, "
                         f"end_index={end_index}")
    span = (sequence_length - 1) * sampling_rate
    num = end - start - span
    if targets is not None:
        num = min(num, len(targets))
    starts = start + np.arange(0, max(num, 0), sequence_stride)
    if shuffle:
        np.random.default_rng(seed).shuffle(starts)
    offsets = np.arange(sequence_length) * sampling_rate
    tgt = None if targets is None else np.asarray(targets)

    def make(idx):
        windows = data[starts[idx][:, None] + offsets[None, :]]
        return windows if tgt is None else (windows, tgt[starts[idx]])

    return Batches(len(starts), int(batch_size), make)


def _index_directory(directory, labels, formats, class_names, follow_links):
    """(paths, integer labels, class names) for the files under ``directory`` with one of the
    extensions ``formats``; with ``labels="inferred"`` the class is the sub-directory name."""
    if not os.path.isdir(directory):
        raise ValueError(f"dataset_from_directory: {directory!r} is not a directory.")
    if labels == "inferred":
        found = sorted(d for d in os.listdir(directory)
                       if os.path.isdir(os.path.join(directory, d)))
        names = list(class_names) if class_names is not None else found
        if class_names is not None and sorted(class_names) != found:
            raise ValueError(f"dataset_from_directory: class_names {class_names} do not match "
                             f"the sub-directories {found} of {directory!r}")
    else:
        names = []
    paths, ids = [], []
    roots = [(os.path.join(directory, n), i) for i, n in enumerate(names)] if names else \
        [(directory, 0)]
    for root, label in roots:
        for dirpath, _, files in sorted(os.walk(root, followlinks=follow_links)):
            for f in sorted(files):
                if f.lower().endswith(formats):
                    paths.append(os.path.join(dirpath, f))
                    ids.append(label)
    if labels not in (None, "inferred"):
        ids = list(labels)
        if len(ids) != len(paths):
            raise ValueError(f"dataset_from_directory: {len(ids)} labels for {len(paths)} "
                             "files.")
    return paths, np.asarray(ids, dtype="int32"), names


def _split(paths, ids, shuffle, seed, validation_split, subset):
    order = np.arange(len(paths))
    if shuffle:
        np.random.default_rng(1337 if seed is None else seed).shuffle(order)
    if validation_split:
        n_val = int(validation_split * len(order))
        if subset == "training":
            order = order[:len(order) - n_val]
        elif subset == "validation":
            order = order[len(order) - n_val:]
        else:
            raise ValueError("dataset_from_directory: with validation_split, subset must be "
                             f"'training' or 'validation'. Received: subset={subset!r}")
    return [paths[i] for i in order], ids[order]


def _encode(ids, label_mode, n_classes):
    if label_mode == "int":
        return ids
    if label_mode == "categorical":
        return np.eye(n_classes, dtype="float32")[ids]
    if label_mode == "binary":
        return ids.astype("float32")[:, None]
    raise ValueError(f"label_mode must be 'int', 'categorical', 'binary' or None. Received: "
                     f"{label_mode!r}")


def text_dataset_from_directory(directory, labels="inferred", label_mode="int", class_names=None,
                                batch_size=32, max_length=None, shuffle=True, seed=None,
                                validation_split=None, subset=None, follow_links=False,
                                verbose=True):
    """Batches of ``(texts, labels)`` from ``.txt`` files, one class per sub-directory
    (``labels="inferred"``); texts are cut to ``max_length`` characters."""
    paths, ids, names = _index_directory(directory, labels, (".txt",), class_names, follow_links)
    paths, ids = _split(paths, ids, shuffle, seed, validation_split, subset)
    if verbose:
        print(f"Found {len(paths)} files belonging to {len(names)} classes.")

    def make(idx):
        texts = []
        for i in idx:
            with open(paths[i], encoding="utf-8") as f:
                texts.append(f.read()[:max_length] if max_length else f.read())
        texts = np.asarray(texts, dtype=object)
        return texts if label_mode is None or labels is None else (
            texts, _encode(ids[idx], label_mode, len(names)))

    return Batches(len(paths), batch_size, make, names)


_IMAGE_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")


def image_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                 class_names=None, color_mode="rgb", batch_size=32,
                                 image_size=(256, 256), shuffle=True, seed=None,
                                 validation_split=None, subset=None, interpolation="bilinear",
                                 follow_links=False, crop_to_aspect_ratio=False,
                                 pad_to_aspect_ratio=False, data_format=None, verbose=True):
    """Batches of ``(images, labels)``: float32 (batch, height, width, channels) images resized
    to ``image_size`` (through Pillow), one class per sub-directory."""
    paths, ids, names = _index_directory(directory, labels, _IMAGE_FORMATS, class_names,
                                         follow_links)
    paths, ids = _split(paths, ids, shuffle, seed, validation_split, subset)
    if verbose:
        print(f"Found {len(paths)} files belonging to {len(names)} classes.")

    def make(idx):
        images = np.stack([image_module.img_to_array(image_module.load_img(
            paths[i], color_mode=color_mode, target_size=tuple(image_size),
            interpolation=interpolation), data_format=data_format) for i in idx])
        return images if label_mode is None or labels is None else (
            images, _encode(ids[idx], label_mode, len(names)))

    return Batches(len(paths), batch_size, make, names)
