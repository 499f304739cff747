"""Weight initializers with Keras 3's names, formulas and defaults.

Values are drawn on the host with a NumPy ``Generator`` (in float64, then cast) and transferred
by the caller, so one seed gives the same weights on the CPU and the GPU.

Seeding, as in Keras 3: an initializer given an int ``seed`` returns the same values on every
call; given a `kerasrs.random.SeedGenerator` it returns new, reproducible values at each call
(the generator advances). With ``seed=None`` each call draws a fresh seed from a global
generator, which ``kerasrs.utils.set_random_seed(seed)`` (via `set_global_seed`) makes
reproducible.

Fans (`compute_fans`), as Keras computes them: a 1-D shape ``(n,)`` has fan_in = fan_out = n;
a 2-D kernel ``(in, out)`` has fan_in = in, fan_out = out; a convolution kernel
``(*spatial, in, out)`` has fan_in = in * receptive field and fan_out = out * receptive field,
where the receptive field is the product of the spatial sizes. With ``input_axes`` and
``output_axes`` (an ``EinsumDense`` kernel, say) the fans are the products of those axes.
"""

import math
import re

import numpy as np

from kerasrs import registry
from kerasrs.backend import standardize_dtype

_global = [np.random.default_rng()]
_TRUNCATION_STDDEV = 0.87962566103423978  # stddev of a unit normal truncated to [-2, 2]


def set_global_seed(seed):
    """Re-seed the generator behind ``seed=None`` initializers (called by set_random_seed)."""
    _global[0] = np.random.default_rng(seed)


def compute_fans(shape, input_axes=None, output_axes=None):
    """``(fan_in, fan_out)`` of a weight shape, as Keras computes them (see module docstring).

    Args:
        shape: tuple of ints.
        input_axes, output_axes: sequences of axes of ``shape``; when both are given the fans
            are the products of the sizes along them, else they are ignored (as in Keras).
    """
    shape = tuple(shape)
    if input_axes is not None and output_axes is not None:
        return (int(np.prod([shape[a] for a in input_axes])),
                int(np.prod([shape[a] for a in output_axes])))
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
    """``value`` broadcast to the requested shape (default 0.0).

    ``value`` may be a number or an array (NumPy array, list, `Tensor`) that broadcasts to the
    shape; an array is serialized as Keras writes one: ``{"class_name": "__numpy__", "config":
    {"value": [...], "dtype": ...}}`` (``"__tensor__"`` for a Tensor).

    Raises:
        ValueError: at call time, if ``value`` does not broadcast to the shape.
    """

    def __init__(self, value=0.0):
        self.value = value

    def __call__(self, shape, dtype=None):
        value = np.asarray(getattr(self.value, "numpy", lambda: self.value)())
        try:
            return np.array(np.broadcast_to(value, tuple(shape)), dtype=_dtype(dtype))
        except ValueError:
            raise ValueError(f"Constant: the value of shape {value.shape} does not broadcast to "
                             f"the shape {tuple(shape)}. Received: shape={tuple(shape)}") from None

    def get_config(self):
        return {"value": _array_config(self.value)}

    @classmethod
    def from_config(cls, config):
        return cls(_array_from_config(config.get("value", 0.0)))


def _array_config(value):
    """A number as is; an array or Tensor as Keras's ``__numpy__`` / ``__tensor__`` dict."""
    if isinstance(value, (np.ndarray, np.generic)) or hasattr(value, "numpy"):
        kind = "__numpy__" if isinstance(value, (np.ndarray, np.generic)) else "__tensor__"
        array = np.asarray(value if kind == "__numpy__" else value.numpy())
        return {"class_name": kind, "config": {"value": array.tolist(),
                                               "dtype": array.dtype.name}}
    return value


def _array_from_config(value):
    if isinstance(value, dict) and value.get("class_name") in ("__numpy__", "__tensor__"):
        return np.asarray(value["config"]["value"], dtype=value["config"].get("dtype"))
    return value


