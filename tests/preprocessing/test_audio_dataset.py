"""utils.audio_dataset_from_directory on WAV files written here with Python's wave module: the
samples come back scaled to [-1, 1], batches are padded, cut or ragged, labels follow the
sub-directories, splits and resampling work."""

import wave

import numpy as np
import pytest

from kerasrs.utils import audio_dataset_from_directory


def write_wav(path, samples, rate=8000, width=2):
    """``samples`` (frames, channels) in [-1, 1) as integer PCM."""
    samples = np.asarray(samples, "float64")
    if samples.ndim == 1:
        samples = samples[:, None]
    scale = 2 ** (8 * width - 1)
    ints = np.round(samples * scale).clip(-scale, scale - 1).astype("int64")
    if width == 1:
        data = (ints + 128).astype("uint8").tobytes()
    elif width == 3:
        data = b"".join(int(v).to_bytes(3, "little", signed=True) for v in ints.reshape(-1))
    else:
        data = ints.astype({2: "<i2", 4: "<i4"}[width]).tobytes()
    with wave.open(str(path), "wb") as f:
        f.setnchannels(samples.shape[1])
        f.setsampwidth(width)
        f.setframerate(rate)
        f.writeframes(data)


@pytest.fixture
def clips(tmp_path):
    """Two classes: 'high' (three clips) and 'low' (two), lengths 40 to 80 samples."""
    rng = np.random.default_rng(0)
    for name, lengths in (("high", (40, 60, 80)), ("low", (50, 70))):
        (tmp_path / name).mkdir()
        for i, n in enumerate(lengths):
            write_wav(tmp_path / name / f"{i}.wav", rng.uniform(-0.9, 0.9, n))
    (tmp_path / "high" / "notes.txt").write_text("not audio")
    return tmp_path


def test_batches_are_padded_to_the_longest_clip_and_labelled(clips, capsys):
    ds = audio_dataset_from_directory(clips, batch_size=5, shuffle=False)
    assert "Found 5 files belonging to 2 classes." in capsys.readouterr().out
    assert ds.class_names == ["high", "low"] and len(ds) == 1
    audio, labels = ds[0]
    assert audio.shape == (5, 80, 1) and audio.dtype == np.float32
    assert labels.tolist() == [0, 0, 0, 1, 1]
    assert np.all(audio[0, 40:] == 0) and np.abs(audio).max() <= 1.0


def test_samples_are_scaled_like_tf_decode_wav(tmp_path):
    values = np.array([-1.0, -0.5, 0.0, 0.25, 0.5 - 2 ** -15])
    (tmp_path / "a").mkdir()
    for width in (1, 2, 3, 4):
        write_wav(tmp_path / "a" / f"w{width}.wav", np.stack([values, -values], 1), width=width)
    ds = audio_dataset_from_directory(tmp_path, batch_size=None, shuffle=False, verbose=False)
    for (audio, label), width in zip(ds, (1, 2, 3, 4)):
        assert audio.shape == (5, 2) and label == 0
        np.testing.assert_allclose(audio[:, 0], values, atol=2.0 ** (1 - 8 * width))
        np.testing.assert_allclose(audio[:, 1], -values, atol=2.0 ** (1 - 8 * width))


def test_fixed_length_ragged_and_label_modes(clips):
    fixed = audio_dataset_from_directory(clips, output_sequence_length=50, batch_size=2,
                                         label_mode="categorical", seed=3, verbose=False)
    audio, labels = fixed[0]
    assert audio.shape == (2, 50, 1) and labels.shape == (2, 2)
    assert [len(b[0]) for b in fixed] == [2, 2, 1]
    ragged = audio_dataset_from_directory(clips, ragged=True, batch_size=5, shuffle=False,
                                          label_mode="binary", verbose=False)
    audio, labels = ragged[0]
    assert [len(a) for a in audio] == [40, 60, 80, 50, 70] and labels.shape == (5, 1)
    unlabelled = audio_dataset_from_directory(clips, labels=None, batch_size=5, verbose=False)
    assert unlabelled[0].shape == (5, 80, 1)


def test_splits_and_resampling(clips):
    train, val = audio_dataset_from_directory(clips, validation_split=0.4, subset="both",
                                              seed=1, batch_size=8, verbose=False)
    assert len(train[0][0]) == 3 and len(val[0][0]) == 2
    pytest.importorskip("scipy")
    slow = audio_dataset_from_directory(clips, sampling_rate=4000, batch_size=5, shuffle=False,
                                        verbose=False)
    assert slow[0][0].shape == (5, 40, 1)  # 80 samples at 8 kHz -> 40 at 4 kHz


def test_errors(clips, tmp_path):
    with pytest.raises(ValueError, match="not both"):
        audio_dataset_from_directory(clips, ragged=True, output_sequence_length=10)
    with pytest.raises(ValueError, match="label_mode"):
        audio_dataset_from_directory(clips, label_mode="sparse")
    with pytest.raises(ValueError, match="positive int"):
        audio_dataset_from_directory(clips, sampling_rate=0)
    (tmp_path / "three").mkdir()
    write_wav(tmp_path / "three" / "x.wav", np.zeros(10))
    with pytest.raises(ValueError, match="exactly 2"):
        audio_dataset_from_directory(tmp_path, label_mode="binary", verbose=False)
    (clips / "low" / "broken.wav").write_bytes(b"RIFF....not a wav")
    with pytest.raises(ValueError, match="broken.wav"):
        list(audio_dataset_from_directory(clips, batch_size=10, verbose=False))
