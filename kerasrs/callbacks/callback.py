"""`Callback` (Keras's hook names) and `CallbackList`, which calls every callback's hooks."""


class Callback:
    """Base class of callbacks: override the hooks you need.

    ``fit`` calls ``on_train_begin/end``, ``on_epoch_begin/end(epoch, logs)`` (epochs count from
    0), ``on_train_batch_begin/end(batch, logs)``, and, during validation, the ``on_test_*``
    hooks; ``evaluate`` and ``predict`` call ``on_test_*`` and ``on_predict_*``. ``logs`` is a
    dict of floats: at a batch end, the running means over the epoch so far (``loss``,
    metrics); at an epoch end, the epoch's values plus ``val_*`` entries when validating.

    Attributes:
        model: the model being trained (set by ``fit``). Set ``model.stop_training = True`` to
            end training after the current epoch.
        params: dict with ``epochs``, ``steps`` and ``verbose``.
    """

    def __init__(self):
        self.params = {}
        self._model = None
        self.validation_data = None

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self._model = model

    @property
    def model(self):
        return self._model

    def on_batch_begin(self, batch, logs=None):
        """Alias kept by Keras: called by the default `on_train_batch_begin`."""

    def on_batch_end(self, batch, logs=None):
        """Alias kept by Keras: called by the default `on_train_batch_end`."""

    def on_epoch_begin(self, epoch, logs=None):
        """At the start of each training epoch (0-based)."""

    def on_epoch_end(self, epoch, logs=None):
        """At the end of each training epoch, with the epoch's logs (and ``val_*``)."""

    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs=logs)

    def on_test_batch_begin(self, batch, logs=None):
        """Before each batch of ``evaluate`` (and of validation in ``fit``)."""

    def on_test_batch_end(self, batch, logs=None):
        """After each batch of ``evaluate``, with the running logs."""

    def on_predict_batch_begin(self, batch, logs=None):
        """Before each batch of ``predict``."""

    def on_predict_batch_end(self, batch, logs=None):
        """After each batch of ``predict``; ``logs["outputs"]`` holds the batch's outputs."""

    def on_train_begin(self, logs=None):
        """At the start of ``fit``."""

    def on_train_end(self, logs=None):
        """At the end of ``fit``, with the last epoch's logs."""

    def on_test_begin(self, logs=None):
        """At the start of ``evaluate`` (and of each validation in ``fit``)."""

    def on_test_end(self, logs=None):
        """At the end of ``evaluate``, with its logs."""

    def on_predict_begin(self, logs=None):
        """At the start of ``predict``."""

    def on_predict_end(self, logs=None):
        """At the end of ``predict``."""

    def _needs_batch_hooks(self, mode):
        """Whether this callback needs the batch hooks of ``mode`` ("train", "test",
        "predict"): by default, whether its class overrides one of them."""
        return any(getattr(type(self), hook) is not getattr(Callback, hook)
                   for hook in _BATCH_HOOKS[mode])


_HOOKS = [name for name in vars(Callback) if name.startswith("on_")]
_BATCH_HOOKS = {
    "train": ("on_train_batch_begin", "on_train_batch_end", "on_batch_begin", "on_batch_end"),
    "test": ("on_test_batch_begin", "on_test_batch_end"),
    "predict": ("on_predict_batch_begin", "on_predict_batch_end"),
}


class CallbackList(Callback):
    """Calls each hook on every callback in order.

    Args:
        callbacks: list of `Callback`s, or one `Callback` (None: empty).
        add_history: append a `History` (unless one is present) that ``fit`` returns.
        add_progbar: append a `ProgbarLogger` (unless one is present).
        model: the model, given to every callback with ``set_model``.
        **params: ``epochs``, ``steps``, ``verbose``: given with ``set_params``.
    """

    def __init__(self, callbacks=None, add_history=False, add_progbar=False, model=None,
                 **params):
        super().__init__()
        from kerasrs.callbacks.history import History
        from kerasrs.callbacks.progbar_logger import ProgbarLogger

        # one callback alone is accepted, as Keras flattens the argument
        self.callbacks = [callbacks] if isinstance(callbacks, Callback) else list(callbacks or [])
        for cb in self.callbacks:
            if not isinstance(cb, Callback):
                raise TypeError("`callbacks` must be a list of Callback instances (e.g. "
                                "EarlyStopping(), not the class). Received: an element of type "
                                f"{type(cb).__name__}")
        if add_history and not any(isinstance(cb, History) for cb in self.callbacks):
            self.callbacks.append(History())
        if add_progbar and not any(isinstance(cb, ProgbarLogger) for cb in self.callbacks):
            self.callbacks.append(ProgbarLogger())
        if model is not None:
            self.set_model(model)
        if params:
            self.set_params(params)

    def append(self, callback):
        self.callbacks.append(callback)

    def set_params(self, params):
        self.params = params
        for cb in self.callbacks:
            cb.set_params(params)

    def set_model(self, model):
        self._model = model
        for cb in self.callbacks:
            cb.set_model(model)

    def wants_batch_hooks(self, mode):
        """Whether any callback overrides a batch hook of ``mode`` ("train", "test", "predict");
        when none does, the loop skips computing per-batch logs."""
        return any(cb._needs_batch_hooks(mode) for cb in self.callbacks)

    def __iter__(self):
        return iter(self.callbacks)


def _make_hook(name):
    # every callback gets ``logs`` (None when there are none), positionally, as Keras passes it,
    # so a hook written as ``lambda logs: ...`` or ``lambda epoch, logs: ...`` works
    if "batch" in name or "epoch" in name:
        def hook(self, index, logs=None):
            for cb in self.callbacks:
                getattr(cb, name)(index, logs)
    else:
        def hook(self, logs=None):
            for cb in self.callbacks:
                getattr(cb, name)(logs)

    hook.__name__ = name
    return hook


for _name in _HOOKS:
    setattr(CallbackList, _name, _make_hook(_name))
