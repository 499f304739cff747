"""Fourier transforms with Keras's ``keras.ops`` conventions: complex values travel as a pair of
real tensors ``(real, imag)``. The transforms are linear, so each backward pass is the adjoint
transform; the short-time transforms are framing + window + `rfft` (and the reverse), composed of
differentiable ops."""

import numpy as np

from kerasrs.autodiff import Function, convert_to_tensor
from kerasrs.ops import core, layout, math
from kerasrs.ops.core import constant, getitem
from kerasrs.ops.dispatch import op


def _split(packed):
    return getitem(packed, (Ellipsis, 0)), getitem(packed, (Ellipsis, 1))


def check_rank(op, shape, rank):
    """Raise ValueError (Keras's phrase) when ``shape`` has fewer than ``rank`` axes."""
    if len(shape) < rank:
        raise ValueError(f"{op}: Input should have rank >= {rank}. Received: input.shape="
                         f"{tuple(shape)}")


def _pair(x, op, rank=1):
    """``(real, imag)`` as float Tensors of one shape with at least ``rank`` axes.

    Raises:
        ValueError: naming ``op``, unless ``x`` is a tuple or list of two tensors of one shape
            with at least ``rank`` axes.
    """
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise ValueError(f"{op}: Input `x` should be a tuple of two tensors - real and "
                         f"imaginary. Received: x={x!r}")
    re, im = convert_to_tensor(x[0]), convert_to_tensor(x[1])
    if re.shape != im.shape:
        raise ValueError(f"{op}: Input `x` should be a tuple of two tensors - real and "
                         f"imaginary. Both the real and imaginary parts should have the same "
                         f"shape. Received: shapes {re.shape} and {im.shape}")
    check_rank(op, re.shape, rank)
    if re.dtype.kind != "f":
        re = math.cast(re, "float32")
    if im.dtype.kind != "f":
        im = math.cast(im, re.dtype)
    return re, im


def _pack(xp, z, dtype):
    return xp.stack([z.real, z.imag], axis=-1).astype(dtype)


class FFT(Function):
    """Complex FFT over the last ``ndim`` axes; ``inverse`` for the inverse transform."""

    def __init__(self, ndim, inverse):
        self.axes, self.inverse = tuple(range(-ndim, 0)), inverse

    def forward(self, re, im):
        xp = self.xp
        fn = xp.fft.ifftn if self.inverse else xp.fft.fftn
        self.n = int(np.prod([re.shape[a] for a in self.axes]))
        return _pack(xp, fn(re + 1j * im, axes=self.axes), re.dtype)

    def backward(self, gy):
        # adjoint of F is n * F^-1, of F^-1 is F / n; a real loss sees g = g_re + i g_im
        xp = self.xp
        g = gy[..., 0] + 1j * gy[..., 1]
        adj = xp.fft.fftn(g, axes=self.axes) / self.n if self.inverse else \
            xp.fft.ifftn(g, axes=self.axes) * self.n
        return adj.real.astype(gy.dtype), adj.imag.astype(gy.dtype)


@op
def fft(x):
    """FFT over the last axis of the complex input ``x = (real, imag)``; returns a pair."""
    return _split(FFT(1, False).apply(*_pair(x, "fft")))


@op
def fft2(x):
    """2-D FFT over the last two axes of ``(real, imag)``; returns a pair."""
    return _split(FFT(2, False).apply(*_pair(x, "fft2", 2)))


@op
def ifft2(x):
    """Inverse 2-D FFT over the last two axes of ``(real, imag)``; returns a pair."""
    return _split(FFT(2, True).apply(*_pair(x, "ifft2", 2)))


class RFFT(Function):
    def __init__(self, n):
        self.n = n

    def forward(self, x):
        xp = self.xp
        self.length = x.shape[-1]
        return _pack(xp, xp.fft.rfft(x, n=self.n, axis=-1), x.dtype)

    def backward(self, gy):
        xp = self.xp
        n = self.n or self.length
        g = gy[..., 0] + 1j * gy[..., 1]
        full = xp.zeros(g.shape[:-1] + (n,), dtype=g.dtype)
        full[..., :g.shape[-1]] = g
        gx = (xp.fft.ifft(full, axis=-1) * n).real  # adjoint of the truncated DFT
        out = xp.zeros(gy.shape[:-2] + (self.length,), dtype=gy.dtype)
        m = min(n, self.length)
        out[..., :m] = gx[..., :m]
        return (out,)


@op
def rfft(x, fft_length=None):
    """FFT of a real signal over its last axis: ``(real, imag)`` of length
    ``fft_length // 2 + 1`` (the signal is cut or zero-padded to ``fft_length``)."""
    x = convert_to_tensor(x)
    check_rank("rfft", x.shape, 1)
    if x.dtype.kind != "f":
        x = math.cast(x, "float32")
    return _split(RFFT(fft_length).apply(x))


