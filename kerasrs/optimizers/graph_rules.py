"""The optimizers' steps as graph nodes (`kerasrs.graph` update rules), one rule per optimizer.

``compile(jit_compile=True)`` replays a traced training step; its optimizer update is what a
rule here records. Each rule is the eager step term for term: the same operations, in the same
order and dtypes, so replayed training gives the eager weights (bit for bit where the ops
agree). `Rule` does what `Optimizer.apply` does around every optimizer's ``update_step``, in
Keras 3's order:

1. cast the gradients to the variables' dtypes, divide by ``loss_scale_factor``, clip
   (``clipnorm``, ``global_clipnorm``, ``clipvalue``);
2. decoupled weight decay ``w = w - w * (weight_decay * lr)``;
3. the optimizer's own step (the subclasses below);
4. the EMA of the new values, and its periodic overwrite of the variables (``use_ema``);
5. ``iterations += 1``.

The scalars the eager step computes in Python floats (the learning rate from a variable, a
schedule or a callable; Adam's bias-corrected step size; EMA's momentum at this step) are
computed here the same way on the host (``host_values``) and fed as inputs every run (see
`kerasrs.graph.train_step`): a learning-rate schedule or a changed learning rate is an input,
not a baked constant. Variables without a gradient are left alone, as eagerly.
"""

import math

import numpy as np

from kerasrs import graph, ops
from kerasrs.graph import tracing
from kerasrs.graph.train_step import update_rule
from kerasrs.optimizers.adagrad import Adagrad
from kerasrs.optimizers.adam import Adam, AdamW
from kerasrs.optimizers.adamax import Adamax
from kerasrs.optimizers.lion import Lion
from kerasrs.optimizers.loss_scale_optimizer import LossScaleOptimizer
from kerasrs.optimizers.nadam import Nadam
from kerasrs.optimizers.rmsprop import RMSprop
from kerasrs.optimizers.sgd import SGD


def _in(value, like):
    """A float64 0-d host value in ``like``'s dtype (as a Python float meets an array)."""
    return ops.cast(value, like.dtype)


class Rule(graph.UpdateRule):
    """The part of every step that `kerasrs.optimizers.Optimizer.apply` does (see the module
    docstring); subclasses write ``update`` (one variable) or ``update_all``."""

    def host_values(self, optimizer):
        lr = optimizer._current_learning_rate()
        values = {"learning_rate": lr}
        t = float(optimizer.iterations.data) + 1.0
        if optimizer.weight_decay:
            values["weight_decay"] = float(optimizer.weight_decay) * lr
        if optimizer.use_ema:
            step = int(optimizer.iterations.data)
            values["ema_momentum"] = 0.0 if step == 0 else optimizer.ema_momentum
            every = optimizer.ema_overwrite_frequency
            values["ema_overwrite"] = float(bool(every and (step + 1) % every == 0))
        values.update(self.step_values(optimizer, lr, t))
        return values

    def step_values(self, optimizer, lr, t):
        """The optimizer's own per-step scalars (``t``: the step number, from 1)."""
        return {}

    def record(self, optimizer, variables, grads, hyper):
        pairs = [(w, g) for w, g in zip(variables, grads) if g is not None]
        grads = self._clip(optimizer, [self._unscaled(optimizer, w, g) for w, g in pairs])
        values = {id(w): w for w in variables}
        for (w, _), g in zip(pairs, grads):
            if "weight_decay" in hyper and optimizer._uses_weight_decay(w):
                values[id(w)] = w - w * _in(hyper["weight_decay"], w)
        trained = [w for w, _ in pairs]
        new = self.update_all(optimizer, trained, [values[id(w)] for w in trained], grads, hyper)
        values.update({id(w): value for w, value in zip(trained, new)})
        if optimizer.use_ema:
            self._ema(optimizer, values, hyper)
        tracing.assign(optimizer.iterations, optimizer.iterations + 1)
        return [values[id(w)] for w in variables]

    def update_all(self, optimizer, variables, values, grads, hyper):
        """New values of ``variables`` (current ``values``, gradients ``grads``)."""
        return [self.update(optimizer, v, w, g, hyper)
                for v, w, g in zip(variables, values, grads)]

    def update(self, optimizer, variable, w, g, hyper):
        raise NotImplementedError

    # -- gradients ----------------------------------------------------------------------------
    @staticmethod
    def _unscaled(optimizer, variable, g):
        if g.dtype != variable.dtype:
            g = ops.cast(g, variable.dtype)
        factor = optimizer.loss_scale_factor
        return g if factor is None else g / factor

    @staticmethod
    def _clip(optimizer, grads):
        """`Optimizer._clip` as ops: the norms in float64, the factors cast to the gradient's
        dtype as the eager step's Python floats are."""
        if optimizer.clipnorm:
            limit = optimizer.clipnorm
            out = []
            for g in grads:
                norm = _norm(g)
                scaled = g * ops.cast(limit / norm, g.dtype)
                out.append(ops.where(ops.less_equal(norm, limit), g, scaled))
            return out
        if optimizer.global_clipnorm:
            limit = optimizer.global_clipnorm
            total = None
            for g in grads:  # Python's sum: left to right
                square = ops.sum(ops.square(ops.cast(g, "float64")))
                total = square if total is None else total + square
            norm = ops.sqrt(total)
            scale = limit * ops.minimum(1.0 / norm, 1.0 / limit)
            scale = ops.where(ops.isfinite(norm), scale, math.nan)
            return [g * ops.cast(scale, g.dtype) for g in grads]
        if optimizer.clipvalue:
            return [ops.clip(g, -optimizer.clipvalue, optimizer.clipvalue) for g in grads]
        return grads

    # -- moving average -------------------------------------------------------------------------
    @staticmethod
    def _ema(optimizer, values, hyper):
        """``average = m * average + (1 - m) * w`` for every trained variable (``m`` is 0 at the
        first step), then ``w = average`` when this step ends a period of
        ``ema_overwrite_frequency``."""
        overwrite = ops.not_equal(hyper["ema_overwrite"], 0.0)
        for w, average in zip(optimizer._trainable_variables,
                              optimizer._model_variables_moving_average):
            value = values.get(id(w), w)
            m = _in(hyper["ema_momentum"], w)
            new = average * m + value * (1.0 - m)
            tracing.assign(average, new)
            values[id(w)] = ops.where(overwrite, new, value)


