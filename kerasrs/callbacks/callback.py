"""`Callback`: the base class, with Keras's hook names."""


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
