"""`Adafactor` with Keras 3's update rule and defaults (keras/src/optimizers/adafactor.py)."""

import math

from kerasrs.optimizers import base


class Adafactor(base.Optimizer):
    """Adafactor (Shazeer & Stern 2018, Algorithms 4-5), as Keras 3: factored second moments
    (row and column means) for weights of rank >= 2, relative step size
    ``min(lr, 1/sqrt(t))`` scaled by ``max(epsilon_2, rms(w))``, update clipping at
    ``clip_threshold``, decay ``1 - t**beta_2_decay``."""

    def __init__(self, learning_rate=0.001, beta_2_decay=-0.8, epsilon_1=1e-30, epsilon_2=1e-3,
                 clip_threshold=1.0, relative_step=True, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, use_ema=False, ema_momentum=0.99,
                 ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        super().__init__(**base.base_arguments(locals()))
        self.beta_2_decay, self.epsilon_1, self.epsilon_2 = beta_2_decay, epsilon_1, epsilon_2
        self.clip_threshold, self.relative_step = clip_threshold, relative_step

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._r, self._c = [], []
        for var in variables:
            xp = var.backend.xp
            if len(var.shape) < 2:
                self._r.append(None)
                self._c.append(None)
                continue
            r_like = xp.zeros(var.shape[:-1], var.dtype)
            c_like = xp.zeros(var.shape[:-2] + (var.shape[-1],), var.dtype)
            self._r.append(self._make_variable(r_like, f"{var.name}_r", dtype=var.dtype))
            self._c.append(self._make_variable(c_like, f"{var.name}_c", dtype=var.dtype))
        self._v = self.add_optimizer_variables(variables, "velocity")

    def update_step(self, gradient, variable, learning_rate):
        xp, i = variable.backend.xp, self._slot_index(variable)
        t = float(self._iterations.data) + 1.0
        lr = learning_rate
        if self.relative_step and not callable(self._learning_rate):
            lr = min(lr, 1 / math.sqrt(t))
        rho = min(lr, 1 / math.sqrt(t))
        w = variable.data
        alpha = max(self.epsilon_2, float(xp.sqrt(xp.mean(w * w)))) * rho
        g2 = gradient * gradient + self.epsilon_1
        beta = 1 - t ** self.beta_2_decay
        v = self._v[i].data
        if len(variable.shape) >= 2:
            r, c = self._r[i].data, self._c[i].data
            r[...] = beta * r + (1 - beta) * g2.mean(-1)
            c[...] = beta * c + (1 - beta) * g2.mean(-2)
            v[...] = (r / r.mean(-1, keepdims=True))[..., None] * c[..., None, :]
        else:
            v[...] = beta * v + (1 - beta) * g2
        u = gradient / xp.sqrt(v)
        u = u / max(1.0, float(xp.sqrt(xp.mean(u * u))) / self.clip_threshold)
        w -= alpha * u

    def get_config(self):
        return {**super().get_config(), "beta_2_decay": self.beta_2_decay,
                "epsilon_1": self.epsilon_1, "epsilon_2": self.epsilon_2,
                "clip_threshold": self.clip_threshold, "relative_step": self.relative_step}
