"""``audio_dataset_from_directory``: batches of ``.wav`` clips, one class per sub-directory
(Keras's ``keras.utils.audio_dataset_from_directory``; Keras returns a ``tf.data`` pipeline,
kerasrs a `Batches` sequence like its other directory datasets). WAV files are read with
Python's ``wave`` module (integer PCM, 8 to 32 bits) and scaled to ``[-1, 1]`` floats, as
``tf.audio.decode_wav`` does."""

import math
import wave

import numpy as np

from kerasrs.preprocessing.datasets import Batches, _encode, _index_directory, _split

ALLOWED_FORMATS = (".wav",)


def read_wav(path):
    """``(samples, channels)`` float32 in ``[-1, 1]`` and the sampling rate of a PCM WAV file.

    Raises:
        ValueError: for a file that is not integer PCM WAV (naming the file).
    """
    try:
        with wave.open(str(path), "rb") as f:
            width, channels, rate = f.getsampwidth(), f.getnchannels(), f.getframerate()
            raw = f.readframes(f.getnframes())
    except (wave.Error, EOFError) as error:
        raise ValueError(f"audio_dataset_from_directory: {path} is not an integer PCM WAV file "
                         f"({error}).") from error
    if width == 3:  # 24-bit: widen to 32-bit little-endian words
        bytes3 = np.frombuffer(raw, np.uint8).reshape(-1, 3)
        raw = np.concatenate([np.zeros((len(bytes3), 1), np.uint8), bytes3], axis=1).tobytes()
        width = 4
    dtype = {1: np.uint8, 2: np.int16, 4: np.int32}[width]
    samples = np.frombuffer(raw, dtype).astype("float32")
    if width == 1:  # 8-bit WAV is unsigned
        samples -= 128.0
    samples /= float(2 ** (8 * width - 1))
    return samples.reshape(-1, channels), rate


def _resample(audio, rate_in, rate_out):
    """Polyphase resampling (scipy.signal.resample_poly, an anti-aliasing FIR filter)."""
    if rate_in == rate_out:
        return audio
    try:
        from scipy.signal import resample_poly
    except ImportError as error:
        raise ImportError("audio_dataset_from_directory: `sampling_rate` needs scipy to "
                          "resample: pip install scipy.") from error
    g = math.gcd(rate_in, rate_out)
    return resample_poly(audio, rate_out // g, rate_in // g, axis=0).astype("float32")


def _fit_length(audio, length):
    """Cut or zero-pad the time axis to ``length`` samples."""
    if len(audio) >= length:
        return audio[:length]
    return np.concatenate([audio, np.zeros((length - len(audio), audio.shape[1]), audio.dtype)])


def _check_arguments(labels, label_mode, class_names, ragged, output_sequence_length,
                     sampling_rate):
    if labels not in ("inferred", None) and not isinstance(labels, (list, tuple)):
        raise ValueError("audio_dataset_from_directory: `labels` must be 'inferred', None or a "
                         f"list of integer labels, one per file. Received: labels={labels!r}")
    if labels not in ("inferred", None) and class_names:
        raise ValueError("audio_dataset_from_directory: `class_names` only go with "
                         "labels='inferred'.")
    if label_mode not in ("int", "categorical", "binary", None):
        raise ValueError("audio_dataset_from_directory: `label_mode` must be 'int', "
                         f"'categorical', 'binary' or None. Received: label_mode={label_mode!r}")
    if ragged and output_sequence_length is not None:
        raise ValueError("audio_dataset_from_directory: give `ragged` or "
                         "`output_sequence_length`, not both.")
    if sampling_rate is not None and (not isinstance(sampling_rate, int) or sampling_rate <= 0):
        raise ValueError("audio_dataset_from_directory: `sampling_rate` must be a positive int. "
                         f"Received: sampling_rate={sampling_rate!r}")


def audio_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                 class_names=None, batch_size=32, sampling_rate=None,
                                 output_sequence_length=None, ragged=False, shuffle=True,
                                 seed=None, validation_split=None, subset=None,
                                 follow_links=False, verbose=True):
    """Batches of ``(audio, labels)`` from ``.wav`` files under ``directory``.

    Args:
        directory: with ``labels="inferred"``, one sub-directory of clips per class.
        labels: "inferred", None (audio only) or a list of integer labels in file order.
        label_mode: "int" (int32 ``(batch,)``), "categorical" (one-hot float32),
            "binary" (float32 ``(batch, 1)``, two classes) or None (audio only).
        class_names: the sub-directory names to use, in label order.
        batch_size: clips per batch (None: one clip per item, not batched).
        sampling_rate: resample every clip to this rate (Hz; needs scipy).
        output_sequence_length: cut or zero-pad every clip to this many samples; otherwise
            each batch is zero-padded to its longest clip.
        ragged: return each batch's clips as a list of arrays of their own lengths.
        shuffle, seed: shuffle the file order (default seed 1337, as the other directory
            datasets).
        validation_split, subset: hold out a fraction; subset "training", "validation" or
            "both" (a ``(training, validation)`` pair).
        follow_links: follow symbolic links to sub-directories.
        verbose: print how many files and classes were found.

    Returns:
        A `Batches` sequence (``len``, indexing, iteration; ``class_names``) of NumPy float32
        audio ``(batch, samples, channels)`` with labels; two of them for ``subset="both"``.

    Raises:
        ValueError: for invalid arguments, a directory without ``.wav`` files, or
            ``label_mode="binary"`` without exactly two classes.
    """
    _check_arguments(labels, label_mode, class_names, ragged, output_sequence_length,
                     sampling_rate)
    if labels is None or label_mode is None:
        labels, label_mode = None, None
    paths, ids, names = _index_directory(directory, labels, ALLOWED_FORMATS, class_names,
                                         follow_links)
    if label_mode == "binary" and len(names) != 2:
        raise ValueError("audio_dataset_from_directory: label_mode='binary' needs exactly 2 "
                         f"classes. Received: class_names={names}")
    if verbose:
        print(f"Found {len(paths)} files belonging to {len(names)} classes.")
    subsets = ("training", "validation") if subset == "both" else (subset,)
    datasets = []
    for part in subsets:
        part_paths, part_ids = _split(paths, ids, shuffle, seed, validation_split, part)
        if not part_paths:
            raise ValueError(f"audio_dataset_from_directory: no {part or ''} audio files in "
                             f"{directory!r} (formats {ALLOWED_FORMATS}).")
        datasets.append(_batches(part_paths, part_ids, names, label_mode, batch_size,
                                 sampling_rate, output_sequence_length, ragged))
    return tuple(datasets) if subset == "both" else datasets[0]


def _batches(paths, ids, names, label_mode, batch_size, sampling_rate, length, ragged):
    def load(i):
        audio, rate = read_wav(paths[i])
        if sampling_rate is not None:
            audio = _resample(audio, rate, sampling_rate)
        return audio if length is None else _fit_length(audio, length)

    def make(idx):
        clips = [load(i) for i in idx]
        if batch_size is None:
            clips = clips[0]
        elif not ragged:
            clips = np.stack([_fit_length(c, max(len(c) for c in clips)) for c in clips])
        if label_mode is None:
            return clips
        encoded = _encode(ids[idx], label_mode, len(names))
        return clips, encoded[0] if batch_size is None else encoded

    return Batches(len(paths), batch_size or 1, make, names)
