"""Learning-rate schedules (Keras 3's ``keras.optimizers.schedules``).

A schedule is a callable ``schedule(step) -> learning rate``. An optimizer calls it with its
``iterations`` *before* incrementing them, so the first update uses ``schedule(0)``, the second
``schedule(1)``, and so on: a schedule counts updates (batches), not epochs. Values are computed
in float64 and returned as Python floats; the optimizer casts them to each variable's dtype.
"""

import math

from kerasrs import autodiff, registry


class LearningRateSchedule:
    """Base class: subclasses implement ``__call__(step)`` and ``get_config``."""

    def __call__(self, step):
        raise NotImplementedError(f"{type(self).__name__} must implement __call__(step).")

    def get_config(self):
        raise NotImplementedError(f"{type(self).__name__} must implement get_config().")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _step(step):
    """The step as a float, from an int, a NumPy/CuPy 0-d array, a Tensor or a Variable."""
    return float(autodiff.raw(step))


def _check_positive(cls, name, value):
    if not value > 0:
        raise ValueError(f"{cls}: `{name}` must be > 0. Received: {name}={value!r}")


class ExponentialDecay(LearningRateSchedule):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)``.

    Args:
        initial_learning_rate: float, the rate at step 0.
        decay_steps: positive number of steps per factor of ``decay_rate``.
        decay_rate: float, the factor per ``decay_steps``.
        staircase: if True, ``step / decay_steps`` is floored (the rate changes in jumps).
        name: str, kept for Keras config compatibility.

    Raises:
        ValueError: if ``decay_steps <= 0``.

    Example:
        >>> ExponentialDecay(0.1, decay_steps=1, decay_rate=0.5)(2)
        0.025
    """

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name="ExponentialDecay"):
        _check_positive(type(self).__name__, "decay_steps", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps, self.decay_rate = decay_steps, decay_rate
        self.staircase, self.name = staircase, name

    def _progress(self, step):
        """``step / decay_steps``, floored with ``staircase=True``."""
        p = _step(step) / self.decay_steps
        return math.floor(p) if self.staircase else p

    def __call__(self, step):
        return self.initial_learning_rate * self.decay_rate ** self._progress(step)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[0]`` while ``step <= boundaries[0]``, ``values[i]`` while
    ``boundaries[i-1] < step <= boundaries[i]``, and ``values[-1]`` after the last boundary.

    Raises:
        ValueError: unless ``len(values) == len(boundaries) + 1`` and the boundaries increase.
    """

    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        boundaries, values = list(boundaries), list(values)
        if len(boundaries) != len(values) - 1:
            raise ValueError("PiecewiseConstantDecay: needs one more value than boundaries. "
                             f"Received: boundaries={boundaries} (length {len(boundaries)}), "
                             f"values={values} (length {len(values)})")
        if any(b >= a for b, a in zip(boundaries, boundaries[1:])):
            raise ValueError("PiecewiseConstantDecay: boundaries must be strictly increasing. "
                             f"Received: boundaries={boundaries}")
        self.boundaries, self.values, self.name = boundaries, values, name

    def __call__(self, step):
        step = _step(step)
        index = sum(step > b for b in self.boundaries)
        return float(self.values[index])

    def get_config(self):
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class InverseTimeDecay(ExponentialDecay):  # same arguments, another formula
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)`` (floored with
    ``staircase=True``).

    Raises:
        ValueError: if ``decay_steps <= 0``.
    """

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name="InverseTimeDecay"):
        super().__init__(initial_learning_rate, decay_steps, decay_rate, staircase, name)

    def __call__(self, step):
        return self.initial_learning_rate / (1.0 + self.decay_rate * self._progress(step))


class PolynomialDecay(LearningRateSchedule):
    """Polynomial decay from ``initial_learning_rate`` to ``end_learning_rate``:
    ``(initial - end) * (1 - step / decay_steps) ** power + end``, with ``step`` capped at
    ``decay_steps``; with ``cycle=True`` ``decay_steps`` is instead stretched to the first
    multiple above ``step``.

    Raises:
        ValueError: if ``decay_steps <= 0``.
    """

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0,
                 cycle=False, name="PolynomialDecay"):
        _check_positive("PolynomialDecay", "decay_steps", decay_steps)
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.end_learning_rate, self.power = end_learning_rate, power
        self.cycle, self.name = cycle, name

    def __call__(self, step):
        step = _step(step)
        decay_steps = float(self.decay_steps)
        if self.cycle:
            decay_steps *= 1.0 if step == 0 else math.ceil(step / decay_steps)
        else:
            step = min(step, decay_steps)
        p = step / decay_steps
        span = self.initial_learning_rate - self.end_learning_rate
        return span * (1.0 - p) ** self.power + self.end_learning_rate

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "end_learning_rate": self.end_learning_rate,
                "power": self.power, "cycle": self.cycle, "name": self.name}


class CosineDecay(LearningRateSchedule):
    """Optional linear warmup, then cosine decay (Loshchilov & Hutter 2017, SGDR; warmup as
    Goyal et al. 2017).

    Without ``warmup_target``: ``initial * ((1 - alpha) * 0.5 * (1 + cos(pi * s / decay_steps))
    + alpha)`` with ``s = min(step, decay_steps)``. With it: for ``step < warmup_steps`` the rate
    rises linearly from ``initial_learning_rate`` to ``warmup_target``; then the cosine decays
    from ``warmup_target`` over ``decay_steps`` (step counted from the warmup's end).

    Args:
        initial_learning_rate: float, the rate at step 0.
        decay_steps: positive int, the length of the cosine phase.
        alpha: float, the final rate as a fraction of the decay's starting rate.
        name: str, kept for Keras config compatibility.
        warmup_target: float or None. The rate reached at the end of the warmup.
        warmup_steps: int, the warmup length (used only with ``warmup_target``).

    Raises:
        ValueError: if ``decay_steps <= 0``.
    """

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay",
                 warmup_target=None, warmup_steps=0):
        _check_positive("CosineDecay", "decay_steps", decay_steps)
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.alpha, self.name = alpha, name
        self.warmup_target, self.warmup_steps = warmup_target, warmup_steps

    def _decay(self, step, start_lr):
        fraction = min(step, self.decay_steps) / self.decay_steps
        cosine = 0.5 * (1.0 + math.cos(math.pi * fraction))
        return start_lr * ((1.0 - self.alpha) * cosine + self.alpha)

    def __call__(self, step):
        step = _step(step)
        if self.warmup_target is None:
            return self._decay(step, self.initial_learning_rate)
        step = min(step, self.decay_steps + self.warmup_steps)
        if step < self.warmup_steps:
            delta = self.warmup_target - self.initial_learning_rate
            return self.initial_learning_rate + delta * step / self.warmup_steps
        return self._decay(step - self.warmup_steps, self.warmup_target)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha, "name": self.name,
                "warmup_target": self.warmup_target, "warmup_steps": self.warmup_steps}


class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay with warm restarts (SGDR, Loshchilov & Hutter 2017, eq. 5).

    Period ``i`` lasts ``first_decay_steps * t_mul**i`` steps and starts from
    ``initial_learning_rate * m_mul**i``; within it the rate follows
    ``(1 - alpha) * 0.5 * (1 + cos(pi * fraction)) + alpha`` times that start.

    Raises:
        ValueError: if ``first_decay_steps <= 0``.
    """

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0,
                 alpha=0.0, name="SGDRDecay"):
        _check_positive("CosineDecayRestarts", "first_decay_steps", first_decay_steps)
        self.initial_learning_rate, self.first_decay_steps = initial_learning_rate, \
            first_decay_steps
        self._t_mul, self._m_mul, self.alpha, self.name = t_mul, m_mul, alpha, name

    def __call__(self, step):
        fraction = _step(step) / self.first_decay_steps
        if self._t_mul == 1.0:
            restart = math.floor(fraction)
            fraction -= restart
        else:  # the geometric series of period lengths
            restart = math.floor(math.log(1.0 - fraction * (1.0 - self._t_mul))
                                 / math.log(self._t_mul))
            done = (1.0 - self._t_mul ** restart) / (1.0 - self._t_mul)
            fraction = (fraction - done) / self._t_mul ** restart
        cosine = 0.5 * self._m_mul ** restart * (1.0 + math.cos(math.pi * fraction))
        return self.initial_learning_rate * ((1 - self.alpha) * cosine + self.alpha)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "first_decay_steps": self.first_decay_steps, "t_mul": self._t_mul,
                "m_mul": self._m_mul, "alpha": self.alpha, "name": self.name}


