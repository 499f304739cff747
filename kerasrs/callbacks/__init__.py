"""Callbacks: hooks into fit/evaluate/predict, with Keras's names.

`Callback` is the base class, `CallbackList` runs several, `History` records the epoch logs
(``fit`` returns it) and `ProgbarLogger` shows progress. Other callbacks (EarlyStopping,
ModelCheckpoint, ...) live in further modules of this package and are re-exported here.
"""

import importlib
import pkgutil

from kerasrs.callbacks.callback import Callback, CallbackList  # noqa: F401
from kerasrs.callbacks.history import History  # noqa: F401
from kerasrs.callbacks.progbar_logger import ProgbarLogger  # noqa: F401

_OWN = {"callback", "history", "progbar_logger"}

# Every other module of this package that defines __all__ is re-exported, so adding a callback
# needs no edit here.
for _info in pkgutil.iter_modules(__path__):
    if _info.name not in _OWN:
        _module = importlib.import_module(f"{__name__}.{_info.name}")
        for _export in getattr(_module, "__all__", ()):
            globals()[_export] = getattr(_module, _export)
