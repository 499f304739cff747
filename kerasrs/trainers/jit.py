"""``compile(jit_compile=...)``: fit, evaluate and predict through replayed step graphs.

With ``jit_compile=True`` (or ``"auto"`` once `kerasrs.config.enable_auto_jit_compile` is
called) the model's train, test and predict steps are traced into `kerasrs.graph` programs,
one per *signature* (the kind of step, every input's shape and dtype, the padded rows of a
``pad_last_batch`` step and the trained variables), and replayed on later batches. A short last
batch is a signature of its own (or, with ``fit(pad_last_batch=True)``, the padded step is).

What stays on the host, exactly as in eager mode: the data pipeline, callbacks, the loss mean
and the compiled metrics (updated from the step's outputs: the loss, each output's loss and
the predictions), ``steps_per_execution`` (the batch callbacks run once per execution, as
eagerly; each step is replayed by itself) and saving (the programs update the model's and the optimizer's variables in place).
In the graph: the forward pass in training mode (dropout masks drawn from the eager stream,
BatchNormalization's moving statistics as graph updates, masks and mixed-precision casts as
ops), ``compute_loss``, the gradients and the optimizer's update (its rule in
`kerasrs.optimizers.graph_rules`, with the learning rate fed on every step; under
``mixed_float16`` the loss scaling's skip of a non-finite step as ``where`` updates).

A step is trusted only after it was traced twice: on its first batch (which the new program
then runs) and again on the next batch of the same signature. The two graphs must be equal;
a difference means the step computes something outside recorded ops from the data (a mask on
the raw arrays, random numbers drawn on the host, a branch on a tensor's value), which a replay
would freeze. What the tracer cannot capture (an unregistered op, a host read of a traced
value, a value computed outside recorded ops where the graph needs a traced one, an optimizer
without a graph rule, random numbers drawn on the host by `kerasrs.random`, or such a
difference) raises `kerasrs.graph.TraceError` naming it (the op, and the layer whose call made
it by name and class) under ``jit_compile=True``; under ``"auto"`` that kind of step runs
eagerly from then on, after one warning naming it. Tracing draws no random numbers the eager run would not (the host streams
are put back).

Not traced (they run eagerly): an overridden ``train_step``/``test_step``/``predict_step``
(with one warning under ``jit_compile=True``), and a data-parallel ``fit``.
"""

import collections
import contextlib
import dataclasses
import itertools
import warnings

import numpy as np

from kerasrs import autodiff
from kerasrs import backend as backend_module
from kerasrs import graph
from kerasrs import random as random_module
from kerasrs.backend import settings
from kerasrs.graph import tracing
from kerasrs.graph.train_step import HYPER, hyper_feeds, update_rule
from kerasrs.layers import padding, tracking
from kerasrs.trainers import compile_utils, data_adapter

KINDS = ("train", "test", "predict")


def resolve(jit_compile, run_eagerly=None):
    """``compile``'s ``jit_compile`` as ``"strict"`` (True), ``"auto"`` (``"auto"`` with
    `kerasrs.config.enable_auto_jit_compile`) or None (eager: False, ``"auto"`` by default,
    or ``run_eagerly=True``).

    Raises:
        ValueError: for anything but True, False, None and ``"auto"``.
    """
    if isinstance(jit_compile, (bool, np.bool_, int, np.integer)) and jit_compile in (0, 1):
        jit_compile = bool(jit_compile)  # 1 and np.True_ are True, as in Keras (was: eager)
    if jit_compile not in (True, False, None, "auto"):
        raise ValueError("Model.compile: `jit_compile` must be True, False or 'auto'. "
                         f"Received: jit_compile={jit_compile!r}")
    if run_eagerly:
        return None
    if jit_compile is True:
        return "strict"
    if jit_compile == "auto" and settings.is_auto_jit_compile_enabled():
        return "auto"
    return None


def _get_jit_compile(model):
    return model._jit is not None


def _set_jit_compile(model, value):
    if model.compiled:
        resolve(value)  # the same values as compile's argument
        model._compile_config["jit_compile"] = value
        model._set_jit()
    else:  # predict needs no compile; compile sets it again from its argument
        mode = resolve(value, model.run_eagerly)
        model._jit = JitSteps(model, mode) if mode else None


