"""Adadelta: step sizes from running averages of squared gradients and squared updates."""

from kerasrs.optimizers import base


class Adadelta(base.Optimizer):
    """Adadelta (Zeiler 2012, Algorithm 1), with Keras 3's extra learning-rate factor.

    Update rule, with slots ``a`` (``accumulated_grad``) and ``d`` (``accumulated_delta_var``)::

        a = rho * a + (1 - rho) * g**2
        delta = -sqrt(d + epsilon) / sqrt(a + epsilon) * g
        d = rho * d + (1 - rho) * delta**2
        w = w + lr * delta

    ``learning_rate=1.0`` gives the paper's exact form.

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        rho: float, the averages' decay. Defaults to 0.95.
        epsilon: float. Defaults to 1e-7.
        weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
        ema_overwrite_frequency, loss_scale_factor, gradient_accumulation_steps, name: as
            `Optimizer` (also positionally, in Keras's order).
    """

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False,
                 ema_momentum=0.99, ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        super().__init__(**base.base_arguments(locals()))
        self.rho, self.epsilon = float(rho), float(epsilon)

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._accumulated_grads, self._accumulated_delta_vars = self.add_optimizer_variables(
            variables, ["accumulated_grad", "accumulated_delta_var"])

    def update_step(self, gradient, variable, learning_rate):
        xp, i, rho = variable.backend.xp, self._slot_index(variable), self.rho
        a, d = self._accumulated_grads[i].data, self._accumulated_delta_vars[i].data
        delta, tmp = self._scratch(variable, 0), self._scratch(variable, 1)
        a *= rho
        xp.multiply(gradient, gradient, out=tmp)
        tmp *= 1.0 - rho
        a += tmp
        xp.add(d, self.epsilon, out=delta)               # delta = -sqrt(d+eps)/sqrt(a+eps) * g
        xp.add(a, self.epsilon, out=tmp)
        xp.divide(delta, tmp, out=delta)
        xp.sqrt(delta, out=delta)
        delta *= gradient
        xp.negative(delta, out=delta)
        d *= rho
        xp.multiply(delta, delta, out=tmp)
        tmp *= 1.0 - rho
        d += tmp
        delta *= learning_rate
        variable.data += delta

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "epsilon": self.epsilon}