class Zeros(Constant):
    """All zeros."""

    def __init__(self):
        super().__init__(0.0)

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class Ones(Constant):
    """All ones."""

    def __init__(self):
        super().__init__(1.0)

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


# kerasrs.random's SeedGenerator class, which that package (a level above) registers here
_SEED_GENERATOR = []


def register_seed_generator(cls):
    """Let initializers take instances of ``cls`` (``kerasrs.random.SeedGenerator``) as seeds."""
    _SEED_GENERATOR[:] = [cls]


class RandomInitializer(Initializer):
    """Base of the random initializers: holds ``seed`` and hands out the generator per call.

    Args:
        seed: None, an int, a `kerasrs.random.SeedGenerator`, or a serialized SeedGenerator
            (the dict Keras writes).

    Raises:
        ValueError: for any other seed.
    """

    def __init__(self, seed=None):
        if isinstance(seed, dict) and seed.get("class_name") == "SeedGenerator" and \
                _SEED_GENERATOR:
            seed = _SEED_GENERATOR[0].from_config(dict(seed.get("config") or {}))
        if seed is not None and not isinstance(seed, (int, np.integer, *_SEED_GENERATOR)):
            raise ValueError(f"{type(self).__name__}: `seed` must be an int, a SeedGenerator or "
                             f"None. Received: seed={seed!r}")
        self.seed = seed

    def _rng(self):
        if isinstance(self.seed, tuple(_SEED_GENERATOR)):
            return np.random.default_rng([int(v) for v in self.seed.next()])
        if self.seed is not None:
            return np.random.default_rng(int(self.seed))
        return np.random.default_rng(int(_global[0].integers(0, 2**63 - 1)))

    def get_config(self):
        return {"seed": _seed_config(self.seed)}


def _seed_config(seed):
    """An int seed as is; a SeedGenerator in Keras's serialized form."""
    if isinstance(seed, tuple(_SEED_GENERATOR)):
        return {"module": "keras.random", "class_name": "SeedGenerator",
                "config": seed.get_config(), "registered_name": None}
    return seed


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
        return {**super().get_config(), "mean": self.mean, "stddev": self.stddev}


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
        return {**super().get_config(), "minval": self.minval, "maxval": self.maxval}


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
        self.input_axes, self.output_axes = input_axes, output_axes

    def __call__(self, shape, dtype=None):
        shape = tuple(shape)
        fan_in, fan_out = compute_fans(shape, self.input_axes, self.output_axes)
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
        return {**super().get_config(), "scale": self.scale, "mode": self.mode,
                "distribution": self.distribution, "input_axes": self.input_axes,
                "output_axes": self.output_axes}


def _preset(name, scale, mode, distribution, doc):
    def __init__(self, seed=None, input_axes=None, output_axes=None):
        VarianceScaling.__init__(self, scale, mode, distribution, seed, input_axes, output_axes)

    def get_config(self):
        return {"seed": _seed_config(self.seed), "input_axes": self.input_axes,
                "output_axes": self.output_axes}

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
        return {**super().get_config(), "gain": self.gain}


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



# Windows of the STFT initializer: SciPy's ``get_window`` names that need no parameter, from
# their formulas (Harris 1978; Nuttall 1981; Doerry 2017 for Taylor), in NumPy.
_COSINE_SUMS = {"hann": (0.5, 0.5), "hamming": (0.54, 0.46), "blackman": (0.42, 0.50, 0.08),
                "blackmanharris": (0.35875, 0.48829, 0.14128, 0.01168),
                "nuttall": (0.3635819, 0.4891775, 0.1365995, 0.0106411),
                "flattop": (0.21557895, 0.41663158, 0.277263158, 0.083578947, 0.006947368)}