jit_compile_property = property(_get_jit_compile, _set_jit_compile, doc="""bool: whether fit,
    evaluate and predict replay traced steps (Keras's attribute: compile's ``jit_compile``
    resolved; False with ``run_eagerly``). Setting it (True, False or "auto") switches the
    replayed steps on or off as compile would (before compile: for predict).

    Raises:
        ValueError: for a value compile refuses.""")


MAX_PROGRAMS = 16  # traced programs kept per model (a few shapes x train, test, predict)


@dataclasses.dataclass
class _Entry:
    """One signature's program: ``traced`` is its graph as traced (compared with the second
    trace), ``outputs`` the structure of the predictions, ``validated`` whether the second
    trace agreed."""

    traced: object
    program: object
    outputs: object
    validated: bool = False


class JitSteps:
    """The replayed steps of one compiled model (``Trainer._jit``).

    Each method returns None when its kind of step runs eagerly (``"auto"`` after a fallback),
    and the trainer then runs the eager code.

    Args:
        model: the compiled model.
        mode: ``"strict"`` or ``"auto"`` (see `resolve`).
    """

    def __init__(self, model, mode):
        self.model, self.strict = model, mode == "strict"
        self.entries = collections.OrderedDict()  # key -> _Entry, least recently used first
        self.evicted = False  # warned about the cap (`MAX_PROGRAMS`)
        self._layers_read = (None, 0)  # (settings_version, `_layer_settings`)
        self._readings, self._numbers = {}, itertools.count()  # layer settings -> number
        self.eager = {}  # kind -> why it runs eagerly

    # -- the three steps ---------------------------------------------------------------------
    def train(self, x, y, sample_weight, real=None):
        """`Trainer._forward_backward` as a replay: one optimizer step, the loss means updated.

        Returns:
            ``(y_pred, y, sample_weight)`` of the rows that count, or None (run eagerly: also
            the first step of a model not built yet, which would be traced without its weights,
            and a subclassed model's would then never be updated).
        """
        model = self.model
        if not model.built:  # its first call makes its weights: that step runs eagerly
            return None
        variables = model._train_variables
        if variables is None:
            variables = model._train_variables = model.trainable_weights
        try:
            feeds = self._feeds(x, y, sample_weight)
            if variables and not model.optimizer.built:  # the host values read its state
                model.optimizer.build(variables)
            feeds.update(hyper_feeds(model.optimizer, variables[0].backend) if variables
                         else {})
        except NotImplementedError as e:
            return self._fall_back("train", e)
        # a variable made non-trainable since (a callback freezing a layer) gets no gradient
        # eagerly, as the tape watches trainable ones only: it is part of the key
        key = ("train", real, _signature(feeds), tuple((id(v), v.trainable) for v in variables),
               _settings(model.optimizer, feeds))
        with _quiet(model.optimizer):  # a trace runs the step too
            entry = self._entry(key, feeds, lambda: self._train_fn((x, y, sample_weight),
                                                                   real, variables))
            if entry is None:
                return None
            out = entry.program(**feeds)
        if real is not None:
            x, y, sample_weight = (data_adapter.slice_struct(s, slice(0, real))
                                   for s in (x, y, sample_weight))
        self._track_losses(out, x)
        return _predictions(entry, out), y, sample_weight

    def test(self, x, y, sample_weight):
        """The test step's forward pass and loss (loss means updated).

        Returns:
            ``y_pred``, or None (run eagerly).
        """
        if not self.model.built:
            return None
        feeds = self._feeds(x, y, sample_weight)
        entry = self._entry(("test", _signature(feeds)), feeds,
                            lambda: self._test_fn((x, y, sample_weight)))
        if entry is None:
            return None
        out = entry.program(**feeds)
        self._track_losses(out, x)
        return _predictions(entry, out)

    def predict(self, x):
        """The model's outputs for one batch (inference mode) as NumPy arrays, or None."""
        if not self.model.built:
            return None
        feeds = self._feeds(x, None, None)
        entry = self._entry(("predict", _signature(feeds)), feeds,
                            lambda: self._predict_fn(x))
        if entry is None:
            return None
        out = entry.program(**feeds)
        count = len(autodiff._flatten(entry.outputs))
        return autodiff._pack(entry.outputs, iter(
            [np.asarray(out[f"y_pred/{i}"].numpy()) for i in range(count)]))

    def custom_step(self, name):
        """An overridden ``name`` (``train_step``...) runs eagerly: said once under
        ``jit_compile=True``."""
        if self.strict and name not in self.eager:
            self.eager[name] = "an overridden step"
            warnings.warn(f"{self.model.name}: jit_compile=True: the overridden {name} runs "
                          "eagerly (a graph captures the built-in steps only).", stacklevel=4)

    # -- programs ------------------------------------------------------------------------------
    def _entry(self, key, feeds, make_fn):
        """The validated (or new) program for ``key``; None if this kind runs eagerly."""
        kind = key[0]
        if kind in self.eager:
            return None
        key += (self._layer_settings(),)
        entry = self.entries.get(key)
        if entry is not None:
            self.entries.move_to_end(key)
        try:
            if entry is None:
                fn, predictions = make_fn()
                traced = _trace(fn, feeds)
                entry = self.entries[key] = _Entry(traced, graph.compile(traced),
                                                   predictions[0])
                self._keep_few()
            elif not entry.validated:
                fn, _ = make_fn()
                _check_same(entry.traced, _trace(fn, feeds), kind)
                entry.validated = True
        except (tracing.TraceError, NotImplementedError) as e:
            return self._fall_back(kind, e)
        return entry

    def _layer_settings(self):
        """The public scalar settings of the model and its layers (``Dropout.rate``,
        BatchNormalization's ``momentum``...), part of every step's key: a trace holds them as
        constants, so a callback changing one gets a new program, as a changed optimizer
        setting does (`_settings`). Read again only when a layer setting was assigned since
        (`kerasrs.layers.tracking.settings_version`)."""
        version = tracking.settings_version[0]
        if self._layers_read[0] != version:
            read = tuple((id(layer), _public_settings(layer))
                         for layer in self.model._flatten_layers())
            # a number per distinct reading (the key hashes it on every step), never reused;
            # the oldest readings are forgotten as the oldest programs are (`_keep_few`)
            number = self._readings.get(read)
            if number is None:
                number = self._readings[read] = next(self._numbers)
                if len(self._readings) > MAX_PROGRAMS:
                    del self._readings[next(iter(self._readings))]
            self._layers_read = (version, number)
        return self._layers_read[1]

    def _keep_few(self):
        """Drop the least recently used programs beyond `MAX_PROGRAMS` (each holds its planned
        buffers), warning once: many signatures mean retracing, which costs more than it saves."""
        while len(self.entries) > MAX_PROGRAMS:
            kind = self.entries.popitem(last=False)[0][0]
            if not self.evicted:
                self.evicted = True
                warnings.warn(
                    f"{self.model.name}: jit_compile: more than {MAX_PROGRAMS} step programs "
                    f"(one per batch shape and per value of an optimizer setting such as "
                    f"beta_1 or momentum); the least recently used ({kind}) is dropped and "
                    "retraced when needed. A setting changed on every batch traces every "
                    "step: change it per epoch, or compile with jit_compile=False.",
                    stacklevel=4)

    def _fall_back(self, kind, error):
        """Under ``jit_compile=True`` raise; under ``"auto"`` warn once and run ``kind``
        eagerly from now on."""
        if self.strict:
            if isinstance(error, tracing.TraceError):
                raise error
            raise tracing.TraceError(f"Model.fit with jit_compile=True: {error}",
                                     str(error)) from error
        what = getattr(error, "what", None) or str(error).split(";")[0]
        self.eager[kind] = what
        warnings.warn(f"{self.model.name}: jit_compile='auto': the {kind} step runs eagerly "
                      f"because a graph cannot capture {what} ({error})", stacklevel=4)
        return None

    # -- the traced functions --------------------------------------------------------------------
    def _train_fn(self, batch, real, variables):
        """``(fn, predictions)``: the training step to trace (it mirrors
        `Trainer._forward_backward`) and a list that receives the traced predictions."""
        model, optimizer = self.model, self.model.optimizer
        rule = update_rule(optimizer) if variables else None
        if variables and not optimizer.built:
            optimizer.build(variables)
        if variables:
            getattr(optimizer, "inner_optimizer", optimizer)._check_known(variables)
        predictions = []

        def step(feeds):
            x, y, sample_weight = _unflatten(batch, feeds)
            if real is None:
                y_pred = model(x, training=True)
            else:
                with padding.real_rows(real, data_adapter.batch_size_of(x)):
                    y_pred = model(x, training=True)
                x, y, sample_weight = (data_adapter.slice_struct(s, slice(0, real))
                                       for s in (x, y, sample_weight))
                y_pred = data_adapter.first_rows(y_pred, real)
            loss, parts = _loss(model, x, y, y_pred, sample_weight, True)
            if variables:
                grads = tracing.grad(optimizer.scale_loss(loss), variables,
                                     unconnected_gradients="none")
                _warn_missing(optimizer, variables, grads)
                hyper = {k[len(HYPER):]: v for k, v in feeds.items() if k.startswith(HYPER)}
                new = rule.record(optimizer, variables, grads, hyper)
                for v, value in zip(variables, new):
                    if getattr(v, "constraint", None) is not None:
                        value = v.constraint(value)
                    if value is not v:
                        tracing.assign(v, value)
            predictions.append(y_pred)
            return _outputs(loss, parts, y_pred)

        return step, predictions

    def _test_fn(self, batch):
        model, predictions = self.model, []

        def step(feeds):
            x, y, sample_weight = _unflatten(batch, feeds)
            with autodiff.no_grad():
                y_pred = model(x, training=False)
                loss, parts = _loss(model, x, y, y_pred, sample_weight, False)
            predictions.append(y_pred)
            return _outputs(loss, parts, y_pred)

        return step, predictions

    def _predict_fn(self, x):
        model, predictions = self.model, []

        def step(feeds):
            inputs, _, _ = _unflatten((x, None, None), feeds)
            with autodiff.no_grad():
                y_pred = model(inputs, training=False)
            predictions.append(y_pred)
            return _outputs(None, (), y_pred)

        return step, predictions

    # -- host bookkeeping ----------------------------------------------------------------------
    def _feeds(self, x, y, sample_weight):
        """``{input name: array}`` of the batch's leaves (``x/0``, ``y/0``, ...). On a device
        backend host leaves are copied to it: the traced step got them there (ops that copy a
        host argument over, such as sparse labels, do it outside the graph's nodes)."""
        feeds = {}
        be = backend_module.get()
        for role, struct in (("x", x), ("y", y), ("sample_weight", sample_weight)):
            for i, leaf in enumerate(autodiff._flatten(struct)):
                if leaf is not None:
                    if be.name != "numpy" and isinstance(leaf, np.ndarray):
                        leaf = be.asarray(leaf)
                    feeds[f"{role}/{i}"] = leaf
        return feeds

    def _track_losses(self, out, x):
        """The loss mean and the per-output loss means, as `Trainer.compute_loss` and
        ``_track_loss`` fold them."""
        model = self.model
        n = data_adapter.batch_size_of(x)
        model._loss_tracker.add(compile_utils.loss_mean(out["loss"], "compute_loss"), n)
        for k, tracker in enumerate(model._loss_trackers[1:]):
            tracker.add(compile_utils.loss_mean(out[f"loss/{k}"], "compute_loss"), n)


