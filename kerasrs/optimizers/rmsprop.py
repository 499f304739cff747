"""RMSprop: divide the gradient by a running root-mean-square of recent gradients."""

from kerasrs.optimizers import base


class RMSprop(base.Optimizer):
    """RMSprop (Hinton, Srivastava & Swersky 2012, Coursera lecture 6e), as in Keras 3.

    Update rule, with ``v`` the ``velocity`` slot, ``a`` the ``average_gradient`` slot
    (``centered=True``) and ``m`` the ``momentum`` slot (``momentum > 0``)::

        v = rho * v + (1 - rho) * g**2
        a = rho * a + (1 - rho) * g                     (centered)
        d = v - a**2 + epsilon   if centered else   v + epsilon
        step = lr * g / sqrt(d)
        m = momentum * m + step;  w = w - m             (momentum > 0)
        w = w - step                                    (otherwise)

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        rho: float, the decay of the squared-gradient average. Defaults to 0.9.
        momentum: float >= 0. Defaults to 0.0.
        epsilon: float added inside the square root. Defaults to 1e-7.
        centered: bool, normalise by the gradient's estimated variance. Defaults to False.
        weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
        ema_overwrite_frequency, loss_scale_factor, gradient_accumulation_steps, name: as
            `Optimizer` (also positionally, in Keras's order).

    Slots, in Keras 3's order: ``velocity`` for every variable, then ``momentum`` for every
    variable (if momentum > 0), then ``average_gradient`` for every variable (if centered).
    """

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 use_ema=False, ema_momentum=0.99, ema_overwrite_frequency=None,
                 loss_scale_factor=None, gradient_accumulation_steps=None, name=None, **kwargs):
        super().__init__(**base.base_arguments(locals()))
        self.rho, self.momentum = float(rho), float(momentum)
        self.epsilon, self.centered = float(epsilon), bool(centered)

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._velocities = self.add_optimizer_variables(variables, "velocity")
        self._momentums = self.add_optimizer_variables(variables, "momentum") \
            if self.momentum > 0 else []
        self._average_gradients = self.add_optimizer_variables(variables, "average_gradient") \
            if self.centered else []

    def update_step(self, gradient, variable, learning_rate):
        xp, i = variable.backend.xp, self._slot_index(variable)
        v, tmp = self._velocities[i].data, self._scratch(variable)
        rho = self.rho
        v *= rho
        xp.multiply(gradient, gradient, out=tmp)
        tmp *= 1.0 - rho
        v += tmp
        if self.centered:
            a = self._average_gradients[i].data
            a *= rho
            xp.multiply(gradient, 1.0 - rho, out=tmp)
            a += tmp
            xp.multiply(a, a, out=tmp)
            xp.subtract(v, tmp, out=tmp)
            tmp += self.epsilon
        else:
            xp.add(v, self.epsilon, out=tmp)
        xp.sqrt(tmp, out=tmp)
        xp.divide(gradient, tmp, out=tmp)
        tmp *= learning_rate
        if self.momentum > 0:
            m = self._momentums[i].data
            m *= self.momentum
            m += tmp
            variable.data -= m
        else:
            variable.data -= tmp

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "momentum": self.momentum,
                "epsilon": self.epsilon, "centered": self.centered}