def _norm(g):
    """``sqrt(sum(g**2))`` in float64 (`kerasrs.optimizers.base._clip_by_norm`)."""
    return ops.sqrt(ops.sum(ops.square(ops.cast(g, "float64"))))


def _slot(optimizer, slots, variable):
    return slots[optimizer._slot_index(variable)]


# -- one rule per optimizer --------------------------------------------------------------------
class SGDRule(Rule):
    """`SGD` (the backend's ``sgd_update``)::

        w = w - lr * g;   or   v = momentum * v - lr * g;  w = w + v
                               (nesterov: w = w + momentum * v - lr * g)
    """

    def update(self, optimizer, variable, w, g, hyper):
        step = _in(hyper["learning_rate"], variable) * g
        if not optimizer.momentum:
            return w - step
        v = _slot(optimizer, optimizer.momentums, variable)
        v_new = optimizer.momentum * v - step
        tracing.assign(v, v_new)
        return w + (optimizer.momentum * v_new - step if optimizer.nesterov else v_new)


class AdamRule(Rule):
    """`Adam` and `AdamW` (the backend's ``adam_update``), with ``alpha`` computed on the host as
    `kerasrs.optimizers.Adam` computes it::

        m = m + (1 - beta_1) * (g - m);  v = v + (1 - beta_2) * (g * g - v)
        v_hat = max(v_hat, v)   (amsgrad: the denominator uses v_hat)
        w = w - alpha * m / (sqrt(v) + epsilon)
    """

    def step_values(self, optimizer, lr, t):
        return {"alpha": lr * math.sqrt(1.0 - optimizer.beta_2 ** t) /
                (1.0 - optimizer.beta_1 ** t)}

    def update(self, optimizer, variable, w, g, hyper):
        m = _slot(optimizer, optimizer._momentums, variable)
        v = _slot(optimizer, optimizer._velocities, variable)
        m_new = m + (1.0 - optimizer.beta_1) * (g - m)
        v_new = v + (1.0 - optimizer.beta_2) * (g * g - v)
        tracing.assign(m, m_new)
        tracing.assign(v, v_new)
        if optimizer.amsgrad:
            v_hat = _slot(optimizer, optimizer._velocity_hats, variable)
            v_new = ops.maximum(v_hat, v_new)
            tracing.assign(v_hat, v_new)
        return w - _in(hyper["alpha"], variable) * m_new / (ops.sqrt(v_new) + optimizer.epsilon)


