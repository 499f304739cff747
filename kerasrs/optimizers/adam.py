"""Adam and AdamW: adaptive first- and second-moment estimates, with bias correction."""

import math

from kerasrs.optimizers import base


class Adam(base.Optimizer):
    """Adam (Kingma & Ba 2015, Algorithm 1, with the "epsilon hat" form of Section 2).

    Update rule for step ``t = iterations + 1``, with slots ``m`` (``momentum``) and ``v``
    (``velocity``)::

        m = m + (1 - beta_1) * (g - m)
        v = v + (1 - beta_2) * (g**2 - v)
        v_hat = max(v_hat, v);  v = v_hat               (amsgrad; Reddi et al. 2018)
        alpha = lr * sqrt(1 - beta_2**t) / (1 - beta_1**t)
        w = w - alpha * m / (sqrt(v) + epsilon)

    One step is one multi-tensor call of the backend kernel ``adam_update`` over all variables
    (its NumPy twin in `kerasrs.backend.kernels.optimizer` is the reference; the CPU and GPU
    backends fuse it), with the bias correction folded into ``alpha`` once per step.

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        beta_1: float, decay of the first-moment average. Defaults to 0.9.
        beta_2: float, decay of the second-moment average. Defaults to 0.999.
        epsilon: float added to ``sqrt(v)``. Defaults to 1e-7 (Keras's default).
        amsgrad: bool, use the running maximum of ``v``. Defaults to False.
        weight_decay, clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
        ema_overwrite_frequency, loss_scale_factor, gradient_accumulation_steps, name: as
            `Optimizer` (also positionally, in Keras's order).

    Slots per variable: ``momentum``, ``velocity`` (interleaved per variable, as Keras 3
    saves them), then ``velocity_hat`` for every variable when ``amsgrad``.
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, use_ema=False, ema_momentum=0.99,
                 ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        super().__init__(**base.base_arguments(locals()))
        self.beta_1, self.beta_2 = float(beta_1), float(beta_2)
        self.epsilon, self.amsgrad = float(epsilon), bool(amsgrad)

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._momentums, self._velocities = self.add_optimizer_variables(
            variables, ["momentum", "velocity"])
        self._velocity_hats = self.add_optimizer_variables(variables, "velocity_hat") \
            if self.amsgrad else []

    def _update_all(self, pairs, lr):
        """The whole step as one multi-tensor ``backend.adam_update`` call per backend."""
        t = float(self._iterations.data) + 1.0
        alpha = lr * math.sqrt(1.0 - self.beta_2 ** t) / (1.0 - self.beta_1 ** t)
        by_backend = {}
        for g, var in pairs:
            by_backend.setdefault(var.backend, []).append((g, var))
        for be, group in by_backend.items():
            slots = [self._slot_index(v) for _, v in group]
            be.adam_update([v.data for _, v in group], [g for g, _ in group],
                           [self._momentums[i].data for i in slots],
                           [self._velocities[i].data for i in slots],
                           alpha, self.beta_1, self.beta_2, self.epsilon,
                           v_hats=[self._velocity_hats[i].data for i in slots]
                           if self.amsgrad else None)

    def update_step(self, gradient, variable, learning_rate):
        self._update_all([(gradient, variable)], learning_rate)

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon, "amsgrad": self.amsgrad}


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter 2019, "Decoupled Weight Decay
    Regularization", Algorithm 2).

    Before each Adam step every variable (except those passed to
    `exclude_from_weight_decay`) shrinks by ``w = w - w * weight_decay * lr``; the decay is not
    part of the gradient, so it is not rescaled by Adam's ``1 / sqrt(v)``. Keras 3 scales it by
    the learning rate (not by the paper's separate schedule multiplier), and so does kerasrs.

    Args:
        learning_rate: float, schedule or callable. Defaults to 0.001.
        weight_decay: float. Defaults to 0.004.
        beta_1, beta_2, epsilon, amsgrad: as `Adam`.
        clipnorm, clipvalue, ...: as `Optimizer`.

    Raises:
        ValueError: if ``weight_decay`` is None.
    """

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, amsgrad=False, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, use_ema=False, ema_momentum=0.99,
                 ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        if weight_decay is None:
            raise ValueError("AdamW: weight_decay must be a float. Received: weight_decay=None")
        super().__init__(beta_1=beta_1, beta_2=beta_2, epsilon=epsilon, amsgrad=amsgrad,
                         **base.base_arguments(locals()))
