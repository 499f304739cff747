"""Lion: sign-of-momentum updates (EvoLved Sign Momentum)."""

from kerasrs.optimizers import base


class Lion(base.Optimizer):
    """Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms", Program 1).

    Update rule, with ``m`` the ``momentum`` slot::

        w = w - lr * sign(beta_1 * m + (1 - beta_1) * g)
        m = beta_2 * m + (1 - beta_2) * g

    Every element moves by exactly ``lr`` (or 0), so a good rate is typically 3-10x smaller
    than AdamW's, and weight decay 3-10x larger.

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        beta_1: float in (0, 1], the interpolation used for the update. Defaults to 0.9.
        beta_2: float, decay of the momentum. Defaults to 0.99.
        weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
        ema_overwrite_frequency, loss_scale_factor, gradient_accumulation_steps, name: as
            `Optimizer` (also positionally, in Keras's order).

    Raises:
        ValueError: if ``beta_1`` is outside (0, 1].
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.99, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False,
                 ema_momentum=0.99, ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        super().__init__(**base.base_arguments(locals()))
        if not 0.0 < beta_1 <= 1.0:
            raise ValueError(f"{self.name}: beta_1 must be in (0, 1]; beta_1 = 0 would be "
                             f"SignSGD. Received: beta_1={beta_1!r}")
        self.beta_1, self.beta_2 = float(beta_1), float(beta_2)

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._momentums = self.add_optimizer_variables(variables, "momentum")

    def update_step(self, gradient, variable, learning_rate):
        xp = variable.backend.xp
        m = self._momentums[self._slot_index(variable)].data
        tmp, part = self._scratch(variable, 0), self._scratch(variable, 1)
        xp.multiply(m, self.beta_1, out=tmp)
        xp.multiply(gradient, 1.0 - self.beta_1, out=part)
        tmp += part
        xp.sign(tmp, out=tmp)
        tmp *= learning_rate
        variable.data -= tmp
        m *= self.beta_2
        xp.multiply(gradient, 1.0 - self.beta_2, out=part)
        m += part

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2}