class IRFFT(Function):
    def __init__(self, n):
        self.n = n

    def forward(self, re, im):
        xp = self.xp
        self.bins = re.shape[-1]
        y = xp.fft.irfft(re + 1j * im, n=self.n, axis=-1)
        self.length = y.shape[-1]
        return y.astype(re.dtype)

    def backward(self, gy):
        xp, n = self.xp, self.length
        z = xp.fft.rfft(gy, axis=-1)  # gy of length n: n // 2 + 1 bins
        c = np.full(n // 2 + 1, 2.0)
        c[0] = 1.0
        if n % 2 == 0:
            c[-1] = 1.0
        z = z * xp.asarray(c) / n
        out = xp.zeros(gy.shape[:-1] + (self.bins,), dtype=z.dtype)
        m = min(self.bins, z.shape[-1])
        out[..., :m] = z[..., :m]
        return out.real.astype(gy.dtype), out.imag.astype(gy.dtype)


@op
def irfft(x, fft_length=None):
    """Inverse of `rfft`: a real signal of length ``fft_length`` (default ``2 * (bins - 1)``)
    from ``(real, imag)``. The imaginary parts of the zero and Nyquist bins are ignored."""
    return IRFFT(fft_length).apply(*_pair(x, "irfft"))


def _window(window, length, dtype):
    if window is None:
        return None
    if isinstance(window, str):
        if window not in ("hann", "hamming"):
            raise ValueError(f"If a string is passed to `window`, it must be 'hann' or "
                             f"'hamming' (else an array or None). Received: window={window!r}")
        n = np.arange(length)
        a = 0.5 if window == "hann" else 0.54
        return (a - (1 - a) * np.cos(2 * np.pi * n / length)).astype(dtype)  # periodic window
    return np.asarray(convert_to_tensor(window).numpy(), dtype=dtype)


@op
def extract_sequences(x, sequence_length, sequence_stride):
    """Frames of the last axis: (..., n) -> (..., num_frames, sequence_length), with
    ``num_frames = 1 + (n - sequence_length) // sequence_stride``."""
    x = convert_to_tensor(x)
    check_rank("extract_sequences", x.shape, 1)
    n = x.shape[-1]
    frames = 1 + (n - sequence_length) // sequence_stride
    idx = np.arange(frames)[:, None] * sequence_stride + np.arange(sequence_length)[None, :]
    return layout.take(x, idx, axis=-1)


def _padded_window(window, sequence_length, fft_length, dtype):
    """The window (ones for None) zero-padded on both sides to ``fft_length``, centered."""
    win = _window(window, sequence_length, dtype)
    win = np.ones(sequence_length, dtype) if win is None else win
    if win.shape != (sequence_length,):
        raise ValueError(f"The shape of `window` must be equal to ({sequence_length},) "
                         f"(sequence_length,). Received: window shape {win.shape}")
    left = (fft_length - sequence_length) // 2
    return np.pad(win, (left, fft_length - sequence_length - left))


@op
def stft(x, sequence_length, sequence_stride, fft_length, window="hann", center=True):
    """Short-time Fourier transform of real signals (..., n), as Keras: frames of
    ``fft_length`` samples every ``sequence_stride``, times the ``sequence_length`` window
    zero-padded (centered) to ``fft_length``; returns ``(real, imag)`` of shape
    (..., frames, fft_length // 2 + 1). With ``center`` the signal is first reflect-padded by
    ``fft_length // 2`` on both sides.

    Raises:
        ValueError: if ``fft_length < sequence_length`` or the window has the wrong size.
    """
    if fft_length < sequence_length:
        raise ValueError(f"stft: `fft_length` must equal or exceed `sequence_length`. Received: "
                         f"sequence_length={sequence_length}, fft_length={fft_length}")
    x = convert_to_tensor(x)
    if x.dtype.kind != "f":
        x = math.cast(x, "float32")
    if center:
        pad = [(0, 0)] * (x.ndim - 1) + [(fft_length // 2, fft_length // 2)]
        x = layout.pad(x, pad, mode="reflect")
    frames = extract_sequences(x, fft_length, sequence_stride)
    win = _padded_window(window, sequence_length, fft_length, x.dtype)
    frames = core.multiply(frames, constant(x.backend.asarray(win), x.backend))
    return rfft(frames, fft_length)


@op
def istft(x, sequence_length, sequence_stride, fft_length, length=None, window="hann",
          center=True):
    """Inverse of `stft`: windowed overlap-add of the inverse FFTs, divided by the summed
    squared window (the least-squares inverse, Griffin & Lim 1984)."""
    _pair(x, "istft", 2)
    frames = irfft(x, fft_length)
    n_frames = frames.shape[-2]
    dtype = frames.dtype
    win = _padded_window(window, sequence_length, fft_length, dtype)
    frames = core.multiply(frames, constant(frames.backend.asarray(win), frames.backend))
    total = (n_frames - 1) * sequence_stride + fft_length
    # overlap-add as one matmul with a fixed 0/1 placement matrix
    place = np.zeros((n_frames * fft_length, total), dtype)
    cols = (np.arange(n_frames)[:, None] * sequence_stride + np.arange(fft_length)).ravel()
    place[np.arange(n_frames * fft_length), cols] = 1
    flat = layout.reshape(frames, frames.shape[:-2] + (n_frames * fft_length,))
    y = core.matmul(flat, constant(frames.backend.asarray(place), frames.backend))
    norm = np.tile(win * win, n_frames) @ place
    norm = np.where(norm > 1e-10, norm, 1.0).astype(dtype)
    y = core.divide(y, constant(frames.backend.asarray(norm), frames.backend))
    if center:
        y = getitem(y, (Ellipsis, slice(fft_length // 2, total - fft_length // 2)))
    if length is not None:
        y = getitem(y, (Ellipsis, slice(0, length)))
    return y
