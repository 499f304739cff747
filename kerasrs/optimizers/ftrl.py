"""`Ftrl` with Keras 3's update rule and defaults (keras/src/optimizers/ftrl.py)."""

from kerasrs.optimizers import base


class Ftrl(base.Optimizer):
    """Follow-the-regularized-leader (McMahan et al. 2013, Algorithm 1), as Keras 3.

    Per weight, with accumulator ``n`` and linear term ``z`` (``p = -learning_rate_power``)::

        g' = g + 2 * l2_shrinkage * w
        n_new = n + g**2
        z += g' - (n_new**p - n**p) / lr * w
        w = (clip(z, -l1, l1) - z) / (n_new**p / lr + 2 * (l2 + beta / (2 lr)))

    Raises:
        ValueError: for a negative regularization strength or a positive learning_rate_power.
    """

    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 l2_shrinkage_regularization_strength=0.0, beta=0.0, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False,
                 ema_momentum=0.99, ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        super().__init__(**base.base_arguments(locals()))
        checks = {"initial_accumulator_value": initial_accumulator_value,
                  "l1_regularization_strength": l1_regularization_strength,
                  "l2_regularization_strength": l2_regularization_strength,
                  "l2_shrinkage_regularization_strength": l2_shrinkage_regularization_strength}
        for arg, value in checks.items():
            if value < 0:
                raise ValueError(f"{self.name}: `{arg}` must be >= 0. Received: {arg}={value}")
        if learning_rate_power > 0:
            raise ValueError(f"{self.name}: `learning_rate_power` must be <= 0. Received: "
                             f"{learning_rate_power}")
        self.learning_rate_power = learning_rate_power
        self.initial_accumulator_value = initial_accumulator_value
        self.l1_regularization_strength = l1_regularization_strength
        self.l2_regularization_strength = l2_regularization_strength
        self.l2_shrinkage_regularization_strength = l2_shrinkage_regularization_strength
        self.beta = beta

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._accumulators = self.add_optimizer_variables(variables, "accumulator",
                                                          self.initial_accumulator_value)
        self._linears = self.add_optimizer_variables(variables, "linear")

    def update_step(self, gradient, variable, learning_rate):
        i = self._slot_index(variable)
        accum, linear, w = self._accumulators[i].data, self._linears[i].data, variable.data
        p = -self.learning_rate_power
        l2 = self.l2_regularization_strength + self.beta / (2.0 * learning_rate)
        g = gradient + 2 * self.l2_shrinkage_regularization_strength * w
        new_accum = accum + gradient * gradient
        linear += g - (new_accum ** p - accum ** p) / learning_rate * w
        quadratic = new_accum ** p / learning_rate + 2 * l2
        l1 = self.l1_regularization_strength
        w[...] = (variable.backend.xp.clip(linear, -l1, l1) - linear) / quadratic
        accum[...] = new_accum

    def get_config(self):
        return {**super().get_config(), "learning_rate_power": self.learning_rate_power,
                "initial_accumulator_value": self.initial_accumulator_value,
                "l1_regularization_strength": self.l1_regularization_strength,
                "l2_regularization_strength": self.l2_regularization_strength,
                "l2_shrinkage_regularization_strength":
                    self.l2_shrinkage_regularization_strength,
                "beta": self.beta}