_WINDOW_ALIASES = {
    "han": "hann", "ham": "hamming", "hamm": "hamming", "black": "blackman", "blk": "blackman",
    "blackharr": "blackmanharris", "bkh": "blackmanharris", "nut": "nuttall", "nutl": "nuttall",
    "flat": "flattop", "flt": "flattop", "box": "boxcar", "ones": "boxcar", "rect": "boxcar",
    "rectangular": "boxcar", "bart": "bartlett", "brt": "bartlett", "tri": "triang",
    "triangle": "triang", "bman": "bohman", "bmn": "bohman", "halfcosine": "cosine",
    "par": "parzen", "parz": "parzen", "brthan": "barthann", "bth": "barthann", "tuk": "tukey",
    "poisson": "exponential", "sinc": "lanczos", "taylorwin": "taylor"}


def _taylor(m, nbar=4, sll=30.0):
    """Taylor window (Doerry 2017, "Catalog of Window Taper Functions", eq. 66-70): ``nbar - 1``
    cosine terms for side lobes ``sll`` dB down, scaled to 1 at the centre."""
    a = np.arccosh(10 ** (sll / 20)) / np.pi
    sigma2 = nbar ** 2 / (a ** 2 + (nbar - 0.5) ** 2)
    k = np.arange(1, nbar)
    f = np.array([(-1) ** (i + 1) / 2 * np.prod(1 - i * i / sigma2 / (a ** 2 + (k - 0.5) ** 2))
                  / np.prod(1 - i * i / (k[k != i] ** 2.0)) for i in k])

    def w(n):
        return 1 + 2 * np.cos(2 * np.pi * np.outer(n - m / 2 + 0.5, k) / m) @ f
    return w(np.arange(m)) / w(np.array([(m - 1) / 2]))[0]


