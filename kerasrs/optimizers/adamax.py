"""Adamax: Adam with the infinity norm in place of the second moment."""

from kerasrs.optimizers import base


class Adamax(base.Optimizer):
    """Adamax (Kingma & Ba 2015, Section 7.1, Algorithm 2), as in Keras 3.

    Update rule for step ``t = iterations + 1``, with slots ``m`` (``momentum``) and ``u``
    (``norm``)::

        m = m + (1 - beta_1) * (g - m)
        u = max(beta_2 * u, |g|)
        w = w - lr * m / ((1 - beta_1**t) * (u + epsilon))

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        beta_1: float. Defaults to 0.9.
        beta_2: float, decay of the infinity norm. Defaults to 0.999.
        epsilon: float. Defaults to 1e-7.
        weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
        ema_overwrite_frequency, loss_scale_factor, gradient_accumulation_steps, name: as
            `Optimizer` (also positionally, in Keras's order).
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 use_ema=False, ema_momentum=0.99, ema_overwrite_frequency=None,
                 loss_scale_factor=None, gradient_accumulation_steps=None, name=None, **kwargs):
        super().__init__(**base.base_arguments(locals()))
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._m, self._u = self.add_optimizer_variables(variables, ["momentum", "norm"])

    def update_step(self, gradient, variable, learning_rate):
        xp, i = variable.backend.xp, self._slot_index(variable)
        t = float(self._iterations.data) + 1.0
        m, u, tmp = self._m[i].data, self._u[i].data, self._scratch(variable)
        xp.subtract(gradient, m, out=tmp)
        tmp *= 1.0 - self.beta_1
        m += tmp
        u *= self.beta_2
        xp.abs(gradient, out=tmp)
        xp.maximum(u, tmp, out=u)
        xp.add(u, self.epsilon, out=tmp)
        xp.divide(m, tmp, out=tmp)
        tmp *= learning_rate / (1.0 - self.beta_1 ** t)
        variable.data -= tmp

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon}
