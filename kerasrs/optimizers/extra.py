"""Ftrl, Adafactor and Lamb with Keras 3's update rules and defaults (keras/src/optimizers)."""

import math

from kerasrs.optimizers import base


class Ftrl(base.Optimizer):
    """Follow-the-regularized-leader (McMahan et al. 2013, Algorithm 1), as Keras 3.

    Per weight, with accumulator ``n`` and linear term ``z`` (``p = -learning_rate_power``)::

        g' = g + 2 * l2_shrinkage * w
        n_new = n + g**2
        z += g' - (n_new**p - n**p) / lr * w
        w = (clip(z, -l1, l1) - z) / (n_new**p / lr + 2 * (l2 + beta / (2 lr)))

    Raises:
        ValueError: for a negative regularization strength or a positive learning_rate_power.
    """

    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5,
                 initial_accumulator_value=0.1, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, l2_shrinkage_regularization_strength=0.0,
                 beta=0.0, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        checks = {"initial_accumulator_value": initial_accumulator_value,
                  "l1_regularization_strength": l1_regularization_strength,
                  "l2_regularization_strength": l2_regularization_strength,
                  "l2_shrinkage_regularization_strength": l2_shrinkage_regularization_strength}
        for arg, value in checks.items():
            if value < 0:
                raise ValueError(f"{self.name}: `{arg}` must be >= 0. Received: {arg}={value}")
        if learning_rate_power > 0:
            raise ValueError(f"{self.name}: `learning_rate_power` must be <= 0. Received: "
                             f"{learning_rate_power}")
        self.learning_rate_power = learning_rate_power
        self.initial_accumulator_value = initial_accumulator_value
        self.l1_regularization_strength = l1_regularization_strength
        self.l2_regularization_strength = l2_regularization_strength
        self.l2_shrinkage_regularization_strength = l2_shrinkage_regularization_strength
        self.beta = beta

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._accumulators = self.add_optimizer_variables(variables, "accumulator",
                                                          self.initial_accumulator_value)
        self._linears = self.add_optimizer_variables(variables, "linear")

    def update_step(self, gradient, variable, learning_rate):
        i = self._slot_index(variable)
        accum, linear, w = self._accumulators[i].data, self._linears[i].data, variable.data
        p = -self.learning_rate_power
        l2 = self.l2_regularization_strength + self.beta / (2.0 * learning_rate)
        g = gradient + 2 * self.l2_shrinkage_regularization_strength * w
        new_accum = accum + gradient * gradient
        linear += g - (new_accum ** p - accum ** p) / learning_rate * w
        quadratic = new_accum ** p / learning_rate + 2 * l2
        l1 = self.l1_regularization_strength
        w[...] = (variable.backend.xp.clip(linear, -l1, l1) - linear) / quadratic
        accum[...] = new_accum

    def get_config(self):
        return {**super().get_config(), "learning_rate_power": self.learning_rate_power,
                "initial_accumulator_value": self.initial_accumulator_value,
                "l1_regularization_strength": self.l1_regularization_strength,
                "l2_regularization_strength": self.l2_regularization_strength,
                "l2_shrinkage_regularization_strength":
                    self.l2_shrinkage_regularization_strength,
                "beta": self.beta}


class Adafactor(base.Optimizer):
    """Adafactor (Shazeer & Stern 2018, Algorithms 4-5), as Keras 3: factored second moments
    (row and column means) for weights of rank >= 2, relative step size
    ``min(lr, 1/sqrt(t))`` scaled by ``max(epsilon_2, rms(w))``, update clipping at
    ``clip_threshold``, decay ``1 - t**beta_2_decay``."""

    def __init__(self, learning_rate=0.001, beta_2_decay=-0.8, epsilon_1=1e-30, epsilon_2=1e-3,
                 clip_threshold=1.0, relative_step=True, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
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


class Lamb(base.Optimizer):
    """LAMB (You et al. 2020, Algorithm 2), as Keras 3: the Adam direction
    ``m_hat / (sqrt(v_hat) + epsilon)`` scaled per weight by the trust ratio
    ``||w|| / ||update||`` (1 when either norm is 0)."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, name=None,
                 **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
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
