"""A whole training step as one graph: forward, loss, gradients and the optimizer's update.

An optimizer enters a graph through its *update rule* (`UpdateRule`, registered per optimizer
class with `register_update_rule`; kerasrs's own rules are in `kerasrs.optimizers.graph_rules`,
which the optimizers package registers, since this package may not import it). A rule has two
halves:

- ``host_values(optimizer)``: the per-step scalars the eager step computes in Python floats from
  the optimizer's state (the learning rate, a schedule's value, Adam's bias-corrected step size);
  the caller computes them on the host before every run and feeds them as float64 0-d inputs
  named ``hyper/<name>`` (`hyper_feeds`). So a schedule is an input, and these scalars are bit
  for bit the eager step's;
- ``record(optimizer, variables, grads, hyper)``: the update written with kerasrs ops (the
  same arithmetic, in the same order and dtypes, as the eager step), slot updates as graph
  updates; it returns the new value of each trained variable (the caller applies constraints and
  assigns them).

`trace_train_step` is the plain entry point (``compile(jit_compile=True)`` traces the model's
own ``compute_loss`` instead: `kerasrs.trainers.jit`).
"""

import numpy as np

from kerasrs.autodiff import no_grad
from kerasrs.graph import tracing

UPDATE_RULES = {}  # optimizer class -> UpdateRule
HYPER = "hyper/"   # prefix of the inputs a rule's host values are fed as


class UpdateRule:
    """How one optimizer class's step is written as graph nodes (see the module docstring)."""

    def check(self, optimizer):
        """Raise NotImplementedError, naming the option, for a setting without a graph form."""

    def host_values(self, optimizer):
        """``{name: float}``: the step's scalars, computed as the eager step computes them."""
        return {}

    def record(self, optimizer, variables, grads, hyper):
        """Record the update; ``hyper`` maps each host value's name to its 0-d float64 input.
        Returns the new values of ``variables`` (Tensors, in order)."""
        raise NotImplementedError


def register_update_rule(optimizer_class, rule):
    """Make ``rule`` (an `UpdateRule`) the graph form of ``optimizer_class``'s step (that class
    exactly: a subclass may change the step and needs its own rule)."""
    UPDATE_RULES[optimizer_class] = rule


def update_rule(optimizer):
    """The checked `UpdateRule` of ``optimizer``.

    Raises:
        NotImplementedError: naming the optimizer or the option that has no graph form.
    """
    rule = UPDATE_RULES.get(type(optimizer))
    if rule is None:
        names = sorted(cls.__name__ for cls in UPDATE_RULES)
        raise NotImplementedError(f"kerasrs.graph: no graph update rule for optimizer "
                                  f"{type(optimizer).__name__}; use one of {names} or train "
                                  f"eagerly. Received: {optimizer!r}")
    rule.check(optimizer)
    return rule


def hyper_feeds(optimizer, backend=None):
    """``{input name: 0-d float64 array}``: the host values of ``optimizer``'s next step, on
    ``backend`` (a `kerasrs.backend.Backend`, where the variables are; default NumPy)."""
    values = update_rule(optimizer).host_values(optimizer)
    put = np.asarray if backend is None or backend.name == "numpy" else backend.asarray
    return {HYPER + name: put(np.float64(value)) for name, value in values.items()}


def trace_train_step(model, optimizer, loss_fn, batch_spec):
    """The `Graph` of one training step on batches shaped like ``batch_spec``.

    Args:
        model: a built (or buildable) kerasrs model: ``model(x, training=True)`` gives the
            predictions and ``model.trainable_weights`` the variables to train.
        optimizer: a kerasrs optimizer with a graph rule (built here if needed).
        loss_fn: ``loss_fn(y_true, y_pred)`` -> a scalar Tensor (a kerasrs `Loss`).
        batch_spec: ``(x, y)`` example arrays, or ``((x_shape, x_dtype), (y_shape,
            y_dtype))`` (zeros are traced then).

    Returns:
        A `Graph` with inputs ``x``, ``y`` and the rule's ``hyper/<name>`` values (feed them
        with `hyper_feeds` before every run), output ``loss``, and updates of every trained
        variable and optimizer variable.

    Raises:
        NotImplementedError: for an optimizer or option without a graph rule (naming it).
    """
    x, y = (_example(spec) for spec in batch_spec)
    if not model.trainable_weights:
        with no_grad():
            model(x)  # builds the layers
    variables = list(model.trainable_weights)
    rule = update_rule(optimizer)
    if not optimizer.built:
        optimizer.build(variables)

    def step(feeds):
        loss = loss_fn(feeds["y"], model(feeds["x"], training=True))
        hyper = {k[len(HYPER):]: v for k, v in feeds.items() if k.startswith(HYPER)}
        grads = tracing.grad(optimizer.scale_loss(loss), variables)
        new = rule.record(optimizer, variables, grads, hyper)
        for w, value in zip(variables, new):
            tracing.assign(w, value)
        return {"loss": loss}

    return tracing.Tracer().trace_feeds(
        step, {"x": x, "y": y, **hyper_feeds(optimizer, variables[0].backend)})


def _example(spec):
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], tuple):
        return np.zeros(spec[0], spec[1])
    return spec
