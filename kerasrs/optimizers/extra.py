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


class Muon(base.Optimizer):
    """Muon (K. Jordan 2024; Liu et al. 2025, arXiv:2502.16982), as Keras 3: 2-D weights follow
    Nesterov momentum orthogonalized by ``ns_steps`` quintic Newton-Schulz iterations
    (coefficients ``muon_a, muon_b, muon_c``) and scaled by ``sqrt(max(rows, cols)) *
    rms_rate``; other weights (and embeddings, and paths matching ``exclude_layers``) use AdamW
    with ``adam_lr_ratio * learning_rate`` and ``adam_weight_decay``."""

    def __init__(self, learning_rate=0.001, adam_beta_1=0.9, adam_beta_2=0.999,
                 adam_weight_decay=0.004, epsilon=1e-7, weight_decay=0.004, name=None,
                 exclude_layers=None, exclude_embeddings=True, muon_a=3.4445, muon_b=-4.7750,
                 muon_c=2.0315, adam_lr_ratio=1, momentum=0.95, ns_steps=5, nesterov=True,
                 rms_rate=0.2, **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, name=name,
                         **kwargs)
        self.adam_beta_1, self.adam_beta_2 = adam_beta_1, adam_beta_2
        self.adam_weight_decay, self.epsilon = adam_weight_decay, epsilon
        self.exclude_layers, self.exclude_embeddings = list(exclude_layers or []), \
            exclude_embeddings
        self.muon_a, self.muon_b, self.muon_c = muon_a, muon_b, muon_c
        self.adam_lr_ratio, self.momentum, self.ns_steps = adam_lr_ratio, momentum, ns_steps
        self.nesterov, self.rms_rate = nesterov, rms_rate

    def _uses_adamw(self, variable):
        import re

        path = getattr(variable, "path", None) or variable.name
        return (len(variable.shape) != 2 or (self.exclude_embeddings and "embedding" in
                                             path.lower())
                or any(re.search(k, path) for k in self.exclude_layers))

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._m = self.add_optimizer_variables(variables, "momentum")
        self._v = [self.add_variable_from_reference(v, "velocity") if self._uses_adamw(v)
                   else None for v in variables]

    def _apply_weight_decay(self, variables, lr):
        for var in variables:
            if not self._uses_weight_decay(var):
                continue
            wd = self.adam_weight_decay if self._uses_adamw(var) else self.weight_decay
            if wd:
                var.data -= var.data * (float(wd) * lr)

    def update_step(self, gradient, variable, learning_rate):
        i = self._slot_index(variable)
        m, w = self._m[i].data, variable.data
        if self._v[i] is not None:
            v = self._v[i].data
            t = float(self._iterations.data) + 1.0
            lr = learning_rate * self.adam_lr_ratio
            alpha = lr * (1 - self.adam_beta_2 ** t) ** 0.5 / (1 - self.adam_beta_1 ** t)
            m += (gradient - m) * (1 - self.adam_beta_1)
            v += (gradient * gradient - v) * (1 - self.adam_beta_2)
            w -= m * alpha / (variable.backend.xp.sqrt(v) + self.epsilon)
            return
        m += gradient + m * (self.momentum - 1)
        g = gradient + self.momentum * m if self.nesterov else m
        update = self._newton_schulz(variable.backend.xp, g)
        if self.rms_rate is not None:
            update = update * (max(w.shape[0], w.shape[1]) ** 0.5 * self.rms_rate)
        w -= learning_rate * update

    def _newton_schulz(self, xp, x):
        """An approximate ``U V^T`` of ``x``'s SVD by quintic Newton-Schulz iterations."""
        tall = x.shape[-2] > x.shape[-1]
        if tall:
            x = x.swapaxes(-1, -2)
        x = x / (xp.sqrt((x * x).sum()) + 1e-7)
        a, b, c = self.muon_a, self.muon_b, self.muon_c
        for _ in range(self.ns_steps):
            s = x @ x.swapaxes(-1, -2)
            x = a * x + (b * s + c * s @ s) @ x
        return x.swapaxes(-1, -2) if tall else x

    def get_config(self):
        return {**super().get_config(), "adam_beta_1": self.adam_beta_1,
                "adam_beta_2": self.adam_beta_2, "adam_weight_decay": self.adam_weight_decay,
                "epsilon": self.epsilon, "exclude_layers": self.exclude_layers,
                "exclude_embeddings": self.exclude_embeddings, "muon_a": self.muon_a,
                "muon_b": self.muon_b, "muon_c": self.muon_c, "adam_lr_ratio": self.adam_lr_ratio,
                "momentum": self.momentum, "ns_steps": self.ns_steps, "nesterov": self.nesterov,
                "rms_rate": self.rms_rate}


class ScheduleFreeAdamW(base.Optimizer):
    """Schedule-free AdamW (Defazio et al. 2024, "The Road Less Scheduled", Algorithm 1), as
    Keras 3: the weights hold the interpolation ``y = (1 - beta_1) z + beta_1 x`` between the
    Adam-preconditioned SGD sequence ``z`` (slot ``momentum``) and its running average ``x``;
    optional linear learning-rate warmup over ``warmup_steps``."""

    def __init__(self, learning_rate=0.0025, beta_1=0.9, beta_2=0.999, epsilon=1e-8,
                 warmup_steps=0, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
        self.warmup_steps = warmup_steps

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._z, self._v = self.add_optimizer_variables(variables, ["momentum", "velocity"])
        for z, var in zip(self._z, variables):
            z.data[...] = var.data

    def update_step(self, gradient, variable, learning_rate):
        xp, i = variable.backend.xp, self._slot_index(variable)
        t = float(self._iterations.data) + 1.0
        lr = learning_rate * (min(t / self.warmup_steps, 1.0) if self.warmup_steps > 0 else 1.0)
        z, v, y = self._z[i].data, self._v[i].data, variable.data
        z_old = z.copy()
        v += (gradient * gradient - v) * (1 - self.beta_2)
        z -= lr * gradient / (xp.sqrt(v / (1 - self.beta_2 ** t)) + self.epsilon)
        x_old = (y - (1 - self.beta_1) * z_old) / self.beta_1
        x_new = (1 - 1 / t) * x_old + z / t
        y[...] = (1 - self.beta_1) * z + self.beta_1 * x_new

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon, "warmup_steps": self.warmup_steps}