ALL_SCHEDULES = {cls.__name__: cls for cls in (ExponentialDecay, PiecewiseConstantDecay,
                                               InverseTimeDecay, PolynomialDecay, CosineDecay,
                                               CosineDecayRestarts)}


def serialize(schedule):
    """``{"module", "class_name", "config", "registered_name"}`` for a schedule, as Keras."""
    return {"module": "keras.optimizers.schedules", "class_name": type(schedule).__name__,
            "config": schedule.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """A schedule from `serialize`'s output (``custom_objects`` maps extra class names).

    Raises:
        ValueError: for an unknown class name or a malformed dict.
    """
    classes = {**ALL_SCHEDULES, **(custom_objects or {})}
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError("schedules.deserialize: expected a dict with 'class_name' and 'config'."
                         f" Received: {config!r}")
    cls = classes.get(config["class_name"])
    if cls is None:
        raise ValueError(f"schedules.deserialize: unknown schedule {config['class_name']!r}; "
                         f"known: {sorted(classes)}. Received: {config!r}")
    return cls.from_config(config.get("config", {}))


def get(identifier):
    """A schedule from a schedule, a serialized dict, or None (returned as is)."""
    if identifier is None or isinstance(identifier, LearningRateSchedule):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    raise ValueError(f"schedules.get: cannot interpret {identifier!r} as a learning-rate "
                     "schedule. Received: type " + type(identifier).__name__)


registry.register_kind(LearningRateSchedule, serialize)
