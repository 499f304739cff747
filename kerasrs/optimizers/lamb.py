"""`Lamb` with Keras 3's update rule and defaults (keras/src/optimizers/lamb.py)."""

from kerasrs.optimizers import base


class Lamb(base.Optimizer):
    """LAMB (You et al. 2020, Algorithm 2), as Keras 3: the Adam direction
    ``m_hat / (sqrt(v_hat) + epsilon)`` scaled per weight by the trust ratio
    ``||w|| / ||update||`` (1 when either norm is 0)."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 use_ema=False, ema_momentum=0.99, ema_overwrite_frequency=None,
                 loss_scale_factor=None, gradient_accumulation_steps=None, name=None, **kwargs):
        super().__init__(**base.base_arguments(locals()))
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._m, self._v = self.add_optimizer_variables(variables, ["momentum", "velocity"])

    def update_step(self, gradient, variable, learning_rate):
        xp, i = variable.backend.xp, self._slot_index(variable)
        t = float(self._iterations.data) + 1.0
        m, v, w = self._m[i].data, self._v[i].data, variable.data
        m += (gradient - m) * (1 - self.beta_1)
        v += (gradient * gradient - v) * (1 - self.beta_2)
        update = (m / (1 - self.beta_1 ** t)) / (xp.sqrt(v / (1 - self.beta_2 ** t)) +
                                                 self.epsilon)
        w_norm = float(xp.sqrt((w * w).sum()))
        u_norm = float(xp.sqrt((update * update).sum()))
        ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
        w -= ratio * learning_rate * update

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon}