def _predictions(entry, out):
    """The predictions in the model's output structure (Tensors, with their masks)."""
    leaves = []
    for i in range(len(autodiff._flatten(entry.outputs))):
        leaf = out[f"y_pred/{i}"]
        if f"y_mask/{i}" in out:
            leaf._keras_mask = out[f"y_mask/{i}"]
        leaves.append(leaf)
    return autodiff._pack(entry.outputs, iter(leaves))


def _outputs(loss, parts, y_pred):
    """The step's graph outputs: ``loss``, ``loss/<k>`` per output, ``y_pred/<i>`` and, for
    predictions that carry a mask (metrics use it), ``y_mask/<i>``."""
    out = {} if loss is None else {"loss": loss}
    out.update({f"loss/{k}": part for k, part in enumerate(parts)})
    for i, p in enumerate(autodiff._flatten(y_pred)):
        out[f"y_pred/{i}"] = p
        if getattr(p, "_keras_mask", None) is not None:
            out[f"y_mask/{i}"] = p._keras_mask
    return out


def _loss(model, x, y, y_pred, sample_weight, training):
    """``model.compute_loss`` while tracing, with each output's loss (multi-output models)
    collected as a graph output instead of being read on the host."""
    parts = []
    model._track_output_losses = lambda values, batch: parts.extend(values)
    try:
        loss = model.compute_loss(x, y, y_pred, sample_weight, training=training)
    finally:
        del model._track_output_losses
    return loss, parts


