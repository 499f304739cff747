"""The `Optimizer` base class: variable bookkeeping, gradient clipping, weight decay, schedules.

An optimizer owns an ``iteration`` counter, a ``learning_rate`` variable (unless the rate is a
schedule or a callable) and, after `build`, one or more *slot* variables per model variable
(Adam's ``momentum`` and ``velocity``, for example). `apply` runs, in Keras 3's order:

1. drop ``None`` gradients (with a warning naming the variables that got none);
2. unscale by ``loss_scale_factor``; clip by ``clipnorm`` / ``global_clipnorm`` / ``clipvalue``;
3. read the learning rate once, at the *current* ``iterations`` (so a schedule's first update
   uses ``schedule(0)``);
4. decoupled weight decay ``w -= w * weight_decay * lr`` (Loshchilov & Hutter 2019), if set;
5. ``update_step`` per variable, in place on the raw arrays, with nothing recorded on any tape;
6. ``iterations += 1``.

Subclasses implement ``build`` (create slots with `add_optimizer_variables`) and
``update_step(gradient, variable, learning_rate)``, where ``gradient`` is a backend array of the
variable's dtype and ``learning_rate`` a Python float. They update ``variable.data`` in place,
keep scalars as Python floats (NEP 50 keeps float32 arrays float32), and use `_scratch` buffers
with ``out=`` so that an update makes no new full-size arrays.
"""

import math
import re
import warnings

from kerasrs import autodiff
from kerasrs import backend as backend_module
from kerasrs.optimizers import schedules as schedules_module


