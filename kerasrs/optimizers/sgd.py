"""Stochastic gradient descent with optional (Nesterov) momentum."""

from kerasrs.optimizers import base


class SGD(base.Optimizer):
    """Gradient descent, optionally with momentum (Polyak 1964) or Nesterov momentum.

    Update rule (Keras 3's formula), with ``g`` the gradient and ``v`` the ``momentum`` slot::

        momentum == 0:  w = w - lr * g
        momentum > 0:   v = momentum * v - lr * g
                        w = w + v                          (classic)
                        w = w + momentum * v - lr * g      (nesterov=True; Sutskever et al. 2013)

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.01.
        momentum: float in [0, 1]. Defaults to 0.0 (no slot variables are made).
        nesterov: bool. Defaults to False.
        weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
        ema_overwrite_frequency, loss_scale_factor, gradient_accumulation_steps, name: as
            `Optimizer` (also positionally, in Keras's order).

    Raises:
        ValueError: if ``momentum`` is outside [0, 1].

    Example:
        >>> w = kerasrs.Variable([1.0])
        >>> SGD(0.1).apply([np.array([2.0], "float32")], [w])
        >>> w.numpy()
        array([0.8], dtype=float32)
    """

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False,
                 ema_momentum=0.99, ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        super().__init__(**base.base_arguments(locals()))
        if isinstance(momentum, bool) or not 0.0 <= momentum <= 1.0:
            raise ValueError(f"{self.name}: momentum must be a float in [0, 1]. Received: "
                             f"momentum={momentum!r}")
        self.momentum, self.nesterov = float(momentum), bool(nesterov)

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self.momentums = self.add_optimizer_variables(variables, "momentum") \
            if self.momentum else []

    def _update_all(self, pairs, lr):
        """The whole step as one multi-tensor ``backend.sgd_update`` call per backend."""
        by_backend = {}
        for g, var in pairs:
            by_backend.setdefault(var.backend, []).append((g, var))
        for be, group in by_backend.items():
            momentums = [self.momentums[self._slot_index(v)].data for _, v in group] \
                if self.momentum else None
            be.sgd_update([v.data for _, v in group], [g for g, _ in group], momentums, lr,
                          self.momentum, self.nesterov)

    def update_step(self, gradient, variable, learning_rate):
        self._update_all([(gradient, variable)], learning_rate)

    def get_config(self):
        return {**super().get_config(), "momentum": self.momentum, "nesterov": self.nesterov}
