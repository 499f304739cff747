"""`Muon` with Keras 3's update rule and defaults (keras/src/optimizers/muon.py)."""

import re

from kerasrs.optimizers import base


class Muon(base.Optimizer):
    """Muon (K. Jordan 2024; Liu et al. 2025, arXiv:2502.16982), as Keras 3: 2-D weights follow
    Nesterov momentum orthogonalized by ``ns_steps`` quintic Newton-Schulz iterations
    (coefficients ``muon_a, muon_b, muon_c``) and scaled by ``sqrt(max(rows, cols)) *
    rms_rate``; other weights (and embeddings, and paths matching ``exclude_layers``) use AdamW
    with ``adam_lr_ratio * learning_rate`` and ``adam_weight_decay``."""

    def __init__(self, learning_rate=0.001, adam_beta_1=0.9, adam_beta_2=0.999,
                 adam_weight_decay=0.004, epsilon=1e-7, weight_decay=0.004, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, use_ema=False, ema_momentum=0.99,
                 ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, exclude_layers=None,
                 exclude_embeddings=True, muon_a=3.4445, muon_b=-4.7750, muon_c=2.0315,
                 adam_lr_ratio=1, momentum=0.95, ns_steps=5, nesterov=True, rms_rate=0.2,
                 **kwargs):
        super().__init__(**base.base_arguments(locals()))
        self.adam_beta_1, self.adam_beta_2 = adam_beta_1, adam_beta_2
        self.adam_weight_decay, self.epsilon = adam_weight_decay, epsilon
        self.exclude_layers, self.exclude_embeddings = list(exclude_layers or []), \
            exclude_embeddings
        self.muon_a, self.muon_b, self.muon_c = muon_a, muon_b, muon_c
        self.adam_lr_ratio, self.momentum, self.ns_steps = adam_lr_ratio, momentum, ns_steps
        self.nesterov, self.rms_rate = nesterov, rms_rate

    def _uses_adamw(self, variable):
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
