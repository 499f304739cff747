"""Audio front ends with Keras 3's names, arguments and numbers: `MelSpectrogram` (a fixed
transform of ``kerasrs.ops.stft``) and `STFTSpectrogram` (a 1-D convolution with trainable
DFT kernels initialised by `kerasrs.initializers.STFT`). Both are built from differentiable
ops, so gradients flow to the signal (and to `STFTSpectrogram`'s kernels).
"""

import math

import numpy as np

from kerasrs import ops
from kerasrs.initializers import STFT
from kerasrs.layers.base import Layer

__all__ = ["MelSpectrogram", "STFTSpectrogram"]

_MEL_BREAK_HZ, _MEL_HIGH_Q = 700.0, 1127.0  # HTK: mel(f) = 1127 ln(1 + f / 700)


def hertz_to_mel(hertz):
    return _MEL_HIGH_Q * np.log(1.0 + np.asarray(hertz, "float64") / _MEL_BREAK_HZ)


def linear_to_mel_weight_matrix(num_mel_bins, num_spectrogram_bins, sampling_rate,
                                lower_edge_hertz, upper_edge_hertz, dtype="float32"):
    """``(num_spectrogram_bins, num_mel_bins)`` triangular HTK mel filters with peak 1 (the
    DC bin gets no weight), as Keras's (and TensorFlow's) ``linear_to_mel_weight_matrix``."""
    bins_mel = hertz_to_mel(np.linspace(0.0, sampling_rate / 2.0,
                                        num_spectrogram_bins)[1:])[:, None]
    edges = np.linspace(hertz_to_mel(lower_edge_hertz), hertz_to_mel(upper_edge_hertz),
                        num_mel_bins + 2)
    lower, center, upper = edges[:-2], edges[1:-1], edges[2:]
    weights = np.maximum(0.0, np.minimum((bins_mel - lower) / (center - lower),
                                         (upper - bins_mel) / (upper - center)))
    return np.pad(weights, ((1, 0), (0, 0))).astype(dtype)


class MelSpectrogram(Layer):
    """Mel spectrogram of raw audio: ``|stft|^mag_exp`` (Hann-windowed frames, centred), mel
    filters, then optionally decibels ``10 log10(max(p, min_power) / max(ref, min_power))``
    floored at ``max - top_db`` (the maximum over the whole batch, as Keras).

    Args:
        fft_length, sequence_stride, sequence_length (default ``fft_length``), window: as
            `kerasrs.ops.stft`.
        sampling_rate: samples per second. num_mel_bins: the number of mel bands.
        min_freq, max_freq: the band edges in Hz (``max_freq`` defaults to Nyquist).
        power_to_db, top_db, mag_exp, min_power, ref_power: see above.

    Shapes: ``(samples,)`` -> ``(num_mel_bins, frames)``; ``(batch, samples)`` ->
    ``(batch, num_mel_bins, frames)`` with ``frames = samples // sequence_stride + 1``.

    Raises:
        ValueError: if ``fft_length < sequence_length``.
    """

    def __init__(self, fft_length=2048, sequence_stride=512, sequence_length=None,
                 window="hann", sampling_rate=16000, num_mel_bins=128, min_freq=20.0,
                 max_freq=None, power_to_db=True, top_db=80.0, mag_exp=2.0, min_power=1e-10,
                 ref_power=1.0, **kwargs):
        super().__init__(**kwargs)
        self.fft_length, self.sequence_stride = fft_length, sequence_stride
        self.sequence_length = sequence_length or fft_length
        if fft_length < self.sequence_length:
            raise ValueError(f"{self.name}: `fft_length` must be >= `sequence_length`. "
                             f"Received: sequence_length={self.sequence_length}, "
                             f"fft_length={fft_length}")
        self.window, self.sampling_rate, self.num_mel_bins = window, sampling_rate, num_mel_bins
        self.min_freq, self.max_freq = min_freq, max_freq or int(sampling_rate / 2)
        self.power_to_db, self.top_db, self.mag_exp = power_to_db, top_db, mag_exp
        self.min_power, self.ref_power = min_power, ref_power

    def call(self, inputs):
        real, imag = ops.stft(inputs, self.sequence_length, self.sequence_stride,
                              self.fft_length, window=self.window, center=True)
        spec = ops.power(ops.sqrt(ops.square(real) + ops.square(imag)), self.mag_exp)
        matrix = linear_to_mel_weight_matrix(self.num_mel_bins, self.fft_length // 2 + 1,
                                             self.sampling_rate, self.min_freq, self.max_freq,
                                             spec.dtype)
        spec = ops.tensordot(spec, matrix, axes=1)
        if self.power_to_db:
            spec = 10.0 * ops.log10(ops.maximum(spec, self.min_power))
            spec = spec - 10.0 * math.log10(max(abs(self.ref_power), self.min_power))
            spec = ops.maximum(spec, ops.max(spec) - self.top_db)
        return ops.swapaxes(spec, -1, -2)

    def compute_output_shape(self, input_shape):
        frames = None if input_shape[-1] is None else \
            (input_shape[-1] + self.sequence_stride + 1) // self.sequence_stride
        return tuple(input_shape[:-1]) + (self.num_mel_bins, frames)

    def get_config(self):
        return {**super().get_config(), "fft_length": self.fft_length,
                "sequence_stride": self.sequence_stride,
                "sequence_length": self.sequence_length, "window": self.window,
                "sampling_rate": self.sampling_rate, "num_mel_bins": self.num_mel_bins,
                "min_freq": self.min_freq, "max_freq": self.max_freq,
                "power_to_db": self.power_to_db, "top_db": self.top_db,
                "mag_exp": self.mag_exp, "min_power": self.min_power,
                "ref_power": self.ref_power}