def _unflatten(batch, feeds):
    """``(x, y, sample_weight)`` with the traced inputs in place of the arrays."""
    out = []
    for role, struct in zip(("x", "y", "sample_weight"), batch):
        leaves = autodiff._flatten(struct)
        values = [None if leaf is None else feeds[f"{role}/{i}"]
                  for i, leaf in enumerate(leaves)]
        out.append(None if struct is None else autodiff._pack(struct, iter(values)))
    return tuple(out)


def _signature(feeds):
    """Per feed ``(name, shape, dtype)`` (an array's own shape tuple and dtype object: equal
    for equal types, and cheaper than spelling them)."""
    return tuple((name, a.shape, a.dtype) if type(a) is np.ndarray else
                 (name, tuple(np.shape(a)), str(getattr(a, "dtype", type(a).__name__)))
                 for name, a in feeds.items())


def _settings(optimizer, feeds):
    """The optimizer's settings that a traced update holds as constants (``beta_1``,
    ``epsilon``, ``momentum``, ``clipnorm``...: its public Python scalars but the fed ones), as
    part of the train step's key: a callback that changes one gets a new program, reading the
    new value as the eager step does (it was kept at the traced value, silently). A wrapper's
    ``inner_optimizer`` (`LossScaleOptimizer`) adds its own settings."""
    own = tuple(item for item in _public_settings(optimizer) if HYPER + item[0] not in feeds)
    inner = getattr(optimizer, "inner_optimizer", None)
    return own if inner is None else own + (("inner_optimizer", _settings(inner, feeds)),)


