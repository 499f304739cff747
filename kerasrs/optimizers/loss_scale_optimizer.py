"""`LossScaleOptimizer`: dynamic loss scaling for float16 training (Keras 3's algorithm).

Gradients of a float16 computation that are smaller than float16's smallest subnormal (about
6e-8) become 0. Multiplying the loss by a large ``scale`` before differentiating lifts them into
range; the gradients are divided by ``scale`` again (in float32) before the update. The scale
adapts (Micikevicius et al. 2018, "Mixed Precision Training", section 3.2; the dynamic rule of
TensorFlow's and Keras's LossScaleOptimizer):

* a step whose gradients are all finite is applied; after ``dynamic_growth_steps`` such steps
  in a row the scale doubles;
* a step with an inf or NaN gradient is skipped (the variables and the inner optimizer's state,
  ``iterations`` included, stay as they are) and the scale halves, but never below 1.0 (or
  ``initial_scale`` if that is smaller): TensorFlow's floor, so that a run of bad batches
  cannot drive the scale to 0 and block every later step. A step skipped at the floor gives a
  warning (once per run of skipped steps): its inf or NaN do not come from float16 overflow,
  which a smaller scale would cure, but from the data or the model.

`Model.compile` wraps the optimizer in one automatically when the model's dtype policy is
``mixed_float16``.
"""

import warnings

from kerasrs import autodiff, ops
from kerasrs import backend as backend_module
from kerasrs.optimizers import serialization
from kerasrs.optimizers.base import Optimizer