def _symmetric_window(name, m):
    """The symmetric window ``name`` of ``m > 1`` points."""
    n = np.arange(m)
    if name in _COSINE_SUMS:
        phase = np.linspace(-np.pi, np.pi, m)
        return sum(c * np.cos(k * phase) for k, c in enumerate(_COSINE_SUMS[name]))
    if name == "boxcar":
        return np.ones(m)
    if name == "bartlett":
        return np.where(n <= (m - 1) / 2, 2 * n / (m - 1), 2 - 2 * n / (m - 1))
    if name == "triang":
        half = np.arange(1, (m + 1) // 2 + 1)
        up = (2 * half - 1) / m if m % 2 == 0 else 2 * half / (m + 1)
        return np.concatenate([up, up[::-1] if m % 2 == 0 else up[-2::-1]])
    if name == "bohman":
        x = np.abs(np.linspace(-1, 1, m)[1:-1])
        return np.concatenate([[0.0], (1 - x) * np.cos(np.pi * x) + np.sin(np.pi * x) / np.pi,
                               [0.0]])
    if name == "cosine":
        return np.sin(np.pi / m * (n + 0.5))
    if name == "parzen":
        x = np.abs(n - (m - 1) / 2) / (m / 2)
        return np.where(x <= 0.5 * (m - 1) / m, 1 - 6 * x ** 2 + 6 * x ** 3, 2 * (1 - x) ** 3)
    if name == "barthann":
        x = n / (m - 1) - 0.5
        return 0.62 - 0.48 * np.abs(x) + 0.38 * np.cos(2 * np.pi * x)
    if name == "tukey":  # alpha = 0.5: cosine tapers over a quarter of the window at each end
        x = n / (m - 1)
        edge = np.minimum(x, 1 - x)
        return np.where(edge < 0.25, 0.5 * (1 - np.cos(np.pi * edge / 0.25)), 1.0)
    if name == "exponential":  # tau = 1, centred
        return np.exp(-np.abs(n - (m - 1) / 2))
    if name == "lanczos":
        return np.sinc(2 * n / (m - 1) - 1)
    return _taylor(m)


_WINDOW_NAMES = sorted(set(_COSINE_SUMS) | set(_WINDOW_ALIASES.values()))


def get_window(name, length, periodic=False):
    """SciPy's ``get_window(name, length, fftbins=periodic)`` for the windows that need no
    parameter (``"hann"``, ``"tukey"``, ``"flattop"``, ... and SciPy's short aliases).

    Raises:
        ValueError: for another name.
    """
    canonical = _WINDOW_ALIASES.get(name, name)
    if canonical not in _WINDOW_NAMES:
        raise ValueError(f"STFT: unknown window {name!r}; use one of {_WINDOW_NAMES} (or "
                         "their SciPy aliases), an array or None. Received: window={name!r}")
    if length <= 1:
        return np.ones(max(length, 0))
    if periodic:  # the DFT-even form: one point more, the last dropped
        return _symmetric_window(canonical, length + 1)[:-1]
    return _symmetric_window(canonical, length)


class STFT(Initializer):
    """Kernels of a 1-D convolution that computes a short-time Fourier transform (Keras's
    ``STFTInitializer``): for shape ``(frame_length, input_channels, fft_bins)`` the real
    (``cos``) or imaginary (``sin``) parts of ``exp(-2 pi i t f / (2 (fft_bins - 1)))``, times the
    window and divided by its L2 norm ("density") or its sum ("spectrum").

    Args:
        side: "real" or "imag".
        window: a window name of SciPy's ``get_window`` that needs no parameter ("hann",
            "hamming", "tukey", "blackman", "bartlett", "boxcar", "triang", "flattop", ...; see
            `get_window`), an array of length frame_length, or None.
        scaling: "density", "spectrum" or None.
        periodic: use the periodic (DFT-even) form of a named window.

    Raises:
        ValueError: for an unknown side, window or scaling; at call time, for a window array
            whose length is not frame_length.
    """

    def __init__(self, side="real", window="hann", scaling="density", periodic=False):
        if side not in ("real", "imag"):
            raise ValueError(f"STFT: side should be 'real' or 'imag'. Received: {side!r}")
        if isinstance(window, str):
            get_window(window, 1)  # raises for an unknown name
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
                win = get_window(self.window, frame_length, self.periodic)
            else:
                win = np.asarray(self.window, dtype="float64")
            if win.shape != (frame_length,):
                raise ValueError(f"STFT: the window must have shape ({frame_length},). "
                                 f"Received: window shape={win.shape}")
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


# -- names: Keras's table (class names, their snake_case forms, and a few aliases) -----------------
ALL_OBJECTS = (Constant, Zeros, Ones, Identity, STFT, RandomNormal, RandomUniform,
               TruncatedNormal, VarianceScaling, GlorotUniform, GlorotNormal, HeUniform,
               HeNormal, LecunUniform, LecunNormal, Orthogonal)
_CLASSES = {cls.__name__: cls for cls in ALL_OBJECTS}
_CLASSES.update(IdentityInitializer=Identity, OrthogonalInitializer=Orthogonal,
                STFTInitializer=STFT)
_ALIASES = {re.sub("([a-z])([A-Z])", r"\1_\2",
                   re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", cls.__name__)).lower(): cls
            for cls in ALL_OBJECTS}  # GlorotUniform -> glorot_uniform, STFT -> stft
_ALIASES.update(normal=RandomNormal, uniform=RandomUniform, one=Ones, zero=Zeros)


def get(identifier):
    """An `Initializer` from a name (``"glorot_uniform"``, ``"GlorotUniform"``,
    ``"OrthogonalInitializer"``, ``"one"``, ...), a config dict, an `Initializer` or a callable
    ``(shape, dtype) -> array`` (returned as is). None gives None.

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


# Keras's module-level names: ``keras.initializers.glorot_uniform`` is the class, and so are the
# compatibility names.
IdentityInitializer, OrthogonalInitializer, STFTInitializer = Identity, Orthogonal, STFT
globals().update({name: cls for name, cls in _ALIASES.items()
                  if name not in ("normal", "uniform", "one", "zero")})

registry.register_kind(Initializer, serialize)
