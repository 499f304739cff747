"""`ScheduleFreeAdamW` with Keras 3's update rule and defaults
(keras/src/optimizers/schedule_free_adamw.py)."""

from kerasrs.optimizers import base


class ScheduleFreeAdamW(base.Optimizer):
    """Schedule-free AdamW (Defazio et al. 2024, "The Road Less Scheduled", Algorithm 1), as
    Keras 3: the weights hold the interpolation ``y = (1 - beta_1) z + beta_1 x`` between the
    Adam-preconditioned SGD sequence ``z`` (slot ``momentum``) and its running average ``x``;
    optional linear learning-rate warmup over ``warmup_steps``."""

    def __init__(self, learning_rate=0.0025, beta_1=0.9, beta_2=0.999, epsilon=1e-8, warmup_steps=0,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 use_ema=False, ema_momentum=0.99, ema_overwrite_frequency=None,
                 loss_scale_factor=None, gradient_accumulation_steps=None, name=None, **kwargs):
        super().__init__(**base.base_arguments(locals()))
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
        self.warmup_steps = warmup_steps

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._z, self._v = self.add_optimizer_variables(variables, ["momentum", "velocity"])
        for z, var in zip(self._z, variables):
            z.data[...] = var.data

    def update_step(self, gradient, variable, learning_rate):
        xp, i = variable.backend.xp, self._slot_index(variable)
        t = float(self._iterations.data) + 1.0
        lr = learning_rate * (min(t / self.warmup_steps, 1.0) if self.warmup_steps > 0 else 1.0)
        z, v, y = self._z[i].data, self._v[i].data, variable.data
        z_old = z.copy()
        v += (gradient * gradient - v) * (1 - self.beta_2)
        z -= lr * gradient / (xp.sqrt(v / (1 - self.beta_2 ** t)) + self.epsilon)
        x_old = (y - (1 - self.beta_1) * z_old) / self.beta_1
        x_new = (1 - 1 / t) * x_old + z / t
        y[...] = (1 - self.beta_1) * z + self.beta_1 * x_new

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon, "warmup_steps": self.warmup_steps}