class RMSpropRule(Rule):
    """`RMSprop`'s ``update_step``::

        v = rho * v + (1 - rho) * g**2;   a = rho * a + (1 - rho) * g   (centered)
        step = lr * g / sqrt(v - a**2 + epsilon  or  v + epsilon)
        m = momentum * m + step;  w = w - m   (momentum > 0)   else   w = w - step
    """

    def update(self, optimizer, variable, w, g, hyper):
        rho = optimizer.rho
        i = optimizer._slot_index(variable)
        v = optimizer._velocities[i]
        v_new = v * rho + (g * g) * (1.0 - rho)
        tracing.assign(v, v_new)
        if optimizer.centered:
            a = optimizer._average_gradients[i]
            a_new = a * rho + g * (1.0 - rho)
            tracing.assign(a, a_new)
            denominator = (v_new - a_new * a_new) + optimizer.epsilon
        else:
            denominator = v_new + optimizer.epsilon
        step = g / ops.sqrt(denominator) * _in(hyper["learning_rate"], variable)
        if optimizer.momentum > 0:
            m = optimizer._momentums[i]
            m_new = m * optimizer.momentum + step
            tracing.assign(m, m_new)
            return w - m_new
        return w - step


class AdagradRule(Rule):
    """`Adagrad`: ``a = a + g**2;  w = w - lr * g / sqrt(a + epsilon)``."""

    def update(self, optimizer, variable, w, g, hyper):
        a = _slot(optimizer, optimizer._accumulators, variable)
        a_new = a + g * g
        tracing.assign(a, a_new)
        return w - g / ops.sqrt(a_new + optimizer.epsilon) * _in(hyper["learning_rate"], variable)


class AdamaxRule(Rule):
    """`Adamax`::

        m = m + (1 - beta_1) * (g - m);  u = max(beta_2 * u, |g|)
        w = w - lr / (1 - beta_1**t) * m / (u + epsilon)
    """

    def step_values(self, optimizer, lr, t):
        return {"step_size": lr / (1.0 - optimizer.beta_1 ** t)}

    def update(self, optimizer, variable, w, g, hyper):
        i = optimizer._slot_index(variable)
        m, u = optimizer._m[i], optimizer._u[i]
        m_new = m + (g - m) * (1.0 - optimizer.beta_1)
        u_new = ops.maximum(u * optimizer.beta_2, ops.absolute(g))
        tracing.assign(m, m_new)
        tracing.assign(u, u_new)
        return w - m_new / (u_new + optimizer.epsilon) * _in(hyper["step_size"], variable)


class LionRule(Rule):
    """`Lion`::

        w = w - lr * sign(beta_1 * m + (1 - beta_1) * g);  m = beta_2 * m + (1 - beta_2) * g
    """

    def update(self, optimizer, variable, w, g, hyper):
        m = _slot(optimizer, optimizer._momentums, variable)
        direction = ops.sign(m * optimizer.beta_1 + g * (1.0 - optimizer.beta_1))
        tracing.assign(m, m * optimizer.beta_2 + g * (1.0 - optimizer.beta_2))
        return w - direction * _in(hyper["learning_rate"], variable)


class NadamRule(Rule):
    """`Nadam` (Dozat 2016), with the momentum schedule's products computed on the host as
    `kerasrs.optimizers.Nadam` computes them (``u_product`` is rounded to its variable's
    dtype first, as its eager update stores it)::

        m = m + (1 - beta_1) * (g - m);  v = v + (1 - beta_2) * (g**2 - v)
        m_hat = m * mu_next / (1 - u mu_next) + g * (1 - mu_t) / (1 - u)
        w = w - lr * m_hat / (sqrt(v / (1 - beta_2**t)) + epsilon)
    """

    def step_values(self, optimizer, lr, t):
        mu_t, mu_next = optimizer._mu(t), optimizer._mu(t + 1.0)
        u = optimizer._u_product
        product = float(np.asarray(float(u.data) * mu_t, dtype=u.dtype))
        return {"u_product": product, "m_scale": mu_next / (1.0 - product * mu_next),
                "g_scale": (1.0 - mu_t) / (1.0 - product),
                "v_scale": 1.0 / (1.0 - optimizer.beta_2 ** t)}

    def update_all(self, optimizer, variables, values, grads, hyper):
        u = optimizer._u_product
        tracing.assign(u, ops.cast(hyper["u_product"], u.dtype))
        return super().update_all(optimizer, variables, values, grads, hyper)

    def update(self, optimizer, variable, w, g, hyper):
        i = optimizer._slot_index(variable)
        m, v = optimizer._momentums[i], optimizer._velocities[i]
        m_new = m + (g - m) * (1.0 - optimizer.beta_1)
        v_new = v + (g * g - v) * (1.0 - optimizer.beta_2)
        tracing.assign(m, m_new)
        tracing.assign(v, v_new)
        m_hat = m_new * _in(hyper["m_scale"], variable) + g * _in(hyper["g_scale"], variable)
        denominator = ops.sqrt(v_new * _in(hyper["v_scale"], variable)) + optimizer.epsilon
        return w - m_hat / denominator * _in(hyper["learning_rate"], variable)


