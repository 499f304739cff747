"""Weight initializers with Keras 3's names, formulas and defaults.

Values are drawn on the host with a NumPy ``Generator`` (in float64, then cast) and transferred
by the caller, so one seed gives the same weights on the CPU and the GPU.

Seeding, as in Keras 3: an initializer given an int ``seed`` returns the same values on every
call. With ``seed=None`` each call draws a fresh seed from a global generator, which
``kerasrs.utils.set_random_seed(seed)`` (via `set_global_seed`) makes reproducible.

Fans (`compute_fans`), as Keras computes them: a 1-D shape ``(n,)`` has fan_in = fan_out = n;
a 2-D kernel ``(in, out)`` has fan_in = in, fan_out = out; a convolution kernel
``(*spatial, in, out)`` has fan_in = in * receptive field and fan_out = out * receptive field,
where the receptive field is the product of the spatial sizes.
"""

import math

import numpy as np

from kerasrs import registry
from kerasrs.backend import standardize_dtype

_global = [np.random.default_rng()]
_TRUNCATION_STDDEV = 0.87962566103423978  # stddev of a unit normal truncated to [-2, 2]


def set_global_seed(seed):
    """Re-seed the generator behind ``seed=None`` initializers (called by set_random_seed)."""
    _global[0] = np.random.default_rng(seed)


def compute_fans(shape):
    """``(fan_in, fan_out)`` of a weight shape, as Keras computes them (see module docstring)."""
    shape = tuple(shape)
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return int(shape[0]), int(shape[0])
    if len(shape) == 2:
        return int(shape[0]), int(shape[1])
    receptive = int(np.prod(shape[:-2]))
    return int(shape[-2] * receptive), int(shape[-1] * receptive)


class Initializer:
    """Base class: ``initializer(shape, dtype=None)`` returns a NumPy array of that shape."""

    def __call__(self, shape, dtype=None):
        raise NotImplementedError

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"{type(self).__name__}({self.get_config()})"


def _dtype(dtype):
    return standardize_dtype(dtype)


class Constant(Initializer):
    """Every element equal to ``value`` (default 0.0)."""

    def __init__(self, value=0.0):
        self.value = value

    def __call__(self, shape, dtype=None):
        return np.full(tuple(shape), self.value, dtype=_dtype(dtype))

    def get_config(self):
        return {"value": self.value}


class Zeros(Constant):
    """All zeros."""

    def __init__(self):
        super().__init__(0.0)

    def get_config(self):
        return {}


class Ones(Constant):
    """All ones."""

    def __init__(self):
        super().__init__(1.0)

    def get_config(self):
        return {}


class RandomInitializer(Initializer):
    """Base of the random initializers: holds ``seed`` and hands out the generator per call."""

    def __init__(self, seed=None):
        if seed is not None and not isinstance(seed, (int, np.integer)):
            raise ValueError(f"{type(self).__name__}: `seed` must be an int or None. "
                             f"Received: seed={seed!r}")
        self.seed = seed

    def _rng(self):
        if self.seed is not None:
            return np.random.default_rng(int(self.seed))
        return np.random.default_rng(int(_global[0].integers(0, 2**63 - 1)))

    def get_config(self):
        return {"seed": self.seed}


def _truncated_normal(rng, shape, mean, stddev):
    """Normal samples, redrawn until every one is within two standard deviations."""
    x = rng.standard_normal(shape)
    bad = np.abs(x) > 2
    while bad.any():
        x[bad] = rng.standard_normal(int(bad.sum()))
        bad = np.abs(x) > 2
    return mean + stddev * x


class RandomNormal(RandomInitializer):
    """Normal with ``mean`` (default 0.0) and ``stddev`` (default 0.05)."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape, dtype=None):
        x = self._rng().normal(self.mean, self.stddev, tuple(shape))
        return np.asarray(x).astype(_dtype(dtype))

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class TruncatedNormal(RandomNormal):
    """Normal with ``mean`` and ``stddev`` (defaults 0.0, 0.05), values beyond 2 stddev redrawn."""

    def __call__(self, shape, dtype=None):
        x = _truncated_normal(self._rng(), tuple(shape), self.mean, self.stddev)
        return np.asarray(x).astype(_dtype(dtype))


class RandomUniform(RandomInitializer):
    """Uniform on ``[minval, maxval)`` (defaults -0.05, 0.05)."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        super().__init__(seed)
        self.minval, self.maxval = minval, maxval

    def __call__(self, shape, dtype=None):
        x = self._rng().uniform(self.minval, self.maxval, tuple(shape))
        return np.asarray(x).astype(_dtype(dtype))

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class VarianceScaling(RandomInitializer):
    """Samples scaled to the weight's fans (Keras's formula).

    With ``n`` = fan_in, fan_out or their mean (``mode``): "truncated_normal" draws a normal
    truncated at 2 stddev with stddev ``sqrt(scale / n) / 0.8796...`` (so the truncated
    distribution has variance ``scale / n``); "untruncated_normal" (or "normal") a normal with
    stddev ``sqrt(scale / n)``; "uniform" a uniform on ``[-limit, limit]``,
    ``limit = sqrt(3 * scale / n)``.

    Raises:
        ValueError: for ``scale <= 0`` or an unknown ``mode`` or ``distribution``.
    """

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 input_axes=None, output_axes=None):
        super().__init__(seed)
        _check_no_axes(type(self).__name__, input_axes, output_axes)
        if scale <= 0:
            raise ValueError(f"VarianceScaling: `scale` must be positive. Received: scale={scale}")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError("VarianceScaling: `mode` must be 'fan_in', 'fan_out' or 'fan_avg'. "
                             f"Received: mode={mode!r}")
        distribution = distribution.lower()
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in ("truncated_normal", "untruncated_normal", "uniform"):
            raise ValueError("VarianceScaling: `distribution` must be 'truncated_normal', "
                             f"'untruncated_normal' or 'uniform'. Received: {distribution!r}")
        self.scale, self.mode, self.distribution = scale, mode, distribution

    def __call__(self, shape, dtype=None):
        shape = tuple(shape)
        fan_in, fan_out = compute_fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        scale = self.scale / max(1.0, n)
        rng = self._rng()
        if self.distribution == "truncated_normal":
            x = _truncated_normal(rng, shape, 0.0, math.sqrt(scale) / _TRUNCATION_STDDEV)
        elif self.distribution == "untruncated_normal":
            x = rng.normal(0.0, math.sqrt(scale), shape)
        else:
            limit = math.sqrt(3.0 * scale)
            x = rng.uniform(-limit, limit, shape)
        return np.asarray(x).astype(_dtype(dtype))

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed}