class Optimizer:
    """Base class of kerasrs optimizers (Keras 3's ``keras.optimizers.Optimizer``).

    Args:
        learning_rate: float, a `LearningRateSchedule`, or a callable taking no arguments.
        weight_decay: float or None. Decoupled decay ``w -= w * weight_decay * lr`` each step.
        clipnorm: float or None. Clip each gradient to this L2 norm:
            ``g * clipnorm / max(||g||, clipnorm)``.
        clipvalue: float or None. Clip each gradient element to ``[-clipvalue, clipvalue]``.
        global_clipnorm: float or None. Scale all gradients by ``global_clipnorm / max(norm,
            global_clipnorm)``, ``norm`` their joint L2 norm (Pascanu et al. 2013); a non-finite
            norm makes every gradient NaN, as in Keras. At most one of the three may be set; 0
            means off. They are plain attributes, read at every step.
        loss_scale_factor: float or None. Gradients are divided by it before use; `scale_loss`
            multiplies a loss by it.
        use_ema: bool. Keep an exponential moving average (EMA) of each trained variable:
            after every update ``average = m * average + (1 - m) * variable`` with
            ``m = ema_momentum`` (``m = 0`` at the first step, so the average starts at the
            variable). At the end of ``fit`` the variables are overwritten with their averages
            (`finalize_variable_values`); `kerasrs.callbacks.SwapEMAWeights` evaluates with them.
        ema_momentum: float in [0, 1]. Defaults to 0.99.
        ema_overwrite_frequency: int >= 1 or None: also overwrite the variables with their
            averages after every that many steps.
        gradient_accumulation_steps: accepted for Keras config compatibility; only None.
        name: str. Prefix of the variable paths (``"adam/iteration"``). Defaults to the class
            name in snake case, as Keras (``"adam"``, ``"rm_sprop"``, ``"adam_w"``).

    Raises:
        ValueError: for more than one clipping option, a negative clip value, an unknown
            keyword, a learning rate that is not a number, schedule or callable, or is a
            negative, NaN or infinite number; with ``use_ema=True``, an ``ema_momentum``
            outside [0, 1] or an ``ema_overwrite_frequency`` that is not an int >= 1; a
            ``gradient_accumulation_steps`` that is not an int >= 2.
        NotImplementedError: for a valid ``gradient_accumulation_steps`` (not supported).
    """

    def __init__(self, learning_rate, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, use_ema=False, ema_momentum=0.99,
                 ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        owner = type(self).__name__
        if kwargs.pop("decay", None) is not None:
            warnings.warn(f"{owner}: `decay` is a Keras 2 argument; it is ignored (use a "
                          "learning-rate schedule).", stacklevel=2)
        if kwargs:
            raise ValueError(f"{owner}: unknown argument(s). Received: {kwargs}")
        if gradient_accumulation_steps:
            _check_accumulation(owner, gradient_accumulation_steps)
        if use_ema:
            _check_ema(owner, ema_momentum, ema_overwrite_frequency)
        _check_clips(owner, clipnorm=clipnorm, clipvalue=clipvalue,
                     global_clipnorm=global_clipnorm)
        self.name = name or _snake_case(owner)
        self.weight_decay = weight_decay
        self.clipnorm, self.clipvalue, self.global_clipnorm = clipnorm, clipvalue, global_clipnorm
        self.use_ema, self.ema_momentum = bool(use_ema), ema_momentum
        self.ema_overwrite_frequency = ema_overwrite_frequency
        self.loss_scale_factor = loss_scale_factor
        self.gradient_accumulation_steps = None
        self.built = False
        self._variables = []
        self._trainable_variables = []
        self._index = {}
        self._scratch_buffers = {}
        self._exclude_ids, self._exclude_pattern = set(), None
        self._iterations = self._make_variable(0, "iteration", dtype="int64")
        self._learning_rate = None
        self._set_learning_rate(learning_rate)

    # -- variables ---------------------------------------------------------------------------
    @property
    def iterations(self):
        """The number of updates applied so far: an int64 `Variable` (``<name>/iteration``)."""
        return self._iterations

    @property
    def variables(self):
        """All state in Keras's order: ``iteration``, ``learning_rate`` (a plain rate), slots."""
        return list(self._variables)

    def _make_variable(self, value, name, dtype=None, like=None):
        # Slots live beside their variable; the scalars (iteration, learning rate) on the host,
        # where the step reads them as Python numbers without a device sync.
        be_name = like.backend.name if like is not None else "numpy"
        with backend_module.using(be_name):
            if like is not None:
                value = like.backend.xp.full(like.shape, value, dtype=like.dtype)
                dtype = like.dtype
            var = autodiff.Variable(value, dtype=dtype, trainable=False, name=name)
        var.path = f"{self.name}/{name}"
        self._variables.append(var)
        return var

    def __setstate__(self, state):
        """After unpickling (or ``copy.deepcopy``): the maps keyed by ``id()`` are rebuilt for
        the copied variables."""
        self.__dict__.update(state)
        if self.built:
            self._index = {id(v): i for i, v in enumerate(self._trainable_variables)}
        self._exclude_ids = {id(v) for v in self.__dict__.get("_exclude_variables", ())}

    def build(self, variables):
        """Record the model variables this optimizer updates; subclasses then add their slots."""
        self._trainable_variables = list(variables)
        self._index = {id(v): i for i, v in enumerate(self._trainable_variables)}
        if self.use_ema:  # Keras makes these before the subclass's slots
            self._model_variables_moving_average = self.add_optimizer_variables(
                self._trainable_variables, "average")
        self.built = True

    def add_variable_from_reference(self, reference_variable, name, initializer=0.0):
        """A slot shaped like ``reference_variable``, named ``<its path with _>_<name>``."""
        path = getattr(reference_variable, "path", None) or reference_variable.name
        slot_name = f"{path.replace('/', '_').replace(':', '_')}_{name}"
        return self._make_variable(float(initializer), slot_name, like=reference_variable)

    def add_optimizer_variables(self, variables, names, initializer=0.0):
        """Slots for each variable, interleaved per variable as Keras 3 stores them.

        Returns one list (``names`` a str) or a tuple of lists (``names`` a list), each aligned
        with ``variables``.
        """
        single = isinstance(names, str)
        names = [names] if single else list(names)
        lists = tuple([] for _ in names)
        for var in variables:
            for slots, slot_name in zip(lists, names):
                slots.append(self.add_variable_from_reference(var, slot_name, initializer))
        return lists[0] if single else lists

    def _check_known(self, variables):
        """Raise ValueError naming the ``variables`` this built optimizer was not built with."""
        unknown = [v.path for v in variables if id(v) not in self._index]
        if unknown:
            raise ValueError(f"{self.name}: an optimizer only updates the variables it was "
                             "built with; create a new optimizer for new variables. Received: "
                             f"unknown variables {unknown}")

    def _slot_index(self, variable):
        return self._index[id(variable)]

    def set_weights(self, weights):
        """Assign arrays to `variables`, in order (shapes must match)."""
        if len(weights) != len(self._variables):
            raise ValueError(f"{self.name}: set_weights expects {len(self._variables)} arrays. "
                             f"Received: {len(weights)}")
        for var, value in zip(self._variables, weights):
            var.assign(value)

    # -- learning rate -------------------------------------------------------------------------
    @property
    def learning_rate(self):
        """The learning rate, as Keras 3 exposes it.

        For a plain rate this is the ``learning_rate`` `Variable` itself (``<name>/learning_rate``,
        float32, non-trainable): ``float(opt.learning_rate)``, ``opt.learning_rate.numpy()`` and
        ``opt.learning_rate.assign(0.01)`` work, and the new value is used from the next update.
        With a schedule (or a callable) it is the rate the next update will use, a 0-d `Tensor`.

        Assigning ``opt.learning_rate = 0.01`` writes into the variable; assigning a schedule or
        a callable replaces it. A schedule's rate cannot be overwritten by a number
        (``TypeError``, as Keras).

        Raises:
            ValueError: for a rate that is not a number, schedule or callable, or a number that
                is negative, NaN or infinite.
        """
        lr = self._learning_rate
        if isinstance(lr, autodiff.Variable):
            return lr
        return autodiff.Tensor(backend_module.get().asarray(
            self._current_learning_rate(), dtype=backend_module.floatx()))

    @learning_rate.setter
    def learning_rate(self, value):
        self._set_learning_rate(value)

    def _set_learning_rate(self, value):
        """The `learning_rate` setter (also used by ``__init__``, which subclasses that hide
        the property still need)."""
        if isinstance(value, schedules_module.LearningRateSchedule) or (
                callable(value) and not isinstance(value, autodiff.Tensor)):
            if isinstance(self._learning_rate, autodiff.Variable):
                self._variables.remove(self._learning_rate)
            self._learning_rate = value
            return
        if isinstance(value, bool) or not _is_number(value):
            raise ValueError(f"{self.name}: learning_rate must be a float, a "
                             "LearningRateSchedule or a callable. Received: "
                             f"learning_rate={value!r}")
        if not math.isfinite(float(value)) or float(value) < 0:
            raise ValueError(f"{self.name}: learning_rate must be a finite number >= 0. "
                             f"Received: learning_rate={float(value)!r}")
        if isinstance(self._learning_rate, schedules_module.LearningRateSchedule):
            raise TypeError(f"{self.name}: this optimizer was created with a "
                            "LearningRateSchedule, so its learning rate is not settable. "
                            f"Received: learning_rate={value!r}")
        if isinstance(self._learning_rate, autodiff.Variable):
            self._learning_rate.assign(float(value))
            return
        self._learning_rate = self._make_variable(float(value), "learning_rate",
                                                  dtype=backend_module.floatx())
        self._variables.remove(self._learning_rate)  # keep Keras's order: right after iteration
        self._variables.insert(1, self._learning_rate)

    def _current_learning_rate(self):
        lr = self._learning_rate
        if isinstance(lr, schedules_module.LearningRateSchedule):
            return float(lr(self._iterations))
        if isinstance(lr, autodiff.Variable):
            return float(lr.data)
        value = lr()
        return float(autodiff.raw(value))

    # -- applying gradients ----------------------------------------------------------------------
    def apply_gradients(self, grads_and_vars):
        """`apply` on a list of ``(gradient, variable)`` pairs. Returns `iterations`."""
        pairs = list(grads_and_vars)
        if not pairs:
            return self._iterations
        grads, variables = zip(*pairs)
        self.apply(list(grads), list(variables))
        return self._iterations

    def _built_for(self, grads, trainable_variables):
        """``trainable_variables`` as a list, building on the first call; checks there is one
        gradient per variable (shared by `apply` and `MultiOptimizer.apply`)."""
        trainable_variables = list(trainable_variables)
        if not self.built:
            self.build(trainable_variables)
        if len(grads) != len(trainable_variables):
            raise ValueError(f"{self.name}: apply needs one gradient per variable. Received: "
                             f"{len(grads)} gradients for {len(trainable_variables)} variables")
        return trainable_variables

    def apply(self, grads, trainable_variables=None):
        """Update the variables in place from their gradients (one optimizer step).

        Args:
            grads: list of gradients (Tensors, backend arrays, NumPy arrays or None), one per
                variable. A None gradient leaves its variable unchanged (with a warning).
            trainable_variables: list of `Variable`s. Builds the optimizer on the first call.
                If omitted, the optimizer must already be built and ``grads`` match its variables.

        Raises:
            ValueError: if no variables are given to an unbuilt optimizer, the counts differ,
                a variable is unknown to the built optimizer, a gradient's shape differs from its
                variable's, or every gradient is None.
        """
        grads = list(grads)
        if not grads:
            return
        if trainable_variables is None:
            if not self.built:
                raise ValueError(f"{self.name}: call build(variables) first, or pass "
                                 "trainable_variables to apply().")
            trainable_variables = self._trainable_variables
        trainable_variables = self._built_for(grads, trainable_variables)
        self._check_known(trainable_variables)
        pairs = self._prepare(grads, trainable_variables)
        lr = self._current_learning_rate()
        with autodiff.no_grad():
            self._apply_weight_decay([v for _, v in pairs], lr)
            self._update_all(pairs, lr)
            if self.use_ema:
                self._update_moving_averages()
            self._iterations.data += 1

    def stateless_apply(self, optimizer_variables, grads, trainable_variables):
        """One `apply` on given values instead of the variables' own (Keras's stateless API).

        Args:
            optimizer_variables: values (arrays or Tensors) for `variables`, in order.
            grads: the gradients, one per variable the optimizer was built with.
            trainable_variables: values for those variables, in order.

        Returns:
            ``(new trainable values, new optimizer values)``: lists of `Tensor`s. The optimizer's
            and the model's variables are left as they were.

        Raises:
            ValueError: if the optimizer is not built or a list has the wrong length.
        """
        if not self.built:
            raise ValueError(f"{self.name}: stateless_apply needs a built optimizer; call "
                             "optimizer.build(trainable_variables) first.")
        state, trained = self.variables, self._variables_trained()
        for given, expected, what in ((optimizer_variables, state, "optimizer_variables"),
                                      (trainable_variables, trained, "trainable_variables")):
            if len(given) != len(expected):
                raise ValueError(f"{self.name}: stateless_apply needs one value per variable "
                                 f"in `{what}`. Received: {len(given)} values for "
                                 f"{len(expected)} variables")
        targets = trained + state
        saved = [var.data.copy() for var in targets]
        try:
            for var, value in zip(targets, list(trainable_variables) + list(optimizer_variables)):
                var.assign(value)
            self.apply(grads)
            return ([autodiff.Tensor(v.data.copy()) for v in trained],
                    [autodiff.Tensor(v.data.copy()) for v in self.variables])
        finally:
            for var, value in zip(targets, saved):
                var.data[...] = value

    def _variables_trained(self):
        """The model variables this optimizer was built for (a wrapper: its inner's)."""
        return list(self._trainable_variables)

    def _update_moving_averages(self):
        """EMA step (Keras 3's order: after the update, before ``iterations += 1``), then the
        periodic overwrite of the variables by their averages."""
        first = int(self._iterations.data) == 0
        for variable, average in zip(self._trainable_variables,
                                     self._model_variables_moving_average):
            momentum = variable.dtype.type(0.0 if first else self.ema_momentum)
            scratch = self._scratch(variable, slot="ema")
            variable.backend.xp.multiply(variable.data, variable.dtype.type(1) - momentum,
                                         out=scratch)
            average.data *= momentum
            average.data += scratch
        frequency = self.ema_overwrite_frequency
        if frequency and (int(self._iterations.data) + 1) % frequency == 0:
            self.finalize_variable_values(self._trainable_variables)

    def _update_all(self, pairs, lr):
        for gradient, variable in pairs:
            self.update_step(gradient, variable, lr)

    def update_step(self, gradient, variable, learning_rate):
        """Update one variable in place. ``gradient`` is a backend array of its dtype."""
        raise NotImplementedError(f"{type(self).__name__} must implement update_step.")

    def _prepare(self, grads, variables):
        """(array gradient, variable) pairs: Nones dropped, cast, unscaled and clipped."""
        pairs, missing = [], []
        for g, var in zip(grads, variables):
            if g is None:
                missing.append(var.path)
                continue
            g = g.data if isinstance(g, autodiff.Tensor) else g
            if not var.backend.is_array(g):
                g = var.backend.asarray(backend_module.convert_to_numpy(g))
            if g.dtype != var.dtype:
                g = g.astype(var.dtype)
            if tuple(g.shape) != var.shape:
                raise ValueError(f"{self.name}: gradient for {var.path!r} has shape "
                                 f"{tuple(g.shape)}, expected {var.shape}. Received: gradient "
                                 f"shape {tuple(g.shape)}")
            pairs.append((g, var))
        if not pairs:
            raise ValueError(f"{self.name}: no gradients provided for any variable. Received: "
                             f"None for {missing}")
        if missing:
            warnings.warn(f"{self.name}: gradients do not exist for variables {missing} when "
                          "minimizing the loss; they are left unchanged.", stacklevel=3)
        if self.loss_scale_factor is not None:
            pairs = [(g / self.loss_scale_factor, v) for g, v in pairs]
        return self._clip(pairs)

    def _clip(self, pairs):
        """Keras's clipping: the first of ``clipnorm``, ``global_clipnorm``, ``clipvalue``
        that is set and positive (0 or None means off). Read at each step, so assigning
        ``optimizer.clipnorm`` takes effect at the next update."""
        if not (self.clipnorm or self.global_clipnorm or self.clipvalue):
            return pairs
        if self.clipnorm and self.clipnorm > 0:
            return [(_clip_by_norm(g, self.clipnorm), v) for g, v in pairs]
        if self.global_clipnorm and self.global_clipnorm > 0:
            norm = math.sqrt(sum(float((g.astype("float64") ** 2).sum()) for g, _ in pairs))
            scale = self.global_clipnorm * min(1.0 / norm if norm else math.inf,
                                               1.0 / self.global_clipnorm)
            if not math.isfinite(norm):
                scale = math.nan  # as Keras: a non-finite norm poisons the step visibly
            return [(g * scale, v) for g, v in pairs]
        if self.clipvalue and self.clipvalue > 0:
            xp = pairs[0][1].backend.xp
            return [(xp.clip(g, -self.clipvalue, self.clipvalue), v) for g, v in pairs]
        return pairs

    def scale_loss(self, loss):
        """``loss * loss_scale_factor`` (or ``loss`` unchanged when no factor is set)."""
        return loss if self.loss_scale_factor is None else loss * self.loss_scale_factor

    # -- weight decay ----------------------------------------------------------------------------
    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Exempt variables from weight decay: by object, or by a substring of their name.

        Raises:
            ValueError: if called after the optimizer is built.
        """
        if self.built:
            raise ValueError(f"{self.name}: exclude_from_weight_decay() must be called before "
                             "the optimizer is built.")
        self._exclude_variables = list(var_list or [])
        self._exclude_ids = {id(v) for v in self._exclude_variables}
        self._exclude_pattern = re.compile("|".join(map(re.escape, var_names))) \
            if var_names else None

    def _uses_weight_decay(self, variable):
        if id(variable) in self._exclude_ids:
            return False
        pattern = self._exclude_pattern
        return pattern is None or pattern.search(variable.name) is None

    def _apply_weight_decay(self, variables, lr):
        if not self.weight_decay:
            return
        factor = float(self.weight_decay) * lr
        for var in variables:
            if self._uses_weight_decay(var):
                var.data -= var.data * factor

    # -- scratch space ---------------------------------------------------------------------------
    def _scratch(self, variable, slot=0):
        """A reusable temporary with ``variable``'s shape and dtype (``slot`` picks one of several).

        One flat buffer per (backend, dtype, slot) is grown to the largest variable and viewed
        in each variable's shape, so updates allocate nothing after the first step.
        """
        key = (variable.backend.name, variable.dtype.str, slot)
        buf = self._scratch_buffers.get(key)
        if buf is None or buf.size < variable.size:
            buf = variable.backend.xp.empty(variable.size, dtype=variable.dtype)
            self._scratch_buffers[key] = buf
        return buf[:variable.size].reshape(variable.shape)

    # -- config ----------------------------------------------------------------------------------
    def get_config(self):
        """Keras-compatible config: the base arguments plus each subclass's hyperparameters."""
        lr = self._learning_rate
        if isinstance(lr, schedules_module.LearningRateSchedule):
            lr = schedules_module.serialize(lr)
        elif isinstance(lr, autodiff.Variable):
            lr = float(lr.data)
        else:
            raise ValueError(f"{self.name}: a callable learning rate cannot be serialized. "
                             f"Received: learning_rate={lr!r}")
        return {"name": self.name, "learning_rate": lr, "weight_decay": self.weight_decay,
                "clipnorm": self.clipnorm, "global_clipnorm": self.global_clipnorm,
                "clipvalue": self.clipvalue, "use_ema": self.use_ema,
                "ema_momentum": self.ema_momentum,
                "ema_overwrite_frequency": self.ema_overwrite_frequency,
                "loss_scale_factor": self.loss_scale_factor,
                "gradient_accumulation_steps": None}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """A new, unbuilt optimizer from `get_config`'s output (a schedule dict is rebuilt)."""
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = schedules_module.deserialize(config["learning_rate"])
        return cls(**config)

    def finalize_variable_values(self, var_list):
        """Called at the end of ``fit``: with EMA, overwrite each variable of ``var_list`` that
        this optimizer trains with its moving average; otherwise nothing."""
        if not self.use_ema or not self.built:
            return
        for variable in var_list:
            index = self._index.get(id(variable))
            if index is not None:
                variable.data[...] = self._model_variables_moving_average[index].data

    def __repr__(self):
        return (f"<{type(self).__name__} name={self.name} "
                f"learning_rate={self._current_learning_rate():g}>")


def base_arguments(values):
    """The base `Optimizer` arguments among a subclass's ``locals()`` (its explicit keyword
    arguments, in Keras's order, plus ``**kwargs``), for ``super().__init__(**...)``."""
    out = {name: values[name] for name in BASE_ARGUMENTS if name in values}
    out.update(values.get("kwargs", {}))
    return out


BASE_ARGUMENTS = ("learning_rate", "weight_decay", "clipnorm", "clipvalue", "global_clipnorm",
                  "use_ema", "ema_momentum", "ema_overwrite_frequency", "loss_scale_factor",
                  "gradient_accumulation_steps", "name")


def _check_clips(owner, **clips):
    """At most one clipping option; none negative (0 means off, as in Keras)."""
    given = {key: value for key, value in clips.items() if value is not None}
    if len(given) > 1:
        raise ValueError(f"{owner}: only one of clipnorm, clipvalue and global_clipnorm can be "
                         f"set. Received: {given}")
    for key, value in given.items():
        if isinstance(value, bool) or not _is_number(value) or float(value) < 0:
            raise ValueError(f"{owner}: {key} must be a number >= 0 (0 turns clipping off). "
                             f"Received: {key}={value!r}")


def _check_accumulation(owner, steps):
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 2:
        raise ValueError(f"{owner}: gradient_accumulation_steps must be an integer >= 2. "
                         f"Received: gradient_accumulation_steps={steps!r}")
    raise NotImplementedError(f"{owner}: gradient_accumulation_steps is not supported. "
                              f"Received: gradient_accumulation_steps={steps}")


def _check_ema(owner, momentum, overwrite_frequency):
    if not 0 <= momentum <= 1:
        raise ValueError(f"{owner}: ema_momentum must be in [0, 1]. Received: "
                         f"ema_momentum={momentum!r}")
    if overwrite_frequency and (isinstance(overwrite_frequency, bool) or not
                                isinstance(overwrite_frequency, int) or overwrite_frequency < 1):
        raise ValueError(f"{owner}: ema_overwrite_frequency must be an int >= 1 or None. "
                         f"Received: ema_overwrite_frequency={overwrite_frequency!r}")


def _clip_by_norm(g, clipnorm):
    """``g * clipnorm / max(||g||, clipnorm)``: unchanged when the norm is within the limit."""
    norm = math.sqrt(float((g.astype("float64") ** 2).sum()))
    return g if norm <= clipnorm else g * (clipnorm / norm)


def _is_number(value):
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return getattr(value, "ndim", 0) == 0


def _snake_case(name):
    """Keras's ``to_snake_case``: ``RMSprop`` -> ``rm_sprop``, ``AdamW`` -> ``adam_w``."""
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()
