"""A whole training step as one graph: forward, loss, gradients and the optimizer's update.

`trace_train_step` is the entry point a trainer calls (phase 2 wires it into
``compile(jit_compile=True)``). The updates are graph nodes written with kerasrs ops, the same
arithmetic, in the same order and dtypes, as the backend kernels the eager optimizers call
(``sgd_update`` and ``adam_update``, `kerasrs.backend.kernels.optimizer`): scalars computed in
Python floats there are Python floats here (weak: they take the variable's dtype), the learning rate
and the bias correction are computed in float64 from the optimizer's variables and cast to the
variable's dtype. So replayed and eager training agree to the last bit or nearly.

The model, optimizer and loss are used only through their public, Keras-named surface:
``model(x, training=True)``, ``model.trainable_weights``, ``loss_fn(y_true, y_pred)``,
``optimizer.build``, ``learning_rate``, ``iterations`` and the hyperparameters; the slot
variables are read from the optimizer (see `_slot`).
"""

import numpy as np

from kerasrs import ops
from kerasrs.autodiff import Variable, no_grad
from kerasrs.graph import tracing


def trace_train_step(model, optimizer, loss_fn, batch_spec):
    """The `Graph` of one training step on batches shaped like ``batch_spec``.

    Args:
        model: a built (or buildable) kerasrs model: ``model(x, training=True)`` gives the
            predictions and ``model.trainable_weights`` the variables to train.
        optimizer: a kerasrs `SGD` or `Adam` (built here if needed).
        loss_fn: ``loss_fn(y_true, y_pred)`` -> a scalar Tensor (a kerasrs `Loss`).
        batch_spec: ``(x, y)`` example arrays, or ``((x_shape, x_dtype), (y_shape,
            y_dtype))`` (zeros are traced then).

    Returns:
        A `Graph` with inputs ``x`` and ``y``, output ``loss``, and updates of every trained
        variable and optimizer variable.

    Raises:
        NotImplementedError: for an optimizer or option without a graph rule (naming it).
    """
    x, y = (_example(spec) for spec in batch_spec)
    if not model.trainable_weights:
        with no_grad():
            model(x)  # builds the layers
    variables = list(model.trainable_weights)
    rule = _rule(optimizer)
    if not optimizer.built:
        optimizer.build(variables)

    def step(x, y):
        loss = loss_fn(y, model(x, training=True))
        rule(optimizer, variables, tracing.grad(loss, variables))
        return {"loss": loss}

    return tracing.trace(step, x=x, y=y)


def _example(spec):
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], tuple):
        return np.zeros(spec[0], spec[1])
    return spec


# -- update rules ------------------------------------------------------------------------------
def _rule(optimizer):
    """The graph rule for ``optimizer``, after checking it uses only supported options."""
    name = type(optimizer).__name__
    rule = RULES.get(name)
    if rule is None:
        raise NotImplementedError(f"kerasrs.graph: no graph update rule for {name}; use one of "
                                  f"{sorted(RULES)} or train eagerly. Received: {optimizer!r}")
    for option in ("weight_decay", "clipnorm", "clipvalue", "global_clipnorm", "use_ema",
                   "loss_scale_factor"):
        if getattr(optimizer, option, None):
            raise NotImplementedError(f"kerasrs.graph: {name} with {option} has no graph rule "
                                      f"yet. Received: {option}={getattr(optimizer, option)!r}")
    if not isinstance(optimizer.learning_rate, Variable):
        raise NotImplementedError(f"kerasrs.graph: {name} with a learning-rate schedule has no "
                                  "graph rule yet; use a float learning rate.")
    return rule


def _slot(optimizer, slots, variable):
    """The slot variable of ``variable`` in the optimizer's list ``slots`` (built order)."""
    return slots[optimizer._slot_index(variable)]


def _learning_rate(optimizer, dtype):
    """The learning rate as the eager step reads it (a Python float from the variable), cast to
    ``dtype``: ``f(lr)`` in the backend kernels."""
    return ops.cast(optimizer.learning_rate, dtype)


def sgd_update(optimizer, variables, grads):
    """Record `SGD`'s step (the backend's ``sgd_update`` rule, Keras 3's)::

        momentum == 0:  w = w - lr * g
        momentum > 0:   v = momentum * v - lr * g;  w = w + v
                        (nesterov: w = w + momentum * v - lr * g)
    """
    for w, g in zip(variables, grads):
        step = _learning_rate(optimizer, w.dtype) * g
        if not optimizer.momentum:
            tracing.assign(w, w - step)
            continue
        v = _slot(optimizer, optimizer.momentums, w)
        v_new = optimizer.momentum * v - step
        tracing.assign(v, v_new)
        tracing.assign(w, w + (optimizer.momentum * v_new - step if optimizer.nesterov
                               else v_new))
    _count_step(optimizer)


def adam_update(optimizer, variables, grads):
    """Record `Adam`'s step (the backend's ``adam_update`` rule, with the bias correction in
    ``alpha`` as `kerasrs.optimizers.Adam` computes it; Kingma & Ba 2015, Algorithm 1)::

        t = iterations + 1;  alpha = lr * sqrt(1 - beta_2**t) / (1 - beta_1**t)
        m = m + (1 - beta_1) * (g - m);  v = v + (1 - beta_2) * (g * g - v)
        v_hat = max(v_hat, v)   (amsgrad: the denominator uses v_hat)
        w = w - alpha * m / (sqrt(v) + epsilon)
    """
    t = ops.cast(optimizer.iterations, "float64") + 1.0
    alpha = ops.cast(optimizer.learning_rate, "float64") * ops.sqrt(
        1.0 - ops.power(optimizer.beta_2, t)) / (1.0 - ops.power(optimizer.beta_1, t))
    c1, c2 = 1.0 - optimizer.beta_1, 1.0 - optimizer.beta_2
    for w, g in zip(variables, grads):
        m = _slot(optimizer, optimizer._momentums, w)
        v = _slot(optimizer, optimizer._velocities, w)
        m_new = m + c1 * (g - m)
        v_new = v + c2 * (g * g - v)
        tracing.assign(m, m_new)
        tracing.assign(v, v_new)
        if optimizer.amsgrad:
            v_hat = _slot(optimizer, optimizer._velocity_hats, w)
            v_new = ops.maximum(v_hat, v_new)
            tracing.assign(v_hat, v_new)
        step = ops.cast(alpha, w.dtype) * m_new / (ops.sqrt(v_new) + optimizer.epsilon)
        tracing.assign(w, w - step)
    _count_step(optimizer)


def _count_step(optimizer):
    tracing.assign(optimizer.iterations, optimizer.iterations + 1)


RULES = {"SGD": sgd_update, "Adam": adam_update}
