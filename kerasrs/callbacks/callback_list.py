"""`CallbackList`: calls every callback's hooks, adding the `History` and the `ProgbarLogger` that
fit, evaluate and predict need."""

from kerasrs.callbacks.callback import _HOOKS, Callback
from kerasrs.callbacks.history import History
from kerasrs.callbacks.progbar_logger import ProgbarLogger


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
    # every callback gets ``logs`` positionally, as Keras passes it, so a hook written as
    # ``lambda logs: ...`` or ``lambda epoch, logs: ...`` works; and always a dict (``{}`` when
    # there are no logs yet, a new one per call), so ``logs.keys()`` works at every hook
    if "batch" in name or "epoch" in name:
        def hook(self, index, logs=None):
            logs = {} if logs is None else logs
            for cb in self.callbacks:
                getattr(cb, name)(index, logs)
    else:
        def hook(self, logs=None):
            logs = {} if logs is None else logs
            for cb in self.callbacks:
                getattr(cb, name)(logs)

    hook.__name__ = name
    return hook


for _name in _HOOKS:
    setattr(CallbackList, _name, _make_hook(_name))