class LossScaleRule(graph.UpdateRule):
    """`LossScaleOptimizer` (dynamic loss scaling) with no branch in the graph:

        finite = all(isfinite(g) for every gradient g of the scaled loss)
        every update of the inner optimizer's rule (weights, slots, ``iterations``):
            where(finite, new, old)           (`kerasrs.graph.updates_if`)
        step_counter = where(finite and counter + 1 < dynamic_growth_steps, counter + 1, 0)
        dynamic_scale = where(finite, where(counter + 1 >= dynamic_growth_steps, 2 s, s),
                              max(s / 2, floor))

    the inner rule seeing the gradients divided by the scale (in float32 at least), as
    `LossScaleOptimizer.apply` gives them to the inner optimizer.

    The host values: the inner rule's (learning rate, Adam's bias correction...) depend on the
    inner ``iterations``, which a skipped step leaves as it was. They are computed before each
    run from the variable itself, which the previous run updated in place: a skip is already
    in it, and these values are the eager step's bit for bit without reading back a flag (the
    read of ``iterations`` is the one every rule makes). The skip bookkeeping of the eager
    step (its warning when the scale is stuck at its floor) is done there too, one step late:
    ``iterations`` not advanced since the previous run means that run skipped, at the scale
    read before it.
    """

    def check(self, optimizer):
        update_rule(optimizer.inner_optimizer)

    def host_values(self, optimizer):
        inner = optimizer.inner_optimizer
        step, scale = int(inner.iterations.data), float(optimizer.dynamic_scale.data)
        seen = optimizer.__dict__.get("_replayed")
        if seen is not None:
            optimizer._note_step(step != seen[0], seen[1])
        optimizer._replayed = (step, scale)
        return update_rule(inner).host_values(inner)

    def record(self, optimizer, variables, grads, hyper):
        inner, scale = optimizer.inner_optimizer, optimizer.dynamic_scale
        finite = tracing.constant(np.array(True))
        for g in grads:
            if g is not None:
                finite = ops.logical_and(finite, ops.min(ops.isfinite(g)))
        unscaled = [None if g is None else _unscale(g, scale) for g in grads]
        with tracing.updates_if(finite):
            new = update_rule(inner).record(inner, variables, unscaled, hyper)
        counter = optimizer.step_counter + 1
        grow = ops.greater_equal(counter, optimizer.dynamic_growth_steps)
        tracing.assign(optimizer.step_counter,
                       ops.where(ops.logical_and(finite, ops.logical_not(grow)), counter,
                                 ops.zeros_like(counter)))
        tracing.assign(scale, ops.where(finite, ops.where(grow, scale * 2.0, scale),
                                        ops.maximum(scale / 2.0, optimizer.floor)))
        return [value if value is w else ops.where(finite, value, w)
                for w, value in zip(variables, new)]


def _unscale(g, scale):
    """``g / scale`` as `LossScaleOptimizer.apply` computes it: in float32 for a narrower
    gradient, else in the gradient's dtype (the scale read as a Python float)."""
    if np.dtype(g.dtype).itemsize < 4:
        g = ops.cast(g, "float32")
    return g / ops.cast(scale, g.dtype)


RULES = {SGD: SGDRule(), Adam: AdamRule(), AdamW: AdamRule(), RMSprop: RMSpropRule(),
         Adagrad: AdagradRule(), Adamax: AdamaxRule(), Lion: LionRule(), Nadam: NadamRule(),
         LossScaleOptimizer: LossScaleRule()}
for _cls, _rule in RULES.items():
    graph.register_update_rule(_cls, _rule)