class LossScaleOptimizer(Optimizer):
    """Wrap ``inner_optimizer`` with dynamic loss scaling.

    Args:
        inner_optimizer: the `Optimizer` that applies the unscaled gradients.
        initial_scale: float, the first loss scale. Defaults to ``2**15`` (Keras's default).
        dynamic_growth_steps: int, the number of finite steps in a row after which the scale
            doubles. Defaults to 2000.
        name: str. Defaults to "loss_scale_optimizer".

    Attributes:
        dynamic_scale: float32 `Variable`, the current scale. step_counter: int64 `Variable`,
        the finite steps since the scale last changed.

    Raises:
        TypeError: if ``inner_optimizer`` is not an `Optimizer`.
        ValueError: for a non-positive ``initial_scale`` or ``dynamic_growth_steps``;
            ``dynamic=False`` (set ``loss_scale_factor`` on the inner optimizer for a fixed
            scale); any other base `Optimizer` argument (clipping, weight decay, EMA, a loss
            scale factor, a learning rate): set those on the inner optimizer.

    Example:
        >>> opt = LossScaleOptimizer(kerasrs.optimizers.SGD(0.1))
        >>> float(opt.dynamic_scale.numpy())
        32768.0
    """

    skips_non_finite_steps = True  # the fit loop silences NumPy's overflow warnings for it
    _skipped, _warned = 0, False  # steps skipped in a row, and whether that was warned about

    # The base arguments a wrapper cannot take, with their defaults (Keras's list).
    REFUSED = {"weight_decay": None, "clipnorm": None, "global_clipnorm": None,
               "clipvalue": None, "use_ema": False, "ema_momentum": 0.99,
               "ema_overwrite_frequency": None, "loss_scale_factor": None,
               "gradient_accumulation_steps": None}

    def __init__(self, inner_optimizer, initial_scale=2.0**15, dynamic_growth_steps=2000,
                 name=None, **kwargs):
        if not isinstance(inner_optimizer, Optimizer):
            raise TypeError("LossScaleOptimizer: `inner_optimizer` must be an Optimizer. "
                            f"Received: {inner_optimizer!r}")
        if not kwargs.pop("dynamic", True):
            raise ValueError("LossScaleOptimizer: `dynamic=False` is not supported; for a "
                             "fixed loss scale set `loss_scale_factor` on the inner optimizer. "
                             "Received: dynamic=False")
        for key, default in self.REFUSED.items():
            if key in kwargs and kwargs.pop(key) != default:
                raise ValueError(f"LossScaleOptimizer: `{key}` is not supported; set it on the "
                                 f"inner optimizer. Received: {key}")
        if kwargs:
            raise ValueError(f"LossScaleOptimizer: unsupported argument(s) {sorted(kwargs)}. "
                             f"Received: {kwargs}")
        if not initial_scale > 0 or not int(dynamic_growth_steps) > 0:
            raise ValueError("LossScaleOptimizer: `initial_scale` and `dynamic_growth_steps` "
                             f"must be > 0. Received: initial_scale={initial_scale}, "
                             f"dynamic_growth_steps={dynamic_growth_steps}")
        super().__init__(learning_rate=0.0, name=name or "loss_scale_optimizer")
        self.inner_optimizer = inner_optimizer
        inner_optimizer.loss_scale_factor = None  # this wrapper does the scaling (as Keras)
        self.initial_scale = float(initial_scale)
        self.dynamic_growth_steps = int(dynamic_growth_steps)
        # Keras's order: its own (unused) iteration and learning_rate, then the scaling state
        self._variables = [self._iterations]
        self._make_variable(0.0, "learning_rate", dtype="float32")
        self.step_counter = self._make_variable(0, "step_counter", dtype="int64")
        self.dynamic_scale = self._make_variable(self.initial_scale, "dynamic_scale",
                                                 dtype="float32")

    @property
    def variables(self):
        """As Keras: its own ``iteration`` and ``learning_rate`` (unused), ``step_counter``,
        ``dynamic_scale``, then the inner optimizer's variables."""
        return list(self._variables) + self.inner_optimizer.variables

    @property
    def iterations(self):
        return self.inner_optimizer.iterations

    @property
    def learning_rate(self):
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        if getattr(self, "inner_optimizer", None) is None:  # the base __init__'s placeholder
            return
        self.inner_optimizer.learning_rate = value

    def _current_learning_rate(self):
        return self.inner_optimizer._current_learning_rate()

    def _variables_trained(self):
        return self.inner_optimizer._variables_trained()

    def build(self, variables):
        self.inner_optimizer.build(variables)
        self.built = True

    def scale_loss(self, loss):
        """``loss * dynamic_scale``: differentiate this, then `apply` unscales the gradients.
        The scale is read as a Tensor (cast to the loss's dtype, as a Python float would be),
        so that a traced step reads the variable, not this step's value."""
        loss = autodiff.convert_to_tensor(loss)
        return loss * ops.cast(self.dynamic_scale, loss.dtype)

    def set_weights(self, weights):
        own = len(self._variables)
        for var, value in zip(self._variables, weights[:own]):
            var.assign(value)
        self.inner_optimizer.set_weights(weights[own:])

    def apply(self, grads, trainable_variables=None):
        """Unscale and apply ``grads`` if they are all finite, else skip the step; then adapt
        the scale (see the module docstring)."""
        grads = list(grads)
        scale = float(self.dynamic_scale.data)
        arrays = [None if g is None else autodiff.convert_to_tensor(g).data for g in grads]
        finite = all(bool(backend_module.backend_of(a).xp.isfinite(a).all())
                     for a in arrays if a is not None)
        with autodiff.no_grad():
            if not finite:
                if not self.inner_optimizer.built and trainable_variables is not None:
                    self.inner_optimizer.build(list(trainable_variables))
                self.step_counter.data[...] = 0
                self.dynamic_scale.data[...] = max(scale / 2.0, self.floor)
                self._note_step(False, scale)
                return
            self._note_step(True, scale)
            unscaled = [None if a is None else a.astype("float32") / scale
                        if a.dtype.itemsize < 4 else a / scale for a in arrays]
            self.inner_optimizer.apply(unscaled, trainable_variables)
            if int(self.step_counter.data) + 1 >= self.dynamic_growth_steps:
                self.step_counter.data[...] = 0
                self.dynamic_scale.data[...] = scale * 2.0
            else:
                self.step_counter.data += 1
        self.built = self.inner_optimizer.built

    @property
    def floor(self):
        """The smallest scale: 1.0, or ``initial_scale`` if that is smaller."""
        return min(1.0, self.initial_scale)

    def _note_step(self, applied, scale):
        """Count the skipped steps in a row (``scale``: the one the step ran with) and warn
        once per run of them that reached the scale's floor."""
        if applied:
            self._skipped, self._warned = 0, False
            return
        self._skipped += 1
        if scale <= self.floor and self._skipped > 1 and not self._warned:
            self._warn_stuck(scale)

    def _warn_stuck(self, scale):
        warnings.warn(f"LossScaleOptimizer: {self._skipped} steps in a row were skipped because "
                      f"their gradients hold inf or NaN, and the loss scale is at its floor "
                      f"({scale:g}), so no smaller scale can help: the non-finite values come "
                      "from the data or the model (check the inputs for NaN/inf, lower the "
                      "learning rate). Training makes no progress while this lasts.",
                      RuntimeWarning, stacklevel=4)
        self._warned = True

    def finalize_variable_values(self, var_list):
        self.inner_optimizer.finalize_variable_values(var_list)

    def get_config(self):
        return {"name": self.name,
                "inner_optimizer": serialization.serialize(self.inner_optimizer),
                "initial_scale": self.initial_scale,
                "dynamic_growth_steps": self.dynamic_growth_steps}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        inner = config.pop("inner_optimizer")
        if isinstance(inner, dict):
            inner = serialization.deserialize(inner, custom_objects)
        keep = ("name", "initial_scale", "dynamic_growth_steps")
        return cls(inner, **{k: v for k, v in config.items() if k in keep})

    def __repr__(self):
        return (f"<LossScaleOptimizer inner={self.inner_optimizer!r} "
                f"scale={float(self.dynamic_scale.data):g}>")
