"""`LambdaCallback`: a callback made of plain functions."""

import warnings

from kerasrs.callbacks.callback import _BATCH_HOOKS, _HOOKS, Callback

__all__ = ["LambdaCallback"]


class LambdaCallback(Callback):
    """Call the given functions at the matching hooks.

    Args:
        on_epoch_begin, on_epoch_end: ``f(epoch, logs)``.
        on_train_begin, on_train_end: ``f(logs)``.
        on_train_batch_begin, on_train_batch_end: ``f(batch, logs)``.
        **kwargs: any other hook by its name (``on_test_end=f``, ``on_predict_batch_end=f``);
            as in Keras, every keyword becomes an attribute, whatever its name (one named like
            a hook but not one, ``on_epoch_finish``, also gets a warning).

    ``logs`` is always a dict (``{}`` where there is nothing to report yet).

    Raises:
        TypeError: for a hook of `Callback` that is given something not callable (Keras
            would fail later, when the hook runs).

    Example:
        >>> seen = []
        >>> cb = LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append(epoch))
    """

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None,
                 on_train_end=None, on_train_batch_begin=None, on_train_batch_end=None,
                 **kwargs):
        super().__init__()
        hooks = dict(kwargs, on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end,
                     on_train_begin=on_train_begin, on_train_end=on_train_end,
                     on_train_batch_begin=on_train_batch_begin,
                     on_train_batch_end=on_train_batch_end)
        for name, function in hooks.items():
            if name not in _HOOKS:  # not a hook: kept as an attribute, as Keras does
                if name.startswith("on_"):
                    warnings.warn(f"LambdaCallback: `{name}` is not a callback hook, so fit "
                                  f"never calls it (hooks: {sorted(_HOOKS)}).", stacklevel=2)
                setattr(self, name, function)
            elif function is not None:
                if not callable(function):
                    raise TypeError(f"LambdaCallback: `{name}` must be a function or None. "
                                    f"Received: {name}={function!r}")
                setattr(self, name, function)

    def _needs_batch_hooks(self, mode):
        return any(name in vars(self) for name in _BATCH_HOOKS[mode])