def _check_no_axes(who, input_axes, output_axes):
    """Keras 3.15 configs carry ``input_axes``/``output_axes`` (EinsumDense fans); only None is
    supported here."""
    if input_axes is not None or output_axes is not None:
        raise NotImplementedError(f"{who}: input_axes/output_axes are not supported. Received: "
                                  f"input_axes={input_axes!r}, output_axes={output_axes!r}")


def _preset(name, scale, mode, distribution, doc):
    def __init__(self, seed=None, input_axes=None, output_axes=None):
        VarianceScaling.__init__(self, scale, mode, distribution, seed, input_axes, output_axes)

    def get_config(self):
        return {"seed": self.seed}

    return type(name, (VarianceScaling,), {"__init__": __init__, "get_config": get_config,
                                           "__doc__": doc, "__module__": __name__})


GlorotUniform = _preset("GlorotUniform", 1.0, "fan_avg", "uniform",
                        "Uniform on ±sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010).")
GlorotNormal = _preset("GlorotNormal", 1.0, "fan_avg", "truncated_normal",
                       "Truncated normal, variance 2 / (fan_in + fan_out) (Glorot & Bengio, 2010).")
HeUniform = _preset("HeUniform", 2.0, "fan_in", "uniform",
                    "Uniform on ±sqrt(6 / fan_in) (He et al., 2015).")
HeNormal = _preset("HeNormal", 2.0, "fan_in", "truncated_normal",
                   "Truncated normal, variance 2 / fan_in (He et al., 2015).")
LecunUniform = _preset("LecunUniform", 1.0, "fan_in", "uniform",
                       "Uniform on ±sqrt(3 / fan_in) (LeCun et al., 1998).")
LecunNormal = _preset("LecunNormal", 1.0, "fan_in", "truncated_normal",
                      "Truncated normal, variance 1 / fan_in (LeCun et al., 1998).")


