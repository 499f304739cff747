"""Adagrad: per-parameter rates that shrink with the sum of past squared gradients."""

from kerasrs.optimizers import base


class Adagrad(base.Optimizer):
    """Adagrad (Duchi, Hazan & Singer 2011), as in Keras 3.

    Update rule, with ``a`` the ``accumulator`` slot (starting at
    ``initial_accumulator_value``)::

        a = a + g**2
        w = w - lr * g / sqrt(a + epsilon)

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        initial_accumulator_value: float >= 0, the accumulators' start. Defaults to 0.1.
        epsilon: float. Defaults to 1e-7.
        weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
        ema_overwrite_frequency, loss_scale_factor, gradient_accumulation_steps, name: as
            `Optimizer` (also positionally, in Keras's order).

    Raises:
        ValueError: if ``initial_accumulator_value`` is negative.
    """

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 use_ema=False, ema_momentum=0.99, ema_overwrite_frequency=None,
                 loss_scale_factor=None, gradient_accumulation_steps=None, name=None, **kwargs):
        super().__init__(**base.base_arguments(locals()))
        if initial_accumulator_value < 0:
            raise ValueError(f"{self.name}: initial_accumulator_value must be >= 0. Received: "
                             f"initial_accumulator_value={initial_accumulator_value!r}")
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = float(epsilon)

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._accumulators = self.add_optimizer_variables(
            variables, "accumulator", initializer=self.initial_accumulator_value)

    def update_step(self, gradient, variable, learning_rate):
        xp = variable.backend.xp
        a, tmp = self._accumulators[self._slot_index(variable)].data, self._scratch(variable)
        xp.multiply(gradient, gradient, out=tmp)
        a += tmp
        xp.add(a, self.epsilon, out=tmp)
        xp.sqrt(tmp, out=tmp)
        xp.divide(gradient, tmp, out=tmp)
        tmp *= learning_rate
        variable.data -= tmp

    def get_config(self):
        return {**super().get_config(),
                "initial_accumulator_value": self.initial_accumulator_value,
                "epsilon": self.epsilon}