def _public_settings(obj):
    """``((name, type, value), ...)``: the public scalar attributes of a layer or optimizer (Python
    and NumPy numbers, bools, str, None), but the trainer's own (`_NOT_SETTINGS`)."""
    return tuple((k, type(v), v) for k, v in vars(obj).items()  # 0.99 and np.float64(0.99)
                 if k[0] != "_" and isinstance(v, tracking.SETTING_TYPES) and  # differ (NEP 50)
                 k not in _NOT_SETTINGS)


_NOT_SETTINGS = ("name", "built", "stop_training", "compiled")  # the trainer's, not the step's


def _trace(fn, feeds):
    """The strict trace of ``fn`` on ``feeds``, drawing no host random numbers for good."""
    with _host_random_state_kept():
        return tracing.Tracer(strict=True).trace_feeds(fn, feeds)


def _check_same(first, second, kind):
    """Raise TraceError naming the first node where two traces of one signature differ."""
    if first == second:
        return
    for i, (a, b) in enumerate(zip(first.nodes, second.nodes)):
        if a != b:
            what = f"{a.op} at {a.site}" if a.op != "constant" else \
                f"a constant made at {a.site}"
            raise tracing.TraceError(
                f"kerasrs.graph: the {kind} step's graph differs between two batches at node "
                f"%{i} ({what}): the step computes it outside recorded ops from the values (on "
                f"the raw arrays, from random numbers drawn on the host, by Python control "
                f"flow on a tensor, or from a Python value that changes between steps and is "
                f"not a public scalar setting of a layer or of the optimizer), so a replay "
                f"would freeze it. Received: {a.op} then {b.op}",
                what)
    raise tracing.TraceError(f"kerasrs.graph: the {kind} step's graph differs between two "
                             f"batches ({len(first)} then {len(second)} nodes, outputs "
                             f"{list(first.outputs)} then {list(second.outputs)}).",
                             "the step's structure")


def _warn_missing(optimizer, variables, grads):
    missing = [v.path for v, g in zip(variables, grads) if g is None]
    if missing:  # as Optimizer.apply says it on each eager step
        warnings.warn(f"{optimizer.name}: gradients do not exist for variables {missing} when "
                      "minimizing the loss; they are left unchanged.", stacklevel=2)


def _quiet(optimizer):
    """NumPy's overflow warnings silenced for optimizers that overflow on purpose (as the
    eager step does)."""
    if getattr(optimizer, "skips_non_finite_steps", False):
        return np.errstate(over="ignore", invalid="ignore")
    return contextlib.nullcontext()


@contextlib.contextmanager
def _host_random_state_kept():
    """Tracing runs a step once more: the host random streams it draws from (dropout keys,
    ``kerasrs.random``) are put back, so training draws what eager training would."""
    holders = (backend_module._dropout_keys, random_module._global)
    kept = [(holder[0], holder[0] and holder[0].bit_generator.state) for holder in holders]
    try:
        yield
    finally:
        for holder, (generator, state) in zip(holders, kept):
            holder[0] = generator  # (kerasrs.random makes its generator on first use)
            if generator is not None:
                generator.bit_generator.state = state