class Orthogonal(RandomInitializer):
    """A (semi-)orthogonal matrix times ``gain`` (Saxe et al., 2014), as Keras computes it.

    The shape is flattened to ``(prod(shape[:-1]), shape[-1])``; a normal matrix of the larger
    by the smaller side is QR-decomposed, Q's columns take the signs of R's diagonal, and Q is
    transposed if there are fewer rows than columns.
    """

    def __init__(self, gain=1.0, seed=None):
        super().__init__(seed)
        self.gain = gain

    def __call__(self, shape, dtype=None):
        shape = tuple(shape)
        if len(shape) < 2:
            raise ValueError("Orthogonal: the shape must have at least 2 axes. "
                             f"Received: shape={shape}")
        rows, cols = int(np.prod(shape[:-1])), shape[-1]
        a = self._rng().standard_normal((max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return (self.gain * q).reshape(shape).astype(_dtype(dtype))

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}


class Identity(Initializer):
    """``gain`` times the identity matrix (2-D shapes only; rectangular allowed)."""

    def __init__(self, gain=1.0):
        self.gain = gain

    def __call__(self, shape, dtype=None):
        shape = tuple(shape)
        if len(shape) != 2:
            raise ValueError(f"Identity: only 2-D shapes are supported. Received: shape={shape}")
        return (self.gain * np.eye(*shape)).astype(_dtype(dtype))

    def get_config(self):
        return {"gain": self.gain}


IdentityInitializer = Identity

_ALIASES = {
    "zeros": Zeros, "ones": Ones, "constant": Constant, "random_normal": RandomNormal,
    "normal": RandomNormal, "random_uniform": RandomUniform, "uniform": RandomUniform,
    "truncated_normal": TruncatedNormal, "glorot_uniform": GlorotUniform,
    "glorot_normal": GlorotNormal, "he_uniform": HeUniform, "he_normal": HeNormal,
    "lecun_uniform": LecunUniform, "lecun_normal": LecunNormal,
    "variance_scaling": VarianceScaling, "orthogonal": Orthogonal, "identity": Identity,
}
_CLASSES = {cls.__name__: cls for cls in set(_ALIASES.values())}
_CLASSES["IdentityInitializer"] = Identity


def get(identifier):
    """An `Initializer` from a name ("glorot_uniform", "GlorotUniform"), a config dict, an
    `Initializer` or a callable ``(shape, dtype) -> array`` (returned as is).

    Raises:
        ValueError: for an unknown name or a value of another type.
    """
    if identifier is None:
        return None
    if isinstance(identifier, Initializer) or (callable(identifier)
                                               and not isinstance(identifier, type)):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        cls = _ALIASES.get(identifier) or _CLASSES.get(identifier)
        if cls is None:
            raise ValueError(f"Unknown initializer {identifier!r}. Known names: "
                             f"{sorted(_ALIASES)}. Received: {identifier!r}")
        return cls()
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    raise ValueError(f"Could not interpret initializer identifier. Received: {identifier!r}")


def serialize(initializer):
    """Keras's serialized form ``{"module", "class_name", "config", "registered_name"}``."""
    if initializer is None:
        return None
    if not isinstance(initializer, Initializer):
        raise ValueError(f"serialize: cannot serialize a plain callable initializer. "
                         f"Received: {initializer!r}")
    return {"module": "keras.initializers", "class_name": type(initializer).__name__,
            "config": initializer.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """An `Initializer` from `serialize`'s dict (also Keras 2's ``{class_name, config}``)."""
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _CLASSES.get(name) or _ALIASES.get(name)
    if cls is None:
        raise ValueError(f"deserialize: unknown initializer class. Received: class_name={name!r}")
    return cls.from_config(dict(config.get("config") or {}))


# Keras's lower-case aliases (``keras.initializers.glorot_uniform`` is the class) and names.
OrthogonalInitializer = Orthogonal
globals().update({name: cls for name, cls in _ALIASES.items()
                  if name not in ("normal", "uniform")})


_WINDOWS = {"hann": np.hanning, "hamming": np.hamming, "blackman": np.blackman,
            "bartlett": np.bartlett}


class STFT(Initializer):
    """Kernels of a 1-D convolution that computes a short-time Fourier transform (Keras's
    ``STFTInitializer``): for shape ``(frame_length, input_channels, fft_bins)`` the real
    (``cos``) or imaginary (``sin``) parts of ``exp(-2 pi i t f / (2 (fft_bins - 1)))``, times the
    window and divided by its L2 norm ("density") or its sum ("spectrum").

    Args:
        side: "real" or "imag".
        window: "hann", "hamming", "blackman", "bartlett", an array of length frame_length, or
            None.
        scaling: "density", "spectrum" or None.
        periodic: use the periodic (DFT-even) form of a named window.

    Raises:
        ValueError: for an unknown side, window or scaling.
    """

    def __init__(self, side="real", window="hann", scaling="density", periodic=False):
        if side not in ("real", "imag"):
            raise ValueError(f"STFT: side should be 'real' or 'imag'. Received: {side!r}")
        if isinstance(window, str) and window not in _WINDOWS:
            raise ValueError(f"STFT: unknown window {window!r}; use one of {sorted(_WINDOWS)}")
        if scaling not in (None, "density", "spectrum"):
            raise ValueError(f"STFT: scaling must be None, 'density' or 'spectrum'. Received: "
                             f"{scaling!r}")
        self.side, self.window, self.scaling, self.periodic = side, window, scaling, periodic

    def __call__(self, shape, dtype=None):
        frame_length, _, bins = shape
        freq = np.arange(bins).reshape(1, 1, bins) / ((bins - 1) * 2)
        time = np.arange(frame_length).reshape(frame_length, 1, 1)
        args = -2 * time * freq * np.pi
        kernel = np.cos(args) if self.side == "real" else np.sin(args)
        if self.window is not None:
            if isinstance(self.window, str):
                make = _WINDOWS[self.window]
                win = make(frame_length + 1)[:-1] if self.periodic else make(frame_length)
            else:
                win = np.asarray(self.window, dtype="float64")
            win = win.reshape(frame_length, 1, 1)
            scale = {"density": np.sqrt((win ** 2).sum()), "spectrum": np.abs(win).sum(),
                     None: 1.0}[self.scaling]
            kernel = kernel * win / scale
        return np.broadcast_to(kernel, tuple(shape)).astype(_dtype(dtype))

    def get_config(self):
        window = self.window if self.window is None or isinstance(self.window, str) else \
            np.asarray(self.window).tolist()
        return {"side": self.side, "window": window, "periodic": self.periodic,
                "scaling": self.scaling}


STFTInitializer = stft = STFT
_CLASSES["STFT"] = _CLASSES["STFTInitializer"] = STFT
_ALIASES["stft"] = STFT


registry.register_kind(Initializer, serialize)