_MODES = ("log", "magnitude", "psd", "real", "imag", "angle", "stft")


class STFTSpectrogram(Layer):
    """Spectrogram of multichannel signals by a strided 1-D convolution with DFT kernels
    ``(frame_length, 1, fft_length // 2 + 1)`` (``real_kernel``/``imag_kernel``, trainable,
    initialised by `kerasrs.initializers.STFT`), as Keras 3.

    Args:
        mode: "log" (default: log magnitude), "magnitude", "psd" (one-sided power), "real",
            "imag", "angle" or "stft" (real and imaginary parts concatenated).
        frame_length: samples per frame. frame_step: hop, default ``frame_length // 2``.
        fft_length: default the next power of two >= ``frame_length``.
        window, periodic, scaling: passed to `kerasrs.initializers.STFT`.
        padding: "valid" (default) or "same". expand_dims: keep channels on their own axis.
        data_format: "channels_last" (default: ``(batch, time, channels)``) or
            "channels_first".

    Shapes: channels_last ``(batch, time, channels)`` -> ``(batch, frames, channels * freqs)``
    (or ``(batch, frames, freqs, channels)`` with ``expand_dims``).

    Raises:
        ValueError: for a bad ``frame_step``, ``fft_length``, ``mode``, ``scaling`` or
            ``padding``, or inputs that are not rank 3.
    """

    def __init__(self, mode="log", frame_length=256, frame_step=None, fft_length=None,
                 window="hann", periodic=False, scaling="density", padding="valid",
                 expand_dims=False, data_format=None, **kwargs):
        super().__init__(**kwargs)
        problems = []
        if frame_step is not None and not 1 <= frame_step <= frame_length:
            problems.append(f"frame_step={frame_step} (must be in [1, frame_length])")
        if fft_length is not None and fft_length < frame_length:
            problems.append(f"fft_length={fft_length} (must be >= frame_length)")
        if mode not in _MODES:
            problems.append(f"mode={mode!r} (expected one of {list(_MODES)})")
        if scaling not in (None, "density", "spectrum"):
            problems.append(f"scaling={scaling!r} (expected None, 'density' or 'spectrum')")
        if padding not in ("valid", "same"):
            problems.append(f"padding={padding!r} (expected 'valid' or 'same')")
        if data_format not in (None, "channels_last", "channels_first"):
            problems.append(f"data_format={data_format!r}")
        if problems:
            raise ValueError(f"{self.name}: invalid arguments: " + "; ".join(problems))
        self.mode, self.frame_length, self.frame_step = mode, frame_length, frame_step
        self.fft_length, self.window, self.periodic = fft_length, window, periodic
        self.scaling, self.padding, self.expand_dims = scaling, padding, expand_dims
        self.data_format = data_format or "channels_last"
        self._step = frame_step or frame_length // 2
        self._fft = fft_length or 2 ** int(math.ceil(math.log2(frame_length)))

    def build(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError(f"{self.name}: expected inputs of rank 3 (batch, time, channels). "
                             f"Received: input shape {tuple(input_shape)}")
        shape = (self.frame_length, 1, self._fft // 2 + 1)
        if self.mode != "imag":
            self.real_kernel = self.add_weight(
                name="real_kernel", shape=shape,
                initializer=STFT("real", self.window, self.scaling, self.periodic))
        if self.mode != "real":
            self.imag_kernel = self.add_weight(
                name="imag_kernel", shape=shape,
                initializer=STFT("imag", self.window, self.scaling, self.periodic))
        super().build(input_shape)

    def _conv(self, x, kernel):
        """``(batch, channels, freqs, frames)`` from channels_last ``(batch, time, channels)``."""
        batch, time, channels = x.shape
        signals = ops.reshape(ops.transpose(x, (0, 2, 1)), (-1, time, 1))
        out = ops.conv(signals, ops.cast(kernel, x.dtype), strides=self._step,
                       padding=self.padding, data_format="channels_last")
        return ops.reshape(ops.transpose(out, (0, 2, 1)), (-1, channels) + tuple(out.shape[2:])
                           + (out.shape[1],))

    def _arrange(self, out):
        """Keras's output layout from ``(batch, channels, freqs, frames)``."""
        _, channels, freqs, frames = out.shape
        if self.expand_dims:
            return ops.transpose(out, (0, 3, 2, 1) if self.data_format == "channels_last"
                                 else (0, 1, 3, 2))
        out = ops.reshape(out, (-1, channels * freqs, frames))
        return ops.transpose(out, (0, 2, 1)) if self.data_format == "channels_last" else out

    def call(self, inputs):
        x = inputs if self.data_format == "channels_last" else ops.transpose(inputs, (0, 2, 1))
        real = self._conv(x, self.real_kernel) if self.mode != "imag" else None
        imag = self._conv(x, self.imag_kernel) if self.mode != "real" else None
        if self.mode in ("real", "imag"):
            return self._arrange(real if self.mode == "real" else imag)
        if self.mode == "angle":
            return self._arrange(ops.arctan2(imag, real))
        if self.mode == "stft":
            return self._arrange(ops.concatenate([real, imag], axis=2))
        power = ops.square(real) + ops.square(imag)
        if self.mode == "psd":  # one-sided: the inner bins count twice
            return self._arrange(power + ops.pad(power[:, :, 1:-1, :],
                                                 [(0, 0), (0, 0), (1, 1), (0, 0)]))
        magnitude = self._arrange(ops.sqrt(ops.maximum(power, 1e-7)))
        return magnitude if self.mode == "magnitude" else ops.log(ops.maximum(magnitude, 1e-7))

    def compute_output_shape(self, input_shape):
        if self.data_format == "channels_last":
            batch, time, channels = input_shape
        else:
            batch, channels, time = input_shape
        freqs = (self._fft // 2 + 1) * (2 if self.mode == "stft" else 1)
        if time is None:
            frames = None
        elif self.padding == "same":
            frames = -(-time // self._step)
        else:
            frames = (time - self.frame_length) // self._step + 1
        if self.expand_dims:
            return (batch, frames, freqs, channels) if self.data_format == "channels_last" \
                else (batch, channels, frames, freqs)
        return (batch, frames, channels * freqs) if self.data_format == "channels_last" \
            else (batch, channels * freqs, frames)

    def get_config(self):
        return {**super().get_config(), "mode": self.mode, "frame_length": self.frame_length,
                "frame_step": self.frame_step, "fft_length": self.fft_length,
                "window": self.window, "periodic": self.periodic, "scaling": self.scaling,
                "padding": self.padding, "data_format": self.data_format,
                "expand_dims": self.expand_dims}
