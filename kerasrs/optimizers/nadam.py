"""Nadam: Adam with Nesterov momentum."""

from kerasrs.optimizers import base


class Nadam(base.Optimizer):
    """Nadam (Dozat 2016, "Incorporating Nesterov Momentum into Adam", with the momentum
    schedule ``mu_t = beta_1 * (1 - 0.5 * 0.96**t)``), as in Keras 3.

    Update rule for step ``t = iterations + 1``, with slots ``m`` (``momentum``), ``v``
    (``velocity``) and the running product ``P = prod_{s<=t} mu_s`` (``u_product``)::

        P = P * mu_t                              (once per step, before the variables)
        m = m + (1 - beta_1) * (g - m)
        v = v + (1 - beta_2) * (g**2 - v)
        m_hat = mu_{t+1} * m / (1 - P * mu_{t+1}) + (1 - mu_t) * g / (1 - P)
        v_hat = v / (1 - beta_2**t)
        w = w - lr * m_hat / (sqrt(v_hat) + epsilon)

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        beta_1, beta_2: floats. Defaults to 0.9 and 0.999.
        epsilon: float. Defaults to 1e-7.
        weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
        ema_overwrite_frequency, loss_scale_factor, gradient_accumulation_steps, name: as
            `Optimizer` (also positionally, in Keras's order).

    Slots: ``momentum``, ``velocity`` interleaved per variable, then one scalar ``u_product``
    (in the first variable's dtype).
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
        self._momentums, self._velocities = self.add_optimizer_variables(
            variables, ["momentum", "velocity"])
        dtype = variables[0].dtype if variables else None
        self._u_product = self._make_variable(1.0, "u_product", dtype=dtype)

    def _mu(self, t):
        return self.beta_1 * (1.0 - 0.5 * 0.96 ** t)

    def _update_all(self, pairs, lr):
        t = float(self._iterations.data) + 1.0
        self._u_product.assign(float(self._u_product.data) * self._mu(t))
        super()._update_all(pairs, lr)

    def update_step(self, gradient, variable, learning_rate):
        xp, i = variable.backend.xp, self._slot_index(variable)
        t = float(self._iterations.data) + 1.0
        mu_t, mu_next = self._mu(t), self._mu(t + 1.0)
        product = float(self._u_product.data)
        m, v = self._momentums[i].data, self._velocities[i].data
        tmp, m_hat = self._scratch(variable, 0), self._scratch(variable, 1)
        xp.subtract(gradient, m, out=tmp)
        tmp *= 1.0 - self.beta_1
        m += tmp
        xp.multiply(gradient, gradient, out=tmp)
        tmp -= v
        tmp *= 1.0 - self.beta_2
        v += tmp
        xp.multiply(m, mu_next / (1.0 - product * mu_next), out=m_hat)
        xp.multiply(gradient, (1.0 - mu_t) / (1.0 - product), out=tmp)
        m_hat += tmp
        xp.multiply(v, 1.0 / (1.0 - self.beta_2 ** t), out=tmp)
        xp.sqrt(tmp, out=tmp)
        tmp += self.epsilon
        xp.divide(m_hat, tmp, out=tmp)
        tmp *= learning_rate
        variable.data -= tmp

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon}
