"""`LambdaCallback`: a callback made of plain functions."""

from kerasrs.callbacks.callback import _BATCH_HOOKS, _HOOKS, Callback

__all__ = ["LambdaCallback"]


class LambdaCallback(Callback):
    """Call the given functions at the matching hooks.

    Args:
        on_epoch_begin, on_epoch_end: ``f(epoch, logs)``.
        on_train_begin, on_train_end: ``f(logs)``.
        on_train_batch_begin, on_train_batch_end: ``f(batch, logs)``.
        **kwargs: any other hook by its name (``on_test_end=f``, ``on_predict_batch_end=f``).

    Raises:
        ValueError: for a keyword that is not a hook name.
        TypeError: for a hook that is not callable.

    Example:
        >>> seen = []
        >>> cb = LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append(epoch))
    """

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None,
                 on_train_end=None, on_train_batch_begin=None, on_train_batch_end=None,
                 **kwargs):
        super().__init__()
        unknown = sorted(set(kwargs) - set(_HOOKS))
        if unknown:
            raise ValueError(f"LambdaCallback: unknown hook name(s) {unknown}; hooks are "
                             f"{sorted(_HOOKS)}. Received: {sorted(kwargs)}")
        hooks = dict(kwargs, on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end,
                     on_train_begin=on_train_begin, on_train_end=on_train_end,
                     on_train_batch_begin=on_train_batch_begin,
                     on_train_batch_end=on_train_batch_end)
        for name, function in hooks.items():
            if function is not None and not callable(function):
                raise TypeError(f"LambdaCallback: `{name}` must be a function or None. "
                                f"Received: {name}={function!r}")
            if function is not None:
                setattr(self, name, function)

    def _needs_batch_hooks(self, mode):
        return any(name in vars(self) for name in _BATCH_HOOKS[mode])
