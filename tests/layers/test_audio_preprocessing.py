"""`MelSpectrogram` and `STFTSpectrogram`: Keras 3 parity on random signals
(tests/fixtures/keras_color_mixing.npz, written by make_keras_color_mixing.py), shapes,
gradients, config round trips and bad arguments."""

import pathlib

import numpy as np
import pytest

import kerasrs
from kerasrs import layers
from kerasrs.testing import check_gradients

REF = np.load(pathlib.Path(__file__).parents[1] / "fixtures" / "keras_color_mixing.npz")
SIGNAL, STEREO = REF["audio/signal"], REF["stft/signal"]


@pytest.fixture(autouse=True)
def fresh_session():
    kerasrs.utils.clear_session()


def test_mel_spectrogram_matches_keras():
    db = layers.MelSpectrogram(fft_length=256, sequence_stride=64, num_mel_bins=20,
                               sampling_rate=8000)
    np.testing.assert_allclose(db(SIGNAL).numpy(), REF["mel/db"], atol=2e-4)
    assert db.compute_output_shape(SIGNAL.shape) == REF["mel/db"].shape
    power = layers.MelSpectrogram(fft_length=128, sequence_stride=50, sequence_length=100,
                                  num_mel_bins=16, sampling_rate=16000, min_freq=100.0,
                                  max_freq=6000.0, power_to_db=False, mag_exp=1.0)
    np.testing.assert_allclose(power(SIGNAL).numpy(), REF["mel/power"], rtol=1e-5, atol=2e-4)
    assert power(SIGNAL[0]).shape == REF["mel/power"].shape[1:]  # one unbatched signal


@pytest.mark.parametrize("mode", ["log", "magnitude", "psd", "real", "imag", "angle", "stft"])
def test_stft_spectrogram_modes_match_keras(mode):
    layer = layers.STFTSpectrogram(mode=mode, frame_length=64, frame_step=16)
    got, want = layer(STEREO).numpy(), REF[f"stft/{mode}"]
    assert layer.compute_output_shape(STEREO.shape) == want.shape
    if mode == "angle":  # +-pi are the same angle where the imaginary part is (-)0
        got, want = np.exp(1j * got), np.exp(1j * want)
    np.testing.assert_allclose(got, want, atol=2e-4)


def test_stft_spectrogram_same_padding_expand_dims_and_channels_first_match_keras():
    same = layers.STFTSpectrogram(mode="magnitude", frame_length=50, frame_step=20,
                                  padding="same", expand_dims=True, scaling="spectrum",
                                  periodic=True)
    np.testing.assert_allclose(same(STEREO).numpy(), REF["stft/same_expand"], atol=1e-5)
    assert same.compute_output_shape(STEREO.shape) == REF["stft/same_expand"].shape
    first = layers.STFTSpectrogram(mode="log", frame_length=32, fft_length=64,
                                   window="hamming", data_format="channels_first")
    np.testing.assert_allclose(first(STEREO.transpose(0, 2, 1)).numpy(),
                               REF["stft/channels_first"], atol=5e-4)


def test_spectrogram_gradients():
    stft = layers.STFTSpectrogram(mode="magnitude", frame_length=8, frame_step=4, dtype="float64")
    check_gradients(lambda x: stft(x), [np.random.default_rng(0).normal(size=(1, 24, 2))])
    mel = layers.MelSpectrogram(fft_length=16, sequence_stride=8, num_mel_bins=4,
                                sampling_rate=800, power_to_db=False, dtype="float64")
    check_gradients(lambda x: mel(x), [np.random.default_rng(1).normal(size=(1, 40))])


def test_stft_spectrogram_trains_inside_a_model():
    model = kerasrs.Sequential([layers.Input((300, 2)), layers.STFTSpectrogram(
        mode="log", frame_length=64, frame_step=32), layers.Flatten(), layers.Dense(1)])
    model.compile("adam", "mse")
    before = model.layers[0].real_kernel.numpy().copy()
    model.fit(STEREO, np.ones((2, 1), "float32"), epochs=1, verbose=0)
    assert not np.array_equal(before, model.layers[0].real_kernel.numpy())


@pytest.mark.parametrize("make", [
    lambda: layers.MelSpectrogram(fft_length=512, sequence_stride=128, num_mel_bins=40,
                                  max_freq=7000, top_db=60.0),
    lambda: layers.STFTSpectrogram("psd", 128, 32, 256, "hamming", True, "spectrum", "same",
                                   True, "channels_first")])
def test_config_round_trip(make):
    layer = make()
    config = layer.get_config()
    assert type(layer).from_config(config).get_config() == config


@pytest.mark.parametrize("make, message", [
    (lambda: layers.MelSpectrogram(fft_length=256, sequence_length=512), "fft_length"),
    (lambda: layers.STFTSpectrogram(mode="bad"), "mode"),
    (lambda: layers.STFTSpectrogram(frame_length=16, frame_step=32), "frame_step"),
    (lambda: layers.STFTSpectrogram(padding="causal"), "padding")])
def test_bad_arguments_name_the_layer(make, message):
    with pytest.raises(ValueError, match=message):
        make()
